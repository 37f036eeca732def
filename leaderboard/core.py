"""The board's public API, for ``bench leaderboard`` and other tools: what each module of the board
offers, gathered under one name. Each job has its own module (``leaderboard/__init__.py`` lists them);
this one holds no logic."""
from leaderboard.board import (
                                 ALL,
                                 METRICS,
                                 UPLOAD_PREFIX,
                                 Board,
                                 choices,
                                 group_label,
                                 load_board,
                                 location,
                                 title,
)
from leaderboard.cards import (
                                 DEFINITIONS,
                                 about_markdown,
                                 markdown_html,
                                 model_pair_card,
                                 protocol_card,
                                 protocol_html,
)
from leaderboard.columns import (
                                 BOARD_COLUMNS,
                                 COLUMN_BY_NAME,
                                 DEFAULT_COLUMNS,
                                 HELP,
                                 Column,
                                 Row,
                                 View,
                                 csv_name,
                                 markdown,
                                 md_escape,
                                 shown,
                                 shown_order,
)
from leaderboard.context import (
                                 Context,
                                 context,
                                 data_line,
                                 model_pair_words,
                                 model_words,
)
from leaderboard.links import MethodCode, method_code, paper_url
from leaderboard.plots import (
                                 Sweep,
                                 ablations,
                                 color_limit,
                                 heatmap_default,
                                 id_vs_ood,
                                 matrices,
                                 nts_vs_bon,
                                 sweep_display,
                                 varying_params,
)
from leaderboard.ranking import RANK_BY, RANKING_COLUMNS, Verdict, pgr, ranking, rests_on, verdict

__all__ = ["ALL", "BOARD_COLUMNS", "COLUMN_BY_NAME", "DEFAULT_COLUMNS", "DEFINITIONS", "HELP", "METRICS",
           "RANK_BY", "RANKING_COLUMNS", "UPLOAD_PREFIX", "Board", "Column", "Context", "MethodCode", "Row", "Sweep",
           "Verdict", "View", "ablations", "about_markdown", "choices", "color_limit", "context", "csv_name",
           "data_line", "group_label", "heatmap_default", "id_vs_ood", "load_board", "location", "markdown",
           "markdown_html", "matrices", "md_escape", "method_code", "model_pair_card", "model_pair_words",
           "model_words", "nts_vs_bon", "paper_url", "pgr", "protocol_card", "protocol_html", "ranking", "rests_on", "shown",
           "shown_order", "sweep_display", "title", "varying_params", "verdict"]

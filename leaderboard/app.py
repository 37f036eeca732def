"""``bench leaderboard``: the Gradio app over the board's modules.

Above the tabs, what was run (``context.data_line``) and the group switcher: one protocol x model pair
at a time, which every tab shows. Tabs: the ranking (its verdict, what was run behind it, filters,
column choice, what it ranks by where the protocol has best-of-N candidate sets, and in the table's own
script the search, sorting and CSV), source x target heatmaps, the ID-vs-OOD picture, pair NTS against BoN
NTS, ablations, the protocol and model-pair cards, About, and Submit, which checks an
uploaded .zip (``leaderboard.uploads``) and shows its group as it would be with it.

Submission text reaches the page only as text: the lines above the table and the tables are rendered
by ``leaderboard.render`` (jinja2 with autoescape) into ``gr.HTML``, the other tables are Dataframes
of plain strings, and no Markdown component shows submission text (the model-pair card escapes it).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

import pandas as pd

from leaderboard.uploads import private_upload_folder

private_upload_folder()   # before Gradio is imported: it reads its temp folder then, and writes there
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no calls home from a leaderboard
import gradio as gr  # noqa: E402

from bench.core.report import fmt  # noqa: E402
from bench.submissions.limits import MAX_FILES, MAX_SUBMISSION_BYTES  # noqa: E402
from bench.submissions.upload import size_text  # noqa: E402
from leaderboard import cards, figures, plots, render  # noqa: E402
from leaderboard.board import ALL, Board, group_label, load_board, scope, title  # noqa: E402
from leaderboard.columns import (  # noqa: E402
    BOARD_COLUMNS,
    DEFAULT_COLUMNS,
    csv_name,
    shown,
    shown_order,
)
from leaderboard.context import context, data_line  # noqa: E402
from leaderboard.links import recorded_code  # noqa: E402
from leaderboard.ranking import ranking, verdict  # noqa: E402
from leaderboard.uploads import check_upload, forget_upload, uploaded_file  # noqa: E402

INTRO = ("# ShiftBench leaderboard\nWeak-to-strong reward models under preference shift, ranked by **NTS**: the "
         "student's gain over its weak teacher that survives the shift to sibling datasets. Definitions: under the "
         "table, and About.")
ALWAYS_SHOWN = ["rank", "method"]
CHOOSABLE = [c.name for c in BOARD_COLUMNS if c.name not in ALWAYS_SHOWN]
NARROW = 720   # px: below this viewport width the pictures are drawn in their narrow layout (board.css.j2's too)
# Gradio's own containers on a phone: less padding, and the intro's paragraph left to About, so that the
# ranking's first screen reaches the table. In <head>: Gradio scopes launch(css=...) inside its content,
# which these containers hold.
APP_HEAD = """<style>
@media (max-width: 720px) {
  .gradio-container .main { padding-left: 6px !important; padding-right: 6px !important; }
  #intro p { display: none; }
  #ranking-board.block, #upload-preview.block { padding: 0 !important; }
  #group label { padding: 3px 8px !important; font-size: 0.82rem; }
  #group { padding: 6px !important; }
  #group .wrap { flex-wrap: nowrap; overflow-x: auto; }   /* the groups in one row that scrolls */
  #group label { flex: none; }
  #intro h1 { font-size: 1.35rem; margin: 0; }
  .gradio-container .main .column { gap: 8px !important; }
}
#columns-box { order: 10; }   /* below the table: ranked rows on the first screen */
#group [data-testid="block-info"] { display: none; }   /* "group (submissions)": its buttons say it ("mini · tiny (26)") */
</style>"""


def theme() -> gr.themes.Base:
    """The default look with the system's fonts, so the page loads with no request off this machine."""
    return gr.themes.Default(font=["system-ui", "sans-serif"], font_mono=["ui-monospace", "monospace"])


def frame(table: pd.DataFrame) -> dict:
    """A table of text for a gr.Dataframe, its number columns right-aligned (a cell is a number when
    it reads as one: ``+2.1``, ``86.3``, ``[-0.9, +4.4]``)."""
    table = table.fillna("").astype(str)
    numeric = [bool(len(table)) and table[c].str.fullmatch(r"[-+]?[\d.]+|\[[-+\d., ]+\]|").all() for c in table.columns]
    return {"headers": list(table.columns), "data": table.values.tolist(),
            "metadata": {"display_value": None,
                         "styling": [["text-align: right; font-variant-numeric: tabular-nums" if n else "" for n in numeric]
                                     for _ in range(len(table))]}}


def group_choices(board: Board) -> list[tuple[str, str]]:
    """The switcher's choices: ``mini-v2 · tiny-lr3e-4 (25)`` (its submissions; ``mini · tiny (26, archived)``), by
    value ``protocol/models``."""
    return [(board.switcher_label(p, m), f"{p}/{m}") for p, m in board.groups]


def split_group(value: str | None) -> tuple[str | None, str | None]:
    protocol, _, models = (value or "").partition("/")
    return (protocol, models) if models else (None, None)


def build_app(root: Path, protocols: Mapping | None = None, model_pairs: Mapping | None = None,
              cache_dir: Path | None = None, admin: bool = False) -> gr.Blocks:
    """The board's app. ``admin``: a "reload submissions" button re-reads the submissions folder (seconds of server
    CPU for each press), for the host; without it no visitor's request can make the server do that."""
    state = {"board": load_board(root, protocols, model_pairs, cache_dir), "tables": {}}

    def board() -> Board:
        return state["board"]

    def palette() -> dict:
        return figures.colours(sorted(board().by_key))

    def group_table(group, category=ALL, source=ALL, validated_only=False, by="nts") -> pd.DataFrame:
        """The ranking of a group under the filters, computed once per board (a page load asks for it four
        times: the ranking, both pickers and the heatmaps' default)."""
        key = (group, category, source, bool(validated_only), by)
        if key not in state["tables"]:
            state["tables"][key] = ranking(board(), *split_group(group), category, source, "", validated_only, by)
        return state["tables"][key]

    def has_bon(group) -> bool:
        """Whether the group's protocol has best-of-N candidate sets: its BoN columns, ranking and picture."""
        return bool(split_group(group)[0]) and bool(group_table(group)["BoN NTS"].notna().any())

    def ranking_view(group, category, source, validated_only, by, columns):
        protocol, models = split_group(group)
        table = group_table(group, category, source, validated_only, by if has_bon(group) else "nts")
        where = "".join(f", {name} = {value}" for name, value in (("category", category), ("source", source))
                        if scope(value))
        summary = render.verdict_html(group_label(protocol, models), verdict(board(), table), where) + \
            render.context_html(context(board(), table)) if protocol else render.context_html([])
        view = shown(table, [*ALWAYS_SHOWN, *(columns or [])], board())
        return summary, render.ranking_html(view, csv_name(protocol or "none", models or "none", category, source,
                                                           validated_only))

    def keys_of(group) -> list[tuple[str, str]]:
        """The group's submissions as the pickers offer them: (title, key), in the ranking's order."""
        return [(title(board().by_key[k]), k) for k in shown_order(group_table(group))]

    def scatter_view(group, category, source, highlight, width):
        table = plots.id_vs_ood(board(), *split_group(group), category, source)
        shown_points = pd.DataFrame({"method": table["method"], "params": table["params"], "source": table["source"],
                                     "target": table["target"], "WRG": [fmt(v, signed=True) for v in table["wrg"]],
                                     "AOG": [fmt(v, signed=True) for v in table["aog"]],
                                     "NTS": [fmt(v, signed=True) for v in table["nts"]], "status": table["status"]})
        return figures.id_vs_ood(table, palette(), highlight or [], narrow(width)), frame(shown_points)

    def bon_scatter_view(group, category, source, width):
        points = plots.nts_vs_bon(group_table(group, category, source)) if split_group(group)[0] else pd.DataFrame()
        if points.empty:
            return figures.nts_vs_bon(pd.DataFrame(), palette(), narrow(width)), frame(pd.DataFrame())
        shown_points = pd.DataFrame({"method": points["method"], "params": points["params"],
                                     "NTS": [fmt(v, signed=True) for v in points["NTS"]],
                                     "BoN NTS": [fmt(v, signed=True) for v in points["BoN NTS"]],
                                     **{f"rank by {n}": ["" if pd.isna(v) else f"{v:.0f}"
                                                         for v in points[f"rank by {n}"]] for n in ("NTS", "BoN NTS")},
                                     "status": points["status"]})
        return figures.nts_vs_bon(points, palette(), narrow(width)), frame(shown_points)

    def matrix_view(group, submissions, metric, width):
        keys = [k for k in (submissions or []) if k in board().by_key]
        if not keys:
            return figures.empty("choose submissions"), frame(pd.DataFrame())
        tables = {title(board().by_key[k]): plots.matrices(board(), k, metric) for k in keys}
        scale = [v.key for v in board().in_group(*split_group(group))] or keys
        rows = [{"submission": name, "category": category, "source \\ target": source,
                 **{t: fmt(v, signed=True) for t, v in row.items()}}
                for name, blocks in tables.items() for category, table in blocks.items()
                for source, row in table.iterrows()]
        return (figures.heatmaps(tables, metric, plots.color_limit(board(), scale, metric), narrow(width)),
                frame(pd.DataFrame(rows)))

    def ablation_view(key, width):
        sweeps = plots.ablations(board())
        if not key or key not in sweeps:
            return figures.empty("no sweeps in this group: submit one method with several param settings"), \
                frame(pd.DataFrame())
        return figures.ablation(sweeps[key], key, narrow(width)), frame(plots.sweep_display(sweeps[key]))

    def sweeps_of(group) -> list[str]:
        return list(plots.ablations(board(), *split_group(group)))

    def unreadable_text() -> str:
        return "\n".join(f"{v.folder}: {v.errors[0] if v.errors else 'no cells'}" for v in board().unreadable)

    def names(registry: str, given: Mapping | None) -> list[str]:
        from bench.core import protocols as registries

        return sorted({*getattr(registries, registry).names(), *(given or {})})

    def on_group(group):
        """Everything tied to the shown group: filters back to all, pickers offering its submissions."""
        protocol, models = split_group(group)
        chosen = plots.heatmap_default(group_table(group)) if protocol else []
        sweeps = sweeps_of(group)
        return (gr.Dropdown(choices=filter_choices(group, "category"), value=ALL),
                gr.Dropdown(choices=filter_choices(group, "source"), value=ALL),
                gr.Dropdown(choices=keys_of(group), value=[]), gr.Dropdown(choices=keys_of(group), value=chosen),
                gr.Dropdown(choices=sweeps, value=sweeps[0] if sweeps else None),
                gr.Dropdown(value=protocol), cards.protocol_card(protocol, protocols) if protocol else "",
                gr.Dropdown(value=models), cards.model_pair_card(models, model_pairs, board()) if models else "",
                gr.Radio(value="nts", visible=has_bon(group)))

    def filter_choices(group, name) -> list[str]:
        from leaderboard.board import choices

        return choices(board(), *split_group(group))[name]

    def validate_upload(payload):
        path = uploaded_file(payload, demo.upload_file_set)
        try:
            report, view = check_upload(path, board(), protocols, model_pairs, cards.repository())
        finally:
            forget_upload(path, demo.upload_file_set)
        if view is None:
            return report, "<p>Nothing to show on the board: the upload could not be read as a submission.</p>", None
        group = view.groups[0]
        return report, render.preview_html(group_label(group.protocol, group.models)) + render.ranking_html(
            view, csv_name(group.protocol, group.models).replace(".csv", "-preview.csv"), "preview-ranking"), None

    groups = group_choices(board())
    first = groups[0][1] if groups else None
    html = dict(js_on_load=render.script(), apply_default_css=False)
    with gr.Blocks(title="ShiftBench leaderboard", analytics_enabled=False, fill_width=True) as demo:
        gr.Markdown(INTRO, elem_id="intro")
        gr.HTML(render.data_html(data_line(board(), protocols)), elem_id="data-box", apply_default_css=False)
        group = gr.Radio(groups, value=first, label="group (submissions)", elem_id="group")
        width = gr.Number(value=1440, visible=False)
        with gr.Tabs():
            with gr.Tab("Ranking", id="ranking"):
                summary = gr.HTML(elem_id="summary", apply_default_css=False)
                with gr.Accordion("Filters and columns", open=False, elem_id="columns-box"):
                    with gr.Row(equal_height=True):
                        category = gr.Dropdown(filter_choices(first, "category"), value=ALL, label="category",
                                               elem_id="f-category", min_width=140)
                        source = gr.Dropdown(filter_choices(first, "source"), value=ALL, label="source",
                                             elem_id="f-source", min_width=140)
                        with gr.Column(scale=1, min_width=150):
                            validated_only = gr.Checkbox(label="validated only", value=False, elem_id="f-validated")
                            reload = gr.Button("reload submissions", elem_id="reload", size="sm") if admin else None
                        rank_by = gr.Radio([("NTS", "nts"), ("BoN NTS", "bon-nts")], value="nts", label="rank by",
                                           elem_id="rank-by", visible=has_bon(first), min_width=140)
                    columns = gr.CheckboxGroup(CHOOSABLE, value=[c for c in DEFAULT_COLUMNS if c in CHOOSABLE],
                                               label="columns (rank and method are always shown; the compact default "
                                                     "is ticked; each shows where it applies: the BoN ones where the "
                                                     "protocol has best-of-N candidate sets, Δ 95% (runs) and runs where "
                                                     "it seeds every source on its own, Δ t 95% (seeds) where not)",
                                               elem_id="columns")
                table = gr.HTML(elem_id="ranking-board", **html)
                unreadable = gr.Textbox(unreadable_text(), label="submissions that could not be read", lines=2,
                                        interactive=False, elem_id="unreadable", visible=bool(board().unreadable))
            with gr.Tab("Source × target", id="matrix"):
                gr.Markdown("NTS or AOG per source (rows) and target (columns) within each category, mean over seeds, "
                            "on one colour scale centred on 0 for the whole group. Shown first: the ceiling, the top "
                            f"{plots.HEATMAP_TOP} and naive; choose others below. The diagonal is empty: a source is "
                            "not its own target.")
                with gr.Row():
                    submissions = gr.Dropdown(keys_of(first), value=[], multiselect=True,
                                              label="submissions of this group", elem_id="m-submission", scale=4)
                    metric = gr.Radio([("NTS", "nts"), ("AOG", "aog")], value="nts", label="metric", scale=1)
                heatmap = gr.Plot(elem_id="heatmap", show_label=False)
                matrix_table = gr.Dataframe(interactive=False, label="the same numbers", elem_id="matrix-table")
            with gr.Tab("ID vs OOD", id="scatter"):
                gr.Markdown("Each point is one submission on one source → target cell (mean over seeds), one panel per "
                            "category. On the dashed diagonal the in-distribution gain (WRG) carries over to the "
                            "sibling dataset (AOG); below it, it does not survive the shift. Uses the ranking's "
                            "filters; highlight submissions to grey out the others.")
                highlight = gr.Dropdown(keys_of(first), value=[], multiselect=True, label="highlight",
                                        elem_id="highlight")
                scatter = gr.Plot(elem_id="scatter", show_label=False)
                scatter_table = gr.Dataframe(interactive=False, label="the points")
            with gr.Tab("NTS vs BoN NTS", id="bon"):
                gr.Markdown("Where the protocol has best-of-N candidate sets: each point is one submission, its NTS on "
                            "pairs (x) against its BoN NTS (y), means over cells and seeds. On the dashed diagonal the "
                            "two are equal; the legend gives each method's rank by NTS and by BoN NTS, so a method the "
                            "two metrics rank differently shows there. Uses the ranking's filters.")
                bon_scatter = gr.Plot(elem_id="nts-vs-bon", show_label=False)
                bon_table = gr.Dataframe(interactive=False, label="the points")
            with gr.Tab("Ablations", id="ablations"):
                sweeps = sweeps_of(first)
                sweep = gr.Dropdown(sweeps, value=sweeps[0] if sweeps else None, label="method with several settings",
                                    elem_id="sweep")
                ablation_plot = gr.Plot(elem_id="ablation", show_label=False)
                ablation_table = gr.Dataframe(interactive=False)
            with gr.Tab("Protocol", id="protocol"):
                protocol_names = sorted({*names("PROTOCOLS", protocols), *(p for p, _ in board().groups)})
                pair_names = sorted({*names("MODEL_PAIRS", model_pairs), *(m for _, m in board().groups)})
                with gr.Row(equal_height=False):
                    with gr.Column(min_width=300):
                        card_protocol = gr.Dropdown(protocol_names, label="protocol", value=split_group(first)[0])
                        card = gr.Markdown(elem_id="protocol-card")
                    with gr.Column(min_width=300):
                        card_models = gr.Dropdown(pair_names, label="model pair", value=split_group(first)[1])
                        models_card = gr.Markdown(elem_id="model-card")
            with gr.Tab("About", id="about"):
                gr.Markdown(cards.about_markdown(), elem_id="about-text")
            with gr.Tab("Submit", id="submit"):
                gr.Markdown(f"Upload a submission folder as a .zip (`python -m zipfile -c sub.zip FOLDER/`; at most "
                            f"{size_text(MAX_SUBMISSION_BYTES)} zipped and unzipped, and {MAX_FILES:,} files; what macOS "
                            "Finder adds, `__MACOSX/` and `.DS_Store`, is skipped). It is checked exactly as `bench "
                            "validate` does — only JSON and gzip'd CSV are read, nothing in it is run — and its group is "
                            "shown below as it would be with it. **Nothing of it is kept:** it is unpacked into a "
                            "temporary folder removed after the check, and the uploaded file is deleted from the "
                            "server as soon as it is checked.")
                upload = gr.File(label="submission .zip", file_types=[".zip"], type="filepath", elem_id="upload")
                report = gr.Textbox(label="validation", lines=8, interactive=False, elem_id="upload-report")
                preview = gr.HTML(elem_id="upload-preview", **html)

        ranking_inputs = [group, category, source, validated_only, rank_by, columns]
        scatter_inputs = [group, category, source, highlight, width]
        matrix_inputs = [group, submissions, metric, width]
        tied = [category, source, highlight, submissions, sweep, card_protocol, card, card_models, models_card, rank_by]
        bon_inputs = [group, category, source, width]
        pictures = [(scatter_view, scatter_inputs, [scatter, scatter_table]),
                    (bon_scatter_view, bon_inputs, [bon_scatter, bon_table]),
                    (matrix_view, matrix_inputs, [heatmap, matrix_table]),
                    (ablation_view, [sweep, width], [ablation_plot, ablation_table])]

        def draw_all(event):
            for fn, inputs, outputs in pictures:
                event = event.then(fn, inputs, outputs, show_progress="hidden")
            return event

        # .input: a reader's choice (on_group resets the filters itself); .change: what only a reader changes
        for control, event in ((category, "input"), (source, "input"), (validated_only, "change"), (rank_by, "input"),
                               (columns, "change")):
            getattr(control, event)(ranking_view, ranking_inputs, [summary, table], show_progress="hidden")
        for control in (category, source, highlight):
            control.input(scatter_view, scatter_inputs, [scatter, scatter_table])
        for control in (category, source):
            control.input(bon_scatter_view, bon_inputs, [bon_scatter, bon_table])
        for control in (submissions, metric):
            control.input(matrix_view, matrix_inputs, [heatmap, matrix_table])
        sweep.input(ablation_view, [sweep, width], [ablation_plot, ablation_table])
        card_protocol.input(lambda name: cards.protocol_card(name, protocols), card_protocol, card)
        card_models.input(lambda name: cards.model_pair_card(name, model_pairs, board()), card_models, models_card)
        upload.upload(validate_upload, upload, [report, preview, upload], preprocess=False)
        draw_all(group.input(on_group, group, tied).then(ranking_view, ranking_inputs, [summary, table],
                                                        show_progress="hidden"))

        def do_reload(current):
            state["board"], state["tables"] = load_board(root, protocols, model_pairs, cache_dir), {}
            choices = group_choices(board())
            value = current if current in {v for _, v in choices} else (choices[0][1] if choices else None)
            return (gr.Radio(choices=choices, value=value),
                    gr.Textbox(unreadable_text(), visible=bool(board().unreadable)))

        if reload is not None:   # an event only where the button is: none to call from the API otherwise
            draw_all(reload.click(do_reload, group, [group, unreadable]).then(on_group, group, tied).then(
                ranking_view, ranking_inputs, [summary, table], show_progress="hidden"))
        # The viewport's width first (the pictures' layout depends on it), then the group's views.
        draw_all(demo.load(None, None, width, js="() => window.innerWidth").then(on_group, group, tied).then(
            ranking_view, ranking_inputs, [summary, table], show_progress="hidden"))
    demo.current_board = board   # for the routes added at launch (serve)
    return demo


def narrow(width) -> bool:
    return bool(width) and float(width) < NARROW


def _serve_code(demo: gr.Blocks) -> None:
    """``code/<file>.txt``: the source of each built-in method on the board, as text, for its link. Only
    the files of methods on the board, by their name; nothing else of the machine is reachable."""
    from fastapi.responses import PlainTextResponse, Response

    def files() -> dict[str, Path]:
        found = {}
        for v in demo.current_board().entries:
            code = recorded_code(v.submission["method"].get("origin"))
            if code is not None:
                found[Path(code.url).name] = code.path
        return found

    async def source(name: str) -> Response:
        path = files().get(name)
        if path is None:
            return PlainTextResponse("not a method source on this board", status_code=404)
        return PlainTextResponse(path.read_text(encoding="utf-8"))

    demo.app.add_api_route("/code/{name}", source, methods=["GET"])


def serve(root: Path, host: str = "127.0.0.1", port: int | None = None, protocols: Mapping | None = None,
          model_pairs: Mapping | None = None, block: bool = True, cache_dir: Path | None = None,
          admin: bool = False) -> gr.Blocks:
    """Build and launch the app; with ``block=False`` it serves from a background thread (tests)."""
    cards.repository()   # a bad $SHIFTBENCH_REPOSITORY stops here, with its fix, not on the first page
    demo = build_app(root, protocols, model_pairs, cache_dir, admin)
    demo.launch(server_name=host, server_port=port, prevent_thread_lock=True, quiet=not block, share=False,
                max_file_size=MAX_SUBMISSION_BYTES, theme=theme(), css=render.css(), head=APP_HEAD, show_error=True,
                footer_links=[])
    _serve_code(demo)
    if block:
        demo.block_thread()
    return demo

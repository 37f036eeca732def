"""``bench leaderboard``: the Gradio app over ``leaderboard.core``.

Tabs: the ranking (what was run, filters, live search, column choice, sorting on the headers, CSV),
source x target heatmaps on one colour scale, the ID-vs-OOD picture, ablations when sweeps exist, the
protocol and model-pair cards, About, and a submit tab that validates an uploaded .zip (unpacked
with ``bench.submissions.upload.extract_upload``, never executed) and shows the board as it would be.

Submission text reaches the page only as text: the ranking and the context line are rendered by
``leaderboard.render`` (jinja2 with autoescape) into ``gr.HTML``, and the other tables are Dataframes
of plain strings; no Markdown component shows submission text (the model-pair card escapes it).
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import Mapping

import pandas as pd

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no calls home from a leaderboard
import gradio as gr  # noqa: E402

from bench.errors import BenchError  # noqa: E402
from bench.report import fmt  # noqa: E402
from bench.submissions.check import validate_submission  # noqa: E402
from bench.submissions.limits import MAX_FILES, MAX_SUBMISSION_BYTES, UPLOAD_TIME_BUDGET_S  # noqa: E402
from bench.submissions.tree import check_teachers  # noqa: E402
from bench.submissions.upload import extract_upload, size_text  # noqa: E402
from leaderboard import core, figures, render  # noqa: E402

INTRO = """# ShiftBench leaderboard
Weak-to-strong reward models under preference shift: a strong student trained on a weak teacher's
labels, scored on its source dataset (ID) and on the sibling datasets (OOD). Methods are ranked by
**NTS**, the gain over the teacher that survives the shift. Every number of a validated row recomputes
from its per-pair scores (`bench validate`). Definitions: hover a column's header, or the About tab.
"""
ALWAYS_SHOWN = ["rank", "method"]
CHOOSABLE = [c.name for c in core.BOARD_COLUMNS if c.name not in ALWAYS_SHOWN]


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


def upload_report(validation, upload_name: str) -> str:
    lines = [f"{upload_name}: " + ("VALID — passes bench validate" if validation.ok
                                   else f"REJECTED — {len(validation.errors)} problem(s)")]
    lines += [f"  error: {p}" for p in validation.errors[:50]]
    lines += [f"  warning: {p}" for p in validation.warnings[:20]]
    if validation.ok:
        lines.append("The board below is the board with it; to publish it, open a pull request adding the folder "
                     "under submissions/.")
    return "\n".join(lines)


def check_upload(path: str | None, board: core.Board, protocols: Mapping | None = None,
                 model_pairs: Mapping | None = None) -> tuple[str, core.View | None]:
    """Validate an uploaded .zip exactly as bench validate does; the report, and the ranking of its
    protocol x model pair as it would be with the upload (in place of the submission in its folder),
    or None when nothing of it could be read."""
    if not path:
        return "no file", None
    name = Path(path).name
    if not Path(path).is_file():   # the same bytes uploaded twice at once share one file, deleted after the first check
        return f"{name}: not found on the server any more; upload it again", None
    with tempfile.TemporaryDirectory(prefix="shiftbench-upload-") as tmp:
        try:
            folder = extract_upload(Path(path), Path(tmp) / "submission")
        except BenchError as error:
            return f"{name}: REJECTED — {error}", None
        validation = validate_submission(folder, protocols, model_pairs, time_budget_s=UPLOAD_TIME_BUDGET_S)
    check_teachers([validation], beside=board.validations)   # the board's naive, where no reference is committed
    report = upload_report(validation, name)
    if validation.submission is None or not validation.cells:
        return report, None
    if core.location(validation) in board.by_key:
        report += (f"\nIt would replace {core.location(validation)} (the same method, params, model pair and "
                   "protocol): the board below shows it in that submission's place.")
    validation.name = f"{core.UPLOAD_PREFIX}{name}"
    preview = board.with_entry(validation)
    s = validation.submission
    return report, core.shown(core.ranking(preview, s["protocol"]["name"], s["models"]["name"]), board=preview)


def uploaded_file(payload, uploaded: set) -> str | None:
    """The server path of the file an upload event names. The event skips Gradio's preprocessing
    (``preprocess=False``): for a file path, gr.File's leaves an empty temporary file in the upload
    folder on every upload (gradio/components/file.py, ``_process_single_file``), so something of
    every upload would stay. The raw payload comes from the browser, so its path is used only when
    Gradio's upload route wrote that file (``Blocks.upload_file_set``)."""
    path = payload.get("path") if isinstance(payload, dict) else None
    return path if isinstance(path, str) and path in uploaded else None


def forget_upload(path: str | None, uploaded: set) -> None:
    """Delete an uploaded file, and its folder when that is left empty, from Gradio's upload folder once
    it is checked: nothing of an upload is kept. Only inside that folder: a path from elsewhere is
    not ours to delete."""
    if not path:
        return
    from gradio.utils import get_upload_folder

    uploaded.discard(path)
    upload_root, file = Path(get_upload_folder()).resolve(), Path(path).resolve()
    if upload_root not in file.parents:
        return
    file.unlink(missing_ok=True)
    folder = file.parent
    while folder != upload_root and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def build_app(root: Path, protocols: Mapping | None = None, model_pairs: Mapping | None = None,
              cache_dir: Path | None = None) -> gr.Blocks:
    state = {"board": core.load_board(root, protocols, model_pairs, cache_dir)}

    def board() -> core.Board:
        return state["board"]

    def palette() -> dict:
        return figures.colours(sorted(board().by_key))

    def ranking_view(protocol, models, category, source, search, validated_only, columns):
        table = core.ranking(board(), protocol, models, category, source, search or "", validated_only)
        view = core.shown(table, [*ALWAYS_SHOWN, *(columns or [])], board())
        return render.context_html(core.context(board(), table)), render.ranking_html(view)

    def scatter_view(protocol, models, category, source, highlight):
        table = core.id_vs_ood(board(), protocol, models, category, source)
        shown = pd.DataFrame({"method": table["method"], "params": table["params"], "source": table["source"],
                              "target": table["target"], "WRG": [fmt(v, signed=True) for v in table["wrg"]],
                              "AOG": [fmt(v, signed=True) for v in table["aog"]],
                              "NTS": [fmt(v, signed=True) for v in table["nts"]], "status": table["status"]})
        return figures.id_vs_ood(table, palette(), highlight or []), frame(shown)

    def matrix_view(submissions, metric):
        keys = [k for k in (submissions or []) if k in board().by_key]
        if not keys:
            return figures.empty("choose submissions"), frame(pd.DataFrame())
        tables = {core.title(board().by_key[k]): core.matrix(board(), k, metric) for k in keys}
        groups = {(board().by_key[k].submission["protocol"]["name"], board().by_key[k].submission["models"]["name"])
                  for k in keys}
        scale_keys = [v.key for v in board().entries if (v.submission["protocol"]["name"],
                                                         v.submission["models"]["name"]) in groups]
        rows = [{"submission": name, "source \\ target": source, **{t: fmt(v, signed=True) for t, v in row.items()}}
                for name, table in tables.items() for source, row in table.iterrows()]
        return figures.heatmaps(tables, metric, core.color_limit(board(), scale_keys, metric)), frame(pd.DataFrame(rows))

    def ablation_view(key):
        sweeps = core.ablations(board())
        if not key or key not in sweeps:
            return figures.empty("no sweeps: submit one method with several param settings"), frame(pd.DataFrame())
        return figures.ablation(sweeps[key], key), frame(core.sweep_display(sweeps[key]))

    def unreadable_text() -> str:
        return "\n".join(f"{v.folder}: {v.errors[0] if v.errors else 'no cells'}" for v in board().unreadable)

    def names(registry: str, given: Mapping | None) -> list[str]:
        from bench import protocols as registries

        return sorted({*getattr(registries, registry).names(), *(given or {})})

    def validate_upload(payload):
        path = uploaded_file(payload, demo.upload_file_set)
        try:
            report, view = check_upload(path, board(), protocols, model_pairs)
        finally:
            forget_upload(path, demo.upload_file_set)
        shown = render.ranking_html(view, "shiftbench-preview.csv") if view is not None else \
            "<p>Nothing to show on the board: the upload could not be read as a submission.</p>"
        return report, shown, None

    def first_group() -> list[str]:
        """The submissions of the first protocol x model pair, as the ranking orders them."""
        table = core.ranking(board())
        if table.empty:
            return []
        protocol, models = table.iloc[0][["protocol", "model pair"]]
        return core.shown_order(table[(table["protocol"] == protocol) & (table["model pair"] == models)])

    initial = first_group()   # computes the ranking and its bootstrap once, for the first page to reuse
    html = dict(js_on_load=render.script(), apply_default_css=False)
    with gr.Blocks(title="ShiftBench leaderboard", analytics_enabled=False, fill_width=True) as demo:
        gr.Markdown(INTRO)
        filters = core.choices(board())
        with gr.Tabs():
            with gr.Tab("Ranking", id="ranking"):
                context = gr.HTML(elem_id="context", apply_default_css=False)
                with gr.Row(equal_height=True):
                    protocol = gr.Dropdown(filters["protocol"], value=core.ALL, label="protocol", elem_id="f-protocol",
                                           min_width=120)
                    models = gr.Dropdown(filters["models"], value=core.ALL, label="model pair", elem_id="f-models",
                                         min_width=120)
                    category = gr.Dropdown(filters["category"], value=core.ALL, label="category", elem_id="f-category",
                                           min_width=120)
                    source = gr.Dropdown(filters["source"], value=core.ALL, label="source", elem_id="f-source",
                                         min_width=120)
                    search = gr.Textbox(label="search (as you type)", placeholder="method, params, submitter",
                                        elem_id="f-search", scale=2, min_width=200)
                    with gr.Column(scale=1, min_width=150):
                        validated_only = gr.Checkbox(label="validated only", value=False, elem_id="f-validated")
                        reload = gr.Button("reload submissions", elem_id="reload", size="sm")
                with gr.Accordion(f"Columns: the compact {len(core.DEFAULT_COLUMNS)} by default; "
                                  f"{len(core.BOARD_COLUMNS) - len(core.DEFAULT_COLUMNS)} more to choose from",
                                  open=False, elem_id="columns-box"):
                    columns = gr.CheckboxGroup(CHOOSABLE, value=[c for c in core.DEFAULT_COLUMNS if c in CHOOSABLE],
                                               label="columns (rank and method are always shown)", elem_id="columns")
                table = gr.HTML(elem_id="ranking-board", **html)
                unreadable = gr.Textbox(unreadable_text(), label="submissions that could not be read", lines=2,
                                        interactive=False, elem_id="unreadable", visible=bool(board().unreadable))
            with gr.Tab("Source × target", id="matrix"):
                gr.Markdown("NTS or AOG per source (rows) and target (columns), mean over seeds: one colour scale, "
                            "centred on 0, for every panel of a protocol and model pair, so the same colour is the "
                            "same number. The diagonal is empty: a source is not its own target.")
                with gr.Row():
                    submissions = gr.Dropdown([v.key for v in board().entries], value=initial, multiselect=True,
                                              label="submissions", elem_id="m-submission", scale=4)
                    metric = gr.Radio([("NTS", "nts"), ("AOG", "aog")], value="nts", label="metric", scale=1)
                heatmap = gr.Plot(elem_id="heatmap", show_label=False)
                matrix_table = gr.Dataframe(interactive=False, label="the same numbers", elem_id="matrix-table")
            with gr.Tab("ID vs OOD", id="scatter"):
                gr.Markdown("Each point is one submission on one source → target cell (mean over seeds), one panel per "
                            "category. On the dashed diagonal the in-distribution gain (WRG) carries over to the "
                            "sibling dataset (AOG); below it, the gain seen ID does not survive the shift. Uses the "
                            "ranking's filters; highlight submissions to grey out the others.")
                highlight = gr.Dropdown([v.key for v in board().entries], value=[], multiselect=True,
                                        label="highlight", elem_id="highlight")
                scatter = gr.Plot(elem_id="scatter", show_label=False)
                scatter_table = gr.Dataframe(interactive=False, label="the points")
            with gr.Tab("Ablations", id="ablations"):
                sweeps = list(core.ablations(board()))
                sweep = gr.Dropdown(sweeps, value=sweeps[0] if sweeps else None, label="method with several settings")
                ablation_plot = gr.Plot(elem_id="ablation", show_label=False)
                ablation_table = gr.Dataframe(interactive=False)
            with gr.Tab("Protocol", id="protocol"):
                with gr.Row(equal_height=False):
                    with gr.Column():
                        protocol_names = sorted({*names("PROTOCOLS", protocols), *(   # with capped ones submitted
                            v.submission["protocol"]["name"] for v in board().entries if v.ok)})
                        card_protocol = gr.Dropdown(protocol_names, label="protocol",
                                                    value="mini" if "mini" in protocol_names else protocol_names[0])
                        card = gr.Markdown(core.protocol_card(card_protocol.value, protocols), elem_id="protocol-card")
                    with gr.Column():
                        pair_names = sorted({*names("MODEL_PAIRS", model_pairs), *(v.submission["models"]["name"]
                                                                                  for v in board().entries)})
                        shown_pair = initial and board().by_key[initial[0]].submission["models"]["name"]
                        card_models = gr.Dropdown(pair_names, label="model pair",
                                                  value=shown_pair or ("tiny" if "tiny" in pair_names else pair_names[0]))
                        models_card = gr.Markdown(core.model_pair_card(card_models.value, model_pairs, board()),
                                                  elem_id="model-card")
            with gr.Tab("About", id="about"):
                gr.Markdown(core.about_markdown(), elem_id="about-text")
            with gr.Tab("Submit", id="submit"):
                gr.Markdown(f"Upload a submission folder as a .zip (`python -m zipfile -c sub.zip FOLDER/`; at most "
                            f"{size_text(MAX_SUBMISSION_BYTES)} zipped and unzipped, and {MAX_FILES:,} files; what macOS "
                            "Finder adds, `__MACOSX/` and `.DS_Store`, is skipped). It is checked exactly as `bench "
                            "validate` does — only JSON and gzip'd CSV are read, nothing in it is run — and the board "
                            "below shows the ranking as it would be with it. **Nothing of it is kept:** it is unpacked "
                            "into a temporary folder removed after the check, and the uploaded file is deleted from "
                            "the server as soon as it is checked.")
                upload = gr.File(label="submission .zip", file_types=[".zip"], type="filepath", elem_id="upload")
                report = gr.Textbox(label="validation", lines=8, interactive=False, elem_id="upload-report")
                preview = gr.HTML(elem_id="upload-preview", **html)

        ranking_inputs = [protocol, models, category, source, search, validated_only, columns]
        scatter_inputs = [protocol, models, category, source, highlight]
        for control in (protocol, models, category, source, validated_only, columns):
            control.change(ranking_view, ranking_inputs, [context, table], show_progress="hidden")
        search.input(ranking_view, ranking_inputs, [context, table], trigger_mode="always_last", show_progress="hidden")
        for control in scatter_inputs:
            control.change(scatter_view, scatter_inputs, [scatter, scatter_table])
        submissions.change(matrix_view, [submissions, metric], [heatmap, matrix_table])
        metric.change(matrix_view, [submissions, metric], [heatmap, matrix_table])
        sweep.change(ablation_view, sweep, [ablation_plot, ablation_table])
        card_protocol.change(lambda name: core.protocol_card(name, protocols), card_protocol, card)
        card_models.change(lambda name: core.model_pair_card(name, model_pairs, board()), card_models, models_card)
        upload.upload(validate_upload, upload, [report, preview, upload], preprocess=False)

        def do_reload(*values):
            state["board"] = core.load_board(root, protocols, model_pairs, cache_dir)
            fresh = core.choices(board())
            keys = [v.key for v in board().entries]
            sweeps = list(core.ablations(board()))
            return (*ranking_view(*values), gr.Textbox(unreadable_text(), visible=bool(board().unreadable)),
                    *(gr.Dropdown(choices=fresh[n]) for n in ("protocol", "models", "category", "source")),
                    gr.Dropdown(choices=keys, value=first_group()), gr.Dropdown(choices=keys, value=[]),
                    gr.Dropdown(choices=sweeps, value=sweeps[0] if sweeps else None))

        reload.click(do_reload, ranking_inputs, [context, table, unreadable, protocol, models, category, source,
                                                  submissions, highlight, sweep])
        demo.load(ranking_view, ranking_inputs, [context, table])
        demo.load(scatter_view, scatter_inputs, [scatter, scatter_table])
        demo.load(matrix_view, [submissions, metric], [heatmap, matrix_table])
        demo.load(ablation_view, sweep, [ablation_plot, ablation_table])
    demo.current_board = board   # for the routes added at launch (serve)
    return demo


def _serve_code(demo: gr.Blocks) -> None:
    """``code/<file>.txt``: the source of each built-in method on the board, as text, for its link. Only
    the files of methods on the board, by their name; nothing else of the machine is reachable."""
    from fastapi.responses import PlainTextResponse, Response

    def files() -> dict[str, Path]:
        found = {}
        for v in demo.current_board().entries:
            origin = v.submission["method"].get("origin")
            code = core.method_code(origin.get("module", ""), origin.get("sha256")) if isinstance(origin, dict) \
                and origin.get("kind") == "built-in" else None
            if code is not None:
                found[Path(code.url).name] = code.path
        return found

    async def source(name: str) -> Response:
        path = files().get(name)
        if path is None:
            return PlainTextResponse("not a method source on this board", status_code=404)
        return PlainTextResponse(path.read_text(encoding="utf-8"))

    demo.app.add_api_route("/code/{name}", source, methods=["GET"])


def private_upload_folder() -> Path:
    """Gradio keeps uploads under $GRADIO_TEMP_DIR (default: the system's temp folder, shared and never
    emptied). Unless the caller chose one, the board gets its own, removed when the process exits, so
    nothing uploaded outlives the server even if a check is interrupted."""
    if os.environ.get("GRADIO_TEMP_DIR"):
        return Path(os.environ["GRADIO_TEMP_DIR"])
    folder = Path(tempfile.mkdtemp(prefix="shiftbench-board-uploads-"))
    os.environ["GRADIO_TEMP_DIR"] = str(folder)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def serve(root: Path, host: str = "127.0.0.1", port: int | None = None, protocols: Mapping | None = None,
          model_pairs: Mapping | None = None, block: bool = True, cache_dir: Path | None = None) -> gr.Blocks:
    """Build and launch the app; with ``block=False`` it serves from a background thread (tests)."""
    private_upload_folder()
    demo = build_app(root, protocols, model_pairs, cache_dir)
    demo.launch(server_name=host, server_port=port, prevent_thread_lock=True, quiet=not block, share=False,
                max_file_size=MAX_SUBMISSION_BYTES, theme=theme(), css=render.css(), show_error=True, footer_links=[])
    _serve_code(demo)
    if block:
        demo.block_thread()
    return demo

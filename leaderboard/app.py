"""``bench leaderboard``: the Gradio app over ``leaderboard.core``.

Tabs: the ranking (filters, search), per-method source x target heatmaps, the ID-vs-OOD picture,
λ/layer ablations when sweeps exist, the protocol card, and a submit tab that validates an uploaded
.zip (size-limited, unpacked with ``bench.submissions.upload.extract_upload``, never executed). Submission
text is only ever shown in Dataframe cells and Textboxes, which display it as text, never markup.
Built on ``gr.Dataframe`` (the ``gradio_leaderboard`` component is reported broken on Gradio 6).
"""
from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import Mapping

import pandas as pd

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no calls home from a leaderboard
import gradio as gr  # noqa: E402

from bench.errors import BenchError  # noqa: E402
from bench.submissions.check import validate_submission  # noqa: E402
from bench.submissions.limits import MAX_SUBMISSION_BYTES, UPLOAD_TIME_BUDGET_S  # noqa: E402
from bench.submissions.upload import extract_upload  # noqa: E402
from leaderboard import core, figures  # noqa: E402

INTRO = """# ShiftBench leaderboard
Weak-to-strong reward models under preference shift. Methods are ranked by **NTS** (net transfer
score: the gain over the weak teacher on sibling datasets, less any loss on the source), mean over
every source → target cell and seed of the protocol; ± is the spread over seeds. **NTS 95% CI** is a
hierarchical bootstrap over seeds and test pairs; **rank 95%** the range of ranks over bootstrap samples;
**Δ NTS vs naive** is paired (same seeds, teacher and test pairs), with its bootstrap interval and the
t-interval over the per-seed differences; **decided** says whether that t-interval excludes 0 (with three
seeds the bootstrap alone is too optimistic: docs/statistics.md). Every number of a
validated row recomputes from its per-pair scores (`bench validate`); a row marked NOT VALIDATED failed
that check and shows what the submission claims.
"""
NUMBER_COLUMNS = ["NTS", "NTS ±", "Δ NTS vs naive", "AOG", "AOG ±", "WRG", "WRG ±", "ID acc", "OOD acc", "PGR ID",
                  "PGR OOD", "misfit"]


def theme() -> gr.themes.Base:
    """The default look with the system's fonts, so the page loads with no request off this machine."""
    return gr.themes.Default(font=["system-ui", "sans-serif"], font_mono=["ui-monospace", "monospace"])


def for_display(table: pd.DataFrame) -> pd.DataFrame:
    """Numbers rounded for reading; blanks (not NaN) where a number does not exist."""
    table = table.copy()
    for column in [c for c in NUMBER_COLUMNS if c in table]:
        table[column] = [None if v is None or v == "" or math.isnan(v) else round(float(v), 2) for v in table[column]]
    return table.astype(object).where(table.notna(), None)


def upload_report(validation, upload_name: str) -> str:
    lines = [f"{upload_name}: " + ("VALID — passes bench validate" if validation.ok
                                   else f"REJECTED — {len(validation.errors)} problem(s)")]
    lines += [f"  error: {p}" for p in validation.errors[:50]]
    lines += [f"  warning: {p}" for p in validation.warnings[:20]]
    if validation.ok:
        lines.append("Preview below; to publish it, open a pull request adding the folder under submissions/.")
    return "\n".join(lines)


def check_upload(path: str | None, board: core.Board, protocols: Mapping | None = None,
                 model_pairs: Mapping | None = None) -> tuple[str, pd.DataFrame]:
    """Validate an uploaded .zip exactly as bench validate does; the report, and the ranking of its
    protocol x model pair with the upload in it (marked, not saved)."""
    empty = pd.DataFrame(columns=core.RANKING_COLUMNS)
    if not path:
        return "no file", empty
    name = Path(path).name
    if Path(path).stat().st_size > MAX_SUBMISSION_BYTES:
        return f"{name}: REJECTED — over the size limit of {MAX_SUBMISSION_BYTES} bytes", empty
    with tempfile.TemporaryDirectory(prefix="shiftbench-upload-") as tmp:
        try:
            folder = extract_upload(Path(path), Path(tmp) / "submission")
        except BenchError as error:
            return f"{name}: REJECTED — {error}", empty
        validation = validate_submission(folder, protocols, model_pairs, time_budget_s=UPLOAD_TIME_BUDGET_S)
    report = upload_report(validation, name)
    if validation.submission is None or not validation.cells:
        return report, empty
    s = validation.submission
    same = [v.key for v in sorted(board.entries, key=lambda v: not v.ok) if v.submission["protocol"] == s["protocol"] and v.submission["models"]["name"]
            == s["models"]["name"] and v.submission["method"]["name"] == s["method"]["name"]
            and v.submission["method"]["params"] == s["method"]["params"]]
    if same:
        report += f"\nNote: {same[0]} has the same method, params, model pair and protocol; this one would replace it."
    validation.name = f"upload: {name}"
    preview = core.ranking(board.with_entry(validation), s["protocol"]["name"], s["models"]["name"])
    uploaded = preview["submission"] == validation.key
    preview.loc[uploaded, "status"] = "UPLOADED (preview, not saved); " + preview.loc[uploaded, "status"]
    return report, for_display(preview)


def build_app(root: Path, protocols: Mapping | None = None, model_pairs: Mapping | None = None) -> gr.Blocks:
    state = {"board": core.load_board(root, protocols, model_pairs)}

    def board() -> core.Board:
        return state["board"]

    def ranking_view(protocol, models, category, source, search, validated_only):
        return for_display(core.ranking(board(), protocol, models, category, source, search or "", validated_only))

    def scatter_view(protocol, models, category, source):
        table = core.id_vs_ood(board(), protocol, models, category, source)
        return figures.id_vs_ood(table), for_display(table.rename(columns={"wrg": "WRG", "aog": "AOG", "nts": "NTS"})
                                                     .drop(columns="submission"))

    def matrix_view(submission, metric):
        if not submission:
            return figures.empty("no submissions"), pd.DataFrame()
        table = core.matrix(board(), submission, metric)
        shown = table.round(2).reset_index().rename(columns={"source": "source \\ target"})
        return figures.heatmap(table, f"{submission}: {core.METRICS[metric]}", metric), shown

    def ablation_view(key):
        tables = core.ablations(board())
        if not key or key not in tables:
            return figures.empty("no sweeps: submit one method with several param settings"), pd.DataFrame()
        return figures.ablation(tables[key], key), for_display(tables[key])

    def unreadable_text() -> str:
        return "\n".join(f"{v.folder}: {v.errors[0] if v.errors else 'no cells'}" for v in board().unreadable) or \
            "(none)"

    def protocol_names() -> list[str]:
        from bench.protocols import PROTOCOLS

        return sorted({*PROTOCOLS.names(), *(protocols or {})})

    def validate_upload(path):
        return check_upload(path, board(), protocols, model_pairs)

    with gr.Blocks(title="ShiftBench leaderboard", analytics_enabled=False, fill_width=True) as demo:
        gr.Markdown(INTRO)
        filters = core.choices(board())
        with gr.Tabs():
            with gr.Tab("Ranking", id="ranking"):
                with gr.Row():
                    protocol = gr.Dropdown(filters["protocol"], value=core.ALL, label="protocol", elem_id="f-protocol")
                    models = gr.Dropdown(filters["models"], value=core.ALL, label="model pair", elem_id="f-models")
                    category = gr.Dropdown(filters["category"], value=core.ALL, label="category", elem_id="f-category")
                    source = gr.Dropdown(filters["source"], value=core.ALL, label="source", elem_id="f-source")
                with gr.Row():
                    search = gr.Textbox(label="search", placeholder="method, params, submitter", elem_id="f-search")
                    validated_only = gr.Checkbox(label="validated only", value=False, elem_id="f-validated")
                    reload = gr.Button("reload submissions", elem_id="reload")
                table = gr.Dataframe(ranking_view(core.ALL, core.ALL, core.ALL, core.ALL, "", False),
                                     interactive=False, wrap=False, elem_id="ranking-table", max_height=800,
                                     label="methods by mean NTS (filters narrow the cells every number is computed over)")
                unreadable = gr.Textbox(unreadable_text(), label="submissions that could not be read",
                                        lines=2, interactive=False, elem_id="unreadable")
            with gr.Tab("Source × target", id="matrix"):
                keys = [v.key for v in board().entries]
                with gr.Row():
                    submission = gr.Dropdown(keys, value=keys[0] if keys else None, label="submission",
                                             elem_id="m-submission")
                    metric = gr.Radio([("NTS", "nts"), ("AOG", "aog")], value="nts", label="metric")
                heatmap = gr.Plot(label="source × target, mean over seeds", elem_id="heatmap")
                matrix_table = gr.Dataframe(interactive=False, label="the same numbers")
            with gr.Tab("ID vs OOD", id="scatter"):
                gr.Markdown("Each point is one method on one source → target cell (mean over seeds). On the "
                            "dashed diagonal the in-distribution gain (WRG) carries over to the sibling dataset "
                            "(AOG); below it, the gain seen ID does not survive the shift. Uses the ranking's filters.")
                scatter = gr.Plot(elem_id="scatter")
                scatter_table = gr.Dataframe(interactive=False, label="the points")
            with gr.Tab("Ablations", id="ablations"):
                sweeps = list(core.ablations(board()))
                sweep = gr.Dropdown(sweeps, value=sweeps[0] if sweeps else None, label="method with several settings")
                ablation_plot = gr.Plot(elem_id="ablation")
                ablation_table = gr.Dataframe(interactive=False)
            with gr.Tab("Protocol", id="protocol"):
                names = protocol_names()
                card_protocol = gr.Dropdown(names, value="mini" if "mini" in names else names[0], label="protocol")
                card = gr.Markdown(core.protocol_card(card_protocol.value, protocols))
            with gr.Tab("Submit", id="submit"):
                gr.Markdown(f"Upload a submission folder as a .zip (`python -m zipfile -c sub.zip FOLDER/`; at "
                            f"most {MAX_SUBMISSION_BYTES // 2**20} MB). It is checked exactly as `bench validate` "
                            "does — only JSON and gzip'd CSV are read, nothing in it is run — and previewed "
                            "against the board. Nothing is saved.")
                upload = gr.File(label="submission .zip", file_types=[".zip"], type="filepath", elem_id="upload")
                report = gr.Textbox(label="validation", lines=8, interactive=False, elem_id="upload-report")
                preview = gr.Dataframe(pd.DataFrame(columns=core.RANKING_COLUMNS), interactive=False,
                                       label="preview", elem_id="upload-preview")

        ranking_inputs = [protocol, models, category, source, search, validated_only]
        scatter_inputs = [protocol, models, category, source]
        for control in ranking_inputs:
            event = control.submit if control is search else control.change
            event(ranking_view, ranking_inputs, table)
        for control in scatter_inputs:
            control.change(scatter_view, scatter_inputs, [scatter, scatter_table])
        submission.change(matrix_view, [submission, metric], [heatmap, matrix_table])
        metric.change(matrix_view, [submission, metric], [heatmap, matrix_table])
        sweep.change(ablation_view, sweep, [ablation_plot, ablation_table])
        card_protocol.change(lambda name: core.protocol_card(name, protocols), card_protocol, card)
        upload.upload(validate_upload, upload, [report, preview])

        def do_reload(*values):
            state["board"] = core.load_board(root, protocols, model_pairs)
            fresh = core.choices(board())
            keys = [v.key for v in board().entries]
            sweeps = list(core.ablations(board()))
            return (ranking_view(*values), unreadable_text(),
                    *(gr.Dropdown(choices=fresh[n]) for n in ("protocol", "models", "category", "source")),
                    gr.Dropdown(choices=keys, value=keys[0] if keys else None),
                    gr.Dropdown(choices=sweeps, value=sweeps[0] if sweeps else None))

        reload.click(do_reload, ranking_inputs,
                     [table, unreadable, protocol, models, category, source, submission, sweep])
        demo.load(scatter_view, scatter_inputs, [scatter, scatter_table])
        demo.load(matrix_view, [submission, metric], [heatmap, matrix_table])
        demo.load(ablation_view, sweep, [ablation_plot, ablation_table])
    return demo


def serve(root: Path, host: str = "127.0.0.1", port: int | None = None, protocols: Mapping | None = None,
          model_pairs: Mapping | None = None, block: bool = True) -> gr.Blocks:
    """Build and launch the app; with ``block=False`` it serves from a background thread (tests)."""
    demo = build_app(root, protocols, model_pairs)
    demo.launch(server_name=host, server_port=port, prevent_thread_lock=not block, quiet=not block, share=False,
                max_file_size=MAX_SUBMISSION_BYTES, theme=theme(), show_error=True, footer_links=[])
    return demo

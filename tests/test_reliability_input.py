"""Untrusted input, round two (issue 19): validation's memory and time are bounded whatever a
submission's files hold; bad data files, model folders, method files and seeds give the documented
messages (exit 2), not tracebacks; written files follow the user's umask; and text that could be
markup, script or disguised text is refused."""
import gzip
import os
import stat
import tracemalloc
from pathlib import Path

import pytest
from small_runs import edit_json, first_cell, reseal, zip_folder

from bench.core.errors import BenchError
from bench.submissions import SUBMISSION_FILE, limits, submit, validate_submission

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "datasets"
COLUMNS = "eval_set,pair_id,teacher_chosen,teacher_rejected,student_chosen,student_rejected\n"


def check(runs, folder, **kwargs):
    return validate_submission(folder, runs.protocols, runs.model_pairs, **kwargs)


def errors(validation) -> str:
    return "\n".join(map(str, validation.errors))


def write_inflating_scores(path: Path, line_of, limit: int = limits.MAX_SCORES_BYTES) -> int:
    """A gzip'd scores file that inflates to just under ``limit`` bytes (every documented limit kept),
    written in chunks so the test itself stays small; returns its size on disk."""
    size = len(COLUMNS)
    with gzip.open(path, "wb", compresslevel=6) as out:
        out.write(COLUMNS.encode())
        i = 0
        while True:
            chunk = "".join(line_of(j) for j in range(i, i + 10_000))
            if size + len(chunk) > limit:
                break
            out.write(chunk.encode())
            size, i = size + len(chunk), i + 10_000
    return path.stat().st_size


def peak_mib(fn) -> tuple[object, float]:
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


# --- item 2: validation streams and stops early ------------------------------------------------------
# Before: 1.7 GB peak RSS for one such cell (`bench validate` under /usr/bin/time -v), 1.3 GB for the
# duplicate rows; a gzip cannot hold more than this, so the bound is checked at the per-file limit.
MEMORY_BOUND_MIB = 32


@pytest.mark.parametrize("kind", ["distinct rows", "duplicate rows"])
def test_a_scores_file_that_inflates_to_64_mb_is_read_in_bounded_memory(runs, naive, kind):
    cell = first_cell(naive)
    if kind == "distinct rows":   # every row distinct and valid: nothing but the count is wrong
        line_of = lambda i: f"mini/recipes,recipes/test/{i:08d},0.52,-1.19,0.61,0.22\n"  # noqa: E731
    else:                         # one pair over and over: one error per line, before
        line_of = lambda i: "mini/recipes,p,1,0,1,0\n"  # noqa: E731
    on_disk = write_inflating_scores(cell / "scores.csv.gz", line_of)
    assert on_disk < 8 * 2**20 and on_disk < limits.MAX_SUBMISSION_BYTES
    reseal(naive)
    found, peak = peak_mib(lambda: check(runs, naive))
    assert peak < MEMORY_BOUND_MIB, f"validation peaked at {peak:.0f} MiB"
    listed = errors(found)
    assert ("cells/seed0/mini__recipes/scores.csv.gz: holds more than 48 rows, the pairs its result.json's eval sets "
            "declare (n_pairs); reading stopped at line 50") in listed
    assert len(found.errors) <= limits.MAX_ERRORS_PER_KIND + 3, listed
    if kind == "duplicate rows":
        assert "line 3: pair 'p' of mini/recipes twice" in listed
        assert "and 38 more lines with a pair given twice" in listed


def test_a_long_line_stops_reading(runs, naive):
    cell = first_cell(naive)
    cell.joinpath("scores.csv.gz").write_bytes(gzip.compress((COLUMNS + "x" * 10 * 2**20).encode()))
    reseal(naive)
    found, peak = peak_mib(lambda: check(runs, naive))
    assert "scores.csv.gz: has a line longer than 4096 bytes (a scores line is under 200)" in errors(found)
    assert peak < MEMORY_BOUND_MIB


def test_n_pairs_is_bounded_before_the_scores_are_read(runs, naive):
    edit_json(first_cell(naive) / "result.json", lambda r: r["eval_sets"]["mini/travel"].update(n_pairs=10**9))
    reseal(naive)
    assert ("cells/seed0/mini__recipes/result.json: eval_sets.mini/travel.n_pairs: is 1000000000; mini-test scores "
            "from 0 to 24 pairs per test split (its test_size), so the scores file is not read") in errors(check(runs, naive))


def test_many_bad_strings_give_a_short_error_list(runs, naive):
    edit_json(naive / SUBMISSION_FILE, lambda m: m.update(notes=["<b>"] * 100_000))
    found = check(runs, naive)
    mine = [p for p in found.errors if p.file == SUBMISSION_FILE]
    assert len(mine) == limits.MAX_ERRORS_PER_FILE + 1
    assert str(mine[-1]) == (f"submission.json: and {100_001 - limits.MAX_ERRORS_PER_FILE} more problems in this file "
                             f"(the first {limits.MAX_ERRORS_PER_FILE} are listed). Fix: fix those, then validate again")


def test_validation_stops_at_its_time_budget(runs, naive):
    found = check(runs, naive, time_budget_s=0)
    assert ("validation stopped after 0 s, before cell 1 of 2 (seed 0, mini/recipes): an upload is checked within 0 s"
            in errors(found))
    assert "Fix: run `bench validate FOLDER` on your machine, which has no time limit" in errors(found)
    assert check(runs, naive, time_budget_s=600).ok


def test_the_leaderboard_checks_uploads_within_the_budget(runs, naive, tmp_path, monkeypatch):
    pytest.importorskip("gradio")
    from leaderboard import core, uploads

    board = core.load_board(runs.submissions, runs.protocols, runs.model_pairs)
    archive = zip_folder(naive, tmp_path / "sub.zip")
    monkeypatch.setattr(uploads, "UPLOAD_TIME_BUDGET_S", 0)
    report, _ = uploads.check_upload(str(archive), board, runs.protocols, runs.model_pairs)
    assert "REJECTED" in report and "validation stopped after 0 s" in report


# --- item 8: the documented messages, exit 2 ---------------------------------------------------------
def hh_dir(tmp_path: Path) -> Path:
    (tmp_path / "hh-helpful").mkdir()
    return tmp_path / "hh-helpful"


def load_hh(data_dir: Path):
    from bench.core.data import load_pairs
    from bench.core.protocols import DATASETS

    return load_pairs(DATASETS.get("w2s/hh-helpful"), "test", None, data_dir)


def test_a_line_that_is_not_utf8_is_dropped_as_malformed(tmp_path):
    raw = (FIXTURES / "hh-helpful" / "test.jsonl").read_bytes()
    (hh_dir(tmp_path) / "test.jsonl").write_bytes(raw + b'{"chosen": "\xff\xfe", "rejected": "x"}\n')
    loaded, plain = load_hh(tmp_path), load_hh(FIXTURES)
    assert loaded.provenance["dropped"]["malformed: line is not UTF-8"] == 1
    assert [p.id for p in loaded.pairs] == [p.id for p in plain.pairs]


@pytest.mark.parametrize("damage", ["cut short", "not gzip"])
def test_a_broken_jsonl_gz_names_the_file_and_the_fix(tmp_path, damage):
    raw = (FIXTURES / "hh-helpful" / "test.jsonl").read_bytes()
    data = gzip.compress(raw)[:-40] if damage == "cut short" else raw
    (hh_dir(tmp_path) / "test.jsonl.gz").write_bytes(data)
    with pytest.raises(BenchError, match=r"test\.jsonl\.gz: cannot be read as gzip \(.*\): it is cut short or not "
                                         r"what its name says\. Fix: download it again"):
        load_hh(tmp_path)


def test_a_folder_that_is_not_a_model_is_refused_before_any_work(tmp_path, capsys):
    from bench.cli import main

    folder = tmp_path / "not-a-model"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello")
    out = tmp_path / "out"
    assert main(["run", "--method", "naive", "--models", f"weak={folder},strong={folder}", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"bench: error: --models: weak={folder.resolve()} is a folder without a config.json naming its model_type" in err
    assert "Fix: give a folder written by save_pretrained" in err and not out.exists()


@pytest.mark.parametrize("stub", ["{}", '{"schema_version": 1}', "[]", "\xff"])
def test_verify_and_report_on_a_stub_result_json(tmp_path, capsys, stub):
    from bench.cli import main

    cell = tmp_path / "results" / "mini" / "tiny" / "naive" / "seed0" / "mini__travel"
    cell.mkdir(parents=True)
    (cell / "result.json").write_bytes(stub.encode("latin-1"))
    assert main(["verify", "--out", str(tmp_path / "results")]) == 1
    assert "incomplete: result.json missing, unreadable or of another schema" in capsys.readouterr().out
    assert main(["report", "--out", str(tmp_path / "results")]) == 1
    assert "no finished results under" in capsys.readouterr().err


def test_sys_exit_in_a_method_file_is_an_error_naming_it(tmp_path, capsys):
    from bench.cli import main

    path = tmp_path / "quits.py"
    path.write_text("import sys\nsys.exit(3)\n")
    assert main(["run", "--method-file", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"bench: error: method file {str(path)!r} called sys.exit(3) on import" in err
    assert 'put code that runs under `if __name__ == "__main__":`' in err


@pytest.mark.parametrize("seed", ["-1", str(2**31), "1e3"])
def test_seeds_outside_0_to_2_31_are_refused(seed, capsys):
    from bench.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["run", "--method", "naive", "--seeds", "0", seed])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    if seed == "1e3":
        assert "invalid int value: '1e3' (--seeds takes whole numbers" in err
    else:
        assert (f"argument --seeds: seed {seed} is out of range: a seed is a whole number from 0 to 2147483647 "
                "(2**31 - 1)") in err


def test_the_largest_seed_parses_and_a_foreign_seed_is_said(capsys):
    import bench.cli as cli
    import bench.commands.args as args
    from bench.commands.settings import run_settings

    assert args.parse_seed(str(2**31 - 1)) == 2**31 - 1 and args.parse_seed("0") == 0
    settings = run_settings(cli.build_parser().parse_args(["run", "--method", "naive", "--protocol", "mini", "--seeds", "0",
                                                            "7"]))
    assert settings.seeds == (0, 7)
    assert ("[bench] seed 7 not among mini's seeds [0, 1, 2]: run and reported, but bench submit takes only the "
            "protocol's seeds") in capsys.readouterr().err


# --- item 9: the user's umask -------------------------------------------------------------------------
@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_umask_is_read_without_changing_it(umask_022):
    from bench.core.io import current_umask

    assert current_umask() == 0o022
    os.umask(0o027)
    assert current_umask() == 0o027 and os.umask(0o027) == 0o027


def test_results_files_follow_the_umask(tmp_path, umask_022):
    from bench.core.io import atomic_write_bytes, atomic_write_json

    atomic_write_json(tmp_path / "result.json", {"a": 1})
    assert mode(tmp_path / "result.json") == 0o644
    os.umask(0o077)
    atomic_write_bytes(tmp_path / "private.bin", b"x")
    assert mode(tmp_path / "private.bin") == 0o600


def test_a_submission_folder_follows_the_umask(runs, tmp_path, umask_022):
    [written] = submit([runs.results / "mini-test" / "tiny-test" / "naive"], tmp_path / "subs", "umask test",
                       protocols=runs.protocols, model_pairs=runs.model_pairs)
    assert mode(written) == 0o755
    assert {mode(p) for p in written.rglob("*") if p.is_dir()} <= {0o755}   # a store has no folders of its own
    assert {mode(p) for p in written.rglob("*") if p.is_file()} == {0o644}


def test_apply_umask_for_staging_folders(tmp_path, umask_022):
    import tempfile

    from bench.core.io import apply_umask

    staging = Path(tempfile.mkdtemp(dir=tmp_path))
    assert mode(staging) == 0o700
    apply_umask(staging)
    assert mode(staging) == 0o755


# --- item 10: odd text -----------------------------------------------------------------------------------
ODD = [("[x](javascript:alert(1))", "a script or data link 'javascript:'"),
       ("click JavaScript:void(0)", "a script or data link 'JavaScript:'"),
       ("java\tscript:alert(1)", "a script or data link 'java\\tscript:'"),
       ("DATA:text/html;base64,PHNjcmlwdD4=", "a script or data link 'DATA:'"),
       ("vbscript:msgbox", "a script or data link 'vbscript:'"),
       ("Ada &lt;Lovelace", "an HTML character reference '&lt;'"),
       ("Ada &#60;b", "an HTML character reference '&#60;'"),
       ("Ada &#x3c", "an HTML character reference '&#x3c'"),
       ("Ada &ltb", "an HTML character reference '&lt'"),
       ("admin\u202egnp.exe", "a bidirectional control character U+202E"),
       ("\u2066naive\u2069", "a bidirectional control character U+2066"),
       ("na\u200bive", "a zero-width character U+200B"),
       ("naive\u2060", "a zero-width character U+2060"),
       ("\ufeffnaive", "a zero-width character U+FEFF")]


@pytest.mark.parametrize("text, what", ODD)
def test_odd_text_is_refused_in_a_submission(runs, naive, text, what):
    edit_json(naive / SUBMISSION_FILE, lambda m: m.update(submitter=text))
    found = errors(check(runs, naive))
    assert f"submission.json: submitter: text {text!r} contains {what}, which could be markup, script or disguised " \
           "text where it is shown. Fix: remove it: names, commands and notes are plain text only" in found


@pytest.mark.parametrize("text, what", ODD[::3])
def test_odd_text_is_refused_by_bench_submit(runs, tmp_path, text, what):
    with pytest.raises(BenchError) as refused:
        submit([runs.results], tmp_path, text, protocols=runs.protocols, model_pairs=runs.model_pairs)
    assert str(refused.value).startswith(f"--submitter {text!r}: contains {what}; give a plain name: plain text only")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("text", ["R&D team", "AT&T Labs", "Smith & Jones", "metadata: none", "bench run --data-dir data"])
def test_plain_text_with_ampersands_and_colons_passes(text):
    assert limits.unsafe_text(text) is None


def test_the_board_shows_a_link_name_as_text():
    from markdown_it import MarkdownIt

    from leaderboard import core

    escaped = core.md_escape("[x](javascript:alert(1))")
    assert escaped == "\\[x\\](javascript:alert(1))"
    html = MarkdownIt().render(f"| method |\n|---|\n| {escaped} |")
    assert "<a " not in html and "[x](javascript:alert(1))" in html


def test_markdown_text_and_code_spans_stay_on_their_line_and_literal():
    """A recorded value with line breaks could open a heading, a rule or a list in the markdown board; in a code
    span a backslash escape would show as a backslash, so code spans change a backtick only."""
    from markdown_it import MarkdownIt

    from leaderboard import core
    from leaderboard.columns import md_code

    hostile = "anchor_lam=1.0\n\n---\n# head\n1. item `x` <script>alert(1)</script>"
    html = MarkdownIt().render(f"Context: {core.md_escape(hostile)} and {md_code(hostile)}.")
    assert html.count("<p>") == 1 and not any(tag in html for tag in ("<hr", "<h1", "<ol", "<li", "<script"))
    assert "<code>anchor_lam=1.0 --- # head 1. item 'x' &lt;script&gt;alert(1)&lt;/script&gt;</code>" in html
    assert "anchor_lam=1.0 --- # head 1. item `x` &lt;script&gt;" in html   # the escaped text, shown as written


def test_the_app_shows_submission_text_as_text(runs):
    """Every table of the app is a Dataframe of plain strings: a cell is never rendered as markdown or HTML."""
    gr = pytest.importorskip("gradio")
    from leaderboard import app

    demo = app.build_app(runs.submissions, runs.protocols, runs.model_pairs)
    frames = [block for block in demo.blocks.values() if isinstance(block, gr.Dataframe)]
    assert frames and all(frame.datatype == "str" for frame in frames), [f.datatype for f in frames]


def test_only_the_hosts_app_can_reload_the_submissions(runs):
    """"reload submissions" re-reads the whole folder (seconds of server CPU): a visitor of the public board gets no
    button and no event to call through the API; `bench leaderboard --admin` (the host) gets both."""
    pytest.importorskip("gradio")
    from leaderboard import app

    def reload_buttons(demo):
        return [b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "reload"]

    public = app.build_app(runs.submissions, runs.protocols, runs.model_pairs)
    assert reload_buttons(public) == []
    assert not any("do_reload" in getattr(f.fn, "__name__", "") for f in public.fns.values())
    host = app.build_app(runs.submissions, runs.protocols, runs.model_pairs, admin=True)
    assert len(reload_buttons(host)) == 1
    assert any("do_reload" in getattr(f.fn, "__name__", "") for f in host.fns.values())

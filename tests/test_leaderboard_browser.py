"""The real leaderboard app, served on localhost and driven in headless Chromium as a person would:
the page loads with no request off the machine and says what was run, rows come in NTS order with
the reference rows pinned and shaded, numbers in one format, columns can be chosen, headers sort,
the CSV holds what is shown, a filter and a live search change the rows, submission text shows as
text, and uploads (tampered, damaged, made by Finder, valid) are checked with nothing of them kept.

Uses Debian's chromium (``apt-get install chromium``; never a browser download) through Playwright.
Screenshots go to $SHIFTBENCH_SCREENSHOTS when set, else to a temporary folder. Skipped without
chromium or playwright, unless $SHIFTBENCH_REQUIRE_BROWSER is set (.ci/run sets it).
"""
import csv
import os
import re
import shutil
import socket
import time
from pathlib import Path

import pytest

from bench.report import TEACHER
from leaderboard import core
from small_runs import HOSTILE, flip_one_student_pair, hostile_root, small_runs, zip_folder
from test_leaderboard import NUMBER, corrupt_zip, finder_zip

pytestmark = pytest.mark.browser
CHROMIUM = os.environ.get("SHIFTBENCH_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
MISSING = None if Path(CHROMIUM).is_file() else f"no chromium at {CHROMIUM} (apt-get install -y chromium)"
try:
    from playwright import sync_api
except ImportError:
    MISSING = "playwright is not installed (pip install -e '.[test]')"
if MISSING and os.environ.get("SHIFTBENCH_REQUIRE_BROWSER"):  # CI installs both: a skip there would hide a failure
    raise RuntimeError(f"SHIFTBENCH_REQUIRE_BROWSER is set but {MISSING}")
if MISSING:
    pytest.skip(MISSING, allow_module_level=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(check, timeout=30.0, what="the page to update"):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    folder = Path(os.environ.get("SHIFTBENCH_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def uploads_folder(tmp_path_factory):
    """Gradio's upload folder for this server, so the test can see what an upload leaves behind."""
    folder = tmp_path_factory.mktemp("gradio_uploads")
    before = os.environ.get("GRADIO_TEMP_DIR")
    os.environ["GRADIO_TEMP_DIR"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("GRADIO_TEMP_DIR", None)
    else:
        os.environ["GRADIO_TEMP_DIR"] = before


@pytest.fixture(scope="module")
def served(tmp_path_factory, small_protocol, small_models, uploads_folder):
    from leaderboard.app import serve

    runs = small_runs(tmp_path_factory, small_protocol, small_models)
    root = hostile_root(runs, tmp_path_factory.mktemp("board") / "submissions")
    store = tmp_path_factory.mktemp("validation_cache")
    port = free_port()
    demo = serve(root, port=port, protocols=runs.protocols, model_pairs=runs.model_pairs, block=False, cache_dir=store)
    board = core.load_board(root, runs.protocols, runs.model_pairs, store)
    yield f"http://127.0.0.1:{port}/", board, runs
    demo.close()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def page(browser, served):
    context = browser.new_context(viewport={"width": 1440, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    page.off_machine = []
    page.on("request", lambda r: None if r.url.startswith(("http://127.0.0.1", "data:", "blob:"))
            else page.off_machine.append(r.url))
    page.goto(served[0])
    page.wait_for_selector("#ranking tbody.ranked tr", timeout=60_000)
    yield page
    context.close()


def rows(page, where="#ranking-board"):
    """The visible table as text, one list of cell texts per row, references first (as on screen)."""
    return page.locator(where).evaluate(
        "e => [...e.querySelectorAll('tbody.reference tr, tbody.ranked tr')].map(r => [...r.cells].map("
        "c => { const v = c.querySelector('.v'); return v ? v.textContent : c.textContent.trim(); }))")


def headers(page, where="#ranking-board"):
    return page.locator(where).evaluate("e => [...e.querySelectorAll('thead th .h')].map(h => h.textContent)")


def expected(board, **filters):
    """What the page should show for core.ranking(board, **filters) with the default columns."""
    return core.shown(core.ranking(board, **filters), board=board).text()


def choose(page, elem_id, value):
    page.locator(f"#{elem_id} input").click()
    page.get_by_role("option", name=value, exact=True).click()


def test_the_page_says_what_was_run_and_ranks_in_one_format(page, served, shots):
    _, board, _ = served
    assert page.title() == "ShiftBench leaderboard"
    context = page.locator("#context-line").inner_text()
    assert re.search(r"Protocol mini-test v1\.0 · Model pair tiny-test: all-MiniLM-L6-v2 cut to its first layer "
                     r"\(weak teacher\) → all-MiniLM-L6-v2 cut to its first 2 layers \(strong student\) · "
                     r"1 seed × 2 source → target cells · "
                     r"24 test pairs per eval set · 5 submissions · last updated \d{4}-\d\d-\d\d \(", context), context
    assert headers(page) == core.DEFAULT_COLUMNS
    shown = rows(page)
    assert shown == expected(board)
    assert [row[0] for row in shown[:2]] == ["ref", "ref"] and shown[1][1] == TEACHER   # pinned on top
    nts = [float(row[3]) for row in shown[2:] if row[0] != "–"]
    assert nts == sorted(nts, reverse=True) and len(nts) == 3
    numbers = page.locator("#ranking td.num .v").all_inner_texts()
    assert numbers and all(NUMBER.fullmatch(t) for t in numbers) and "-0.0" not in numbers
    align = page.locator("#ranking td.num").evaluate_all("cells => cells.map(c => getComputedStyle(c).textAlign)")
    assert set(align) == {"right"}
    title = page.locator('#ranking th[data-col="NTS"]').get_attribute("title")
    assert title.startswith("Net transfer score") and "AOG − max(0" in title
    assert page.off_machine == []  # nothing fetched from outside: works offline
    page.screenshot(path=str(shots / "ranking.png"), full_page=True)


def test_reference_rows_are_shaded_and_stay_on_top_when_sorted(page):
    style = page.locator("#ranking tbody.reference tr").first.locator("td").first.evaluate(
        "c => [getComputedStyle(c).backgroundColor, getComputedStyle(c).fontStyle]")
    plain = page.locator("#ranking tbody.ranked tr").first.locator("td").first.evaluate(
        "c => getComputedStyle(c).backgroundColor")
    assert style == ["rgb(238, 242, 246)", "italic"] and plain != style[0]
    references = rows(page)[:2]
    at = core.DEFAULT_COLUMNS.index("WRG")
    page.locator('#ranking th[data-col="WRG"]').click()   # numbers sort high to low first
    wrg = [float(r[at]) for r in rows(page)[2:]]
    assert wrg == sorted(wrg, reverse=True) and rows(page)[:2] == references
    page.locator('#ranking th[data-col="WRG"]').click()
    assert [float(r[at]) for r in rows(page)[2:]] == sorted(wrg)
    assert page.locator('#ranking th[data-col="WRG"]').get_attribute("aria-sort") == "ascending"


def test_columns_can_be_chosen_and_the_csv_is_what_is_shown(page, served, shots, tmp_path):
    _, board, _ = served
    page.locator("#columns-box").get_by_text("Columns:").click()
    page.locator("#columns").get_by_label("NTS ±", exact=True).check()
    page.locator("#columns").get_by_label("params", exact=True).uncheck()
    chosen = ["rank", "method", *[c for c in core.DEFAULT_COLUMNS if c not in ("rank", "method", "params")], "NTS ±"]
    chosen = [c.name for c in core.BOARD_COLUMNS if c.name in chosen]
    wait_until(lambda: headers(page) == chosen, what="the chosen columns")
    assert rows(page) == core.shown(core.ranking(board), chosen, board).text()
    page.locator('#ranking th[data-col="AOG"]').click()
    with page.expect_download() as download:
        page.locator("#ranking-board button.csv").click()
    saved = tmp_path / "ranking.csv"
    download.value.save_as(saved)
    with open(saved, newline="") as handle:
        table = list(csv.reader(handle))
    assert download.value.suggested_filename == "shiftbench-ranking.csv"
    assert table == [headers(page), *rows(page)]   # these columns, these rows, in the order on screen
    page.screenshot(path=str(shots / "columns-chosen.png"), full_page=True)


def test_a_filter_and_a_live_search_change_the_rows(page, served, shots):
    _, board, _ = served
    before = rows(page)
    choose(page, "f-source", "travel")
    want = expected(board, source="travel")
    assert want != before
    wait_until(lambda: rows(page) == want, what="the source filter")
    page.screenshot(path=str(shots / "filter-source-travel.png"), full_page=True)
    page.locator("#f-search textarea, #f-search input").first.press_sequentially("lam=2", delay=50)   # no Enter
    want = expected(board, source="travel", search="lam=2")
    wait_until(lambda: rows(page) == want, what="the live search")
    assert [row[1] for row in rows(page)] == ["ceiling", TEACHER, "anchor"]


def test_submission_text_is_shown_as_text_never_run(page, served):
    hostile = [row for row in rows(page) if row[1] == HOSTILE]
    assert len(hostile) == 1 and hostile[0][0] == "–"
    assert page.locator("#ranking tr.invalid .badge.invalid").count() == 1
    assert page.evaluate("window.__xss") is None
    assert page.locator("img[src=x]").count() == 0


def upload(page, archive):
    page.locator("#upload input[type=file]").set_input_files(str(archive))
    report = page.locator("#upload-report textarea")
    wait_until(lambda: report.input_value().startswith(archive.name), timeout=60, what=f"the report on {archive.name}")
    return report.input_value()


def left_behind(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_uploads_are_checked_with_nothing_kept(page, served, shots, tmp_path, uploads_folder):
    _, board, runs = served
    page.get_by_role("tab", name="Submit").click()
    naive = runs.submissions / "mini-test" / "tiny-test" / "naive"
    tampered = tmp_path / "naive"
    shutil.copytree(naive, tampered)
    eval_set = flip_one_student_pair(tampered / "cells" / "seed0" / "mini__recipes")
    text = upload(page, zip_folder(tampered, tmp_path / "tampered.zip"))
    assert text.startswith("tampered.zip: REJECTED")
    assert f"cells/seed0/mini__recipes/result.json: eval_sets.{eval_set}.student_acc: is" in text
    preview = wait_until(lambda: rows(page, "#upload-preview"), what="the preview")
    [mine] = page.locator("#upload-preview tr.upload").all()
    assert "not validated" in mine.inner_text() and "your upload" in mine.inner_text()
    assert [r[1] for r in preview].count("naive") == 1   # in naive's place, not beside it
    assert left_behind(uploads_folder) == []
    page.screenshot(path=str(shots / "upload-tampered.png"), full_page=True)

    text = upload(page, corrupt_zip(naive, tmp_path / "damaged.zip"))
    assert text.startswith("damaged.zip: REJECTED — the upload's 'naive/submission.json' cannot be read: Bad CRC-32")
    assert "Nothing to show" in page.locator("#upload-preview").inner_text()
    page.wait_for_timeout(500)
    assert page.locator('[data-testid="toast-body"]').count() == 0   # a rejection, not an error popup
    assert left_behind(uploads_folder) == []
    page.screenshot(path=str(shots / "upload-damaged.png"), full_page=True)

    text = upload(page, finder_zip(naive, tmp_path / "finder.zip"))
    assert text.startswith("finder.zip: VALID — passes bench validate")
    wait_until(lambda: page.locator("#upload-preview tr.upload").count() == 1, what="the preview")
    assert rows(page, "#upload-preview") == core.shown(core.ranking(board), board=board).text()   # same numbers
    assert left_behind(uploads_folder) == []   # the upload was deleted once checked
    assert page.locator("#upload a[download]").count() == 0   # and the page offers no link to it
    page.screenshot(path=str(shots / "upload-finder.png"), full_page=True)


def test_the_other_tabs_draw_their_pictures(page, served, shots):
    for tab, picture in (("Source × target", "#heatmap img"), ("ID vs OOD", "#scatter img"),
                         ("Ablations", "#ablation img"), ("Protocol", None), ("About", None)):
        page.get_by_role("tab", name=tab).click()
        if picture:
            page.wait_for_selector(picture, state="visible", timeout=30_000)
        elif tab == "Protocol":
            page.get_by_text("(version 1.0)").first.wait_for()
            assert "cut to its first layer (weak teacher)" in page.locator("#model-card").inner_text()
        else:
            wait_until(lambda: "@software{shiftbench" in page.locator("#about-text").inner_text(), what="About")
        page.screenshot(path=str(shots / f"tab-{tab.split()[0].lower()}.png"), full_page=True)

"""The real leaderboard app, served on localhost and driven in headless Chromium as a person would:
the page loads with no request off the machine, rows come in NTS order, a filter and a search change
them, submission text shows as text, and uploads are validated with their errors shown.

Uses Debian's chromium (``apt-get install chromium``; never a browser download) through Playwright.
Screenshots go to $SHIFTBENCH_SCREENSHOTS when set, else to a temporary folder. Skipped without
chromium or playwright, unless $SHIFTBENCH_REQUIRE_BROWSER is set (.ci/run sets it).
"""
import os
import shutil
import socket
import time
from pathlib import Path

import pytest

from bench.report import TEACHER
from leaderboard import core
from small_runs import HOSTILE, flip_one_student_pair, hostile_root, small_runs, zip_folder

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
def served(tmp_path_factory, small_protocol, small_models):
    from leaderboard.app import serve

    runs = small_runs(tmp_path_factory, small_protocol, small_models)
    root = hostile_root(runs, tmp_path_factory.mktemp("board") / "submissions")
    port = free_port()
    demo = serve(root, port=port, protocols=runs.protocols, model_pairs=runs.model_pairs, block=False)
    board = core.load_board(root, runs.protocols, runs.model_pairs)
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
    page = browser.new_page(viewport={"width": 1500, "height": 1000})
    page.off_machine = []
    page.on("request", lambda r: None if r.url.startswith(("http://127.0.0.1", "data:", "blob:"))
            else page.off_machine.append(r.url))
    page.goto(served[0])
    page.wait_for_selector("#ranking-table .virtual-row", timeout=60_000)
    yield page
    page.close()


def rows(page, table="#ranking-table"):
    """The visible table as text, one list of cell texts per row."""
    return [[cell.inner_text() for cell in row.locator("[role=gridcell]").all()]
            for row in page.locator(f"{table} .virtual-row").all()]


def as_shown(table):
    """What the page should show for a core.ranking table: rank, method, params, status, NTS."""
    return [[r["rank"], r["method"], r["params"], r["status"], f"{round(r['NTS'], 2):g}"] for _, r in table.iterrows()]


def shown(page):
    """rank, method, params, status and NTS of each row; None while the table is being redrawn."""
    current = rows(page)
    if any(len(row) < 5 for row in current):
        return None
    return [row[:4] + [f"{float(row[4]):g}"] for row in current]


def choose(page, elem_id, value):
    page.locator(f"#{elem_id} input").click()
    page.get_by_role("option", name=value, exact=True).click()


def test_page_loads_with_rows_in_nts_order(page, served, shots):
    _, board, _ = served
    assert page.title() == "ShiftBench leaderboard"
    assert shown(page) == as_shown(core.ranking(board))
    nts = [float(row[4]) for row in rows(page) if row[0] != "ref"]
    assert nts == sorted(nts, reverse=True) and len(nts) == 4
    assert [row[0] for row in rows(page)][-2:] == ["ref", "ref"]
    assert page.off_machine == []  # nothing fetched from outside: works offline
    page.screenshot(path=str(shots / "ranking.png"), full_page=True)


def test_a_filter_and_a_search_change_the_rows(page, served, shots):
    _, board, _ = served
    before = shown(page)
    choose(page, "f-source", "travel")
    expected = as_shown(core.ranking(board, source="travel"))
    assert expected != before
    wait_until(lambda: shown(page) == expected, what="the source filter")
    page.screenshot(path=str(shots / "filter-source-travel.png"), full_page=True)
    page.locator("#f-search textarea, #f-search input").first.fill("lam=2.0")
    page.keyboard.press("Enter")
    expected = as_shown(core.ranking(board, source="travel", search="lam=2.0"))
    wait_until(lambda: shown(page) == expected, what="the search")
    assert [row[1] for row in shown(page)] == ["anchor", "ceiling", TEACHER]


def test_submission_text_is_shown_as_text_never_run(page, served):
    hostile = [row for row in rows(page) if row[1] == HOSTILE]
    assert len(hostile) == 1 and hostile[0][3].startswith("NOT VALIDATED") and HOSTILE in hostile[0]
    assert page.evaluate("window.__xss") is None
    assert page.locator("img[src=x]").count() == 0


def test_uploads_are_validated_with_errors_shown(page, served, shots, tmp_path):
    _, _, runs = served
    page.get_by_role("tab", name="Submit").click()
    naive = runs.submissions / "mini-test" / "tiny-test" / "naive"
    tampered = tmp_path / "naive"
    shutil.copytree(naive, tampered)
    eval_set = flip_one_student_pair(tampered / "cells" / "seed0" / "mini__recipes")
    page.locator("#upload input[type=file]").set_input_files(str(zip_folder(tampered, tmp_path / "tampered.zip")))
    report = page.locator("#upload-report textarea")
    wait_until(lambda: "REJECTED" in report.input_value(), what="the upload report")
    text = report.input_value()
    assert text.startswith("tampered.zip: REJECTED")
    assert f"cells/seed0/mini__recipes/result.json: eval_sets.{eval_set}.student_acc: is" in text
    assert "but the per-pair scores give" in text
    wait_until(lambda: [r for r in rows(page, "#upload-preview") if "NOT VALIDATED" in r[3] and r[3].startswith("UPLOADED")],
               what="the preview")
    page.wait_for_timeout(500)  # let the table settle before the picture
    page.screenshot(path=str(shots / "upload-rejected.png"), full_page=True)

    page.reload()
    page.wait_for_selector("#ranking-table .virtual-row")
    page.get_by_role("tab", name="Submit").click()
    page.locator("#upload input[type=file]").set_input_files(str(zip_folder(naive, tmp_path / "naive.zip")))
    wait_until(lambda: "VALID" in report.input_value(), what="the upload report")
    assert report.input_value().startswith("naive.zip: VALID")
    preview = wait_until(lambda: [r for r in rows(page, "#upload-preview") if r[3].startswith("UPLOADED")],
                         what="the preview")
    assert preview[0][1] == "naive"
    page.screenshot(path=str(shots / "upload-valid.png"), full_page=True)


def test_the_other_tabs_draw_their_pictures(page, served, shots):
    for tab, picture in (("Source × target", "#heatmap img"), ("ID vs OOD", "#scatter img"),
                         ("Ablations", "#ablation img"), ("Protocol", None)):
        page.get_by_role("tab", name=tab).click()
        if picture:
            page.wait_for_selector(picture, state="visible", timeout=30_000)
        else:
            page.get_by_text("(version 1.0)").first.wait_for()
        page.screenshot(path=str(shots / f"tab-{tab.split()[0].lower()}.png"), full_page=True)

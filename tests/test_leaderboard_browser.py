"""The real leaderboard app, served on localhost and driven in headless Chromium as a person would:
the page loads with no request off the machine and says what was run (synthetic data, the students'
size) and what is decided (the verdict line), one group at a time behind a switcher; rows come in NTS
order with the reference rows pinned and shaded, numbers in one format, and the table fits at 1,440 px;
columns can be chosen, headers sort, the CSV holds what is shown with its group; a filter and the search
change the rows, both ways; the pictures follow the group; submission text shows as text; uploads
(tampered, damaged, made by Finder, valid) are checked with nothing of them kept and the server's memory
back to its base; at 390 px the ranking's first screen shows rank, method, NTS and decided; and groups whose
protocol has best-of-N candidate sets, seeded per source or not, fit at 1,440 px with their BoN columns, the one
seeded per source shows the interval over runs and what each row rests on, and they rank by BoN NTS and draw NTS
against BoN NTS.

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
from small_runs import (
    HOSTILE,
    flip_one_student_pair,
    hostile_root,
    small_runs,
    zip_folder,
)
from test_leaderboard import NUMBER, REFERENCE, corrupt_zip, finder_zip

from bench.core.compare import interval_text
from bench.core.report import TEACHER, fmt
from leaderboard import core

GROUP = ("mini-test", "tiny-test")   # the board's default: the group with the most submissions
# A second group, mini x tiny: four reference submissions whose text is among the board's widest (long
# params, three-digit intervals, a decided method), fewer than the default group has.
REAL = ("naive", "anchor_lam=10.0_layers=last", "probe-relabel_k=50_l2=0.001_probe=knn", "unbiased_eps=auto")

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


def verdict_shown(page) -> tuple[str, str, str]:
    """The verdict as the page shows it: whose it is, its first line, and the rule behind its "why"."""
    rule = page.locator("#verdict .sb-rule")   # none where the verdict is a note (why nothing can be decided)
    return (page.locator("#verdict > b").inner_text(), page.locator("#verdict .sb-verdict-head").inner_text(),
            rule.text_content() if rule.count() else "")


def verdict_of(board, group, label: str) -> tuple[str, str, str]:
    """``verdict_shown``'s expected value for the group shown as ``label``: its compact verdict and its rule."""
    found = core.verdict(board, core.ranking(board, *group))
    return f"Verdict on {label}:", found.compact(), found.rule()


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
    for slug in REAL:
        shutil.copytree(REFERENCE / "mini" / "tiny" / slug, root / "mini" / "tiny" / slug)
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


def default_columns(*kinds) -> list[str]:
    """The compact default on a group of these kinds: "shared" or "per-source" (its seeding), "bon" (candidate sets)."""
    return [c.name for c in core.BOARD_COLUMNS if c.default and (not c.only or c.only in kinds)]


def expected(board, group=GROUP, **filters):
    """What the page should show for core.ranking(board, *group, **filters) with the default columns."""
    return core.shown(core.ranking(board, *group, **filters), board=board).text()


def choose(page, elem_id, value):
    if not page.locator(f"#{elem_id}").is_visible():   # the filters are in a closed accordion
        page.locator("#columns-box").get_by_text("Filters and columns").click()
    page.locator(f"#{elem_id} input").click()
    page.get_by_role("option", name=value, exact=True).click()


def clipped(page, where="#ranking-board"):
    """How much wider the table is than its box, and the header or cell texts cut short (none: it fits)."""
    return page.locator(where).evaluate("""e => {
        const table = e.querySelector('table.sb-table'), box = table.closest('.sb-scroll');
        const cut = [...table.querySelectorAll('th, td')].filter(c => c.offsetParent && c.scrollWidth > c.clientWidth + 1)
            .map(c => c.textContent.trim());
        return [Math.max(0, table.scrollWidth - box.clientWidth), cut]; }""")


def test_the_page_says_what_was_run_and_ranks_in_one_format(page, served, shots):
    _, board, _ = served
    assert page.title() == "ShiftBench leaderboard"
    data = page.locator("#data-line").inner_text()
    assert data.startswith("What was run: synthetic data only. Every number on this board comes from mini") and \
        "(preference data generated by ShiftBench, not real preferences)" in data
    assert "a 22.7M-parameter encoder" in data and "The real protocols w2s-real-v1 and w2s-shift-v1 have no submissions yet." in data
    assert page.locator("#group input:checked").evaluate("e => e.value") == "/".join(GROUP)   # one group at a time
    assert verdict_shown(page) == verdict_of(board, GROUP, "mini-test · tiny-test")
    context = page.locator("#context-line").inner_text()
    assert re.search(r"Protocol mini-test v1\.0 · Model pair tiny-test: all-MiniLM-L6-v2 cut to its first layer "
                     r"\(weak teacher\) → all-MiniLM-L6-v2 cut to its first 2 layers \(strong student\) · "
                     r"1 seed × 2 source → target cells · "
                     r"24 test pairs per eval set · 5 submissions · last updated \d{4}-\d\d-\d\d \(", context), context
    # the group is named above: no protocol or model pair column; no BoN columns (its protocol has no candidate sets)
    assert headers(page) == default_columns("shared")
    assert clipped(page) == [0, []]   # the table fits its box at 1,440 px, no text cut short
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
    at = default_columns("shared").index("WRG")
    page.locator('#ranking th[data-col="WRG"]').click()   # numbers sort high to low first
    wrg = [float(r[at]) for r in rows(page)[2:]]
    assert wrg == sorted(wrg, reverse=True) and rows(page)[:2] == references
    page.locator('#ranking th[data-col="WRG"]').click()
    assert [float(r[at]) for r in rows(page)[2:]] == sorted(wrg)
    assert page.locator('#ranking th[data-col="WRG"]').get_attribute("aria-sort") == "ascending"


def test_columns_can_be_chosen_and_the_csv_is_what_is_shown(page, served, shots, tmp_path):
    _, board, _ = served
    page.locator("#columns-box").get_by_text("Filters and columns").click()
    page.locator("#columns").get_by_label("NTS ±", exact=True).check()
    page.locator("#columns").get_by_label("params", exact=True).uncheck()
    chosen = ["rank", "method", *[c for c in core.DEFAULT_COLUMNS if c not in ("rank", "method", "params")], "NTS ±"]
    chosen = [c.name for c in core.BOARD_COLUMNS if c.name in chosen and c.only in ("", "shared")]   # v1, no BoN
    wait_until(lambda: headers(page) == chosen, what="the chosen columns")
    assert rows(page) == core.shown(core.ranking(board, *GROUP), chosen, board).text()
    page.locator('#ranking th[data-col="AOG"]').click()
    with page.expect_download() as download:
        page.locator("#ranking-board button.csv").click()
    saved = tmp_path / "ranking.csv"
    download.value.save_as(saved)
    with open(saved, newline="") as handle:
        table = list(csv.reader(handle))
    assert download.value.suggested_filename == "shiftbench-mini-test-tiny-test.csv"
    # these columns, these rows, in the order on screen, each row with its protocol and model pair; beside each
    # number its value and beside each interval its ends, as numbers that show as the text does
    shown_at = [i for i, name in enumerate(table[0]) if not name.endswith((" value", " low", " high"))]
    assert [[row[i] for i in shown_at] for row in table] == \
        [["protocol", "model pair", *headers(page)], *([*GROUP, *row] for row in rows(page))]
    numbers = {name: i for i, name in enumerate(table[0]) if i not in shown_at}
    assert "NTS value" in numbers and "NTS 95% CI low" in numbers and "NTS 95% CI high" in numbers
    for row in table[1:]:
        at = table[0].index("NTS")
        assert row[at] == (fmt(float(row[numbers["NTS value"]]), signed=True) if row[numbers["NTS value"]] else row[at])
        ends = row[numbers["NTS 95% CI low"]], row[numbers["NTS 95% CI high"]]
        assert row[table[0].index("NTS 95% CI")] == (interval_text(*map(float, ends)) if ends[0] else "")
    page.screenshot(path=str(shots / "columns-chosen.png"), full_page=True)


def visible_rows(page, where="#ranking-board"):
    """The rows a reader sees: the search hides the others."""
    return page.locator(where).evaluate(
        "e => [...e.querySelectorAll('tbody.reference tr, tbody.ranked tr')].filter(r => !r.hidden).map(r => "
        "[...r.cells].map(c => { const v = c.querySelector('.v'); return v ? v.textContent : c.textContent.trim(); }))")


def test_a_filter_and_the_search_change_the_rows_both_ways(page, served, shots):
    _, board, _ = served
    before = rows(page)
    choose(page, "f-source", "travel")
    want = expected(board, source="travel")
    assert want != before
    wait_until(lambda: rows(page) == want, what="the source filter")
    page.screenshot(path=str(shots / "filter-source-travel.png"), full_page=True)
    box = page.locator("#ranking-board input.sb-search")
    box.press_sequentially("lam=2", delay=50)   # no Enter
    wait_until(lambda: visible_rows(page) == expected(board, source="travel", search="lam=2"), what="the search")
    assert [row[1] for row in visible_rows(page)] == ["ceiling", TEACHER, "anchor"]
    for _ in "lam=2":   # cleared with Backspace, as a reader deletes: every row is back
        box.press("Backspace")
    wait_until(lambda: visible_rows(page) == want, what="the cleared search")
    box.press_sequentially("NAIVE", delay=30)   # case-insensitive, and a filter change keeps it
    wait_until(lambda: [r[1] for r in visible_rows(page)] == ["ceiling", TEACHER, "naive"], what="the search")
    box.fill("")
    box.press_sequentially("no such method")
    wait_until(lambda: page.locator("#ranking-board tbody.nomatch").is_visible(), what="the no-match row")
    assert "No submission matches this search" in page.locator("#ranking-board tbody.nomatch").inner_text()
    assert [r[1] for r in visible_rows(page)] == ["ceiling", TEACHER]   # the references stay
    assert "5 submissions" in page.locator("#context-line").inner_text()   # what was run does not change
    with page.expect_download() as download:
        page.locator("#ranking-board button.csv").click()
    assert download.value.suggested_filename == "shiftbench-mini-test-tiny-test-source-travel-search-no_such_method.csv"
    box.fill("")
    wait_until(lambda: visible_rows(page) == want and not page.locator("#ranking-board tbody.nomatch").is_visible(),
               what="the search emptied")


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
    assert text.startswith("damaged.zip: REJECTED — the upload's 'naive/submission.json' cannot be read: its data is damaged")
    assert "Nothing to show" in page.locator("#upload-preview").inner_text()
    page.wait_for_timeout(500)
    assert page.locator('[data-testid="toast-body"]').count() == 0   # a rejection, not an error popup
    assert left_behind(uploads_folder) == []
    page.screenshot(path=str(shots / "upload-damaged.png"), full_page=True)

    text = upload(page, finder_zip(naive, tmp_path / "finder.zip"))
    assert text.startswith("finder.zip: VALID — passes bench validate")
    wait_until(lambda: page.locator("#upload-preview tr.upload").count() == 1, what="the preview")
    assert rows(page, "#upload-preview") == expected(board)   # same numbers
    assert "Preview of mini-test · tiny-test" in page.locator("#upload-preview").inner_text()
    assert left_behind(uploads_folder) == []   # the upload was deleted once checked
    assert page.locator("#upload a[download]").count() == 0   # and the page offers no link to it
    page.screenshot(path=str(shots / "upload-finder.png"), full_page=True)


def chosen(page, elem_id):
    """The values a multiselect dropdown shows as chosen."""
    return page.locator(f"#{elem_id} .token").all_inner_texts()


def offered(page, elem_id):
    """The choices a dropdown offers (opened, read, closed)."""
    page.locator(f"#{elem_id} input").click()
    names = page.get_by_role("option").all_inner_texts()
    page.keyboard.press("Escape")
    return [n.replace("✓", "").strip() for n in names]   # a chosen one is ticked


def titles(board, keys):
    return [core.title(board.by_key[k]) for k in keys]


def test_the_other_tabs_draw_the_groups_pictures(page, served, shots):
    _, board, _ = served
    table = core.ranking(board, *GROUP)
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
            assert "arXiv:2605.25629" in page.locator("#about-text").inner_text()
        if tab == "Source × target":   # by default: the ceiling, the top few and naive, of this group only
            assert [t.strip() for t in chosen(page, "m-submission")] == titles(board, core.heatmap_default(table))
            assert offered(page, "m-submission") == titles(board, core.shown_order(table))
        if tab == "ID vs OOD":
            assert offered(page, "highlight") == titles(board, core.shown_order(table))
        page.screenshot(path=str(shots / f"tab-{tab.split()[0].lower()}.png"), full_page=True)


def test_the_group_switcher_shows_one_group_everywhere(page, served, shots):
    _, board, _ = served
    real = ("mini", "tiny")
    page.locator("#group").get_by_text("mini · tiny (4, archived)", exact=True).click()
    wait_until(lambda: rows(page) == expected(board, real), what="the other group's rows")
    table = core.ranking(board, *real)
    assert verdict_shown(page) == verdict_of(board, real, "mini · tiny")
    assert "decidedly worse: anchor " in verdict_shown(page)[1]   # with its Δ and deciding interval
    assert "Protocol mini v1.0 · Model pair tiny" in page.locator("#context-line").inner_text()
    assert "archived: mini-v2 replaces it" in page.locator("#context-line").inner_text()
    assert clipped(page) == [0, []]   # the reference group's widest texts fit at 1,440 px too
    page.screenshot(path=str(shots / "group-mini-tiny.png"), full_page=True)
    page.get_by_role("tab", name="ID vs OOD").click()
    page.wait_for_selector("#scatter img", state="visible", timeout=30_000)
    assert offered(page, "highlight") == titles(board, core.shown_order(table))   # no tiny-test submission
    page.get_by_role("tab", name="Source × target").click()
    wait_until(lambda: [t.strip() for t in chosen(page, "m-submission")] == titles(board, core.heatmap_default(table)),
               what="the heatmaps of the group")
    page.get_by_role("tab", name="Ranking").click()
    page.locator("#group").get_by_text("mini-test · tiny-test (5)", exact=True).click()
    wait_until(lambda: rows(page) == expected(board), what="the first group again")


def test_a_phone_sees_rank_method_nts_and_decided_first(browser, served, shots, tmp_path):
    _, board, runs = served
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.goto(served[0])
    page.wait_for_selector("#ranking tbody.ranked tr", timeout=60_000)
    page.wait_for_timeout(500)
    for column in ("rank", "method", "NTS", "decided"):   # on the first screen, unscrolled
        box = page.locator(f'#ranking th[data-col="{column}"]').bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390 and box["y"] + box["height"] <= 844, (column, box)
    first = page.locator("#ranking tbody.ranked tr").first.bounding_box()
    assert first["y"] + first["height"] <= 844   # and a ranked row under them
    assert page.evaluate("document.documentElement.scrollWidth") <= 390   # the page itself does not scroll sideways
    page.locator("#ranking-board .sb-scroll").evaluate("e => e.scrollLeft = 400")   # the rest scrolls; these stay
    assert page.locator('#ranking th[data-col="decided"]').bounding_box()["x"] + 60 <= 390
    for column in ("rank", "method", "NTS", "decided"):   # and their headers stay over the scrolled ones' headers
        box = page.locator(f'#ranking th[data-col="{column}"]').bounding_box()
        on_top = page.evaluate("([x, y]) => document.elementFromPoint(x, y).closest('th')?.dataset.col",
                               [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2])
        assert on_top == column, (column, on_top)
    page.locator("#ranking-board .sb-scroll").evaluate("e => e.scrollLeft = 0")
    page.screenshot(path=str(shots / "phone-390.png"))
    from leaderboard.static import write_site

    site = write_site(board, tmp_path / "site", runs.protocols, runs.model_pairs)
    page.goto(site.as_uri())
    assert page.evaluate("document.documentElement.scrollWidth") <= 390   # the static page neither
    page.screenshot(path=str(shots / "static-390.png"), full_page=True)
    context.close()


def test_the_committed_boards_first_screen_ranks(browser, committed_validations, tmp_path, shots):
    """The static page of the committed board, opened at 1,440 x 900 and on a phone at 390 x 844: a ranked row is on
    the first screen, unscrolled (the verdict is a compact list, its rule behind a "why"), and no interval of the
    table prints an end beyond ±100 (a first look's interval says so in words)."""
    from leaderboard.static import write_site

    site = write_site(core.load_board(REFERENCE), tmp_path / "site")
    for width, height, phone in ((1440, 900, False), (390, 844, True)):
        context = browser.new_context(viewport={"width": width, "height": height}, is_mobile=phone, has_touch=phone)
        page = context.new_page()
        page.goto(site.as_uri())
        shown = page.evaluate("""() => {
            const group = [...document.querySelectorAll('section.sb-group')].find(s => !s.hidden);
            const row = group.querySelector('tbody.ranked tr').getBoundingClientRect();
            return [row.bottom, group.querySelector('tbody.ranked').innerText, group.querySelector('table').innerText]; }""")
        assert shown[0] <= height, (width, shown[0])
        assert shown[1].startswith("1\t"), shown[1][:80]   # the first ranked row, not a reference row
        ends = [abs(float(x.replace("\u2212", "-"))) for x in re.findall(r"\[([-+\u2212]?\d+\.\d+), ", shown[2])]
        ends += [abs(float(x.replace("\u2212", "-"))) for x in re.findall(r", ([-+\u2212]?\d+\.\d+)\]", shown[2])]
        assert ends and max(ends) <= 100, max(ends)
        page.screenshot(path=str(shots / f"committed-{width}.png"))
        context.close()


def test_the_committed_boards_live_first_screen_ranks(browser, committed_validations, shots):
    """The live app on the committed board (its validations read from the session's record), opened at 1,440 x 900
    and on a phone at 390 x 844: the first ranked row is on the first screen, unscrolled, and is rank 1 of the
    group the board opens on."""
    from leaderboard.app import serve

    demo = serve(REFERENCE, port=(port := free_port()), block=False)
    try:
        for width, height, phone in ((1440, 900, False), (390, 844, True)):
            context = browser.new_context(viewport={"width": width, "height": height}, is_mobile=phone, has_touch=phone)
            page = context.new_page()
            page.goto(f"http://127.0.0.1:{port}/")
            first = page.locator("#ranking tbody.ranked tr").first
            first.wait_for(timeout=120_000)
            page.screenshot(path=str(shots / f"committed-live-{width}.png"))
            box = first.bounding_box()
            assert box["y"] >= 0 and box["y"] + box["height"] <= height, (width, box)
            assert first.locator("td").first.inner_text().strip() == "1"
            context.close()
    finally:
        demo.close()


@pytest.fixture(scope="module")
def served_bon(tmp_path_factory, bon_runs, seq_runs):
    """The app over the submissions of two protocols with best-of-N candidate sets (conftest's ``bon_runs``, and
    ``seq_runs``, seeded per source and grown to a third seed for two methods): the widest default tables."""
    from leaderboard.app import serve

    root = tmp_path_factory.mktemp("bon_board") / "submissions"
    for folder in (bon_runs.submissions, seq_runs.submissions):
        shutil.copytree(folder, root, dirs_exist_ok=True)
    protocols, model_pairs = {**bon_runs.protocols, **seq_runs.protocols}, {**bon_runs.model_pairs, **seq_runs.model_pairs}
    store = tmp_path_factory.mktemp("bon_validation_cache")
    port = free_port()
    demo = serve(root, port=port, protocols=protocols, model_pairs=model_pairs, block=False, cache_dir=store)
    yield f"http://127.0.0.1:{port}/", core.load_board(root, protocols, model_pairs, store)
    demo.close()


def test_groups_with_candidate_sets_fit_show_and_rank_by_bon(browser, served_bon, shots):
    """At 1,440 px the compact default fits with the BoN columns, over seeds and over runs; the group seeded per source
    shows the interval over runs, what each row rests on and the rule in its verdict; a "rank by" choice re-ranks by
    BoN NTS, and the picture of NTS against BoN NTS is drawn."""
    url, board = served_bon
    seq, bon = board.groups   # the per-source group has the most submissions: the board opens on it
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector("#ranking tbody.ranked tr", timeout=60_000)
    assert headers(page) == default_columns("per-source", "bon")
    assert rows(page) == expected(board, seq)
    assert clipped(page) == [0, []]   # the widest default: the interval over runs, what it rests on, and BoN
    runs = [r[headers(page).index("runs")] for r in rows(page)]
    assert "6 runs (3 seeds)" in runs and "4 runs (2 seeds)" in runs   # the grown comparison rests on more runs
    assert verdict_shown(page) == verdict_of(board, seq, core.group_label(*seq))
    assert "over independent runs, stratified by source" in verdict_shown(page)[2]
    page.screenshot(path=str(shots / "runs-ranking.png"), full_page=True)
    page.locator("#group").get_by_text(f"{core.group_label(*bon)} (3)", exact=True).click()
    wait_until(lambda: rows(page) == expected(board, bon), what="the group over seeds")
    assert headers(page) == default_columns("shared", "bon")
    assert clipped(page) == [0, []]   # the BoN group over seeds fits too
    page.locator("#columns-box").get_by_text("Filters and columns").click()
    page.locator("#rank-by").get_by_label("BoN NTS", exact=True).check()
    by_bon = core.shown(core.ranking(board, *bon, by="bon-nts"), board=board).text()
    wait_until(lambda: rows(page) == by_bon, what="the ranking by BoN NTS")
    at = headers(page).index("BoN NTS")
    ranked = [float(r[at]) for r in rows(page)[2:]]
    assert ranked == sorted(ranked, reverse=True)
    page.screenshot(path=str(shots / "bon-ranking.png"), full_page=True)
    page.get_by_role("tab", name="NTS vs BoN NTS").click()
    page.wait_for_selector("#nts-vs-bon img", state="visible", timeout=30_000)
    page.screenshot(path=str(shots / "tab-bon.png"), full_page=True)
    context.close()


def test_a_group_without_candidate_sets_offers_no_bon(page):
    page.locator("#columns-box").get_by_text("Filters and columns").click()
    assert not page.locator("#rank-by").is_visible()
    page.get_by_role("tab", name="NTS vs BoN NTS").click()
    page.wait_for_selector("#nts-vs-bon img", state="visible", timeout=30_000)   # a picture that says why it is empty


def rss_mb() -> float:
    """This process's resident memory: the server runs in it (serve(block=False))."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(not Path("/proc/self/statm").is_file(), reason="reads RSS from /proc")
def test_thirty_uploads_leave_the_servers_memory_where_it_was(page, served, tmp_path, uploads_folder):
    """Each preview bootstraps its group (a mini x tiny submission: about 100 MB of resample weights);
    none of it may stay. RSS after the 30th upload within 200 MB of after the first."""
    page.get_by_role("tab", name="Submit").click()
    archive = zip_folder(REFERENCE / "mini" / "tiny" / "naive", tmp_path / "naive.zip")
    after = []
    for i in range(30):
        named = shutil.copy(archive, tmp_path / f"naive-{i}.zip")   # a name of its own: its report is told apart
        text = upload(page, Path(named))
        assert text.startswith(f"naive-{i}.zip: VALID"), text
        wait_until(lambda: page.locator("#upload-preview tr.upload").count() == 1, what="the preview")
        after.append(rss_mb())
    assert after[-1] - after[0] <= 200, [round(m) for m in after]
    assert left_behind(uploads_folder) == []

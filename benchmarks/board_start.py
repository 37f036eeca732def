"""The live board's start, as a visitor meets it: `bench leaderboard` from a cold validation record and again from
the record it filled, each timed to its first HTTP 200 and to its first ranked row in headless Chromium, with the
server's CPU seconds (from /proc) and RSS at each point, and where the first ranked row ends on a 1,440 x 900
screen and on a 390 x 844 phone (the "first screen" docs/leaderboard.md promises).

    python benchmarks/board_start.py [--submissions submissions] [--chromium /usr/bin/chromium]

Linux only (/proc). Each start gets its own $SHIFTBENCH_CACHE under a temporary folder: the first empty (every
submission validated, every decision computed), the second the one the first filled.
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cpu_and_rss(pid: int) -> tuple[float, float]:
    """CPU seconds (user + system, with the children it waited for) and RSS in MB of a process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    cpu = sum(int(fields[i]) for i in (11, 12, 13, 14)) / tick   # utime, stime, cutime, cstime
    rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20
    return cpu, rss


def start(submissions: Path, cache: Path, chromium: str) -> dict:
    from playwright.sync_api import sync_playwright

    port = _free_port()
    env = {**os.environ, "SHIFTBENCH_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    began = time.perf_counter()
    server = subprocess.Popen([sys.executable, "-m", "bench", "leaderboard", "--submissions", str(submissions),
                               "--port", str(port)], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    try:
        while True:
            if server.poll() is not None:
                raise SystemExit(f"bench leaderboard exited with {server.returncode}")
            try:
                if urllib.request.urlopen(url, timeout=5).status == 200:
                    break
            except OSError:
                time.sleep(0.5)
        up, (up_cpu, up_rss) = time.perf_counter() - began, _cpu_and_rss(server.pid)
        ends = {}
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
            for width, height in ((1440, 900), (390, 844)):
                phone = width < 720
                context = browser.new_context(viewport={"width": width, "height": height}, is_mobile=phone,
                                              has_touch=phone)
                page = context.new_page()
                page.goto(url)
                page.wait_for_selector("#ranking tbody.ranked tr", timeout=600_000)
                if not ends:
                    shown, (shown_cpu, shown_rss) = time.perf_counter() - began, _cpu_and_rss(server.pid)
                box = page.locator("#ranking tbody.ranked tr").first.bounding_box()
                ends[f"{width}x{height}"] = box["y"] + box["height"]
                context.close()
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    return {"http_200_s": up, "http_200_cpu_s": up_cpu, "http_200_rss_mb": up_rss, "ranking_s": shown,
            "ranking_cpu_s": shown_cpu, "ranking_rss_mb": shown_rss, "first_ranked_row_ends_px": ends}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=Path, default=ROOT / "submissions")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args()
    cache = Path(tempfile.mkdtemp(prefix="board-start-"))
    try:
        for name in ("cold", "warm"):
            got = start(args.submissions.resolve(), cache, args.chromium)
            print(f"{name}: first HTTP 200 after {got['http_200_s']:.1f} s ({got['http_200_cpu_s']:.1f} CPU-s, "
                  f"{got['http_200_rss_mb']:.0f} MB); first ranked row after {got['ranking_s']:.1f} s "
                  f"({got['ranking_cpu_s']:.1f} CPU-s, {got['ranking_rss_mb']:.0f} MB); it ends at "
                  + ", ".join(f"{px:.0f} px of {size}" for size, px in got["first_ranked_row_ends_px"].items()))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

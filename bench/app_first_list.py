"""What a user sees after Enter on Explore, in Chromium: how long until the first-stage list is on screen, and
until the reranked list replaces the running state. Starts `workbench app` on a free port with this checkout's
settings (the demo collection, the default reranker), warms it with one query, then types 20 distinct sample
queries one after another.

    python bench/app_first_list.py            # needs Debian's Chromium (scripts/setup.sh --browser)

Prints p50 and p95 of both times in milliseconds (measured in the browser, from the Enter key press).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
from _output import add_json_option, keep
from playwright.sync_api import sync_playwright

from workbench.services.demo import sample_queries

CHROMIUM = "/usr/bin/chromium"
PREVIEW = "Reranking 50 candidates…"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(url: str, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)  # our own app on 127.0.0.1
            return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_json_option(parser)
    args = parser.parse_args()
    port = free_port()
    app = subprocess.Popen(
        [str(Path(sys.executable).parent / "workbench"), "app", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    first_list, reranked = [], []
    try:
        wait_for(f"http://127.0.0.1:{port}/_stcore/health")
        queries = [q.text for q in sample_queries()][:21]
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.set_default_timeout(120_000)
            page.goto(f"http://127.0.0.1:{port}/")
            box = page.get_by_label("Query", exact=True)
            for i, query in enumerate(queries):
                box.fill(query)
                started = time.perf_counter()
                box.press("Enter")
                marker = page.get_by_text(PREVIEW).first
                marker.wait_for()
                shown = time.perf_counter()
                marker.wait_for(state="hidden")
                done = time.perf_counter()
                if i:  # the first query warms the models
                    first_list.append((shown - started) * 1000)
                    reranked.append((done - started) * 1000)
                page.wait_for_timeout(300)
            browser.close()
    finally:
        app.terminate()
        app.wait(timeout=30)
    figures = {}
    for name, values in (("first_list", first_list), ("reranked", reranked)):
        figures[name] = {"p50": statistics.median(values), "p95": float(np.percentile(values, 95))}
        print(
            f"{name.replace('_', ' ')} on screen: p50 {statistics.median(values):.0f} ms, "
            f"p95 {np.percentile(values, 95):.0f} ms over {len(values)} queries"
        )
    keep(args, {"queries": len(first_list), "k": 50, **figures})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

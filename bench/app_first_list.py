"""What a user sees after Enter on Explore, in Chromium: how long until the first-stage list is on screen, and
until the reranked list replaces the running state. Starts `workbench app` on a free port with this checkout's
settings (the demo collection, the default reranker) on a fresh data folder, warms it with one query, then types
20 distinct sample queries one after another.

    python bench/app_first_list.py            # needs Debian's Chromium (scripts/setup.sh --browser)
    python bench/app_first_list.py --reranker-backend openvino-bf16 --embedding-backend openvino
    python bench/app_first_list.py --bare     # the floor: a bare Streamlit page, no model, no search

`--bare` times, the same way, a page with nothing of the workbench in it: a text box labelled Query, 50 Markdown rows
and a History expander counting the searches (the same Streamlit, browser and machine): what any Streamlit page's
answer costs before a model or a store does anything.

Prints p50 and p95 of both times in milliseconds, measured in the page itself (`performance.now()` from the
Enter key press, by a MutationObserver): the first list is the first-stage preview's first paint (a reranker fast
enough never shows one: then it is the reranked list's), the reranked list the moment History counts the search.
The reranker is the checkout's (RERANKER_MODEL, RERANKER_BACKEND as set).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
from _output import add_json_option, keep
from playwright.sync_api import sync_playwright

from workbench.services.demo import sample_queries

CHROMIUM = "/usr/bin/chromium"
PREVIEW = "Reranking 50 candidates…"
# Times, in the page, of the preview's first paint and of History counting one more search than at the start.
WATCH = """(preview) => {
    const count = () => {
        const label = [...document.querySelectorAll("summary, p, span")].map((e) => e.innerText)
            .find((t) => /^History \\(\\d+ searche?s?\\)$/.test(t || ""));
        return label ? parseInt(label.match(/\\d+/)[0], 10) : 0;
    };
    const w = {start: null, before: count(), preview: null, done: null};
    window.__wbTimes = w;
    const look = () => {
        if (w.start === null) return;
        const now = performance.now();
        if (w.preview === null && document.body.innerText.includes(preview)) w.preview = now - w.start;
        if (w.done === null && count() > w.before) w.done = now - w.start;
    };
    new MutationObserver(look).observe(document.body, {childList: true, subtree: true, characterData: true});
    const enter = (e) => { if (e.key === "Enter" && w.start === null) w.start = performance.now(); };
    document.addEventListener("keydown", enter, {capture: true});
}"""


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


BARE_PAGE = """import streamlit as st

st.session_state.setdefault("searches", 0)
query = st.text_input("Query")
if query:
    st.session_state.searches += 1
    for rank in range(1, 51):
        st.markdown(f"**{rank}.** a passage found for {query}, number {rank}")
with st.expander(f"History ({st.session_state.searches} searches)"):
    st.write("the searches")
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reranker-backend", help="RERANKER_BACKEND for the app (default: the checkout's)")
    parser.add_argument("--embedding-backend", help="WORKBENCH_EMBEDDING_BACKEND for the app (default: the checkout's)")
    parser.add_argument("--bare", action="store_true", help="time a bare Streamlit page instead (the floor)")
    add_json_option(parser)
    args = parser.parse_args()
    port = free_port()
    data = tempfile.mkdtemp(prefix="app-first-list-")  # a fresh data folder: no score kept by an earlier run
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WORKBENCH_DATA_DIR": data}
    if args.reranker_backend:
        env["RERANKER_BACKEND"] = args.reranker_backend
    if args.embedding_backend:
        env["WORKBENCH_EMBEDDING_BACKEND"] = args.embedding_backend
    command = [str(Path(sys.executable).parent / "workbench"), "app", "--port", str(port)]
    if args.bare:
        (Path(data) / "bare.py").write_text(BARE_PAGE, encoding="utf-8")
        command = [sys.executable, "-m", "streamlit", "run", str(Path(data) / "bare.py"), "--server.port", str(port),
                   "--server.headless", "true"]  # fmt: skip
    app = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    first_list, reranked = [], []
    try:
        wait_for(f"http://127.0.0.1:{port}/_stcore/health")
        queries = [q.text for q in sample_queries()][:21]
        backends = {"reranker": env.get("RERANKER_BACKEND", "the checkout's"),
                    "embedder": env.get("WORKBENCH_EMBEDDING_BACKEND", "the checkout's")}  # fmt: skip
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.set_default_timeout(120_000)
            page.goto(f"http://127.0.0.1:{port}/")
            box = page.get_by_label("Query", exact=True)
            for i, query in enumerate(queries):
                box.fill(query)
                page.evaluate(WATCH, PREVIEW)
                box.press("Enter")
                page.wait_for_function("window.__wbTimes.done !== null")
                times = page.evaluate("window.__wbTimes")
                if i:  # the first query warms the models
                    first_list.append(times["preview"] if times["preview"] is not None else times["done"])
                    reranked.append(times["done"])
                page.wait_for_timeout(300)
            browser.close()
    finally:
        app.terminate()
        app.wait(timeout=30)
        shutil.rmtree(data, ignore_errors=True)
    figures = {}
    for name, values in (("first_list", first_list), ("reranked", reranked)):
        figures[name] = {"p50": statistics.median(values), "p95": float(np.percentile(values, 95))}
        print(
            f"{name.replace('_', ' ')} on screen: p50 {statistics.median(values):.0f} ms, "
            f"p95 {np.percentile(values, 95):.0f} ms over {len(values)} queries"
        )
    keep(args, {"queries": len(first_list), "k": 50, "bare": args.bare, "backends": backends, **figures})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

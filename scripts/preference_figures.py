"""Blind preferences on the demo (issue 71): BM25 against BM25 reranked by the QA cross-encoder, k = 50 → top 10.

- In Chromium, on the Prefer page served by `workbench app`: the milliseconds from a key press to the next query's
  two lists on screen (the pair after the one shown is searched while the person reads), p50 and p95;
- the same step through the service the page calls (a choice recorded, the next pair read);
- a scripted rater who prefers the list with the higher nDCG@10 by the demo's shipped grades (a tie when equal):
  its preference verdict beside the graded verdict of the same two configurations (`workbench eval`'s).

    .venv/bin/python scripts/preference_figures.py               # measure (a few minutes; needs Chromium)
    .venv/bin/python scripts/preference_figures.py --write       # write the blocks again from the kept record
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures_blocks import FIGURES, made_by, script_main, stamp, table

RECORD = FIGURES / "preferences.json"
PREFIX = "preferences-"
K, TOP_N, STEPS = 50, 10, 30
A = f"retrieval=bm25,k={K},n={TOP_N},reranker=none"
B = f"retrieval=bm25,k={K},n={TOP_N}"
CHROMIUM = "/usr/bin/chromium"


def _env(shared: Path, data: Path) -> dict[str, str]:
    return {**os.environ, "WORKBENCH_CONFIG": "", "WORKBENCH_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1",
            "WORKBENCH_MODELS_DIR": str(shared / "models"), "RERANKER_MODEL": "minilm-l6-qa-reranker",
            "RERANKER_BACKEND": "torch", "WORKBENCH_OFFLINE": "1", "WEBSOCKETS_MAX_LINE_LENGTH": "65536"}  # fmt: skip


def _workbench(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([str(Path(sys.executable).parent / "workbench"), *args], env=env, capture_output=True,
                          text=True, check=True)  # fmt: skip
    return done.stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _percentiles(values: list[float]) -> dict[str, float]:
    import numpy as np

    return {"p50": statistics.median(values), "p95": float(np.percentile(values, 95)), "n": len(values)}


def in_the_browser(env: dict[str, str], session_id: str) -> dict[str, float]:
    """Key presses on the Prefer page, alternating left and right: the time until the next query's heading and both
    lists are on screen and the script run is over."""
    from playwright.sync_api import sync_playwright

    port = _free_port()
    app = subprocess.Popen(
        [str(Path(sys.executable).parent / "workbench"), "app", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=env["WORKBENCH_DATA_DIR"],
    )  # fmt: skip
    times: list[float] = []
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)  # our own app
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.set_default_timeout(120_000)
            page.goto(f"http://127.0.0.1:{port}/")
            box = page.get_by_label("Rating as", exact=True)
            box.fill("scripted")
            box.press("Enter")
            page.wait_for_timeout(1500)
            page.goto(f"http://127.0.0.1:{port}/prefer?session={session_id}")
            heading = page.locator("[data-testid='stMain'] h3").first
            try:
                heading.wait_for()
            except Exception:
                page.screenshot(path=str(Path(tempfile.gettempdir()) / "preference-figures.png"))
                raise
            for step in range(STEPS + 1):
                heading.wait_for()
                page.wait_for_function(_SETTLED)
                shown = heading.inner_text()
                started = time.perf_counter()
                page.keyboard.press("ArrowLeft" if step % 2 else "ArrowRight")
                page.wait_for_function(_NEXT_SHOWN, arg=shown)
                if step:  # the first press waits on the models' first use
                    times.append((time.perf_counter() - started) * 1000)
                page.wait_for_timeout(400)  # a person reads before the next press
            browser.close()
    finally:
        app.terminate()
        app.wait(timeout=30)
    return _percentiles(times)


_SETTLED = (
    "() => document.querySelectorAll('[data-stale=\"true\"]').length === 0 && "
    "!document.querySelector('[data-testid=\"stStatusWidget\"]')"
)
_NEXT_SHOWN = (  # another query's heading, both of its lists drawn, nothing stale left from the one before
    "(q) => { const h = document.querySelector('[data-testid=\"stMain\"] h3'); "
    "return h && h.innerText !== q && [...document.querySelectorAll('h4')].filter(x => x.innerText === 'Left' || "
    "x.innerText === 'Right').length === 2 && document.querySelectorAll('[data-stale=\"true\"]').length === 0; }"
)


def scripted_rater(shared: Path, data: Path) -> dict[str, Any]:
    """A rater who prefers the list with the higher nDCG@10 by the shipped grades, through the service; the service's
    step times; the graded verdict of the same two configurations."""
    from workbench.config import Settings
    from workbench.engine import Engine
    from workbench.evaluation.preference import list_ndcg10
    from workbench.evaluation.service import evaluate_dataset
    from workbench.preferences import open_preference_store
    from workbench.services.demo import demo_dataset
    from workbench.services.preferences import PreferenceRequest, choose, next_pair, start_preferences, verdict_of

    settings = Settings(data_dir=data, offline=True, reranker_backend="torch",
                        reranker_model=str(shared / "models" / "minilm-l6-qa-reranker"))  # fmt: skip
    engine = Engine(settings)
    shipped = demo_dataset("test")  # the files' grades, whatever was rated since
    first = engine.plan(collection="demo", retrieval="bm25", k=K, top_n=TOP_N, reranker=None)
    second = engine.plan(collection="demo", retrieval="bm25", k=K, top_n=TOP_N)
    session = start_preferences(engine, PreferenceRequest(first=first, second=second, judged_of="demo", seed=0))
    store = open_preference_store(settings)
    steps: list[float] = []
    pair = next_pair(engine, session.id, "scripted")
    while pair is not None:
        lists = store.lists(session.id)[pair.query_id]
        grades = shipped.qrels.get(pair.query_id, {})
        a, b = (list_ndcg10(pair.query_id, grades, ids) for ids in (lists.a, lists.b))
        a_left = session.a_on_left(pair.query_id)
        choice = "same" if abs(a - b) < 1e-12 else "left" if (a > b) == a_left else "right"
        started = time.perf_counter()
        choose(engine, session.id, pair.query_id, choice, "scripted")
        pair = next_pair(engine, session.id, "scripted")
        steps.append((time.perf_counter() - started) * 1000)
    verdict = verdict_of(engine, session.id)[1]
    graded = evaluate_dataset(engine, shipped, second, depth=())
    assert graded.verdict is not None
    return {
        "session": session.id, "service": _percentiles(steps[1:]), "pooled": verdict.pooled.model_dump(),
        "identical": verdict.identical, "outcome": verdict.outcome, "graded_direction": graded.verdict.direction,
        "graded_delta": graded.after["ndcg@10"] - graded.before["ndcg@10"], "graded_ci": [graded.verdict.ci_low,
        graded.verdict.ci_high], "graded_p": graded.p_value, "queries": verdict.queries,
        "backend": graded.reranker_backend or "",
    }  # fmt: skip


def measure(shared: Path) -> dict[str, Any]:
    data = Path(tempfile.mkdtemp(prefix="wb-preference-figures-"))
    env = _env(shared, data)
    _workbench(env, "demo")  # the demo collection, built offline as the app's first start builds it
    started = _workbench(env, "preferences", "start", "--collection", "demo", "--a", A, "--b", B, "--judged", "demo",
                         "--seed", "1", "--json")  # fmt: skip
    session = json.loads(started)
    browser = in_the_browser(env, session["id"])
    print("browser", browser, flush=True)
    rated = scripted_rater(shared, data)
    print("scripted", rated, flush=True)
    return stamp({**rated, "browser": browser, "steps": STEPS})


_AGREES = {("ship", "helps"), ("no-ship", "hurts"), ("inconclusive", "none")}


def render(name: str, kept: dict[str, Any]) -> str:
    if name == "preferences-latency":
        b, s = kept["browser"], kept["service"]
        cells = [
            ["key press → next pair on screen (Chromium, the Prefer page)", f"{b['p50']:,.0f}", f"{b['p95']:,.0f}",
             f"{b['n']}"],
            ["a choice recorded → the next pair read, no pause to read (the service the page calls)",
             f"{s['p50']:,.0f}", f"{s['p95']:,.0f}", f"{s['n']}"],
        ]  # fmt: skip
        met = "met" if b["p95"] < 1000 else "**not met**"
        footer = (
            f"BM25 k = {K} → top {TOP_N}, A without and B with the QA cross-encoder, the demo's judged queries; the "
            f"pair after the one shown is searched in the background while the person reads ({kept['steps']} key "
            f"presses, alternating left and right, 0.4 s apart; the first press, which waits on the models' first "
            f"use, not counted). The service's row has no pause: where the prefetch has not finished, the next pair "
            f"waits on its searches. The goal, p95 under 1 s: {met}. " + made_by(kept, "preference_figures.py")
        )
        return table(["step", "p50 ms", "p95 ms", "steps"], "|---|---:|---:|---:|", cells, footer)
    p = kept["pooled"]
    agrees = (kept["outcome"], kept["graded_direction"]) in _AGREES
    cells = [[
        f"{p['b']} / {p['a']} / {p['ties']} ({kept['identical']} identical)",
        f"{p['share_b']:.0%} [{p['ci_low']:.0%}, {p['ci_high']:.0%}]" if p["share_b"] is not None else "–",
        f"{p['p_value']:.3g}" if p["p_value"] is not None else "–",
        kept["outcome"],
        f"{kept['graded_delta']:+.4f} [{kept['graded_ci'][0]:+.4f}, {kept['graded_ci'][1]:+.4f}] "
        f"({kept['graded_direction']})",
        "yes" if agrees else "**no**",
    ]]  # fmt: skip
    footer = (
        f"The {kept['queries']} judged queries of the demo, BM25 k = {K} → top {TOP_N}; the scripted rater prefers the "
        'list with the higher nDCG@10 by the shipped grades and says "same" when they are equal. Ship, no-ship and '
        "inconclusive agree with helps, hurts and no measurable difference. " + made_by(kept, "preference_figures.py")
    )
    return table(["B / A / ties", "B preferred [exact 95 %]", "sign test p", "preference outcome",
                  "graded ΔnDCG@10 [95 %]", "agree"], "|---|---:|---:|---|---|---|", cells, footer)  # fmt: skip


def footer(kept: dict[str, Any]) -> str:
    return made_by(kept, "preference_figures.py")


if __name__ == "__main__":
    raise SystemExit(script_main(sys.argv[1:], sys.modules[__name__]))

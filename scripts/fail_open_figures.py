"""Fail open's figures (issue 72): what a rerank budget costs in quality, and whether the service holds it under load.

1. The verdict as served: the demo (50 queries) and SciFact (the first 200 judged queries), dense k = 50 and the QA
   cross-encoder on fp32 torch, every search timed (no cache); then, for budgets from 1 ms to past the slowest
   query's rerank, nDCG@10 as served (a query whose rerank took longer scored at its first-stage order) beside the
   first stage and always reranked, the share served reranked and p95 end to end (`evaluation/served.py`).
2. `/search` under a budget of 250 ms at 1, 4 and 8 concurrent clients, `workbench serve` on the demo, its reranker a
   local service that hangs (10 s) on a seeded 20 % of its requests: the share answered with the rerank stage within
   the budget + 50 ms, p50/p99 end to end, fallbacks by reason, and searches lost (not answered 200).
3. Budgets under load: the demo's verdict as served at the median rerank time of part 1, its searches served 1, 2
   and 4 at once while each is timed (`eval --rerank-budget-ms B --serve-concurrency N`).
4. `tune` as served: SciFact (its first 200 judged queries), dense × k 10, 20, 50, always reranked and then under a
   500 ms rerank budget (every cell's searches timed, no score shared): the best and recommended cells each way.

    .venv/bin/python scripts/fail_open_figures.py                   # measure (about 15 minutes on 2 cores)
    .venv/bin/python scripts/fail_open_figures.py --data-dir DIR    # reuse a folder where SciFact is ingested
    .venv/bin/python scripts/fail_open_figures.py --tune-only       # measure part 4 again, keeping the rest
    .venv/bin/python scripts/fail_open_figures.py --write           # write the blocks again from the kept record
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from fastapi import Request  # at module level: the handler's annotation is resolved in this module's names

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures_blocks import FIGURES, data_dir_option, made_by, qa_settings, script_main, stamp, table

RECORD = FIGURES / "fail_open.json"
PREFIX = "fail-open-"
COLLECTIONS = {"demo": None, "scifact": 200}  # queries (None: all)
SERVE_BUDGET_MS, SLACK_MS, HANG_SHARE, HANG_S = 250, 50, 0.2, 10.0
CONCURRENCY, REQUESTS = (1, 4, 8), 80
LOADS = (1, 2, 4)  # searches at once in part 3
TUNE_SET, TUNE_QUERIES, TUNE_KS, TUNE_BUDGET_MS = "scifact", 200, (10, 20, 50), 500.0


def add_options(parser: Any) -> None:
    """--data-dir, and --load-only: measure the service under load again, keeping the record's served curves."""
    data_dir_option(parser)
    parser.add_argument("--load-only", action="store_true", help="measure only /search under load again")
    parser.add_argument("--tune-only", action="store_true", help="measure only tune as served again (part 4)")


def _served_curve(engine: Any, shared: Path) -> tuple[dict[str, list[dict[str, Any]]], str]:
    from workbench.evaluation import Dataset
    from workbench.evaluation.served import served_figures
    from workbench.evaluation.service import EvaluationOptions, evaluate_dataset
    from workbench.services.demo import DEMO_COLLECTION, demo_dataset

    curves: dict[str, list[dict[str, Any]]] = {}
    backend = ""
    for name, queries in COLLECTIONS.items():
        dataset = demo_dataset() if name == DEMO_COLLECTION else Dataset.from_beir(shared / "data" / name)
        plan = engine.plan(collection=name, retrieval="dense", k=50, top_n=10)
        report = evaluate_dataset(
            engine, dataset, plan, max_queries=queries, depth=(), options=EvaluationOptions(use_cache=False)
        )
        backend = report.reranker_backend or backend
        times = sorted(o.rerank_ms for o in report.per_query if o.rerank_ms is not None)
        budgets = sorted({1.0, *(round(float(np.percentile(times, q)), 1) for q in (10, 25, 50, 75, 90)),
                          float(np.ceil(times[-1] + 1))})  # fmt: skip
        curves[name] = []
        for budget in budgets:
            served = served_figures(report, budget)
            curves[name].append(
                {
                    "budget_ms": budget,
                    "queries": served.queries,
                    "share_reranked": served.share_reranked,
                    "as_served": served.as_served,
                    "first_stage": served.first_stage,
                    "always": served.always_reranked,
                    "vs_first_stage": served.vs_first_stage.model_dump(),
                    "vs_always": served.vs_always_reranked.model_dump(),
                    "p95_ms": served.p95_ms,
                }
            )
            print(name, curves[name][-1]["budget_ms"], curves[name][-1]["as_served"], flush=True)
    return curves, backend


def _hanging_reranker(port: int) -> Any:
    """A rerank service on 127.0.0.1:`port` (the Cohere-style `/service/rerank`, word overlap as the score) that
    hangs HANG_S seconds on a seeded HANG_SHARE of its requests."""
    import uvicorn
    from fastapi import FastAPI

    app = FastAPI()
    draw = random.Random(72)

    @app.post("/service/rerank")
    async def rerank(request: Request) -> Any:
        body = await request.json()
        if draw.random() < HANG_SHARE:
            await asyncio.sleep(HANG_S)
        words = set(body["query"].lower().split())
        scored = [{"index": i, "relevance_score": len(words & set(d.lower().split())) / max(len(words), 1)}
                  for i, d in enumerate(body["documents"])]  # fmt: skip
        return {"results": sorted(scored, key=lambda r: -r["relevance_score"])}

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return server


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


CIRCUITS = {"circuit on (5 failures, 30 s)": "5", "circuit off": "1000"}


def _ready(url: str) -> None:
    import httpx

    for _ in range(600):
        try:
            if httpx.get(f"{url}/health", timeout=2).json()["status"] == "ready":
                return
        except (httpx.HTTPError, ValueError, KeyError):
            pass
        time.sleep(0.5)
    raise TimeoutError("workbench serve did not become ready")


def _one_load(url: str, clients: int, queries: list[str]) -> dict[str, Any]:
    import httpx

    def ask(i: int) -> tuple[int, float, dict[str, Any] | None]:
        body = {"query": queries[i % len(queries)], "top_k": 10, "k": 50, "rerank_budget_ms": SERVE_BUDGET_MS}
        started = time.perf_counter()
        try:
            answer = httpx.post(f"{url}/search", json=body, timeout=60)
        except httpx.HTTPError:
            return 0, (time.perf_counter() - started) * 1000, None
        wall = (time.perf_counter() - started) * 1000
        return answer.status_code, wall, answer.json() if answer.status_code == 200 else None

    with ThreadPoolExecutor(clients) as pool:
        answers = list(pool.map(ask, range(REQUESTS)))
    ok = [a for status, _, a in answers if status == 200 and a is not None]
    walls = [wall for status, wall, _ in answers if status == 200]
    reasons: dict[str, int] = {}
    for answer in ok:
        reason = (answer["rerank_fallback"] or "reranked").split(":")[0]
        reasons[reason] = reasons.get(reason, 0) + 1
    within = sum(a["timings"]["rerank_ms"] <= SERVE_BUDGET_MS + SLACK_MS for a in ok)
    return {
        "clients": clients,
        "requests": REQUESTS,
        "answered": len(ok),
        "lost": REQUESTS - len(ok),
        "within": within / REQUESTS,
        "p50_ms": float(np.percentile(walls, 50)) if walls else None,
        "p99_ms": float(np.percentile(walls, 99)) if walls else None,
        "reasons": reasons,
    }


def _serving_under_load(data_dir: Path) -> list[dict[str, Any]]:
    """Each circuit setting at each concurrency on a `workbench serve` of its own (no circuit carried over)."""
    from workbench.services.demo import demo_dataset

    queries = list(demo_dataset().queries.values())
    reranker_port = _free_port()
    hanging = _hanging_reranker(reranker_port)
    rows = []
    try:
        for circuit, failures in CIRCUITS.items():
            for clients in CONCURRENCY:
                api_port = _free_port()
                env = {**os.environ, "WORKBENCH_CONFIG": "", "WORKBENCH_DATA_DIR": str(data_dir),
                       "WORKBENCH_OFFLINE": "1", "RERANKER_MODEL": f"http://127.0.0.1:{reranker_port}/service",
                       "WORKBENCH_RERANK_TIMEOUT": "30", "WORKBENCH_RERANK_CIRCUIT_FAILURES": failures}  # fmt: skip
                serve = subprocess.Popen(
                    [str(Path(sys.executable).parent / "workbench"), "serve", "--port", str(api_port)],
                    env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )  # fmt: skip
                try:
                    url = f"http://127.0.0.1:{api_port}"
                    _ready(url)
                    rows.append({"circuit": circuit, **_one_load(url, clients, queries)})
                    print(rows[-1], flush=True)
                finally:
                    serve.terminate()
                    serve.wait(timeout=30)
        return rows
    finally:
        hanging.should_exit = True


def measure(
    shared: Path, data_dir: str | None = None, load_only: bool = False, tune_only: bool = False
) -> dict[str, Any]:
    """The served curves (or, `load_only`, the record's), then the service under load; or, `tune_only`, the
    record with tune as served measured again."""
    import json

    from workbench.engine import Engine
    from workbench.services.demo import ensure_demo_collection

    settings = qa_settings(shared, data_dir, "fail-open-figures")
    engine = Engine(settings)
    ensure_demo_collection(engine)
    if tune_only:
        return stamp({**json.loads(RECORD.read_text(encoding="utf-8")), "tuned": _tuned(engine, shared)})
    if load_only:
        kept = json.loads(RECORD.read_text(encoding="utf-8"))
        curves, backend = kept["curves"], kept["backend"]
    else:
        curves, backend = _served_curve(engine, shared)
    load = _serving_under_load(Path(settings.data_dir))
    median = next(r["budget_ms"] for r in sorted(curves["demo"], key=lambda r: abs(r["share_reranked"] - 0.5)))
    loads = _budget_under_load(engine, median)
    tuned = _tuned(engine, shared)
    return stamp({"curves": curves, "load": load, "backend": backend, "serve_budget_ms": SERVE_BUDGET_MS,
                  "slack_ms": SLACK_MS, "hang_share": HANG_SHARE, "hang_s": HANG_S, "loads": loads,
                  "tuned": tuned})  # fmt: skip


def _budget_under_load(engine: Any, budget_ms: float) -> list[dict[str, Any]]:
    """The demo as served under `budget_ms`, its searches served LOADS at once (each timed, no cache)."""
    from workbench.evaluation.service import EvaluationOptions, evaluate_dataset
    from workbench.services.demo import DEMO_COLLECTION, demo_dataset

    plan = engine.plan(collection=DEMO_COLLECTION, retrieval="dense", k=50, top_n=10)
    rows = []
    for load in LOADS:
        options = EvaluationOptions(use_cache=False, rerank_budget_ms=budget_ms, serve_concurrency=load)
        served = evaluate_dataset(engine, demo_dataset(), plan, depth=(), options=options).served
        assert served is not None
        rows.append({"budget_ms": budget_ms, "concurrency": load, "queries": served.queries,
                     "share_reranked": served.share_reranked, "as_served": served.as_served,
                     "vs_first_stage": served.vs_first_stage.model_dump(), "p50_ms": served.p50_ms,
                     "p95_ms": served.p95_ms})  # fmt: skip
        print(rows[-1], flush=True)
    return rows


def _tuned(engine: Any, shared: Path) -> list[dict[str, Any]]:
    """`tune` on SciFact's first TUNE_QUERIES judged queries (dense × TUNE_KS), always reranked and as served under
    TUNE_BUDGET_MS."""
    from workbench.evaluation import Dataset
    from workbench.evaluation.tuning import tune

    dataset = Dataset.from_beir(shared / "data" / TUNE_SET)
    base = engine.plan(collection=TUNE_SET, retrieval="dense", k=max(TUNE_KS), top_n=10)
    rows = []
    for budget in (None, TUNE_BUDGET_MS):
        run = tune(engine, dataset, base, first_stages=("dense",), ks=TUNE_KS, timing_queries=5,
                   max_queries=TUNE_QUERIES, rerank_budget_ms=budget)  # fmt: skip
        advised = {c.label: c.reranking_verdict in (None, "helps") for c in run.cells}
        rows.append({
            "budget_ms": budget, "best": run.best, "recommended": run.recommended, "words": run.words,
            "advised": advised.get(run.recommended or "", False), "queries": run.queries,
            "cells": [{"k": c.k, "after": c.ndcg_after, "before": c.ndcg_before,
                       "as_served": c.served.as_served if c.served else None,
                       "share_reranked": c.served.share_reranked if c.served else None,
                       "verdict": c.reranking_verdict} for c in run.cells],
        })  # fmt: skip
        print(rows[-1]["words"], flush=True)
    return rows


def _interval(d: dict[str, float]) -> str:
    return f"{d['delta']:+.4f} [{d['ci_low']:+.4f}, {d['ci_high']:+.4f}]"


def render(name: str, kept: dict[str, Any]) -> str:
    """`fail-open-curve`: nDCG@10 as served against the budget; `fail-open-load`: /search under load;
    `fail-open-concurrency`: the verdict as served at 1, 2 and 4 searches at once; `fail-open-tune`: tune's cells
    always reranked and as served."""
    if name == "fail-open-concurrency":
        cells = [
            [str(r["concurrency"]), f"{r['share_reranked']:.0%}", f"{r['as_served']:.4f}",
             _interval(r["vs_first_stage"]), f"{r['p50_ms']:.0f}", f"{r['p95_ms']:.0f}"]
            for r in kept["loads"]
        ]  # fmt: skip
        return table(
            ["searches at once", "served reranked", "nDCG@10 as served", "− first stage [95 % CI]", "p50 ms",
             "p95 ms"],
            "|---:|---:|---:|---|---:|---:|",
            cells,
            f"The demo ({kept['loads'][0]['queries']} queries), dense k = 50, top 10, under a rerank budget of "
            f"{kept['loads'][0]['budget_ms']:g} ms (about its median rerank time one search at a time), each search "
            "timed with no cache while the others run (`eval demo --rerank-budget-ms B --serve-concurrency N`). "
            + made_by(kept, "fail_open_figures.py"),
        )  # fmt: skip
    if name == "fail-open-tune":
        cells = []
        for run in kept["tuned"]:
            how = "always reranked" if run["budget_ms"] is None else f"as served under {run['budget_ms']:g} ms"
            for c in run["cells"]:
                label = f"dense k={c['k']}"
                chosen = "recommended" if run.get("advised", True) else "cheapest as good as the best"
                mark = "best; " if label == run["best"] else ""
                mark += chosen if label == run["recommended"] else ""
                served = "" if c["as_served"] is None else f"{c['as_served']:.4f} ({c['share_reranked']:.0%})"
                cells.append([how, label, f"{c['before']:.4f}", f"{c['after']:.4f}", served, c["verdict"] or "",
                              mark.strip("; ")])  # fmt: skip
        return table(
            ["tune", "cell", "nDCG@10 first stage", "nDCG@10 reranked", "as served (reranked)", "verdict", ""],
            "|---|---|---:|---:|---:|---|---|",
            cells,
            f"`workbench tune {TUNE_SET} --first-stage dense -k 10 -k 20 -k 50 --max-queries "
            f"{kept['tuned'][0].get('queries', TUNE_QUERIES)}`, then with `--rerank-budget-ms {TUNE_BUDGET_MS:g}`; "
            "each says: " + " / ".join(f"“{r['words'].split('. ')[0]}.”" for r in kept["tuned"]) + " "
            + made_by(kept, "fail_open_figures.py"),
        )  # fmt: skip
    if name == "fail-open-load":
        cells = [
            [r["circuit"], str(r["clients"]), str(r["requests"]), f"{r['within']:.0%}", f"{r['p50_ms']:.0f}",
             f"{r['p99_ms']:.0f}",
             ", ".join(f"{k} {v}" for k, v in sorted(r["reasons"].items())), str(r["lost"])]
            for r in kept["load"]
        ]  # fmt: skip
        return table(
            ["circuit", "clients", "searches", f"rerank stage within {kept['serve_budget_ms']} + {kept['slack_ms']} ms",
             "p50 ms", "p99 ms", "served as", "lost"],
            "|---|---:|---:|---:|---:|---:|---|---:|",
            cells,
            f"`/search` with `rerank_budget_ms: {kept['serve_budget_ms']}` on the demo (k = 50, top 10), its "
            f"reranker a local service hanging {kept['hang_s']:g} s on a seeded {kept['hang_share']:.0%} of its "
            "requests; each row a fresh `workbench serve`; end-to-end times as the clients saw them. "
            + made_by(kept, "fail_open_figures.py"),
        )  # fmt: skip
    cells = [
        [collection, f"{row['budget_ms']:g}", f"{row['share_reranked']:.0%}", f"{row['as_served']:.4f}",
         _interval(row["vs_first_stage"]), _interval(row["vs_always"]), f"{row['p95_ms']:.0f}"]
        for collection, rows in kept["curves"].items()
        for row in rows
    ]  # fmt: skip
    firsts = "; ".join(
        f"{c}: first stage {rows[0]['first_stage']:.4f}, always reranked {rows[0]['always']:.4f} "
        f"({rows[0]['queries']} queries)"
        for c, rows in kept["curves"].items()
    )
    return table(
        ["collection", "budget ms", "served reranked", "nDCG@10 as served", "− first stage [95 % CI]",
         "− always reranked [95 % CI]", "p95 ms"],
        "|---|---:|---:|---:|---|---|---:|",
        cells,
        f"Dense k = 50, top 10, each search timed one at a time with no cache; budgets at the 10th to 90th "
        f"percentiles of the queries' rerank times, and past the slowest. {firsts}. "
        + made_by(kept, "fail_open_figures.py"),
    )  # fmt: skip


def footer(kept: dict[str, Any]) -> str:
    return (
        f"fail open: {sum(len(r) for r in kept['curves'].values())} budgets, {len(kept['load'])} loads, "
        f"{len(kept.get('loads', []))} concurrencies, {len(kept.get('tuned', []))} tuning runs"
    )


if __name__ == "__main__":
    sys.exit(script_main(sys.argv[1:], sys.modules[__name__]))

"""Queries arriving together, a repeated query, and a top n change, on the engine with the real models.

    python bench/concurrent_queries.py                       # demo collection, k=50, 8 clients x 3 queries
    python bench/concurrent_queries.py --collection scifact --dataset ../shared/data/scifact

Runs the same distinct queries one at a time and then from 8 threads at once (caches off, so every query pays
for its model call), interleaving the two modes over rounds; prints queries/s of each and their ratio (what
micro-batching buys), and the error count. Then the ceiling of what merging calls can buy on this machine: the
same queries' (query, passage) pairs scored by the engine's model called bare, as one call per query and as one
call for all, interleaved; and, on the CPU, how the model's speed scales with cores (one torch thread, all of
them, and one query per core in parallel): when one query already keeps every core busy, neither merging nor
parallel queries can add throughput. Last, the repeated-query latency (the result cache) and the cost of
changing top n (no model runs).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _output import add_json_option, keep

from workbench.config import Settings
from workbench.engine import Engine
from workbench.services.demo import demo_dir, ensure_demo_collection
from workbench.types import SearchPlan


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collection", default="demo")
    parser.add_argument("--dataset", type=Path, default=demo_dir())
    parser.add_argument("-k", type=int, default=50)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--per-client", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    add_json_option(parser)
    args = parser.parse_args()

    engine = Engine(Settings())
    if args.collection == "demo":
        ensure_demo_collection(engine)
    texts = [json.loads(line)["text"] for line in (args.dataset / "queries.jsonl").read_text().splitlines()]
    needed = args.clients * args.per_client
    queries = (texts * (needed // len(texts) + 1))[:needed]
    reranker = engine.reranker()
    plan = engine.plan(collection=args.collection, k=args.k, top_n=10)
    engine.search(queries[0], plan)  # warm-up
    for query in queries:  # documents' token ids cached for both modes alike
        engine.search(query, plan, use_cache=False)

    def one(query: str) -> None:
        engine.search(query, plan, use_cache=False)

    rates: dict[str, list[float]] = {"one at a time": [], f"{args.clients} at once": []}
    errors = 0
    calls_per_round: list[int] = []
    for round_number in range(args.rounds):
        modes = list(rates) if round_number % 2 == 0 else list(reversed(rates))
        for mode in modes:
            calls_before = reranker.model_calls
            started = time.perf_counter()
            if mode == "one at a time":
                for query in queries:
                    one(query)
            else:
                with ThreadPoolExecutor(max_workers=args.clients) as pool:
                    futures = [pool.submit(one, q) for q in queries]
                    for future in futures:
                        try:
                            future.result()
                        except Exception:
                            errors += 1
            rates[mode].append(len(queries) / (time.perf_counter() - started))
            if mode != "one at a time":
                calls_per_round.append(reranker.model_calls - calls_before)
                print(
                    f"  round {round_number + 1}: {len(queries)} concurrent queries used "
                    f"{reranker.model_calls - calls_before} model calls",
                    file=sys.stderr,
                )

    print(
        f"{args.collection}: {len(queries)} distinct queries, k={args.k}, reranker {reranker.model_id} "
        f"({reranker.backend}), window {engine.settings.reranker_batch_window_ms} ms"
    )
    single, together = (statistics.median(v) for v in rates.values())
    for mode, values in rates.items():
        print(f"{mode:<16} {statistics.median(values):7.2f} queries/s")
    print(f"ratio: {together / single:.2f}x · errors: {errors}")

    model, per_query = bare_model_and_pairs(engine, queries, plan)
    per_call, merged = batching_ceiling(model, per_query, engine.reranker().batch_size, args.rounds)
    print(
        f"ceiling, the same {len(queries) * args.k} pairs: one call per query {per_call:.2f} s, "
        f"one call for all {merged:.2f} s, ratio {per_call / merged:.2f}x"
    )
    scaling: dict[str, float] = {}
    if engine.reranker().backend.endswith(":cpu"):
        scaling = core_scaling(model, per_query, engine.reranker().batch_size, max(3, args.rounds))
        print("cores: " + ", ".join(f"{name} {rate:.1f} pairs/s" for name, rate in scaling.items()))

    engine.search(queries[0], plan)
    repeated = []
    for _ in range(50):
        started = time.perf_counter()
        engine.search(queries[0], plan)
        repeated.append((time.perf_counter() - started) * 1000)
    calls = reranker.model_calls
    resliced = []
    for top_n in (3, 5, 20, 10):
        started = time.perf_counter()
        engine.search(queries[0], plan.model_copy(update={"top_n": top_n}))
        resliced.append((time.perf_counter() - started) * 1000)
    reslice_calls = reranker.model_calls - calls
    print(f"repeated query: p50 {statistics.median(repeated):.2f} ms, max {max(repeated):.2f} ms")
    print(f"changing top n: p50 {statistics.median(resliced):.2f} ms, model calls {reslice_calls}")
    keep(args, {
        "collection": args.collection, "queries": len(queries), "k": args.k, "clients": args.clients,
        "rounds": args.rounds, "backend": reranker.backend, "one_at_a_time": single, "at_once": together,
        "errors": errors, "calls_per_round": calls_per_round, "pairs": len(queries) * args.k,
        "per_query_call_s": per_call, "merged_call_s": merged, "cores": scaling,
        "repeated_p50_ms": statistics.median(repeated), "repeated_max_ms": max(repeated),
        "top_n_change_p50_ms": statistics.median(resliced), "top_n_change_calls": reslice_calls,
    })  # fmt: skip
    return 0


def bare_model_and_pairs(
    engine: Engine, queries: list[str], plan: SearchPlan
) -> tuple[Any, list[list[tuple[str, str]]]]:
    """The engine's own CrossEncoder (same backend, device and precision), to be called bare, without the
    engine's caches and batcher, and each query's candidate pairs."""
    from workbench.rerankers import load_cross_encoder

    reranker = engine.reranker()
    settings = engine.settings
    model, _, _ = load_cross_encoder(
        reranker.path,
        settings.reranker_device,
        settings.reranker_max_length,
        settings.reranker_backend,
        exports_root=settings.exports_dir,
    )
    per_query = [[(query, c.text) for c in engine.search(query, plan).candidates] for query in queries]
    model.predict(per_query[0], batch_size=reranker.batch_size, show_progress_bar=False)
    return model, per_query


def batching_ceiling(
    model: Any, per_query: list[list[tuple[str, str]]], batch: int, rounds: int
) -> tuple[float, float]:
    """Median seconds to score the pairs with the bare model (length-sorted batches either way): one call per
    query, then one call for all."""
    every_pair = [pair for pairs in per_query for pair in pairs]
    per_call: list[float] = []
    merged: list[float] = []
    for _ in range(rounds):
        started = time.perf_counter()
        for pairs in per_query:
            model.predict(pairs, batch_size=batch, show_progress_bar=False)
        per_call.append(time.perf_counter() - started)
        started = time.perf_counter()
        model.predict(every_pair, batch_size=batch, show_progress_bar=False)
        merged.append(time.perf_counter() - started)
    return statistics.median(per_call), statistics.median(merged)


def core_scaling(model: Any, per_query: list[list[tuple[str, str]]], batch: int, rounds: int) -> dict[str, float]:
    """Median pairs/s of the bare model on one torch thread, on all of them, and with one query per core in
    parallel (one torch thread each), over the first queries' pairs, the three interleaved over rounds."""
    import torch

    cores = torch.get_num_threads()
    work = per_query[: max(2, cores)]
    pairs = sum(len(p) for p in work)

    def serial(threads: int) -> None:
        torch.set_num_threads(threads)
        for query_pairs in work:
            model.predict(query_pairs, batch_size=batch, show_progress_bar=False)

    def parallel() -> None:
        torch.set_num_threads(1)
        with ThreadPoolExecutor(max_workers=cores) as pool:
            futures = [pool.submit(model.predict, q, batch_size=batch, show_progress_bar=False) for q in work]
            for future in futures:
                future.result()

    modes: dict[str, Callable[[], None]] = {
        "1 thread": lambda: serial(1),
        f"{cores} threads": lambda: serial(cores),
        f"{cores} queries in parallel x 1 thread": parallel,
    }
    rates: dict[str, list[float]] = {name: [] for name in modes}
    try:
        for round_number in range(rounds):
            names = list(modes)
            for name in names[round_number % 3 :] + names[: round_number % 3]:
                started = time.perf_counter()
                modes[name]()
                rates[name].append(pairs / (time.perf_counter() - started))
    finally:
        torch.set_num_threads(cores)
    return {name: statistics.median(values) for name, values in rates.items()}


if __name__ == "__main__":
    sys.exit(main())

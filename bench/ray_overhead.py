"""Scoring an evaluation's pairs on Ray's workers (WORKBENCH_SCORE_EXECUTOR=ray) against scoring them here, on this
machine: what Ray costs where it cannot add a machine, and whether the figures are the same to the last digit.

    python bench/ray_overhead.py                     # the demo, 50 queries, k = 20, 2 workers, 3 rounds

A local Ray is started in this process (as `ray` alone does when RAY_ADDRESS names no cluster); its start and the
workers' model loading are timed once, apart. Then each round evaluates the queries from a cold score cache (no
score store), here and on Ray, interleaved; the medians, the pairs scored per second and their ratio are printed.
"""

from __future__ import annotations

import argparse
import statistics
import time

from _output import add_json_option, keep

from workbench.config import Settings
from workbench.engine import Engine
from workbench.evaluation import evaluate_dataset
from workbench.rerankers.executors import close_executors
from workbench.services.demo import DEMO_COLLECTION, demo_dataset, ensure_demo_collection


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("-k", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    add_json_option(parser)
    args = parser.parse_args()
    settings = Settings(score_store=False)
    ensure_demo_collection(Engine(settings))
    dataset = demo_dataset()
    where = {"here": settings, "ray": settings.model_copy(update={"score_executor": "ray",
                                                                   "score_workers": args.workers})}  # fmt: skip

    def evaluated(name: str, queries: int) -> tuple[float, dict[str, dict[str, float]], str, int]:
        engine = Engine(where[name])
        plan = engine.plan(collection=DEMO_COLLECTION, k=args.k, top_n=10)
        reranker = engine.reranker_of(plan)  # loaded before the clock starts, as the workers' copies are
        assert reranker is not None
        begun = time.perf_counter()
        report = evaluate_dataset(engine, dataset, plan, max_queries=queries, depth=())
        return time.perf_counter() - begun, report.after_run, report.scored_on or "here", reranker.usage.documents

    begun = time.perf_counter()
    _, _, scored_on, _ = evaluated("ray", 2)  # Ray started, its workers made and loaded, two queries scored
    start = time.perf_counter() - begun
    walls: dict[str, list[float]] = {name: [] for name in where}
    runs: dict[str, dict[str, dict[str, float]]] = {}
    pairs = 0
    for _ in range(args.rounds):
        for name in where:
            wall, runs[name], _, pairs = evaluated(name, args.queries)
            walls[name].append(wall)
    close_executors()
    same = runs["here"] == runs["ray"]
    here, ray = statistics.median(walls["here"]), statistics.median(walls["ray"])
    backend = Engine(settings).reranker().backend  # type: ignore[union-attr]
    print(f"{args.queries} demo queries, k = {args.k}, {pairs} pairs, {backend}; scores the same to the last digit: "
          f"{same}")  # fmt: skip
    print(f"  here: {here:.2f} s ({pairs / here:.1f} pairs/s)")
    print(f"  {scored_on}: {ray:.2f} s ({pairs / ray:.1f} pairs/s, {ray / here:.2f}× the time here)")
    print(f"  Ray's start and the workers' model loading, once: {start:.1f} s")
    keep(args, {
        "queries": args.queries, "k": args.k, "pairs": pairs, "workers": args.workers, "rounds": args.rounds,
        "same": same, "here": here, "ray": ray, "start": start, "scored_on": scored_on, "backend": backend,
    })  # fmt: skip
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())

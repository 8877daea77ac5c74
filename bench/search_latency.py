"""Per-stage search latency on a shared IR collection: ingest once, then run its queries warm.

    python bench/search_latency.py                       # SciFact, k=50 -> top 10, 100 queries
    python bench/search_latency.py --dataset ../shared/data/cranfield --collection cran --queries 50

Prints p50/p95/max per stage (embed, search, rerank, total), each stage's share of the total, and the
reranker's throughput in pairs per second. Every query is distinct, so the score cache does not help; the
first query is a warm-up and is not counted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from _output import add_json_option, keep

from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import CollectionNotFoundError

STAGES = ("embed_ms", "search_ms", "rerank_ms", "total_ms")


def load_queries(dataset: Path, limit: int) -> list[str]:
    queries = [json.loads(line)["text"] for line in (dataset / "queries.jsonl").read_text().splitlines() if line]
    return queries[:limit]


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def main() -> int:
    repo = Path(__file__).resolve().parents[1]
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=repo.parent / "shared" / "data" / "scifact")
    parser.add_argument("--collection", default="scifact")
    parser.add_argument("-k", type=int, default=50)
    parser.add_argument("-n", "--top-n", type=int, default=10)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--persist-dir", type=Path, help="store folder (default: the settings')")
    parser.add_argument("--backend", help="reranker backend (default: RERANKER_BACKEND)")
    add_json_option(parser)
    args = parser.parse_args()

    overrides: dict[str, object] = {"persist_dir": args.persist_dir} if args.persist_dir else {}
    if args.backend:
        overrides["reranker_backend"] = args.backend
    engine = Engine(Settings(**overrides))
    try:
        info = engine.collection_info(args.collection)
    except CollectionNotFoundError:
        print(f"ingesting {args.dataset} into '{args.collection}' (once)...", file=sys.stderr)
        started = time.perf_counter()
        report = engine.ingest(args.dataset, args.collection)
        print(f"  {report.chunks} passages in {time.perf_counter() - started:.0f}s", file=sys.stderr)
        info = engine.collection_info(args.collection)

    queries = load_queries(args.dataset, args.queries + 1)
    plan = engine.plan(collection=args.collection, k=args.k, top_n=args.top_n)
    engine.search(queries[0], plan)  # warm-up: models, caches
    timings: dict[str, list[float]] = {stage: [] for stage in STAGES}
    pairs = 0
    for query in queries[1:]:
        result = engine.search(query, plan)
        pairs += result.cache.score_misses
        for stage in STAGES:
            timings[stage].append(getattr(result.timings, stage))

    reranker = engine.reranker()
    print(f"collection  {info.name}: {info.count} passages, {info.store} at {info.location}")
    print(
        f"models      embed {engine.embedder(info.embedding_model).model_id}; "
        f"rerank {reranker.model_id if reranker else 'none'} "
        f"({reranker.backend if reranker else '—'}, batch {reranker.batch_size if reranker else '—'}, "
        f"max_length {engine.settings.reranker_max_length})"
    )
    print(f"queries     {len(timings['total_ms'])} warm, k={args.k} -> top {args.top_n}")
    print()
    total_sum = sum(timings["total_ms"])
    print(f"{'stage':<8} {'p50 ms':>9} {'p95 ms':>9} {'max ms':>9} {'share':>7}")
    stages = {}
    for stage in STAGES:
        values = timings[stage]
        share = sum(values) / total_sum * 100 if total_sum else 0.0
        stages[stage.removesuffix("_ms")] = {
            "p50": statistics.median(values), "p95": percentile(values, 95), "max": max(values), "share": share,
        }  # fmt: skip
        print(
            f"{stage.removesuffix('_ms'):<8} {statistics.median(values):9.1f} {percentile(values, 95):9.1f} "
            f"{max(values):9.1f} {share:6.1f}%"
        )
    rerank_seconds = sum(timings["rerank_ms"]) / 1000
    rate = pairs / rerank_seconds if rerank_seconds else None
    if rate:
        print(f"\nreranker throughput: {rate:.1f} (query, passage) pairs/s")
    keep(args, {
        "collection": info.name, "passages": info.count, "queries": len(timings["total_ms"]), "k": args.k,
        "top_n": args.top_n, "backend": reranker.backend if reranker else None, "stages": stages, "pairs_per_s": rate,
    })  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

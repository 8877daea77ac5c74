"""Cross-encoder throughput per backend on real (query, candidate) pairs, interleaved in one run.

    python bench/rerank_backends.py                          # torch, onnx, onnx-int8 on SciFact, k=50
    python bench/rerank_backends.py --backends torch,onnx-int8 --queries 8 --rounds 3
    python bench/rerank_backends.py --cuda                   # also fp16/bf16 torch on CUDA, when present

The pairs are the first N SciFact queries with their k dense candidates. Each round runs every backend over
every query (the order of backends rotates per round); the figure is the median pairs/s over rounds, with the
mean tokens per pair (what RERANKER_MAX_LENGTH leaves of each pair). Quality per backend is measured by
`workbench eval` (docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import CollectionNotFoundError, ConfigError
from workbench.rerankers import CrossEncoderReranker


def main() -> int:
    repo = Path(__file__).resolve().parents[1]
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=repo.parent / "shared" / "data" / "scifact")
    parser.add_argument("--collection", default="scifact")
    parser.add_argument("-k", type=int, default=50)
    parser.add_argument("--queries", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backends", default="torch,onnx,onnx-int8")
    parser.add_argument("--cuda", action="store_true", help="also measure torch on CUDA (fp16/bf16) when present")
    args = parser.parse_args()

    settings = Settings()
    engine = Engine(settings)
    try:
        engine.collection_info(args.collection)
    except CollectionNotFoundError:
        print(f"ingesting {args.dataset} into '{args.collection}' (once)...", file=sys.stderr)
        engine.ingest(args.dataset, args.collection)
    queries = [json.loads(line)["text"] for line in (args.dataset / "queries.jsonl").read_text().splitlines()]
    work = []
    for query in queries[: args.queries]:
        result = engine.search(query, args.k, 1, collection=args.collection, reranker=None)
        work.append((query, [c.text for c in result.candidates]))
    pairs = sum(len(texts) for _, texts in work)

    rerankers: dict[str, CrossEncoderReranker] = {}
    for backend in args.backends.split(","):
        rerankers[backend] = CrossEncoderReranker(
            settings.reranker_model,
            settings.model_copy(update={"reranker_backend": backend, "reranker_device": "cpu"}),
            progress=lambda message: print(message, file=sys.stderr),
        )
    if args.cuda:
        try:
            rerankers["torch (cuda)"] = CrossEncoderReranker(
                settings.reranker_model,
                settings.model_copy(update={"reranker_backend": "torch", "reranker_device": "cuda"}),
            )
        except ConfigError as exc:
            print(f"no CUDA: {exc}", file=sys.stderr)

    for reranker in rerankers.values():  # warm-up, and every document's token ids cached
        for query, texts in work:
            reranker.predict(query, texts)
    rates: dict[str, list[float]] = {name: [] for name in rerankers}
    names = list(rerankers)
    for round_number in range(args.rounds):
        order = names[round_number % len(names) :] + names[: round_number % len(names)]
        for name in order:
            started = time.perf_counter()
            for query, texts in work:
                rerankers[name].predict(query, texts)
            rates[name].append(pairs / (time.perf_counter() - started))

    baseline = statistics.median(rates[names[0]])
    print(
        f"{pairs} pairs ({args.queries} SciFact queries x k={args.k}), {args.rounds} interleaved rounds, "
        f"max_length {settings.reranker_max_length}"
    )
    print(f"{'backend':<16} {'label':<22} {'pairs/s':>9} {'vs ' + names[0]:>10} {'tokens/pair':>12}")
    for name, reranker in rerankers.items():
        rate = statistics.median(rates[name])
        print(f"{name:<16} {reranker.backend:<22} {rate:9.1f} {rate / baseline:9.2f}x {reranker.tokens_per_pair:12.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

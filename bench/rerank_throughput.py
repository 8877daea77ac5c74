"""Cross-encoder throughput on real (query, passage) pairs: length-sorted batches against file order, and
batch sizes. Prints pairs per second (median of repeats) and the speed-up of sorting.

    python bench/rerank_throughput.py                 # SciFact queries and abstracts, 64 pairs per query
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from workbench.config import Settings
from workbench.rerankers import CrossEncoderReranker


def main() -> int:
    repo = Path(__file__).resolve().parents[1]
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=repo.parent / "shared" / "data" / "scifact")
    parser.add_argument("--pairs", type=int, default=64, help="passages per query")
    parser.add_argument("--queries", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-sizes", default="16,32,64")
    args = parser.parse_args()

    settings = Settings()
    lines = (args.dataset / "corpus.jsonl").read_text().splitlines()[: args.pairs]
    passages = [f"{d.get('title', '')} {d['text']}".strip() for d in map(json.loads, lines)]
    queries = [json.loads(q)["text"] for q in (args.dataset / "queries.jsonl").read_text().splitlines()[: args.queries]]
    print(
        f"model {settings.reranker_model}, max_length {settings.reranker_max_length}, "
        f"{len(queries)} queries x {len(passages)} passages, median of {args.repeats}"
    )
    print(f"{'batch':>6} {'file order pairs/s':>19} {'length-sorted pairs/s':>22} {'speed-up':>9}")
    for batch in [int(b) for b in args.batch_sizes.split(",")]:
        reranker = CrossEncoderReranker(
            settings.reranker_model, settings.model_copy(update={"reranker_batch_size": batch})
        )
        reranker.predict(queries[0], passages[:8])  # warm-up
        rates = {}
        for label, sort in (("file", False), ("sorted", True)):
            times = []
            for _ in range(args.repeats):
                started = time.perf_counter()
                for query in queries:
                    if sort:
                        reranker.predict(query, passages)
                    else:
                        reranker._model.predict(
                            [(query, p) for p in passages], batch_size=batch, show_progress_bar=False
                        )
                times.append(time.perf_counter() - started)
            rates[label] = len(queries) * len(passages) / statistics.median(times)
        print(f"{batch:>6} {rates['file']:>19.1f} {rates['sorted']:>22.1f} {rates['sorted'] / rates['file']:>8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

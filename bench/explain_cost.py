"""What an explanation costs: each demo query's top reranked passage explained (every sentence and query term
left out once), interleaved with a plain rerank of the same passage as the reference.

    python bench/explain_cost.py            # the demo's 50 queries, the default reranker

Prints the median and p95 milliseconds of an explanation, the pairs it scored, its model calls (one each), the
median of a single-pair score for comparison, and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _output import add_json_option, keep

from workbench.config import Settings
from workbench.engine import Engine
from workbench.services.demo import DEMO_COLLECTION, ensure_demo_collection, sample_queries
from workbench.services.explain import explain_pair


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_json_option(parser)
    args = parser.parse_args()
    engine = Engine(Settings())
    ensure_demo_collection(engine)
    reranker = engine.reranker()
    if reranker is None:
        raise SystemExit("RERANKER_MODEL is none: nothing to explain")
    explain_ms, single_ms, pairs, calls, sentences = [], [], [], [], []
    queries = [q.text for q in sample_queries()]
    plan = engine.plan(collection=DEMO_COLLECTION, k=50, top_n=1)
    for i, query in enumerate(queries):
        row = engine.search(query, plan).reranked[0]
        started = time.perf_counter()
        reranker.score(query, [row.text], use_cache=False)
        single = (time.perf_counter() - started) * 1000
        explanation = explain_pair(reranker, query, row.text)
        if i == 0:
            continue  # warm-up
        single_ms.append(single)
        explain_ms.append(explanation.seconds * 1000)
        pairs.append(explanation.pairs_scored)
        calls.append(explanation.model_calls)
        sentences.append(len(explanation.sentences))
    print(f"reranker {reranker.model_id} ({reranker.backend}); {len(explain_ms)} explanations on the demo")
    print(
        f"explanation: median {statistics.median(explain_ms):.0f} ms, p95 {np.percentile(explain_ms, 95):.0f} ms; "
        f"median {statistics.median(pairs):.0f} pairs ({statistics.median(sentences):.0f} sentences); "
        f"model calls per explanation: {sorted(set(calls))}"
    )
    print(
        f"one pair scored alone: median {statistics.median(single_ms):.0f} ms; an explanation costs "
        f"{statistics.median(explain_ms) / statistics.median(single_ms):.1f}x that"
    )
    keep(args, {
        "explanations": len(explain_ms), "backend": reranker.backend, "p50_ms": statistics.median(explain_ms),
        "p95_ms": float(np.percentile(explain_ms, 95)), "pairs": statistics.median(pairs),
        "calls": sorted(set(calls)), "single_ms": statistics.median(single_ms),
    })  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

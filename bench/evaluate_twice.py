"""Evaluate does no work twice: the demo evaluation with a depth curve, run twice on one engine (as Evaluate's
"Run evaluation" pressed twice with the same settings does).

    python bench/evaluate_twice.py            # the demo, k = 50, depth 10, 20, 50, the QA reranker

Prints each run's seconds, the model calls each made, and whether the second reused the depth curve's timings.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from _output import add_json_option, keep

from workbench.config import Settings
from workbench.engine import Engine
from workbench.evaluation import evaluate_dataset
from workbench.services.demo import demo_dataset, ensure_demo_collection


def main() -> int:
    repo = Path(__file__).resolve().parents[1]
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=str(repo.parent / "shared" / "models"), help="the shared models folder")
    add_json_option(parser)
    args = parser.parse_args()
    settings = Settings(
        data_dir=tempfile.mkdtemp(prefix="wb-bench-twice-"), models_dir=args.models,
        reranker_model="minilm-l6-qa-reranker", offline=True, reranker_calibrate=False, reranker_backend="torch",
    )  # fmt: skip
    engine = Engine(settings)
    ensure_demo_collection(engine)
    dataset = demo_dataset(settings=settings)
    reranker = engine.reranker()
    runs = []
    for run in (1, 2):
        calls = reranker.model_calls
        started = time.perf_counter()
        report = evaluate_dataset(engine, dataset, engine.plan(collection="demo", k=50, top_n=10), depth=(10, 20, 50))
        seconds = time.perf_counter() - started
        runs.append({
            "seconds": seconds, "model_calls": reranker.model_calls - calls,
            "cached_scores": report.score_cache_hits, "depth_timings_reused": report.depth_timings_reused,
        })  # fmt: skip
        print(
            f"run {run}: {seconds:.1f} s, {reranker.model_calls - calls} model calls, "
            f"{report.score_cache_hits} scores from the cache, depth timings reused: {report.depth_timings_reused}"
        )
    keep(args, {"collection": "demo", "k": 50, "depth": [10, 20, 50], "backend": reranker.backend, "runs": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The skip policy's figures the verdict page quotes (issue 54): rerank only when the first stage is unsure (its top
two scores closer than a gap), on the demo (50 queries) and SciFact (the first 100 judged queries), dense k = 20 and
the QA cross-encoder, at the gaps that skip a quarter, half and three quarters of the queries (the quartiles of the
first stage's top-two gaps). Each against always reranking the same queries: calls saved, nDCG@10 with the paired
interval; and the largest saving whose interval stays above -0.005 (a loss within 0.005), or that none does.

    .venv/bin/python scripts/skip_policy_figures.py                   # measure (about 10 minutes on 2 cores)
    .venv/bin/python scripts/skip_policy_figures.py --data-dir DIR    # reuse a folder where SciFact is ingested
    .venv/bin/python scripts/skip_policy_figures.py --write           # write the blocks again from the kept record
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures_blocks import FIGURES, data_dir_option, made_by, qa_settings, script_main, stamp, table

RECORD = FIGURES / "skip_policy.json"
PREFIX = "skip-policy-"
ACCEPTED_LOSS = 0.005
COLLECTIONS = {"demo": None, "scifact": 100}  # queries (None: all)


add_options = data_dir_option  # --data-dir


def measure(shared: Path, data_dir: str | None = None) -> dict[str, Any]:
    """Each collection at three gaps, against always reranking."""
    from workbench.engine import Engine
    from workbench.evaluation import Dataset
    from workbench.evaluation.service import evaluate_dataset
    from workbench.services.demo import DEMO_COLLECTION, demo_dataset, ensure_demo_collection

    settings = qa_settings(shared, data_dir, "skip-policy-figures")
    engine = Engine(settings)
    ensure_demo_collection(engine)
    rows: dict[str, list[dict[str, Any]]] = {}
    backend = ""
    for name, queries in COLLECTIONS.items():
        dataset = demo_dataset() if name == DEMO_COLLECTION else Dataset.from_beir(shared / "data" / name)
        plan = engine.plan(collection=name, retrieval="dense", k=20, top_n=10)
        texts = list(dataset.queries.values())[:queries] if queries else list(dataset.queries.values())
        gaps = []
        for text in texts:
            found = sorted(engine.search(text, plan.with_(reranker=None)).candidates, key=lambda c: c.vector_rank)
            if len(found) >= 2:
                gaps.append(found[0].vector_score - found[1].vector_score)
        rows[name] = []
        for quantile in (25, 50, 75):
            gap = round(float(np.percentile(gaps, quantile)), 6)
            report = evaluate_dataset(engine, dataset, plan.with_(skip_gap=gap), max_queries=queries, depth=())
            figures = report.skip
            assert figures is not None
            backend = report.reranker_backend or backend
            rows[name].append(
                {
                    "quantile": quantile,
                    "gap": gap,
                    "saved": figures.saved_share,
                    "queries": figures.queries,
                    "policy": figures.ndcg_policy,
                    "always": figures.ndcg_always,
                    "delta": figures.vs_always.delta,
                    "ci_low": figures.vs_always.ci_low,
                    "ci_high": figures.vs_always.ci_high,
                    "p": figures.vs_always.p_value,
                }
            )
            print(name, rows[name][-1], flush=True)
    return stamp({"rows": rows, "backend": backend, "accepted_loss": ACCEPTED_LOSS})


def _within(row: dict[str, Any], loss: float) -> bool:
    return row["ci_low"] >= -loss


def render(name: str, kept: dict[str, Any]) -> str:
    """Each collection's three gaps, then, per collection, the largest saving within the accepted loss."""
    cells = [
        [
            collection,
            f"{row['gap']:.4f} (quartile {row['quantile'] // 25})",
            f"{row['saved']:.0%}",
            str(row["queries"]),
            f"{row['policy']:.4f}",
            f"{row['always']:.4f}",
            f"{row['delta']:+.4f} [{row['ci_low']:+.4f}, {row['ci_high']:+.4f}]",
        ]
        for collection, rows in kept["rows"].items()
        for row in rows
    ]
    loss = kept["accepted_loss"]
    said = []
    for collection, rows in kept["rows"].items():
        kept_rows = [row for row in rows if _within(row, loss)]
        best = max(kept_rows, key=lambda row: row["saved"], default=None)
        said.append(
            f"{collection}: saves {best['saved']:.0%} of reranker calls with the interval above −{loss}"
            if best
            else f"{collection}: no gap saves calls with the interval above −{loss}"
        )
    footer = "Within a loss of 0.005 nDCG@10: " + "; ".join(said) + ". " + made_by(kept, "skip_policy_figures.py")
    return table(
        ["collection", "gap", "calls saved", "queries", "nDCG@10 policy", "always", "policy − always [95 % CI]"],
        "|---|---:|---:|---:|---:|---:|---|",
        cells,
        footer,
    )


def footer(kept: dict[str, Any]) -> str:
    return f"skip policy: {sum(len(rows) for rows in kept['rows'].values())} gaps measured"


if __name__ == "__main__":
    sys.exit(script_main(sys.argv[1:], sys.modules[__name__]))

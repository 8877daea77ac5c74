"""The tuning figures the docs quote (issue 40's measure): `workbench tune`'s default grid (dense, BM25, hybrid by
RRF, min-max and z-score fusion × k = 10, 20, 50) on every judged query of SciFact and Cranfield, reranked by the
default cross-encoder. Per dataset: the best cell against today's dense default (k = 50) with the paired interval,
the recommended cell, and the tuning run's time against one evaluation of the deepest cell in a fresh engine (the
goal: under 1.5×). On SciFact's whole abstracts, FirstP against MaxP and SumP (k = 20).

    .venv/bin/python scripts/tuning_figures.py           # measure (about 25 minutes on 2 cores), then write
    .venv/bin/python scripts/tuning_figures.py --write   # write the blocks again from the kept record
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures_blocks import FIGURES, made_by, script_main, stamp

RECORD = FIGURES / "tuning.json"
PREFIX = "tuning-"
COST_GOAL = 1.5  # issue 40: the tuning run under 1.5× the deepest single cell's evaluation
DATASETS = ("scifact", "cranfield")
DEFAULT_CELL = "dense k=50"


def measure(shared: Path) -> dict[str, Any]:
    """Each dataset tuned, and its deepest cell evaluated alone, each in a fresh engine on one data folder."""
    from workbench.config import Settings
    from workbench.engine import Engine
    from workbench.evaluation import Dataset, run_evaluation
    from workbench.evaluation.long_documents import compare_long_documents
    from workbench.evaluation.service import prepare_collection
    from workbench.evaluation.significance import difference
    from workbench.evaluation.tuning import tune
    from workbench.paths import user_cache_dir

    settings = Settings(data_dir=user_cache_dir() / "tuning-figures", offline=True)
    record: dict[str, Any] = {"datasets": {}}
    for name in DATASETS:
        dataset = Dataset.from_beir(shared / "data" / name)
        prepare_collection(Engine(settings), dataset, name)  # ingested once, outside every clock
        alone_engine = Engine(settings)
        plan = alone_engine.plan(collection=name, retrieval="dense", k=50)
        started = time.perf_counter()
        alone = run_evaluation(alone_engine, dataset, plan)
        alone_seconds = time.perf_counter() - started
        alone_pairs = alone_engine.reranker_of(plan).usage.documents
        tuned_engine = Engine(settings)
        run = tune(tuned_engine, dataset, tuned_engine.plan(collection=name))
        best, default = run.cell(run.best), run.cell(DEFAULT_CELL)
        gain = difference(run.scores[DEFAULT_CELL], run.scores[run.best])
        record["backend"] = run.reranker_backend
        record["datasets"][name] = {
            "queries": run.queries,
            "cells": [c.model_dump(include={"label", "recall_ceiling", "ndcg_after", "after_ci"}) for c in run.cells],
            "best": best.label, "best_ndcg": best.ndcg_after, "default_ndcg": default.ndcg_after,
            "gain": gain.delta, "gain_low": gain.ci_low, "gain_high": gain.ci_high, "gain_p": gain.p_value,
            "recommended": run.recommended, "recommended_top_n": run.recommended_top_n,
            "recommended_ndcg": run.cell(run.recommended).ndcg_after if run.recommended else None,
            "findings": len(run.findings), "measurable_findings": sum("measurable)" in f for f in run.findings),
            "tune_seconds": run.seconds, "alone_seconds": alone_seconds, "alone_ndcg": alone.after["ndcg@10"],
            "pairs_scored": run.pairs_scored, "pairs_in_cells": run.pairs_in_cells, "alone_pairs": alone_pairs,
        }  # fmt: skip
    engine = Engine(settings)
    scifact = Dataset.from_beir(shared / "data" / "scifact")
    long = compare_long_documents(engine, scifact, engine.plan(collection="scifact", k=20), ["maxp", "sump"])
    record["long_documents"] = {
        "queries": long.queries, "k": long.k,
        "unread": sum(u.unread_share for u in long.unread) / max(len(long.unread), 1),
        "queries_cut": sum(1 for u in long.unread if u.cut_passages),
        "strategies": [s.model_dump(mode="json") for s in long.strategies],
    }  # fmt: skip
    return stamp(record)


def footer(record: dict[str, Any]) -> str:
    return made_by(record, "tuning_figures.py")


def render(name: str, record: dict[str, Any]) -> str:
    """The text of one block, from the record."""
    if name == "tuning-long-documents":
        return _long_documents(record)
    if name != "tuning-grid":
        raise KeyError(f"no block named {name!r} in {RECORD.name}")
    rows = []
    for dataset, figures in record["datasets"].items():
        ratio = figures["tune_seconds"] / figures["alone_seconds"]
        rows.append(
            f"| {dataset} ({figures['queries']} queries) | {figures['default_ndcg']:.4f} | {figures['best']}: "
            f"{figures['best_ndcg']:.4f} | {figures['gain']:+.4f} [{figures['gain_low']:+.4f}, "
            f"{figures['gain_high']:+.4f}] | {figures['recommended'] or '—'} | {figures['pairs_scored']:,} of "
            f"{figures['pairs_in_cells']:,} | {figures['tune_seconds']:.0f} s / {figures['alone_seconds']:.0f} s = "
            f"{ratio:.2f}× ({'within' if ratio < COST_GOAL else '**over**'} the {COST_GOAL}× goal) | "
            f"{figures['pairs_scored'] / (figures['queries'] * 50):.2f}× |"
        )
    head = (
        "| dataset | dense k=50 nDCG@10 | best cell | best − dense k=50 [95 % CI] | recommended | pairs scored of "
        "reranked | tuning run / deepest cell alone | pairs scored / the deepest cell's (queries × 50) |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- |"
    )
    return head + "\n" + "\n".join(rows) + f"\n\n{footer(record)}\n"


def _long_documents(record: dict[str, Any]) -> str:
    long = record["long_documents"]
    rows = [
        f"| {s['strategy']} | {s['ndcg_after']:.4f} | {s['vs_firstp']['delta']:+.4f} [{s['vs_firstp']['ci_low']:+.4f}, "
        f"{s['vs_firstp']['ci_high']:+.4f}] | {s['top_n_changed']} | {s['windows_per_query']:.1f} | "
        f"{s['rerank_ms_p50']:,.0f} |"
        for s in long["strategies"]
    ]
    return (
        f"SciFact's abstracts as ingested (whole: a BEIR passage is not chunked), {long['queries']} queries, "
        f"k = {long['k']}, the first 4 windows: under FirstP the reranker "
        f"never reads {long['unread']:.1%} of the candidates' tokens on average, and {long['queries_cut']} queries "
        "have a candidate cut by at least 10 %.\n\n"
        "| strategy | nDCG@10 | vs FirstP [95 % CI] | queries whose top 10 changed | windows scored per query | "
        "rerank ms p50 |\n| --- | --- | --- | --- | --- | --- |\n" + "\n".join(rows) + f"\n\n{footer(record)}\n"
    )


if __name__ == "__main__":
    sys.exit(script_main(sys.argv[1:], sys.modules[__name__]))

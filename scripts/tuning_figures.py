"""The tuning figures the docs quote (issue 40's measure): `workbench tune`'s default grid (dense, BM25, hybrid by
RRF, min-max and z-score fusion × k = 10, 20, 50) on every judged query of SciFact and Cranfield, reranked by the
default cross-encoder. Per dataset: the best cell against today's dense default (k = 50) with the paired interval,
the recommended cell, and the tuning run's time against one evaluation of the deepest cell (the goal: under
1.5×). On SciFact's whole abstracts, FirstP against MaxP and SumP (k = 20).

The cost is measured interleaved (the deepest cell alone, the tuning run, the deepest cell alone again, each in a
fresh engine, on the first N judged queries), since this machine's speed drifts by a quarter between runs.

    .venv/bin/python scripts/tuning_figures.py                      # measure everything (over an hour on 2 cores)
    .venv/bin/python scripts/tuning_figures.py --cost-only          # measure only the cost, keep the rest
    .venv/bin/python scripts/tuning_figures.py --write              # write the blocks again from the kept record
"""

from __future__ import annotations

import argparse
import json
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
COST_QUERIES = 80


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cost-queries", type=int, default=COST_QUERIES, help="judged queries the cost is measured on (per dataset)"
    )
    parser.add_argument("--cost-only", action="store_true", help="measure only the cost; keep the rest of the record")


def measure(shared: Path, cost_queries: int = COST_QUERIES, cost_only: bool = False) -> dict[str, Any]:
    """Each dataset tuned on every judged query, its cost measured interleaved, and SciFact's long documents."""
    datasets = _prepared(shared)
    if cost_only:
        record = json.loads(RECORD.read_text(encoding="utf-8"))
        return {**record, "cost": measure_cost(datasets, cost_queries)}
    return {**measure_quality(datasets), "cost": measure_cost(datasets, cost_queries)}


def _settings() -> Any:
    from workbench.config import Settings
    from workbench.paths import user_cache_dir

    return Settings(data_dir=user_cache_dir() / "tuning-figures", offline=True)


def _prepared(shared: Path) -> dict[str, Any]:
    """Each dataset read once, and its collection ingested once, outside every clock."""
    from workbench.engine import Engine
    from workbench.evaluation import Dataset
    from workbench.evaluation.service import prepare_collection

    datasets = {name: Dataset.from_beir(shared / "data" / name) for name in DATASETS}
    for name, dataset in datasets.items():
        prepare_collection(Engine(_settings()), dataset, name)
    return datasets


def measure_cost(datasets: dict[str, Any], queries: int) -> dict[str, Any]:
    """Per dataset, on its first `queries` judged queries: the deepest cell evaluated alone, the tuning run, and
    the deepest cell alone again, each in a fresh engine (wall and CPU seconds, pairs scored)."""
    from workbench.engine import Engine
    from workbench.evaluation import run_evaluation
    from workbench.evaluation.tuning import tune

    settings = _settings()
    cost: dict[str, Any] = {"queries": queries, "datasets": {}}
    for name, dataset in datasets.items():
        runs: dict[str, list[dict[str, float]]] = {"alone": [], "tune": []}
        for kind in ("alone", "tune", "alone"):
            engine = Engine(settings)
            wall, cpu = time.perf_counter(), time.process_time()
            if kind == "alone":
                plan = engine.plan(collection=name, retrieval="dense", k=50)
                run_evaluation(engine, dataset, plan, max_queries=queries)
                pairs = engine.reranker_of(plan).usage.documents
            else:
                tuned = tune(engine, dataset, engine.plan(collection=name), max_queries=queries)
                pairs = tuned.pairs_scored
                cost["backend"] = tuned.reranker_backend
            runs[kind].append(
                {"seconds": time.perf_counter() - wall, "cpu_seconds": time.process_time() - cpu, "pairs": pairs}
            )
            print(f"{name} {kind}: {runs[kind][-1]}", flush=True)
        cost["datasets"][name] = runs
    return stamp(cost)


def measure_quality(datasets: dict[str, Any]) -> dict[str, Any]:
    """Each dataset tuned on every judged query in a fresh engine (its time is the cost block's business)."""
    from workbench.engine import Engine
    from workbench.evaluation.long_documents import compare_long_documents
    from workbench.evaluation.significance import difference
    from workbench.evaluation.tuning import tune

    settings = _settings()
    record: dict[str, Any] = {"datasets": {}}
    for name, dataset in datasets.items():
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
            "pairs_scored": run.pairs_scored, "pairs_in_cells": run.pairs_in_cells,
        }  # fmt: skip
    engine = Engine(settings)
    plan = engine.plan(collection="scifact", k=20)
    long = compare_long_documents(engine, datasets["scifact"], plan, ["maxp", "sump"])
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
    if name == "tuning-cost":
        return _cost(record["cost"])
    if name != "tuning-grid":
        raise KeyError(f"no block named {name!r} in {RECORD.name}")
    rows = [
        f"| {dataset} ({figures['queries']} queries) | {figures['default_ndcg']:.4f} | {figures['best']}: "
        f"{figures['best_ndcg']:.4f} | {figures['gain']:+.4f} [{figures['gain_low']:+.4f}, "
        f"{figures['gain_high']:+.4f}] | {figures['recommended'] or '—'} | {figures['pairs_scored']:,} of "
        f"{figures['pairs_in_cells']:,} |"
        for dataset, figures in record["datasets"].items()
    ]
    head = (
        "| dataset | dense k=50 nDCG@10 | best cell | best − dense k=50 [95 % CI] | recommended | pairs scored of "
        "reranked |\n| --- | --- | --- | --- | --- | --- |"
    )
    return head + "\n" + "\n".join(rows) + f"\n\n{footer(record)}\n"


def _cost(cost: dict[str, Any]) -> str:
    rows = []
    for dataset, runs in cost["datasets"].items():
        alone, tuned = runs["alone"], runs["tune"][0]
        mean = sum(a["seconds"] for a in alone) / len(alone)
        cpu = sum(a["cpu_seconds"] for a in alone) / len(alone)
        ratio = tuned["seconds"] / mean
        each = " and ".join(f"{a['seconds']:.0f} s" for a in alone)
        rows.append(
            f"| {dataset} | {each} | {tuned['seconds']:.0f} s | "
            f"{ratio:.2f}× ({'within' if ratio < COST_GOAL else '**over**'} the {COST_GOAL}× goal) | "
            f"{tuned['cpu_seconds'] / cpu:.2f}× | {tuned['pairs'] / alone[0]['pairs']:.2f}× |"
        )
    return (
        f"The first {cost['queries']} judged queries of each dataset; the deepest cell (dense, k = 50) evaluated "
        "alone before and after the tuning run, each in a fresh engine.\n\n"
        "| dataset | deepest cell alone (before, after) | tuning run | tuning run / mean alone | CPU seconds, the same "
        "ratio | pairs scored / the deepest cell's |\n| --- | --- | --- | --- | --- | --- |\n"
        + "\n".join(rows)
        + f"\n\n{made_by(cost, 'tuning_figures.py')}\n"
    )


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

"""The SciFact and Cranfield figures that the README and docs/evaluation.md quote, measured by one run and written
into them, so that they cannot drift from what a run prints.

    .venv/bin/python scripts/collection_figures.py           # measure (about 40 minutes on 2 cores), then write
    .venv/bin/python scripts/collection_figures.py --write   # write the blocks again from the kept record

A run ingests both collections into a fresh data folder with the real embedder and then measures what
docs/evaluation.md reports: each first stage on every judged query (k = 100, no reranking); the QA reranker on each
first stage over the first 100 judged queries (k = 50, top 10, depth 10/20/50); the calibration of its scores (and
the demo's); and SciFact's ANN-against-exact study across Chroma and Qdrant. Every figure is kept with what made it
(the reranker's backend, the machine, the versions, the date) in `docs/figures/collections.json`; the blocks named
`collections-*` are rendered from that file (see `scripts/figures_blocks.py`).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures_blocks import FIGURES, made_by, p_text, script_main, signed, stamp, table

RECORD = FIGURES / "collections.json"
PREFIX = "collections-"
COLLECTIONS = {"scifact": "SciFact test", "cranfield": "Cranfield"}
STAGES = {"dense": "dense", "bm25": "BM25", "hybrid": "hybrid"}
RERANKED_QUERIES = 100
STUDY_QUERIES = 40
TARGET_PRECISION = 0.8
FIRST_STAGE_METRICS = ("ndcg@10", "mrr@10", "recall@100", "map@100")
REFERENCES = {  # published or shipped references: (what, expected)
    ("scifact", "dense"): ("SciFact, dense all-MiniLM-L6-v2, nDCG@10 (MTEB)", 0.645),
    ("scifact", "bm25"): (
        "SciFact, BM25 flat, nDCG@10 (Anserini; BEIR's published 0.665 is Elasticsearch's multifield BM25)",
        0.679,
    ),
    ("cranfield", "dense"): ("Cranfield, dense, nDCG@10 (the shared collection's reference)", 0.382),
    ("cranfield", "bm25"): ("Cranfield, BM25, nDCG@10 (the shared collection's reference)", 0.352),
}


def _figures(report: Any) -> dict[str, Any]:
    change = report.metric_differences()["ndcg@10"] if report.reranker_model else None
    return {
        "queries": report.queries, "before": report.before, "after": report.after, "wins": report.wins,
        "ties": report.ties, "losses": report.losses, "p": change.p_value if change else None,
        "delta": change.delta if change else None,
        "depth": [
            {"k": d.k, "after": d.after["ndcg@10"], "rerank_ms_p50": d.rerank_ms_p50} for d in report.depth
        ],
    }  # fmt: skip


def _calibration(report: Any, qrels: Any) -> dict[str, Any]:
    from workbench.evaluation.calibration import calibrate

    return calibrate(report, qrels, target_precision=TARGET_PRECISION).summary()


def measure(
    shared: Path, names: tuple[str, ...] = tuple(COLLECTIONS), queries: int = RERANKED_QUERIES, study: str = "scifact"
) -> dict[str, Any]:
    """Every figure the blocks quote, from one run in a fresh data folder (smaller `names`, `queries` and `study`
    make a quick trial of the script itself)."""
    from workbench.config import Settings
    from workbench.engine import Engine
    from workbench.evaluation import Dataset, evaluate_dataset, run_evaluation
    from workbench.services.demo import DEMO_COLLECTION, demo_dataset, ensure_demo_collection
    from workbench.services.store_comparison import StoreTarget, copy_collection, open_target, recall_study

    record: dict[str, Any] = {"collections": {}}
    with tempfile.TemporaryDirectory(prefix="collection-figures-") as folder:
        engine = Engine(Settings(data_dir=Path(folder), offline=True))
        ensure_demo_collection(engine)
        demo = demo_dataset("test")
        plan = engine.plan(collection=DEMO_COLLECTION, retrieval="dense", k=50, top_n=10)
        record["demo_calibration"] = _calibration(evaluate_dataset(engine, demo, plan, depth=[]), demo.qrels)
        record["backend"] = engine.reranker_of(plan).backend
        for name in names:
            dataset = Dataset.from_beir(shared / "data" / name)
            engine.ingest(dataset.corpus, name)
            figures: dict[str, Any] = {"first_stage": {}, "reranked": {}}
            for stage in STAGES:
                plan = engine.plan(collection=name, retrieval=stage, k=100, top_n=10, reranker=None)
                figures["first_stage"][stage] = _figures(run_evaluation(engine, dataset, plan))
            for stage in STAGES:
                plan = engine.plan(collection=name, retrieval=stage, k=50, top_n=10)
                report = evaluate_dataset(engine, dataset, plan, max_queries=queries, depth=[10, 20, 50])
                figures["reranked"][stage] = _figures(report)
                if stage == "dense":
                    figures["calibration"] = _calibration(report, dataset.qrels)
            record["collections"][name] = figures
            print(f"{name}: measured", file=sys.stderr)
        studied = Dataset.from_beir(shared / "data" / study)
        qdrant = StoreTarget(kind="qdrant", location=str(Path(folder) / "qdrant"))
        targets = [StoreTarget(kind="chroma"), qdrant]
        copy_collection(open_target(targets[0], engine.settings, study), qdrant, engine.settings)
        exact_plan = engine.plan(collection=study, k=100, reranker=None)
        record["stores"] = [
            recall_study(engine, studied, exact_plan, targets).model_dump(),
            recall_study(
                engine, studied, engine.plan(collection=study, k=50), targets, max_queries=min(STUDY_QUERIES, queries)
            ).model_dump(),
        ]
    return stamp(record)


def _stage_rows(record: dict[str, Any], part: str) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (COLLECTIONS[name], STAGES[stage], figures)
        for name, collection in record["collections"].items()
        for stage, figures in collection[part].items()
    ]


def render(name: str, record: dict[str, Any]) -> str:
    """The text of one block, from the record."""
    said = footer(record)
    if name == "collections-first-stage":
        header = ["collection", "first stage", "queries", "nDCG@10", "MRR@10", "Recall@100", "MAP@100"]
        cells = [
            [c, s, str(f["queries"]), *(f"{f['before'][m]:.4f}" for m in FIRST_STAGE_METRICS)]
            for c, s, f in _stage_rows(record, "first_stage")
        ]
        return table(header, "|---|---|---:|---:|---:|---:|---:|", cells, said)
    if name == "collections-references":
        cells = [
            [what, f"{expected:.3f}", f"{record['collections'][c]['first_stage'][s]['before']['ndcg@10']:.4f}"]
            for (c, s), (what, expected) in REFERENCES.items()
        ]
        return table(["reference", "expected", "measured"], "|---|---:|---:|", cells, said)
    if name == "collections-reranked":
        header = [
            "collection", "candidates", "queries", "nDCG@10 before", "nDCG@10 after", "MRR@10 before → after",
            "Recall@50", "MAP@100 before → after", "p (nDCG@10)", "helped / tied / hurt",
        ]  # fmt: skip
        cells = [
            [
                c, s, str(f["queries"]), f"{f['before']['ndcg@10']:.4f}", f"**{f['after']['ndcg@10']:.4f}**",
                f"{f['before']['mrr@10']:.4f} → {f['after']['mrr@10']:.4f}", f"{f['before']['recall@50']:.4f}",
                f"{f['before']['map@100']:.4f} → {f['after']['map@100']:.4f}", p_text(f["p"]),
                f"{f['wins']} / {f['ties']} / {f['losses']}",
            ]
            for c, s, f in _stage_rows(record, "reranked")
        ]  # fmt: skip
        return table(header, "|---|---|---:|---:|---:|---|---:|---|---:|---|", cells, said)
    if name == "collections-depth":
        header = [
            "collection", "candidates", "nDCG@10 before", "k = 10", "k = 20", "k = 50",
            "rerank ms p50 at k = 10 / 20 / 50",
        ]  # fmt: skip
        cells = [
            [
                c, s, f"{f['before']['ndcg@10']:.4f}", *(f"{d['after']:.4f}" for d in f["depth"]),
                " / ".join(f"{d['rerank_ms_p50'] or 0:.0f}" for d in f["depth"]),
            ]
            for c, s, f in _stage_rows(record, "reranked")
        ]  # fmt: skip
        return table(header, "|---|---|---:|---:|---:|---:|---|", cells, said)
    if name == "collections-stores":
        return _stores(record, said)
    if name == "collections-calibration":
        rows = [
            ("demo, 50 queries (complete judgments)", record["demo_calibration"]),
            (f"SciFact, first {RERANKED_QUERIES} queries", record["collections"]["scifact"]["calibration"]),
        ]
        header = [
            "collection, k = 50, QA reranker", "pairs (relevant)", "ROC AUC reranker / first stage",
            "ECE held out: σ / logistic / isotonic", f"min_score for precision {TARGET_PRECISION:.2f}",
        ]  # fmt: skip
        return table(header, "|---|---:|---:|---:|---:|", [_calibration_row(w, c) for w, c in rows], said)
    if name == "collections-summary":
        return _summary(record, said)
    raise KeyError(f"no block named {name!r} in {RECORD.name}")


def footer(record: dict[str, Any]) -> str:
    return made_by(record, "collection_figures.py")


def _calibration_row(what: str, c: dict[str, Any]) -> list[str]:
    target = c["cutoff_for_target"]
    cut = (
        f"{target['threshold']:.2f}: {target['kept_per_query']:.2g} kept per query, recall {target['recall']:.2f}"
        if target
        else "none reaches it"
    )
    return [
        what, f"{c['pairs']:,} ({c['relevant_pairs']:,})", " / ".join(f"{a:.3f}" for a in c["auc"].values()),
        " / ".join(f"{e:.3f}" for e in c["ece_held_out"].values()), cut,
    ]  # fmt: skip


def _stores(record: dict[str, Any], said: str) -> str:
    header = [
        "store", "queries", "k", "recall@k against exact", "nDCG@10 (first stage)", "nDCG@10 after reranking",
        "search p50 ms",
    ]  # fmt: skip
    cells = []
    for study in record["stores"]:
        k, reranked = study["k"], study["exact_ndcg_after"] != study["exact_ndcg_before"]
        after = f"{study['exact_ndcg_after']:.4f}" if reranked else ""
        cells.append(["exact scan", str(study["queries"]), str(k), "1", f"{study['exact_ndcg_before']:.4f}", after, ""])
        for row in study["rows"]:
            cells.append([
                {"chroma": "Chroma (HNSW)"}.get(row["store"], "Qdrant local"), str(study["queries"]), str(k),
                f"{row[f'recall@{k} vs exact']:.4f}", f"{row['ndcg@10 before']:.4f}",
                f"{row['ndcg@10 after']:.4f}" if reranked else "", f"{row['search ms p50']:.1f}",
            ])  # fmt: skip
    return table(header, "|---|---:|---:|---:|---:|---:|---:|", cells, said)


def _summary(record: dict[str, Any], said: str) -> str:
    """The README's rows: after reranking on each collection, and the first stages alone."""
    sci, cran = record["collections"]["scifact"], record["collections"]["cranfield"]

    def stages(c: dict[str, Any], with_p: str) -> str:
        return " / ".join(
            f"{f['before']['ndcg@10']:.3f} → {f['after']['ndcg@10']:.3f}"
            + (f" ({p_text(f['p'])}, {signed(f['delta'])})" if stage == with_p else "")
            for stage, f in c["reranked"].items()
        )

    first = ", ".join(
        f"{STAGES[s]} {sci['first_stage'][s]['before']['ndcg@10']:.3f} / "
        f"{cran['first_stage'][s]['before']['ndcg@10']:.3f}"
        for s in STAGES
    )
    return (
        "| what | figure |\n|---|---|\n"
        f"| SciFact, first {RERANKED_QUERIES} queries, k = 50: dense / BM25 / hybrid candidates "
        f"| nDCG@10 {stages(sci, 'dense')} |\n"
        f"| Cranfield (out of the reranker's domain), same runs | {stages(cran, 'hybrid')} |\n"
        f"| first stage, all queries, k = 100 (SciFact / Cranfield) | nDCG@10 {first} |\n\n{said}\n"
    )


if __name__ == "__main__":
    sys.exit(script_main(sys.argv[1:], sys.modules[__name__]))

"""The run checks' figures the verdict page quotes (issue 54): on the demo (50 queries, k = 50), Cranfield and SciFact
(the first 100 judged queries, k = 20), both shared rerankers on dense: which checks fired (none should: no false
alarm), and how much of the relevant passages the model cut at its max length (the `cut` check's reading); then the
planted cut, the QA cross-encoder at 24 tokens on the demo, which the check must name.

    .venv/bin/python scripts/run_check_figures.py                     # measure (about 15 minutes on 2 cores)
    .venv/bin/python scripts/run_check_figures.py --data-dir DIR      # reuse a folder where the collections are
    .venv/bin/python scripts/run_check_figures.py --write             # write the blocks again from the kept record
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures_blocks import FIGURES, data_dir_option, made_by, script_main, stamp, table

RECORD = FIGURES / "run_checks.json"
PREFIX = "run-checks-"
RERANKERS = ("minilm-l6-qa-reranker", "minilm-l6-scifact-reranker")
COLLECTIONS = {"demo": (50, None), "cranfield": (20, 100), "scifact": (20, 100)}  # k, queries (None: all)


add_options = data_dir_option  # --data-dir


def _row(report: Any) -> dict[str, Any]:
    from workbench.evaluation.sanity import CUT_FIRES

    shares = [d.relevant_cut_share for d in report.diagnosis.per_query if d.relevant_cut_share is not None]
    return {
        "queries": report.queries,
        "with_relevant": len(shares),
        "cut_at_fires": sum(s >= CUT_FIRES for s in shares),
        "cut_median": statistics.median(shares) if shares else 0.0,
        "cut_max": max(shares, default=0.0),
        "fired": [check.name for check in report.verdict.not_as_intended],
        "direction": report.verdict.direction,
        "backend": report.reranker_backend,
    }


def measure(shared: Path, data_dir: str | None = None) -> dict[str, Any]:
    """Each collection with each reranker, then the planted cut."""
    from workbench.config import Settings
    from workbench.engine import Engine
    from workbench.evaluation import Dataset
    from workbench.evaluation.sanity import CUT_FIRES
    from workbench.evaluation.service import evaluate_dataset
    from workbench.paths import user_cache_dir
    from workbench.services.demo import DEMO_COLLECTION, demo_dataset, ensure_demo_collection

    folder = Path(data_dir) if data_dir else user_cache_dir() / "run-check-figures"
    rows: dict[str, dict[str, Any]] = {}
    planted: dict[str, Any] = {}
    for reranker in RERANKERS:
        settings = Settings(
            data_dir=folder, offline=True, reranker_model=str(shared / "models" / reranker), reranker_backend="torch"
        )
        engine = Engine(settings)
        ensure_demo_collection(engine)
        for name, (k, queries) in COLLECTIONS.items():
            dataset = demo_dataset() if name == DEMO_COLLECTION else Dataset.from_beir(shared / "data" / name)
            plan = engine.plan(collection=name, retrieval="dense", k=k, top_n=10)
            report = evaluate_dataset(engine, dataset, plan, max_queries=queries, depth=())
            rows[f"{name} · {reranker}"] = _row(report) | {"k": k}
            print(name, reranker, rows[f"{name} · {reranker}"], flush=True)
        if reranker == RERANKERS[0]:
            short = Engine(settings.model_copy(update={"reranker_max_length": 24}))
            plan = short.plan(collection=DEMO_COLLECTION, retrieval="dense", k=50, top_n=10)
            planted = _row(evaluate_dataset(short, demo_dataset(), plan, depth=())) | {"k": 50, "max_length": 24}
    backend = next(iter(rows.values()))["backend"]
    return stamp({"rows": rows, "planted": planted, "cut_fires": CUT_FIRES, "backend": backend})


def _cells(label: str, row: dict[str, Any]) -> list[str]:
    return [
        label, str(row["k"]), str(row["queries"]), ", ".join(row["fired"]) or "none",
        f"{row['cut_at_fires']} of {row['with_relevant']}", f"{row['cut_median']:.0%}", f"{row['cut_max']:.0%}",
    ]  # fmt: skip


def render(name: str, kept: dict[str, Any]) -> str:
    """The table: each collection and reranker, what fired and the cut shares; then the planted cut."""
    planted = kept["planted"]
    cells = [_cells(label, row) for label, row in kept["rows"].items()]
    cells.append(_cells(f"demo · QA cross-encoder cut at {planted['max_length']} tokens (planted)", planted))
    share = f"{kept['cut_fires']:.0%}"
    return table(
        ["collection · reranker (dense)", "k", "queries", "checks fired",
         f"queries with a relevant passage {share}+ cut", "median cut", "largest cut"],
        "|---|---:|---:|---|---:|---:|---:|",
        cells,
        made_by(kept, "run_check_figures.py"),
    )  # fmt: skip


def footer(kept: dict[str, Any]) -> str:
    return f"run checks: {len(kept['rows'])} clean runs, planted cut fired {kept['planted']['fired']}"


if __name__ == "__main__":
    sys.exit(script_main(sys.argv[1:], sys.modules[__name__]))

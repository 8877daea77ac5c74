"""The backend figures that docs/performance.md and the README quote: the parity audit of the QA reranker on every
backend this machine has, with each backend's speed against the machine's ceiling, measured by one run and written
into the documents, so that they cannot drift from what `workbench doctor --parity` prints.

    .venv/bin/python scripts/backend_figures.py           # measure (about 25 minutes on 2 cores), then write
    .venv/bin/python scripts/backend_figures.py --write   # write the blocks again from the kept record

The audit runs on the demo's 50 judged queries and on the first 200 judged SciFact queries (dense candidates,
k = 20, top 10), in a fresh data folder and a fresh exports folder (nothing it finds is kept for this machine's
`auto`). The record is `docs/figures/backends.json`; the blocks are named `backends-*`.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures_blocks import FIGURES, script_main, stamp, table

RECORD = FIGURES / "backends.json"
PREFIX = "backends-"
K, TOP_N = 20, 10
SCIFACT_QUERIES = 200


def measure(shared: Path, scifact_queries: int = SCIFACT_QUERIES) -> dict[str, Any]:
    """The audit on the demo and on SciFact, from one run in fresh folders."""
    from workbench.config import Settings
    from workbench.engine import Engine
    from workbench.evaluation import Dataset
    from workbench.evaluation.parity import audit_parity
    from workbench.services.demo import DEMO_COLLECTION, demo_dataset, ensure_demo_collection

    record: dict[str, Any] = {"audits": {}}
    with tempfile.TemporaryDirectory(prefix="backend-figures-") as folder:
        settings = Settings(data_dir=Path(folder) / "data", exports_dir=Path(folder) / "exports", offline=True)
        engine = Engine(settings)
        ensure_demo_collection(engine)
        audits = {"demo": (demo_dataset("test"), DEMO_COLLECTION, None)}
        if scifact_queries:
            scifact = Dataset.from_beir(shared / "data" / "scifact")
            engine.ingest(scifact.corpus, "scifact")
            audits["scifact"] = (scifact, "scifact", scifact_queries)
        for name, (dataset, collection, limit) in audits.items():
            plan = engine.plan(collection=collection, k=K, top_n=TOP_N, reranker=settings.reranker_model)
            audit = audit_parity(engine, dataset, plan, max_queries=limit, keep=False, progress=print)
            record["audits"][name] = audit.model_dump(mode="json", exclude={"rows": {"__all__": {"per_query"}}})
        record["backend"] = "every backend, against torch:cpu"
    return stamp(record)


def footer(record: dict[str, Any]) -> str:
    m = record["machine"]
    return (
        f"Measured by `scripts/backend_figures.py` on {record['measured_at']}: {m['cpu']} ({m['cores']} cores, "
        f"{m['vector']}), workbench {record['versions'].get('rerank-workbench', '?')}, torch "
        f"{record['versions'].get('torch', '?')}, ONNX Runtime {record['versions'].get('onnxruntime', '?')}."
    )


def _change(row: dict[str, Any]) -> str:
    change = row["ndcg_change"]
    if change is None:
        return "—"
    return f"{change['delta']:+.4f} [{change['ci_low']:+.4f}, {change['ci_high']:+.4f}]".replace("-", "−")


def render(name: str, record: dict[str, Any]) -> str:
    """The text of one block, from the record."""
    audits = record["audits"]
    if name == "backends-parity":
        header = [
            "query set", "backend", "τ median (lowest)", f"top {TOP_N} set changed", "largest drift",
            "nDCG@10 change [95 % CI]", "batch-mates drift", "pairs/s per core", "× torch", "share of the ceiling",
            "faithful",
        ]  # fmt: skip
        cells = []
        for which, audit in audits.items():
            torch_rate = (audit["rows"][0]["ceiling"] or {}).get("pairs_per_second_per_core") or 0
            for row in audit["rows"]:
                ceiling = row["ceiling"] or {}
                rate = ceiling.get("pairs_per_second_per_core", 0)
                tau = "—" if row["tau_median"] is None else f"{row['tau_median']:.3f} ({row['tau_min']:.3f})"
                cells.append([
                    f"{which} ({audit['queries']} queries)", f"`{row['backend']}`", tau,
                    f"{row['top_n_changed']} of {row['queries']}", f"{row['max_drift']:.2g}", _change(row),
                    f"{row['batch_drift']:.2g}", f"{rate:.1f}", f"{rate / torch_rate:.2f}×" if torch_rate else "—",
                    f"{ceiling.get('share_of_ceiling', 0):.0%}", "yes" if row["faithful"] else "**no**",
                ])  # fmt: skip
        peak = next(iter(audits.values()))["peak"]
        bf16 = f", bf16 {peak['bf16_gflops_per_core']:.0f} GFLOP/s" if peak.get("bf16_gflops_per_core") else ""
        said = (
            f"Dense candidates, k = {K}, top {TOP_N}. The ceiling: this machine's measured peak per core, fp32 "
            f"{peak['fp32_gflops_per_core']:.0f} GFLOP/s{bf16} and int8 {peak['int8_gops_per_core']:.0f} GOP/s "
            f"({peak['how']}), against each pair's FLOPs at the query set's mean length. {footer(record)}"
        )
        return table(header, "|---|---|---:|---:|---:|---|---:|---:|---:|---:|---|", cells, said)
    if name == "backends-summary":
        parts = []
        for which, audit in audits.items():
            rows = audit["rows"]
            faithful = ", ".join(r["backend"] for r in rows if r["faithful"])
            refused = "; ".join(f"{r['backend']} ({r['reasons'][0]})" for r in rows if not r["faithful"])
            torch_row = rows[0]["ceiling"]
            parts.append(
                f"{which}, {audit['queries']} queries: faithful {faithful}; not faithful {refused or 'none'}; torch "
                f"{torch_row['pairs_per_second_per_core']:.1f} pairs/s per core, {torch_row['share_of_ceiling']:.0%} "
                "of the fp32 ceiling"
            )
        return (
            "| what | figure |\n|---|---|\n"
            f"| the reranker on every backend against fp32 torch (`workbench doctor --parity`) | {'. '.join(parts)} |"
            f"\n\n{footer(record)}\n"
        )
    raise KeyError(f"no block named {name!r} in {RECORD.name}")


if __name__ == "__main__":
    sys.exit(script_main(sys.argv[1:], sys.modules[__name__]))

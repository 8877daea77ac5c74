"""The CPU reranking figures docs/performance.md quotes, as `workbench doctor --bench` prints them: each shared
cross-encoder on every backend this machine runs, at 64, 128, 256 and 512 tokens a pair, with the parity audit's
verdict on the demo, measured by one run of the commands a user types and written into the documents.

    .venv/bin/python scripts/doctor_bench_figures.py           # audit and time (about 15 minutes on 2 cores)
    .venv/bin/python scripts/doctor_bench_figures.py --write   # write the block again from the kept record

In a fresh exports folder: `workbench doctor --parity demo --reranker M` for each shared model (so the verdicts are
this machine's, now), then `workbench doctor --bench --json`. The record is `docs/figures/doctor_bench.json` (the
command's own JSON, docs/doctor-bench.schema.json); the block is `doctor-bench`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures_blocks import FIGURES, script_main, stamp, table

RECORD = FIGURES / "doctor_bench.json"
PREFIX = "doctor-bench"
MODELS = ("minilm-l6-qa-reranker", "minilm-l6-scifact-reranker")
WORKBENCH = str(Path(sys.executable).with_name("workbench"))


def measure(shared: Path) -> dict[str, Any]:
    """The audits, then the bench, in one fresh exports and data folder."""
    with tempfile.TemporaryDirectory(prefix="doctor-bench-") as folder:
        env = {
            **os.environ, "WORKBENCH_EXPORTS_DIR": f"{folder}/exports", "WORKBENCH_DATA_DIR": f"{folder}/data",
            "WORKBENCH_MODELS_DIR": str(shared / "models"), "WORKBENCH_CONFIG": "", "HF_HUB_OFFLINE": "1",
        }  # fmt: skip
        for model in MODELS:
            subprocess.run([WORKBENCH, "doctor", "--parity", "demo", "--reranker", model], env=env, check=True)
        done = subprocess.run(
            [WORKBENCH, "doctor", "--bench", *MODELS, "--json"], env=env, check=True, stdout=subprocess.PIPE
        )
    return stamp({"backend": "every backend installed here, against torch:cpu", "bench": json.loads(done.stdout)})


def footer(record: dict[str, Any]) -> str:
    bench = record["bench"]
    m = bench["machine"]
    libraries = ", ".join(f"{k} {v}" for k, v in m["libraries"].items() if v != "not installed")
    demo_pairs = next(c["pairs"] for c in bench["cells"] if c["pairs_from"] != "fixed length")
    bf16 = f", bf16 {m['peak']['bf16_gflops_per_core']:.0f} GFLOP/s" if m["peak"].get("bf16_gflops_per_core") else ""
    return (
        f"Pairs/s per core: the chip's rate ({m['cores']} cores) over its cores, the median of {bench['rounds']} "
        f"interleaved rounds; every pair exactly the column's tokens, but the demo's own judged pairs, at their "
        f"mixed lengths as a search cuts them ({demo_pairs} of its 1,774 judged pairs, taken evenly across its "
        f"queries). The ceiling: fp32 "
        f"{m['peak']['fp32_gflops_per_core']:.0f} GFLOP/s, int8 {m['peak']['int8_gops_per_core']:.0f} GOP/s{bf16} "
        f"per core. Measured by `scripts/doctor_bench_figures.py` (`workbench doctor --bench --json`) on "
        f"{bench['measured_at'][:10]}: {m['cpu']} ({', '.join(m['flags'])}), {libraries}."
    )


def render(name: str, record: dict[str, Any]) -> str:
    """The block: a row per model and backend, pairs/s per core at each length and on the demo's own pairs, × torch
    at 64 and 256 tokens and on the demo's pairs, share of the ceiling at 256, the audit's verdict."""
    lengths = record["bench"]["lengths"]
    cells: dict[tuple[str, str], dict[Any, dict[str, Any]]] = {}
    for cell in record["bench"]["cells"]:
        key = cell["tokens"] if cell["pairs_from"] == "fixed length" else "demo"
        cells.setdefault((cell["model"], cell["backend"]), {})[key] = cell
    demo_tokens = next(c["tokens"] for c in record["bench"]["cells"] if c["pairs_from"] != "fixed length")
    header = ["model", "backend", *(f"pairs/s per core at {t}" for t in lengths),
              f"on the demo's pairs (mean {demo_tokens:.0f} tokens)", "× torch at 64 / 256 / the demo's pairs",
              "share of the ceiling at 256", "audit on the demo"]  # fmt: skip
    rows = []
    for (model, backend), by in cells.items():
        ratios = " / ".join(f"{by[t]['x_torch']:.2f}×" for t in (64, 256, "demo") if t in by)
        audit = by["demo"]["audit"] + (f" ({by['demo']['audit_reason']})" if by["demo"]["audit_reason"] else "")
        share = f"{by[256]['share_of_ceiling']:.0%}" if 256 in by else "—"
        rows.append([
            model, f"`{backend}`", *(f"{by[t]['pairs_per_second_per_core']:.1f}" for t in lengths),
            f"{by['demo']['pairs_per_second_per_core']:.1f}", ratios, share,
            audit if by["demo"]["audit"] != "not faithful" else f"**{audit}**",
        ])  # fmt: skip
    rule = "|---|---|" + "---:|" * (len(lengths) + 3) + "---|"
    return table(header, rule, rows, footer(record))


if __name__ == "__main__":
    sys.exit(script_main(sys.argv[1:], sys.modules[__name__]))

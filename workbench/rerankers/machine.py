"""`auto` measured where it runs: what this machine is (CPU flags, architecture, GPU), which int8 configuration
its CPU takes, and a short calibration that times each available backend of a model on real pairs, once per
model and machine, and keeps the choice with its figures.

The pairs are the demo handbook's: a few of its queries, each with every passage judged for it (the shipped,
complete judgments), scored by each backend. A backend's speed is its time for those pairs against fp32 torch's;
its quality loss is the measured table's for the model (`MEASURED`; for int8, only when this CPU takes the same
quantization the table was measured with), otherwise the drop in nDCG@10 on those judged passages against fp32
torch. `decide` is the rule: the fastest backend whose loss is within
MAX_LOSS, which is at least MIN_SPEEDUP faster than torch, and whose scores do not depend on their batch-mates
(dynamic int8 never: `vocab.BATCH_DEPENDENT_BACKENDS`), else torch.
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import ir_measures
from pydantic import BaseModel

from workbench.extras import has_extra
from workbench.loaders import load_path
from workbench.paths import demo_dir
from workbench.vocab import BACKENDS, BATCH_DEPENDENT_BACKENDS, Backend

MAX_LOSS = 0.005  # nDCG@10 a backend may lose against fp32 torch
MIN_SPEEDUP = 1.1  # how much faster than torch a backend must be to be worth its export
CPU_BACKENDS = BACKENDS


def installed_backends() -> tuple[str, ...]:
    """The CPU backends this installation can run (OpenVINO only with the 'openvino' extra)."""
    return tuple(b for b in CPU_BACKENDS if b != "openvino" or has_extra("openvino"))


CALIBRATION_QUERIES = 4
_FLAGS_OF_INTEREST = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8", "fma", "f16c")
_NDCG = ir_measures.parse_measure("nDCG@10")

# Measured on the 2-core development machine (AMD EPYC, AVX2 without VNNI): for each model fingerprint prefix,
# each backend's worst nDCG@10 loss against fp32 torch (SciFact and Cranfield, k = 20 and 50) and its CPU speed
# relative to fp32 torch. See docs/performance.md for the runs. The losses stand for every machine; the speeds
# are that machine's, and the calibration measures them anew where the workbench runs.
MEASURED_INT8_CONFIG = "avx2"  # the table's int8 losses hold for this quantization only
MEASURED: dict[str, dict[str, dict[str, float]]] = {
    # ../shared/models/minilm-l6-qa-reranker. "loss" is the worst nDCG@10 drop (negative: it scored higher).
    "ac223383d8fad187": {
        "onnx": {"loss": 0.0, "speedup": 1.00},
        "onnx-int8": {"loss": -0.0036, "speedup": 1.01},
    },
}


class MachineFacts(BaseModel):
    """What the backend choice depends on: the CPU, its relevant flags, the architecture, any GPU."""

    cpu: str
    arch: str
    flags: list[str]
    int8_config: str
    gpu: str | None = None


class BackendFigures(BaseModel):
    """One backend measured on the calibration pairs."""

    backend: Backend
    ms_per_50_pairs: float
    speedup: float  # fp32 torch's time over this backend's
    loss: float | None  # nDCG@10 drop against fp32 torch (None: unknown, never chosen)
    loss_source: str


class BackendChoice(BaseModel):
    """The choice `auto` makes for one model on one machine, with what it rests on."""

    model: str
    model_print: str
    machine: MachineFacts
    chosen: Backend  # a kept file naming anything else (edited, damaged) does not load, and is measured anew
    figures: list[BackendFigures]
    pairs: int
    seconds: float
    measured_at: datetime
    rule: str = (
        f"the fastest backend within {MAX_LOSS} nDCG@10 of fp32 torch and {MIN_SPEEDUP}x faster, whose scores do not "
        "depend on their batch-mates (never dynamic int8), else torch"
    )

    def summary(self) -> str:
        """One line: the choice and each backend's speed and loss."""
        parts = []
        for f in self.figures:
            loss = "loss unknown" if f.loss is None else f"loss {f.loss:+.4f} ({f.loss_source})"
            parts.append(f"{f.backend} {f.ms_per_50_pairs:.0f} ms/50 pairs, {f.speedup:.2f}x, {loss}")
        return f"auto → {self.chosen} (measured on this machine over {self.pairs} pairs: {'; '.join(parts)})"


@functools.cache  # the CPU does not change while the process runs
def _cpu_info() -> tuple[str, frozenset[str]]:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.processor() or platform.machine(), frozenset()
    name = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")), "")
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return name or platform.machine(), frozenset(flags)


def int8_config(arch: str, flags: set[str] | Sequence[str]) -> str:
    """The dynamic int8 configuration for this CPU: `arm64` on ARM, `avx512_vnni` where VNNI is there, `avx512`
    with AVX-512 alone, otherwise `avx2`."""
    flags = set(flags)
    if arch.lower() in {"arm64", "aarch64"}:
        return "arm64"
    if "avx512_vnni" in flags:
        return "avx512_vnni"
    if "avx512f" in flags:
        return "avx512"
    return "avx2"


def machine_facts(device: str = "cpu") -> MachineFacts:
    """This machine as the backend choice sees it (the GPU's name when `device` is CUDA)."""
    cpu, flags = _cpu_info()
    arch = platform.machine()
    gpu = None
    if device.startswith("cuda"):
        import torch

        gpu = torch.cuda.get_device_name(torch.device(device))
    return MachineFacts(
        cpu=cpu, arch=arch, flags=sorted(flags & set(_FLAGS_OF_INTEREST)), int8_config=int8_config(arch, flags), gpu=gpu
    )


def choice_path(root: str | Path, model_print: str, facts: MachineFacts) -> Path:
    """Where the choice for this model on this machine is kept: one file per (model, CPU and flags, GPU)."""
    machine = hashlib.blake2b(facts.model_dump_json().encode(), digest_size=8).hexdigest()
    return Path(root) / f"{model_print[:16]}-{machine}.json"


def kept_choice(root: str | Path, model_print: str, facts: MachineFacts) -> BackendChoice | None:
    """The choice measured earlier for this model on this machine, or None (never measured, unreadable, or naming
    a backend that does not exist: such a file is never acted on, and the calibration replaces it)."""
    try:
        kept = BackendChoice.model_validate_json(choice_path(root, model_print, facts).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    rule = decide(kept.figures)  # a choice kept under an earlier rule is decided again by today's
    return kept if kept.chosen == rule else kept.model_copy(update={"chosen": rule})


def decide(figures: Sequence[BackendFigures]) -> str:
    """The rule: the fastest backend whose scores do not depend on their batch-mates (never a dynamically
    quantized one: BATCH_DEPENDENT_BACKENDS), whose loss is known and within MAX_LOSS and whose speed is at least
    MIN_SPEEDUP times torch's; torch when none is."""
    good = [
        (f.speedup, f.backend)
        for f in figures
        if f.backend == "torch"
        or (
            f.backend not in BATCH_DEPENDENT_BACKENDS
            and f.loss is not None
            and f.loss <= MAX_LOSS
            and f.speedup >= MIN_SPEEDUP
        )
    ]
    return max(good)[1] if good else "torch"


def calibration_pairs(queries: int = CALIBRATION_QUERIES) -> tuple[list[tuple[str, str]], list[tuple[str, str]], dict]:
    """The demo's first `queries` queries with every passage judged for them: (query, passage) pairs, their
    (query id, document id) keys, and the judgments as ir-measures qrels."""
    texts = {d.id: d.text for d in load_path(demo_dir() / "docs").documents}
    asked = [json.loads(line) for line in (demo_dir() / "queries.jsonl").read_text().splitlines()[:queries]]
    wanted = {q["_id"]: q["text"] for q in asked}
    qrels: dict[str, dict[str, int]] = {}
    for line in (demo_dir() / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, doc, grade = line.split("\t")
        if qid in wanted and doc in texts:
            qrels.setdefault(qid, {})[doc] = int(grade)
    keys = [(qid, doc) for qid, docs in qrels.items() for doc in docs]
    return [(wanted[q], texts[d]) for q, d in keys], keys, qrels


def _ndcg(scores: Sequence[float], keys: Sequence[tuple[str, str]], qrels: dict) -> float:
    run: dict[str, dict[str, float]] = {}
    for (qid, doc), score in zip(keys, scores, strict=True):
        run.setdefault(qid, {})[doc] = float(score)
    return float(ir_measures.calc_aggregate([_NDCG], qrels, run)[_NDCG])


def calibrate(
    model_path: str,
    model_print: str,
    facts: MachineFacts,
    load: Callable[[str], Any],
    root: str | Path,
    say: Callable[[str], None],
) -> BackendChoice:
    """Time each CPU backend of the model (`load(backend)` gives a CrossEncoder) on the demo's judged pairs,
    decide, and keep the choice under `root`."""
    backends = installed_backends()
    say(
        f"Measuring the reranker's backends ({', '.join(backends)}) for {Path(model_path).name} on this machine "
        "(once; the choice is kept)…"
    )
    started = time.perf_counter()
    pairs, keys, qrels = calibration_pairs()
    measured = MEASURED.get(model_print[:16], {})
    seconds: dict[str, float] = {}
    quality: dict[str, float] = {}
    for backend in backends:
        model = load(backend)
        model.predict(pairs[:8], batch_size=32, show_progress_bar=False)  # warm: first-call costs are not speed
        times, scores = [], []
        for _ in range(2):
            begun = time.perf_counter()
            scores = model.predict(pairs, batch_size=32, show_progress_bar=False)
            times.append(time.perf_counter() - begun)
        seconds[backend] = statistics.median(times)
        quality[backend] = _ndcg(list(scores), keys, qrels)
        del model
    figures = []
    for backend in backends:
        if backend == "torch":
            loss, source = 0.0, "the reference"
        elif backend in measured and (backend != "onnx-int8" or facts.int8_config == MEASURED_INT8_CONFIG):
            loss, source = measured[backend]["loss"], "measured table"
        else:
            loss, source = quality["torch"] - quality[backend], f"demo judgments, {len(qrels)} queries"
        figures.append(
            BackendFigures(
                backend=backend,
                ms_per_50_pairs=1000 * seconds[backend] * 50 / len(pairs),
                speedup=seconds["torch"] / seconds[backend],
                loss=loss,
                loss_source=source,
            )
        )
    choice = BackendChoice(
        model=Path(model_path).name, model_print=model_print, machine=facts, chosen=decide(figures), figures=figures,
        pairs=len(pairs), seconds=time.perf_counter() - started, measured_at=datetime.now(UTC),
    )  # fmt: skip
    path = choice_path(root, model_print, facts)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(choice.model_dump_json(indent=2), encoding="utf-8")
    partial.replace(path)
    say(choice.summary())
    return choice

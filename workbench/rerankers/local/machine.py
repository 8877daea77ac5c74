"""`auto` measured where it runs: what this machine is (CPU flags, architecture, GPU), which int8 configuration
its CPU takes, and a short calibration that times each available backend of a model on real pairs, once per
model and machine, and keeps the timings.

Speed alone never moves `auto` off fp32 torch: a backend is taken only when the parity audit
(`workbench doctor --parity`, `evaluation/parity.py`) found it faithful to fp32 torch for this model on this
machine, over a whole query set, and kept that verdict here (`keep_faithful`). `decide` is the rule: the fastest
backend the audit found faithful, at least MIN_SPEEDUP faster than torch, whose scores do not depend on their
batch-mates (dynamic int8 never: `vocab.BATCH_DEPENDENT_BACKENDS`), else torch.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from workbench.extras import has_extra
from workbench.loaders import load_path
from workbench.paths import demo_dir
from workbench.vocab import BACKENDS, BATCH_DEPENDENT_BACKENDS, BF16_CPU_FLAGS, OPENVINO_BACKENDS, Backend

MIN_SPEEDUP = 1.1  # how much faster than torch a backend must be to be worth its export
# Timings taken while the 1-minute load average per core was above this were taken on a busy machine: kept, but
# said so, and `workbench doctor` measures again once the machine is quieter.
BUSY_LOAD_PER_CORE = 1.0
CPU_BACKENDS = BACKENDS


def multiplies_bf16() -> bool:
    """Whether this CPU multiplies bf16 (avx512_bf16 or amx_bf16)."""
    return bool(BF16_CPU_FLAGS & _cpu_info()[1])


def installed_backends() -> tuple[str, ...]:
    """The CPU backends this installation can run on this CPU: OpenVINO's only with the 'openvino' extra, and its
    bf16 one only where the CPU multiplies bf16 (elsewhere OpenVINO would quietly run it in fp32)."""
    openvino, bf16 = has_extra("openvino"), multiplies_bf16()
    return tuple(b for b in CPU_BACKENDS if (b not in OPENVINO_BACKENDS or openvino) and (b != "openvino-bf16" or bf16))


CALIBRATION_QUERIES = 4
_FLAGS_OF_INTEREST = (
    "avx2",
    "avx512f",
    "avx512_vnni",
    "avx512_bf16",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
    "fma",
    "f16c",
)


def load_per_core() -> float | None:
    """The 1-minute load average over the CPU count (None where the OS keeps no load average)."""
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:
        return None


def busy_words(load: float | None) -> str:
    """A clause saying the machine was busy at `load` per core; empty when it was not, or when nobody knows."""
    if load is None or load <= BUSY_LOAD_PER_CORE:
        return ""
    return f"taken at load {load:.1f} per core, a busy machine: the speeds may be low"


class MachineFacts(BaseModel):
    """What the backend choice depends on: the CPU, its relevant flags, the architecture, any GPU."""

    cpu: str
    arch: str
    flags: list[str]
    int8_config: str
    gpu: str | None = None


class BackendFigures(BaseModel):
    """One backend timed on the calibration pairs."""

    backend: Backend
    ms_per_50_pairs: float
    speedup: float  # fp32 torch's time over this backend's
    tokens_per_pair: float = 0.0  # the pairs' mean length in tokens, padding left out (what a pair's FLOPs follow)


class FaithfulBackends(BaseModel):
    """What the parity audit found for one model on one machine: per backend, whether it is faithful to fp32 torch
    (kept beside the timings; `decide` reads it), with the audit's one-line reasons."""

    model: str
    model_print: str
    machine: MachineFacts
    faithful: dict[str, bool]
    reasons: dict[str, str]
    # each backend's speed over torch's on the audit's own pairs (the collection's real lengths): what `decide` takes
    # over the calibration's short demo pairs, where a backend's gain on long passages does not show
    speedups: dict[str, float] = Field(default_factory=dict)
    queries: int
    measured_at: datetime
    load_per_core: float | None = None  # the machine's load when the speeds were measured (None: not recorded)


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
    audited: FaithfulBackends | None = None  # the parity audit's verdicts, when one was run here for this model
    load_per_core: float | None = None  # the 1-minute load per core when the timings began (None: not recorded)
    rule: str = (
        f"the fastest backend the parity audit found faithful to fp32 torch and at least {MIN_SPEEDUP}x faster, whose "
        "scores do not depend on their batch-mates (never dynamic int8), else torch"
    )

    def summary(self) -> str:
        """One line: the choice, each backend's speed and what the audit said of it."""
        parts = []
        for f in self.figures:
            if f.backend == "torch":
                verdict = "the reference"
            elif self.audited is None or f.backend not in self.audited.faithful:
                verdict = "not audited"
            elif self.audited.faithful[f.backend]:
                verdict = "faithful"
            else:  # why the audit refused it, so that keeping fp32 is explained
                why = self.audited.reasons.get(f.backend, "").split("; ")[0]
                verdict = f"not faithful ({why})" if why else "not faithful"
            speed = f"{f.speedup:.2f}x"
            if self.audited is not None and f.backend != "torch" and f.backend in self.audited.speedups:
                # what the rule decides by: the audit's speed on the collection's own pairs
                speed += f" ({self.audited.speedups[f.backend]:.2f}x on the audit's pairs)"
            parts.append(f"{f.backend} {f.ms_per_50_pairs:.0f} ms/50 pairs, {speed}, {verdict}")
        said = f"auto → {self.chosen} (measured on this machine over {self.pairs} pairs: {'; '.join(parts)})"
        if busy := busy_words(self.load_per_core):
            said += f"; {busy}"
        if self.audited is None:
            said += ". No parity audit yet: `workbench doctor --parity demo` lets auto consider the faster backends"
        return said

    def measured_busy_then_quiet_now(self) -> str | None:
        """Why these timings should be taken again, when they were taken on a busy machine and it is quieter now
        (a line saying both loads); None otherwise."""
        now = load_per_core()
        if not busy_words(self.load_per_core) or now is None or now > BUSY_LOAD_PER_CORE:
            return None
        return (
            f"the kept backend speeds were taken at load {self.load_per_core:.1f} per core (a busy machine); "
            f"measuring them again now, at load {now:.1f}"
        )


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


def faithful_path(root: str | Path, model_print: str, facts: MachineFacts) -> Path:
    """Where the parity audit's verdicts for this model on this machine are kept (beside the timings)."""
    return choice_path(root, model_print, facts).with_suffix(".parity.json")


def kept_faithful(root: str | Path, model_print: str, facts: MachineFacts) -> FaithfulBackends | None:
    """The parity audit's verdicts kept for this model on this machine, or None (never audited, unreadable)."""
    try:
        text = faithful_path(root, model_print, facts).read_text(encoding="utf-8")
        return FaithfulBackends.model_validate_json(text)
    except (OSError, ValueError):
        return None


def keep_faithful(root: str | Path, verdicts: FaithfulBackends) -> Path:
    """Keep the parity audit's verdicts, so that `auto` decides by them from now on (written whole or not at all)."""
    path = faithful_path(root, verdicts.model_print, verdicts.machine)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(verdicts.model_dump_json(indent=2), encoding="utf-8")
    partial.replace(path)
    return path


def kept_choice(root: str | Path, model_print: str, facts: MachineFacts) -> BackendChoice | None:
    """The choice measured earlier for this model on this machine, with the parity audit's verdicts when kept, or
    None (never measured, unreadable, or naming a backend that does not exist: such a file is never acted on, and
    the calibration replaces it)."""
    try:
        kept = BackendChoice.model_validate_json(choice_path(root, model_print, facts).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    audited = kept_faithful(root, model_print, facts)
    rule = audited_rule(kept.figures, audited)  # today's rule and today's audit decide
    return kept.model_copy(update={"chosen": rule, "audited": audited})


def decide(
    figures: Sequence[BackendFigures],
    faithful: Mapping[str, bool] | None = None,
    speedups: Mapping[str, float] | None = None,
) -> str:
    """The rule: the fastest backend the parity audit found faithful (`faithful`; none without an audit), whose
    scores do not depend on their batch-mates (never a dynamically quantized one: BATCH_DEPENDENT_BACKENDS) and
    whose speed is at least MIN_SPEEDUP times torch's (the audit's `speedups` where it measured them, else the
    calibration's); torch when none is."""
    admitted, measured = faithful or {}, speedups or {}
    good = []
    for f in figures:
        speed = measured.get(f.backend, f.speedup)
        allowed = f.backend not in BATCH_DEPENDENT_BACKENDS and admitted.get(f.backend) is True
        if f.backend == "torch" or (allowed and speed >= MIN_SPEEDUP):
            good.append((1.0 if f.backend == "torch" else speed, f.backend))
    return max(good)[1] if good else "torch"


def audited_rule(figures: Sequence[BackendFigures], audited: FaithfulBackends | None) -> str:
    """`decide` with what a kept audit says (nothing: torch)."""
    return decide(figures, audited.faithful, audited.speedups) if audited else decide(figures)


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


def mean_tokens(model: Any, pairs: Sequence[tuple[str, str]]) -> float:
    """The pairs' mean length in tokens as `model` (a CrossEncoder) reads them: truncated, padding left out."""
    encoded = model.tokenizer(
        [q for q, _ in pairs], [d for _, d in pairs], truncation="only_second", max_length=model.max_length
    )
    lengths = [len(ids) for ids in encoded["input_ids"]]
    return sum(lengths) / len(lengths) if lengths else 0.0


def measure_backends(
    model_path: str,
    model_print: str,
    facts: MachineFacts,
    load: Callable[[str], Any],
    root: str | Path,
    say: Callable[[str], None],
) -> BackendChoice:
    """Time each CPU backend of the model (`load(backend)` gives a CrossEncoder) on the demo's judged pairs,
    decide by the kept parity audit (if any), and keep the timings under `root`."""
    backends = installed_backends()
    started, load_then = time.perf_counter(), load_per_core()
    first = load(backends[0])  # a folder that cannot be loaded is said alone, before any measuring is announced
    say(
        f"Measuring the reranker's backends ({', '.join(backends)}) for {Path(model_path).name} on this machine "
        "(once; the choice is kept)…"
    )
    pairs = calibration_pairs()[0]
    seconds: dict[str, float] = {}
    tokens = 0.0
    for backend in backends:
        model = first if backend == backends[0] else load(backend)
        first = None  # from here the loop holds the only reference: one model in memory at a time
        tokens = tokens or mean_tokens(model, pairs)
        model.predict(pairs[:8], batch_size=32, show_progress_bar=False)  # warm: first-call costs are not speed
        times = []
        for _ in range(2):
            begun = time.perf_counter()
            model.predict(pairs, batch_size=32, show_progress_bar=False)
            times.append(time.perf_counter() - begun)
        seconds[backend] = statistics.median(times)
        del model
    figures = [
        BackendFigures(
            backend=backend, ms_per_50_pairs=1000 * seconds[backend] * 50 / len(pairs),
            speedup=seconds["torch"] / seconds[backend], tokens_per_pair=tokens,
        )
        for backend in backends
    ]  # fmt: skip
    audited = kept_faithful(root, model_print, facts)
    choice = BackendChoice(
        model=Path(model_path).name, model_print=model_print, machine=facts,
        chosen=audited_rule(figures, audited), figures=figures, audited=audited,
        pairs=len(pairs), seconds=time.perf_counter() - started, measured_at=datetime.now(UTC), load_per_core=load_then,
    )  # fmt: skip
    path = choice_path(root, model_print, facts)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(choice.model_dump_json(indent=2), encoding="utf-8")
    partial.replace(path)
    say(choice.summary())
    return choice

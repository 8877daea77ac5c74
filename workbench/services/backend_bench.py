"""`workbench doctor --bench`: each local cross-encoder on each backend this installation runs here, at fixed
sequence lengths, as pairs per second per chip and per core, the share of the machine's measured ceiling, the ratio
to fp32 torch, and what the parity audit kept for the backend on this machine: the CPU reranking figure a user can
post, with the machine, the libraries and the date it was taken on.

Every pair of a length T is exactly T tokens: a demo query with a run of demo passages long enough to be cut at T
(so no pair pays padding and every backend reads the same tokens). Then the demo's own judged pairs, taken evenly
across its queries at their own mixed lengths as a search cuts them (what the parity audit scores; their mean
length is the row's tokens): the figure a real query set gets, where shapes vary. Each backend is timed as a
search runs it: the reranker's own model run over encoded pairs (`CrossEncoderReranker.run_encoded`: batches of
RERANKER_BATCH_SIZE, OpenVINO one request a pair), tokenizing left out as the token cache leaves it out of a
search. The backends are timed interleaved (each round times every backend once, in turn) on all the cores torch
uses; a figure is the median of the rounds, per core is that over the cores. Speed is reported, never judged here:
whether a backend may serve is the audit's (`workbench doctor --parity demo`).
"""

from __future__ import annotations

import json
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from workbench.config import Settings
from workbench.errors import InputError, WorkbenchError
from workbench.inputs import validate_bench_lengths
from workbench.loaders import load_path
from workbench.paths import demo_dir
from workbench.rerankers.crossencoder import CrossEncoderReranker, Encoded
from workbench.rerankers.local.backends import kept_audit
from workbench.rerankers.local.ceiling import Peak, against_ceiling, measure_peak, model_shape
from workbench.rerankers.local.machine import (
    MachineFacts,
    calibration_pairs,
    installed_backends,
    machine_facts,
    multiplies_bf16,
)
from workbench.vocab import BACKENDS, OPENVINO_BACKENDS

BENCH_LENGTHS: tuple[int, ...] = (64, 128, 256, 512)
BENCH_ROUNDS = 3
BENCH_SCHEMA_VERSION = 1
_LIBRARIES = ("torch", "transformers", "sentence-transformers", "onnxruntime", "openvino", "optimum", "numpy")
DEMO_QUERIES = 50
DEMO_MEAN_TOKENS = 75  # the demo's judged pairs, cut at 256 tokens: how many of them a round takes
_WORDS_PER_PASSAGE = 600  # over 512 tokens: every pair is cut at its length, none is padded
Audit = Literal["reference", "faithful", "not faithful", "not audited"]
PairsFrom = Literal["fixed length", "demo's judged pairs"]


class BenchMachine(BaseModel):
    """What the figures were taken on: the CPU, its flags of note, the cores used, the libraries, the measured
    peak per core."""

    cpu: str
    arch: str
    flags: list[str]
    int8_config: str
    cores: int  # the threads each backend ran on (torch's, the one chip's)
    peak: Peak
    libraries: dict[str, str]  # package -> version ("not installed" where it is not)
    python: str


class BenchCell(BaseModel):
    """One model on one backend at one length."""

    model: str
    backend: str
    pairs_from: PairsFrom = "fixed length"  # "demo's judged pairs": their own mixed lengths, as the audit reads them
    tokens: float  # every timed pair is exactly this long; for the demo's pairs, their mean length (unpadded)
    pairs: int  # timed per round
    seconds: list[float]  # each round's time for the pairs
    pairs_per_second: float  # the chip (all `cores`): pairs over the median round
    pairs_per_second_per_core: float
    gflop_per_pair: float
    share_of_ceiling: float  # the arithmetic rate over the cores' measured peak for the backend's precision
    x_torch: float | None  # fp32 torch's median round over this backend's (None: torch was not timed)
    audit: Audit  # what `workbench doctor --parity` kept for the backend on this machine
    audit_reason: str = ""  # the audit's first reason, for a backend it did not find faithful


class BenchReport(BaseModel):
    """`workbench doctor --bench --json`: its schema is docs/doctor-bench.schema.json."""

    schema_version: int = BENCH_SCHEMA_VERSION
    measured_at: datetime
    workbench: str
    machine: BenchMachine
    lengths: list[int]
    rounds: int
    how: str = (
        "each pair is a demo query with demo passages cut at exactly the length's tokens, then the demo's judged "
        "pairs at their own lengths (cut at RERANKER_MAX_LENGTH; tokens is their mean); every backend is timed "
        "once a round, in turn, on all the cores torch uses, as a search runs it (the reranker's model run over "
        "encoded pairs, tokenizing left out); a figure is the median round; per core is that over the cores; the "
        "ceiling is a one-core matrix multiply in the backend's precision (fp32, bf16 or int8); FLOPs per pair "
        "count the matrix multiplies"
    )
    cells: list[BenchCell] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)  # backends or models not measured, with why


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def library_versions() -> dict[str, str]:
    """The versions of the libraries the figures depend on ("not installed" for one that is not)."""
    return {name: _version(name) for name in _LIBRARIES}


def bench_backends(named: Sequence[str] | None) -> list[str]:
    """The backends to time: those named (each one this installation runs on this CPU, else one line saying
    why), or every one it runs."""
    here = installed_backends()
    if not named:
        return list(here)
    chosen = []
    for name in named:
        if name not in BACKENDS:
            raise InputError(f"Unknown backend {name!r}: the backends are {', '.join(BACKENDS)}.")
        if name not in here:
            why = (
                "this CPU does not multiply bf16 (no avx512_bf16 or amx_bf16)"
                if name == "openvino-bf16" and not multiplies_bf16()
                else "it needs the 'openvino' extra: pip install 'rerank-workbench[openvino]'"
                if name in OPENVINO_BACKENDS
                else "it does not run here"
            )
            raise InputError(f"The backend {name} is not offered on this machine: {why}.")
        chosen.append(name)
    return list(dict.fromkeys(["torch", *chosen]))  # torch is always timed: the ratios are to it


def bench_lengths(named: Sequence[int] | None) -> list[int]:
    """The lengths to time at (tokens a pair): those named (`inputs.validate_bench_lengths`), or BENCH_LENGTHS."""
    return validate_bench_lengths(named) if named else list(BENCH_LENGTHS)


def bench_pairs(count: int) -> list[tuple[str, str]]:
    """`count` (demo query, passage) pairs whose passages run on through the next demo sections to
    _WORDS_PER_PASSAGE words: long enough to be cut at any bench length."""
    texts = [d.text for d in load_path(demo_dir() / "docs").documents]
    queries = [json.loads(line)["text"] for line in (demo_dir() / "queries.jsonl").read_text().splitlines()]
    pairs = []
    for i in range(count):
        words: list[str] = []
        j = i
        while len(words) < _WORDS_PER_PASSAGE:
            words += texts[j % len(texts)].split()
            j += 1
        pairs.append((queries[i % len(queries)], " ".join(words)))
    return pairs


def pairs_per_round(tokens: int, limit: int | None = None) -> int:
    """How many pairs a round times at `tokens`: about 8,000 tokens (so a round takes about as long at every
    length), at least 16, at most `limit`."""
    count = max(16, round(8192 / tokens))
    return min(count, limit) if limit else count


def _as_encoded(encoded: Any) -> list[Encoded]:
    """A tokenizer's batch as the reranker's encoded pairs (input ids, token type ids)."""
    ids = encoded["input_ids"]
    types = encoded.get("token_type_ids") or [[0] * len(row) for row in ids]
    return [(list(i), list(t)) for i, t in zip(ids, types, strict=True)]


def encoded_pairs(reranker: CrossEncoderReranker, pairs: Sequence[tuple[str, str]], tokens: int) -> list[Encoded]:
    """The pairs as the reranker's model reads them, each cut at exactly `tokens` (refused if one is not)."""
    encoded = _as_encoded(
        reranker.tokenizer([q for q, _ in pairs], [p for _, p in pairs], truncation="only_second", max_length=tokens)
    )
    if {len(ids) for ids, _ in encoded} != {tokens}:  # pragma: no cover - the passages are built long enough
        raise RuntimeError(f"bench pairs of {sorted({len(ids) for ids, _ in encoded})} tokens, not {tokens}")
    return encoded


def bench_model(
    name: str,
    folder: str,
    backends: Sequence[str],
    lengths: Sequence[int],
    *,
    settings: Settings,
    max_pairs: int | None = None,
    rounds: int = BENCH_ROUNDS,
    say: Callable[[str], None] = lambda _: None,
) -> tuple[list[BenchCell], list[str]]:
    """One model's cells (every backend at every length, interleaved) and the backends it could not load, each
    with why."""
    import torch

    shape, peak, cores = model_shape(folder), measure_peak(), torch.get_num_threads()
    limit = _max_positions(folder)
    too_long = [t for t in lengths if t > limit]
    if too_long:
        raise InputError(f"{name} reads at most {limit} tokens a pair; {too_long[0]} is longer.")
    here = settings.model_copy(
        update={
            "reranker_device": "cpu",
            "reranker_max_length": max(*lengths, settings.reranker_max_length),
            "reranker_calibrate": False,
        }
    )
    loaded: dict[str, CrossEncoderReranker] = {}
    skipped = []
    for backend in backends:
        say(f"{name}: loading {backend}…")
        try:
            loaded[backend] = CrossEncoderReranker(folder, here, backend=backend)
        except WorkbenchError as exc:  # one backend that does not load is said; the others are timed
            skipped.append(f"{name} on {backend}: {str(exc).splitlines()[0][:200]}")
    audited = kept_audit(folder, exports_root=settings.exports_dir)
    runs: list[tuple[PairsFrom, int, Callable[[CrossEncoderReranker], list[Encoded]]]] = [
        ("fixed length", t, lambda r, t=t: encoded_pairs(r, bench_pairs(pairs_per_round(t, max_pairs)), t))
        for t in lengths
    ]
    demo_count = pairs_per_round(DEMO_MEAN_TOKENS, max_pairs)
    runs.append(("demo's judged pairs", 0, lambda r: demo_encoded(r, demo_bench_pairs(demo_count), settings)))
    cells = []
    if not loaded:
        return [], skipped
    for pairs_from, tokens, encode in runs:
        pairs = encode(next(iter(loaded.values())))  # one tokenizer: every backend of the folder reads it
        count, mean = len(pairs), sum(len(ids) for ids, _ in pairs) / len(pairs)
        seconds = _timed_rounds(loaded, pairs, rounds)
        say(f"{name}: timed {len(loaded)} backends on {count} pairs ({pairs_from}, {mean:.0f} tokens)")
        for backend, times in seconds.items():
            median = statistics.median(times)
            rate = against_ceiling(backend, count / median, cores, shape, mean, peak)
            verdict, reason = _audit_of(backend, audited)
            cell = BenchCell(
                model=name, backend=backend, pairs_from=pairs_from, tokens=tokens or mean, pairs=count,
                seconds=times, pairs_per_second=rate.pairs_per_second,
                pairs_per_second_per_core=rate.pairs_per_second_per_core, gflop_per_pair=rate.gflop_per_pair,
                share_of_ceiling=rate.share_of_ceiling,
                x_torch=statistics.median(seconds["torch"]) / median if "torch" in seconds else None,
                audit=verdict, audit_reason=reason,
            )  # fmt: skip
            cells.append(cell)
    return cells, skipped


def _timed_rounds(
    loaded: dict[str, CrossEncoderReranker], encoded: list[Encoded], rounds: int
) -> dict[str, list[float]]:
    """Each backend's time for the encoded pairs, `rounds` times, the backends in turn within a round (after one
    warming run of four pairs each)."""
    for reranker in loaded.values():
        reranker.run_encoded(encoded[:4])
    seconds: dict[str, list[float]] = {b: [] for b in loaded}
    for _ in range(rounds):
        for backend, reranker in loaded.items():
            started = time.perf_counter()
            reranker.run_encoded(encoded)
            seconds[backend].append(time.perf_counter() - started)
    return seconds


def demo_bench_pairs(count: int) -> list[tuple[str, str]]:
    """`count` of the demo's judged (query, passage) pairs, taken evenly across its 50 queries (what the audit
    scores, at their own lengths)."""
    pairs = calibration_pairs(DEMO_QUERIES)[0]
    step = max(1, len(pairs) // count)
    return pairs[::step][:count]


def demo_encoded(reranker: CrossEncoderReranker, pairs: Sequence[tuple[str, str]], settings: Settings) -> list[Encoded]:
    """The demo's pairs as a search encodes them: cut at RERANKER_MAX_LENGTH, the longer side first."""
    return _as_encoded(
        reranker.tokenizer(
            [q for q, _ in pairs], [p for _, p in pairs], truncation=True, max_length=settings.reranker_max_length
        )
    )


def _max_positions(folder: str) -> int:
    config = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    return int(config.get("max_position_embeddings", 512))


def _audit_of(backend: str, audited: Any) -> tuple[Audit, str]:
    if backend == "torch":
        return "reference", ""
    if audited is None or backend not in audited.faithful:
        return "not audited", ""
    if audited.faithful[backend]:
        return "faithful", ""
    return "not faithful", audited.reasons.get(backend, "").split("; ")[0]


def bench(
    models: Sequence[tuple[str, str]],
    *,
    settings: Settings,
    backends: Sequence[str] | None = None,
    lengths: Sequence[int] | None = None,
    max_pairs: int | None = None,
    rounds: int = BENCH_ROUNDS,
    say: Callable[[str], None] = lambda _: None,
) -> BenchReport:
    """The bench of each (name, folder) cross-encoder: see the module's docstring."""
    import torch

    chosen, at = bench_backends(backends), bench_lengths(lengths)
    facts: MachineFacts = machine_facts("cpu")
    machine = BenchMachine(
        cpu=facts.cpu, arch=facts.arch, flags=facts.flags, int8_config=facts.int8_config,
        cores=torch.get_num_threads(), peak=measure_peak(), libraries=library_versions(),
        python=platform.python_version(),
    )  # fmt: skip
    report = BenchReport(
        measured_at=datetime.now(UTC),
        workbench=_version("rerank-workbench"),
        machine=machine,
        lengths=at,
        rounds=rounds,
    )
    for name, folder in models:
        cells, skipped = bench_model(
            name, folder, chosen, at, settings=settings, max_pairs=max_pairs, rounds=rounds, say=say
        )
        report.cells += cells
        report.skipped += skipped
    return report


def bench_table(report: BenchReport) -> list[str]:
    """The report as Markdown table lines a user can paste: machine first, then a row per cell."""
    m = report.machine
    libraries = ", ".join(f"{k} {v}" for k, v in m.libraries.items() if v != "not installed")
    bf16 = f", bf16 {m.peak.bf16_gflops_per_core:.0f} GFLOP/s" if m.peak.bf16_gflops_per_core else ""
    lines = [
        f"{m.cpu} ({m.arch}); {m.cores} cores used; flags {', '.join(m.flags) or 'none of note'}",
        f"peak per core: fp32 {m.peak.fp32_gflops_per_core:.0f} GFLOP/s, int8 {m.peak.int8_gops_per_core:.0f} GOP/s"
        f"{bf16}",
        f"{libraries}; Python {m.python}; workbench {report.workbench}; {report.measured_at:%Y-%m-%d %H:%M} UTC",
        "",
        "| model | backend | tokens | pairs/s per core | pairs/s per chip | share of ceiling | x torch | audit |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for c in report.cells:
        audit = f"{c.audit} ({c.audit_reason})" if c.audit_reason else c.audit
        ratio = f"{c.x_torch:.2f}" if c.x_torch is not None else "—"
        lines.append(
            f"| {c.model} | {c.backend} | {_tokens_words(c)} | {c.pairs_per_second_per_core:.1f} | "
            f"{c.pairs_per_second:.1f} | {c.share_of_ceiling:.0%} | {ratio} | {audit} |"
        )
    lines += [f"not measured: {why}" for why in report.skipped]
    return lines


def _tokens_words(cell: BenchCell) -> str:
    if cell.pairs_from == "fixed length":
        return f"{cell.tokens:.0f}"
    return f"{cell.tokens:.0f} (the demo's pairs, mean)"


def schema_text() -> str:
    """The JSON Schema of `doctor --bench --json`, as docs/doctor-bench.schema.json holds it."""
    return json.dumps(BenchReport.model_json_schema(), indent=2, sort_keys=True) + "\n"

"""The parity audit: one reranker model on every backend this machine has (and any served copy of it), each held
to fp32 torch on the same candidates of a whole query set.

Per backend: per query, Kendall's τ between its scores and the reference's over the k candidates, whether the top
n *set* changed, and the largest score drift; with judgments, the change in nDCG@10 against the reference with its
paired bootstrap 95 % interval; and the batch-mates check: a sample of pairs scored alone, inside their query's
batch, and inside a batch mixed with other queries' pairs (what the micro-batcher and concurrent clients do), the
largest difference between the three. A backend is *faithful* when the interval lies within ±tolerance, its top n
set changes on at most the stated share of queries, and no score moves with its batch-mates (`vocab`). The verdicts
for local backends are kept per model and machine, and `auto` takes the fastest faithful one
(`rerankers.local.machine.decide`). Speed comes with it: pairs/s per core at the query set's real lengths against the
machine's measured peak (`rerankers.local.ceiling`).
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

import numpy as np
from pydantic import BaseModel, Field
from scipy.stats import kendalltau

from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation.io import Dataset
from workbench.evaluation.metrics import evaluate
from workbench.evaluation.significance import Difference, difference
from workbench.models import resolve_model
from workbench.redact import redact_url
from workbench.rerankers.base import Reranker
from workbench.rerankers.factory import on_backend, runs_here, split_backend
from workbench.rerankers.families import model_family
from workbench.rerankers.local.backends import ExportCache, fingerprint
from workbench.rerankers.local.ceiling import CeilingRow, Peak, against_ceiling, measure_peak, model_shape
from workbench.rerankers.local.machine import (
    MIN_SPEEDUP,
    BackendFigures,
    FaithfulBackends,
    audited_rule,
    busy_words,
    installed_backends,
    keep_faithful,
    kept_choice,
    kept_faithful,
    load_per_core,
    machine_facts,
)
from workbench.rerankers.served.verdicts import ServedVerdict, served_file, served_key
from workbench.types import SearchPlan
from workbench.vocab import (
    BACKENDS,
    BATCH_SCORE_TOLERANCE,
    NDCG_10,
    PARITY_MAX_SET_CHANGES,
    PARITY_REFERENCE,
    PARITY_TOLERANCE,
)

BATCH_SAMPLE_QUERIES = 4  # the batch-mates check: this many queries' first pairs, mixed into one batch
BATCH_SAMPLE_PAIRS = 8


class QueryCandidates(NamedTuple):
    """One query's first-stage candidates, as every backend scores them."""

    query_id: str
    text: str
    ids: list[str]  # the candidates' chunk ids
    documents: list[str]  # the documents they belong to (what judgments grade)
    texts: list[str]


class QueryParity(BaseModel):
    """One query on one backend against the reference."""

    query_id: str
    kendall_tau: float | None  # None when either side gave every candidate the same score
    top_n_changed: bool
    max_drift: float


class BackendParity(BaseModel):
    """One backend (or served copy) against the reference, over the whole query set."""

    backend: str
    runs_on: str  # what the reranker says runs it ('onnx-int8:cpu', 'service http://host:port')
    queries: int
    tau_median: float | None
    tau_min: float | None
    top_n_changed: int
    max_drift: float
    ndcg_change: Difference | None = None  # against the reference, with its paired interval; None without judgments
    batch_drift: float  # the largest move of a pair's score with its batch-mates
    ceiling: CeilingRow | None = None  # speed against this machine's peak (a local backend's)
    faithful: bool
    reasons: list[str] = Field(default_factory=list)  # why it is not faithful (empty when it is)
    per_query: list[QueryParity] = Field(default_factory=list)


class ParityAudit(BaseModel):
    """The audit of one model: every backend against fp32 torch on one query set's candidates."""

    model: str
    collection: str
    dataset: str
    retrieval: str
    k: int
    top_n: int
    queries: int
    judged: bool
    tolerance: float
    max_set_changes: float
    batch_tolerance: float
    reference: str
    peak: Peak | None
    rows: list[BackendParity]
    auto_runs: str | None = None  # when the verdicts were kept: the backend `auto` runs from now on, on this machine
    measured_at: datetime
    load_per_core: float | None = None  # the 1-minute load per core when the audit began

    def table(self) -> list[dict[str, object]]:
        """One flat row per backend, for a table or a CSV."""
        return [
            {
                "backend": r.backend, "runs on": r.runs_on, "faithful": r.faithful,
                "τ median": r.tau_median, "τ lowest": r.tau_min,
                f"top {self.top_n} set changed (queries)": r.top_n_changed,
                "largest score drift": r.max_drift,
                "nDCG@10 change": None if r.ndcg_change is None else r.ndcg_change.delta,
                "95 % interval": None if r.ndcg_change is None
                else f"[{r.ndcg_change.ci_low:+.4f}, {r.ndcg_change.ci_high:+.4f}]",
                "batch-mates drift": r.batch_drift,
                "pairs/s per core": None if r.ceiling is None else r.ceiling.pairs_per_second_per_core,
                "share of the ceiling": None if r.ceiling is None else r.ceiling.share_of_ceiling,
                "why not faithful": "; ".join(r.reasons),
            }
            for r in self.rows
        ]  # fmt: skip

    def lines(self) -> list[str]:
        """The audit in words, a line per backend, then the rule."""
        said = [
            f"Parity audit of {self.model} on '{self.collection}' ({self.dataset}, {self.queries} queries, "
            f"{self.retrieval} k = {self.k} → top {self.top_n}), every backend against fp32 {self.reference}:"
        ]
        for row in self.rows:
            tau = "—" if row.tau_median is None else f"{row.tau_median:.3f} (lowest {row.tau_min:.3f})"
            ndcg = (
                "no judgments"
                if row.ndcg_change is None
                else f"{row.ndcg_change.delta:+.4f} [{row.ndcg_change.ci_low:+.4f}, {row.ndcg_change.ci_high:+.4f}]"
            )
            speed = f"; {row.ceiling.words()}" if row.ceiling else ""
            verdict = "faithful" if row.faithful else "NOT faithful: " + "; ".join(row.reasons)
            said.append(
                f"  {row.backend} ({row.runs_on}): τ median {tau}, top {self.top_n} set changed on "
                f"{row.top_n_changed} of {row.queries} queries, largest score drift {row.max_drift:.2g}, "
                f"nDCG@10 change {ndcg}, batch-mates drift {row.batch_drift:.2g}{speed} → {verdict}"
            )
        said.append(
            f"Faithful: nDCG@10 interval within ±{self.tolerance}, top {self.top_n} set changed on at most "
            f"{self.max_set_changes:.0%} of queries, no score moved more than {self.batch_tolerance:g} with its "
            "batch-mates."
        )
        if busy := busy_words(self.load_per_core):
            said.append(f"Speeds {busy}.")
        if self.auto_runs:
            said.append(
                f"Kept for this machine: auto now runs {self.auto_runs} (the fastest faithful backend at least "
                f"{MIN_SPEEDUP}x faster than {self.reference} on these pairs, else {self.reference})."
            )
        return said


def compare_query(
    query_id: str, ids: Sequence[str], reference: Sequence[float], other: Sequence[float], top_n: int
) -> QueryParity:
    """One query's candidates scored by the reference and another backend: τ, whether the top n set changed (ties
    broken by id, as the engine breaks them), the largest score drift."""
    tau = None
    if len(ids) > 1 and len(set(reference)) > 1 and len(set(other)) > 1:
        tau = float(kendalltau(reference, other).statistic)

    def top(scores: Sequence[float]) -> set[str]:
        return {i for _, i in sorted(zip((-s for s in scores), ids, strict=True))[:top_n]}

    drift = max((abs(a - b) for a, b in zip(reference, other, strict=True)), default=0.0)
    return QueryParity(
        query_id=query_id, kendall_tau=tau, top_n_changed=top(reference) != top(other), max_drift=float(drift)
    )


def faithfulness(
    change: Difference | None,
    changed: int,
    queries: int,
    batch_drift: float,
    *,
    tolerance: float = PARITY_TOLERANCE,
    max_set_changes: float = PARITY_MAX_SET_CHANGES,
    batch_tolerance: float = BATCH_SCORE_TOLERANCE,
) -> list[str]:
    """Why a backend is not faithful, one reason each (an empty list: it is)."""
    reasons = []
    if change is not None and not (-tolerance <= change.ci_low and change.ci_high <= tolerance):
        reasons.append(
            f"the nDCG@10 change's interval [{change.ci_low:+.4f}, {change.ci_high:+.4f}] leaves ±{tolerance}"
        )
    if queries and changed / queries > max_set_changes:
        reasons.append(f"the top n set changed on {changed} of {queries} queries (over {max_set_changes:.0%})")
    if batch_drift > batch_tolerance:
        reasons.append(f"a score moved by {batch_drift:.2g} with its batch-mates (over {batch_tolerance:g})")
    return reasons


def _candidates(engine: Engine, dataset: Dataset, plan: SearchPlan, max_queries: int | None) -> list[QueryCandidates]:
    """Every query's candidates from the plan's first stage."""
    items = list(dataset.queries.items())[:max_queries] if max_queries else list(dataset.queries.items())
    found = []
    for qid, text in items:
        result = engine.search(text, plan.with_(reranker=None), max_query_chars=None)
        chunks = result.candidates
        documents = [str(c.metadata.get("document_id", c.id)) for c in chunks]
        found.append(QueryCandidates(qid, text, [c.id for c in chunks], documents, [c.text for c in chunks]))
    return found


def _batch_drift(reranker: Reranker, queries: list[QueryCandidates]) -> float:
    """The largest difference for a sample of pairs between scoring each alone, inside its query's batch, and
    inside one batch mixed with other queries' pairs in shuffled order."""
    sampled = queries[:BATCH_SAMPLE_QUERIES]
    sample = [(q.text, doc) for q in sampled for doc in q.texts[:BATCH_SAMPLE_PAIRS]]
    if not sample:
        return 0.0
    alone = [reranker.score_pairs([pair])[0] for pair in sample]
    own = []
    for q in sampled:
        own += reranker.score_pairs([(q.text, doc) for doc in q.texts])[:BATCH_SAMPLE_PAIRS]
    order = list(range(len(sample)))
    random.Random(0).shuffle(order)
    mixed_in_order = reranker.score_pairs([sample[i] for i in order])
    mixed = [0.0] * len(sample)
    for place, i in enumerate(order):
        mixed[i] = mixed_in_order[place]
    return float(max(max(abs(a - b), abs(a - c)) for a, b, c in zip(alone, own, mixed, strict=True)))


def audit_parity(
    engine: Engine,
    dataset: Dataset,
    plan: SearchPlan,
    *,
    served: Sequence[str] = (),
    backends: Sequence[str] | None = None,
    max_queries: int | None = None,
    tolerance: float = PARITY_TOLERANCE,
    keep: bool = True,
    progress: Callable[[str], None] | None = None,
) -> ParityAudit:
    """The plan's reranker (a local cross-encoder) on each backend (all installed by default) and each `served`
    reranker id (a server of the same model: Infinity, TEI, vLLM, `workbench serve`), against fp32 torch on the
    plan's first-stage candidates for the dataset's queries. A causal-LM or ColBERT reranker runs on torch only, so
    its audit holds only its served copies to it (a copy served with another template or instruction disagrees).
    With `keep`, the local verdicts are kept for `auto`."""
    say = progress or (lambda _: None)
    model_id = engine.reranker_id(plan.reranker)
    if model_id is None or not runs_here(model_id):
        raise InputError(
            "The parity audit runs a local reranker on each backend: name one (a model folder or hub id), not "
            f"{redact_url(str(model_id)) if model_id else 'no reranker'}."
        )
    base, load = split_backend(model_id)[0], load_per_core()
    folder = resolve_model(base, engine.settings, setting="RERANKER_MODEL")
    cross_encoder = model_family(folder).name == "cross-encoder"
    # a causal-LM or ColBERT reranker runs on torch only: its audit holds its served copies to it
    backends = list(backends or installed_backends()) if cross_encoder else []
    if PARITY_REFERENCE in backends:
        backends.remove(PARITY_REFERENCE)
    queries = _candidates(engine, dataset, plan, max_queries)
    if not queries:
        raise InputError(f"{dataset.name} has no queries to audit on.")
    judged = any(any(g > 0 for g in dataset.qrels.get(q.query_id, {}).values()) for q in queries)
    peak = measure_peak()
    shape, cores = (model_shape(folder) if cross_encoder else None), _threads()
    say(f"Scoring {sum(len(q.texts) for q in queries):,} pairs on fp32 {PARITY_REFERENCE} (the reference)…")
    reference = _scored(engine, on_backend(base, PARITY_REFERENCE), queries, judged, dataset)
    rows = []
    for name in [PARITY_REFERENCE, *backends, *served]:
        reranker_id = name if name in served else on_backend(base, name)
        if name == PARITY_REFERENCE:
            run = reference
        else:
            say(f"Scoring the same pairs on {redact_url(name)}…")
            run = _scored(engine, reranker_id, queries, judged, dataset)
        reranker = engine.reranker(reranker_id)
        assert reranker is not None
        per_query = [
            compare_query(q.query_id, q.ids, reference.scores[q.query_id], run.scores[q.query_id], plan.top_n)
            for q in queries
        ]
        change = difference(reference.ndcg, run.ndcg) if judged else None
        drift = _batch_drift(reranker, queries)
        changed = sum(q.top_n_changed for q in per_query)
        taus = [q.kendall_tau for q in per_query if q.kendall_tau is not None]
        ceiling = None
        if name not in served and shape is not None:
            tokens = _mean_tokens(reranker, queries)
            ceiling = against_ceiling(name, run.pairs_per_second, cores, shape, tokens, peak)
        reasons = faithfulness(change, changed, len(queries), drift, tolerance=tolerance)
        rows.append(
            BackendParity(
                backend=redact_url(name), runs_on=redact_url(reranker.backend), queries=len(queries),
                tau_median=float(np.median(taus)) if taus else None, tau_min=min(taus) if taus else None,
                top_n_changed=changed, max_drift=max(q.max_drift for q in per_query), ndcg_change=change,
                batch_drift=drift, ceiling=ceiling, faithful=not reasons, reasons=reasons, per_query=per_query,
            )
        )  # fmt: skip
    audit = ParityAudit(
        model=Path(folder).name, collection=plan.collection or "", dataset=dataset.name, retrieval=plan.retrieval,
        k=plan.k, top_n=plan.top_n, queries=len(queries), judged=judged, tolerance=tolerance,
        max_set_changes=PARITY_MAX_SET_CHANGES, batch_tolerance=BATCH_SCORE_TOLERANCE, reference=PARITY_REFERENCE,
        peak=peak, rows=rows, measured_at=datetime.now(UTC), load_per_core=load,
    )  # fmt: skip
    if keep and judged and cross_encoder:
        audit.auto_runs = _keep_for_auto(engine, folder, audit)
    if keep and served:
        _keep_served(engine.settings.exports_dir, audit, served)
    return audit


def _keep_served(exports_dir: str | Path, audit: ParityAudit, served: Sequence[str]) -> None:
    """Each served copy's verdict, kept beside the exports: an evaluation of that copy reads it (`served_verdict`)."""
    path = served_file(exports_dir)
    try:
        kept = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        kept = {}
    rows = {row.backend: row for row in audit.rows}
    for reranker_id in served:
        row = rows.get(redact_url(reranker_id))
        if row is not None:
            kept[served_key(reranker_id)] = ServedVerdict(
                served=row.backend, model=audit.model, faithful=row.faithful, reasons=row.reasons,
                measured_at=audit.measured_at,
            ).model_dump(mode="json")  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(kept, indent=1), encoding="utf-8")


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def _mean_tokens(reranker: Reranker, queries: list[QueryCandidates]) -> float:
    """The pairs' mean length in tokens as the local reranker feeds them to its model (truncated, unpadded)."""
    encode = reranker.encode  # type: ignore[attr-defined]  # a local cross-encoder's
    lengths = [len(ids) for q in queries for ids, _ in encode(q.text, q.texts)]
    return sum(lengths) / len(lengths) if lengths else 0.0


class _Scored(NamedTuple):
    """One reranker over the audit's candidates."""

    scores: dict[str, list[float]]  # per query, in candidate order
    ndcg: list[float]  # per judged query (sorted by id): nDCG@10 of the reranked documents; empty without judgments
    pairs_per_second: float


def _scored(
    engine: Engine, reranker_id: str, queries: list[QueryCandidates], judged: bool, dataset: Dataset
) -> _Scored:
    """Every query's candidates scored afresh by one reranker (one call per query, as a search scores them)."""
    reranker = engine.reranker(reranker_id)
    assert reranker is not None
    first = queries[0]
    reranker.score(first.text, first.texts[:2], use_cache=False)  # load and warm: first calls are not speed
    scores: dict[str, list[float]] = {}
    started = time.perf_counter()
    for q in queries:
        scores[q.query_id] = reranker.score(q.text, q.texts, use_cache=False)[0]
    seconds = time.perf_counter() - started
    pairs = sum(len(q.texts) for q in queries)
    ndcg: list[float] = []
    if judged:
        run: dict[str, dict[str, float]] = {}
        for q in queries:
            folded: dict[str, float] = {}
            for doc, score in zip(q.documents, scores[q.query_id], strict=True):
                folded[doc] = max(folded.get(doc, -math.inf), score)
            run[q.query_id] = folded
        qrels = {q.query_id: dataset.qrels[q.query_id] for q in queries if q.query_id in dataset.qrels}
        per_query = evaluate(qrels, run, max(len(q.texts) for q in queries))[1]
        ndcg = [per_query[qid][NDCG_10] for qid in sorted(per_query)]
    return _Scored(scores, ndcg, pairs / seconds if seconds > 0 else 0.0)


def _keep_for_auto(engine: Engine, folder: str | Path, audit: ParityAudit) -> str:
    """The local backends' verdicts, kept for this model on this machine: `auto` decides by them from now on.
    Returns the backend `auto` now runs (torch while the backends' timings were never measured here)."""
    local = [r for r in audit.rows if r.ceiling is not None]
    torch_rate = next((r.ceiling.pairs_per_second for r in local if r.backend == PARITY_REFERENCE and r.ceiling), 0.0)
    root, model_print, facts = (
        ExportCache(engine.settings.exports_dir).choices_root,
        fingerprint(str(folder)),
        machine_facts("cpu"),
    )
    keep_faithful(
        root,
        FaithfulBackends(
            model=audit.model, model_print=model_print, machine=facts,
            faithful={r.backend: r.faithful for r in local}, reasons={r.backend: "; ".join(r.reasons) for r in local},
            queries=audit.queries, measured_at=audit.measured_at, load_per_core=audit.load_per_core,
            speedups={r.backend: r.ceiling.pairs_per_second / torch_rate for r in local if r.ceiling and torch_rate},
        ),
    )  # fmt: skip
    kept = kept_choice(root, model_print, facts)
    if kept is not None:
        return kept.chosen
    # no calibration kept yet: the rule on the audit's own timings, which are what it decides by once one is (the
    # audit's speed-ups outrank the calibration's), so `doctor` afterwards names the same backend
    timed = [
        BackendFigures(
            backend=r.backend,
            ms_per_50_pairs=50_000 / r.ceiling.pairs_per_second,
            speedup=r.ceiling.pairs_per_second / torch_rate,
        )
        for r in local
        if r.ceiling and r.ceiling.pairs_per_second > 0 and torch_rate and r.backend in BACKENDS
    ]
    return audited_rule(timed, kept_faithful(root, model_print, facts))

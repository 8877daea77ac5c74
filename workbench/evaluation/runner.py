"""Run a judged query set through the engine and compare the rankings before and after reranking."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from workbench.engine import DEFAULT, Engine
from workbench.evaluation.io import Dataset, Run
from workbench.evaluation.metrics import evaluate, unjudged_at
from workbench.evaluation.significance import paired_t_test, randomization_test, wins_ties_losses
from workbench.types import Candidate

PRIMARY = "ndcg@10"


class QueryOutcome(BaseModel):
    """One query's metrics before and after reranking."""

    query_id: str
    query: str
    before: dict[str, float]
    after: dict[str, float]

    @property
    def delta(self) -> float:
        return self.after[PRIMARY] - self.before[PRIMARY]


class DepthPoint(BaseModel):
    """Quality and cost at one depth k: metrics of the top n after reranking k candidates."""

    k: int
    before: dict[str, float]
    after: dict[str, float]
    rerank_ms_p50: float | None = None


class EvaluationReport(BaseModel):
    """Everything one evaluation measured. `before_run` and `after_run` are the TREC runs (not in JSON)."""

    dataset: str
    collection: str
    embedding_model: str
    reranker_model: str | None
    k: int
    top_n: int
    queries: int
    before: dict[str, float]
    after: dict[str, float]
    metric: str = PRIMARY
    p_value: float
    p_value_ttest: float
    wins: int
    ties: int
    losses: int
    unjudged_before: int
    unjudged_after: int
    judged_looked_at: int
    seconds: float
    score_cache_hits: int
    per_query: list[QueryOutcome]
    depth: list[DepthPoint] = Field(default_factory=list)
    before_run: Run = Field(default_factory=dict, exclude=True)
    after_run: Run = Field(default_factory=dict, exclude=True)
    candidates: dict[str, list[tuple[str, float, float | None]]] = Field(default_factory=dict, exclude=True)

    def summary(self) -> dict[str, Any]:
        """The figures `workbench eval --json` prints."""
        return {
            "dataset": self.dataset,
            "collection": self.collection,
            "k": self.k,
            "top_n": self.top_n,
            "before": self.before,
            "after": self.after,
            "queries": self.queries,
            "p_value": self.p_value,
            "p_value_ttest": self.p_value_ttest,
            "metric": self.metric,
            "wins": self.wins,
            "ties": self.ties,
            "losses": self.losses,
            f"unjudged@{self.top_n}": {
                "before": self.unjudged_before,
                "after": self.unjudged_after,
                "of": self.judged_looked_at,
            },
            "embedding_model": self.embedding_model,
            "reranker_model": self.reranker_model,
            "seconds": round(self.seconds, 1),
            "score_cache_hits": self.score_cache_hits,
        }

    def ranked_outcomes(self) -> list[QueryOutcome]:
        """Queries sorted from most hurt to most helped by reranking."""
        return sorted(self.per_query, key=lambda o: o.delta)


def _doc_runs(candidates: list[Candidate]) -> tuple[dict[str, float], dict[str, float]]:
    """Chunk candidates to document runs: each document takes its best chunk's score."""
    before: dict[str, float] = {}
    after: dict[str, float] = {}
    for c in candidates:
        doc = str(c.metadata.get("document_id", c.id))
        before[doc] = max(before.get(doc, float("-inf")), c.vector_score)
        score = c.rerank_score if c.rerank_score is not None else c.vector_score
        after[doc] = max(after.get(doc, float("-inf")), score)
    return before, after


def run_evaluation(
    engine: Engine,
    dataset: Dataset,
    collection: str,
    *,
    k: int = 100,
    top_n: int = 10,
    reranker: Any = DEFAULT,
    progress: Callable[[int, int], None] | None = None,
    max_queries: int | None = None,
) -> EvaluationReport:
    """Every judged query through the engine at depth k; metrics of the vector order (before) and of the
    reranked order of the same k candidates (after), per query and averaged, with a paired test on nDCG@10."""
    started = time.perf_counter()
    items = list(dataset.queries.items())[:max_queries] if max_queries else list(dataset.queries.items())
    before_run: Run = {}
    after_run: Run = {}
    candidates: dict[str, list[tuple[str, float, float | None]]] = {}
    cache_hits = 0
    embedding_model = reranker_model = None
    for done, (qid, text) in enumerate(items, start=1):
        result = engine.search(text[:512], k, min(top_n, k), collection=collection, reranker=reranker)
        before_run[qid], after_run[qid] = _doc_runs(result.candidates)
        candidates[qid] = [
            (str(c.metadata.get("document_id", c.id)), c.vector_score, c.rerank_score) for c in result.candidates
        ]
        cache_hits += result.cache.score_hits + (len(result.candidates) if result.cache.result_cached else 0)
        embedding_model, reranker_model = result.embedding_model, result.reranker_model
        if progress:
            progress(done, len(items))
    qrels = {qid: dataset.qrels[qid] for qid, _ in items}
    before, per_before = evaluate(qrels, before_run, k)
    after, per_after = evaluate(qrels, after_run, k)
    ids = list(per_before)
    a = [per_before[q][PRIMARY] for q in ids]
    b = [per_after[q][PRIMARY] for q in ids]
    wins, ties, losses = wins_ties_losses(a, b)
    unjudged_before, looked = unjudged_at(qrels, before_run, top_n)
    unjudged_after, _ = unjudged_at(qrels, after_run, top_n)
    return EvaluationReport(
        dataset=dataset.name,
        collection=collection,
        embedding_model=embedding_model or "",
        reranker_model=reranker_model,
        k=k,
        top_n=top_n,
        queries=len(ids),
        before=before,
        after=after,
        p_value=randomization_test(a, b),
        p_value_ttest=paired_t_test(a, b),
        wins=wins,
        ties=ties,
        losses=losses,
        unjudged_before=unjudged_before,
        unjudged_after=unjudged_after,
        judged_looked_at=looked,
        seconds=time.perf_counter() - started,
        score_cache_hits=cache_hits,
        per_query=[
            QueryOutcome(query_id=q, query=dataset.queries[q], before=per_before[q], after=per_after[q]) for q in ids
        ],
        before_run=before_run,
        after_run=after_run,
        candidates=candidates,
    )


def depth_curve(
    engine: Engine,
    report: EvaluationReport,
    dataset: Dataset,
    ks: Sequence[int] = (10, 20, 50, 100),
    *,
    timing_queries: int = 10,
    reranker: Any = DEFAULT,
) -> list[DepthPoint]:
    """Metrics and rerank time as k grows. Vector search is deterministic, so the candidates at k are the
    first k of the report's candidates and their rerank scores are already known: quality needs no model
    call. Rerank time is measured afresh (caches bypassed) on `timing_queries` queries per k."""
    ks = sorted({k for k in ks if 1 <= k <= report.k})
    qrels = {qid: dataset.qrels[qid] for qid in report.candidates}
    points = []
    sample = list(report.candidates)[:timing_queries]
    for k in ks:
        before: Run = {}
        after: Run = {}
        for qid, rows in report.candidates.items():
            before[qid], after[qid] = {}, {}
            for doc, vector, rerank in rows[:k]:
                before[qid][doc] = max(before[qid].get(doc, float("-inf")), vector)
                after[qid][doc] = max(after[qid].get(doc, float("-inf")), rerank if rerank is not None else vector)
        times = [
            engine.search(
                dataset.queries[qid][:512],
                k,
                min(report.top_n, k),
                collection=report.collection,
                reranker=reranker,
                use_cache=False,
            ).timings.rerank_ms
            for qid in sample
        ]
        points.append(
            DepthPoint(
                k=k,
                before=evaluate(qrels, before, k)[0],
                after=evaluate(qrels, after, k)[0],
                rerank_ms_p50=float(np.median(times)) if times else None,
            )
        )
    return points


class RunComparison(BaseModel):
    """Two runs on the same judgments: both metric sets and a paired test on nDCG@10."""

    name_a: str
    name_b: str
    a: dict[str, float]
    b: dict[str, float]
    queries: int
    p_value: float
    wins: int
    ties: int
    losses: int


def compare_runs(
    dataset: Dataset, run_a: Run, run_b: Run, k: int, names: tuple[str, str] = ("a", "b")
) -> RunComparison:
    """Compare any two runs (for example an outside TREC run against the reranked one) on the dataset's qrels,
    over the judged queries either run answers."""
    qids = [q for q in dataset.qrels if q in run_a or q in run_b]
    qrels = {q: dataset.qrels[q] for q in qids}
    a, per_a = evaluate(qrels, run_a, k)
    b, per_b = evaluate(qrels, run_b, k)
    ids = list(per_a)
    wins, ties, losses = wins_ties_losses([per_a[q][PRIMARY] for q in ids], [per_b[q][PRIMARY] for q in ids])
    return RunComparison(
        name_a=names[0],
        name_b=names[1],
        a=a,
        b=b,
        queries=len(ids),
        p_value=randomization_test([per_a[q][PRIMARY] for q in ids], [per_b[q][PRIMARY] for q in ids]),
        wins=wins,
        ties=ties,
        losses=losses,
    )


def markdown_report(report: EvaluationReport, worst: int = 5) -> str:
    """The evaluation as a Markdown document: settings, metric table, significance, extremes, depth curve."""
    names = list(report.before)
    lines = [
        f"# Evaluation: {report.dataset} on '{report.collection}'",
        "",
        f"- embedder `{report.embedding_model}`, reranker `{report.reranker_model or 'none'}`",
        f"- {report.queries} judged queries, k = {report.k} candidates, top n = {report.top_n}",
        f"- {report.seconds:.1f} s; {report.score_cache_hits} scores from the cache",
        "",
        "| metric | before rerank | after rerank | change |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| {n} | {report.before[n]:.4f} | {report.after[n]:.4f} | {report.after[n] - report.before[n]:+.4f} |"
        for n in names
    ]
    lines += [
        "",
        f"{report.metric}: {report.wins} queries helped, {report.ties} tied, {report.losses} hurt; paired "
        f"randomization test p = {report.p_value:.4f} (paired t-test p = {report.p_value_ttest:.4f}).",
        f"Unjudged in the top {report.top_n}: {report.unjudged_before} before, {report.unjudged_after} after, of "
        f"{report.judged_looked_at} documents.",
        "",
        "## Most hurt",
        "",
    ]
    ranked = report.ranked_outcomes()
    hurt = [o for o in ranked if o.delta < 0][:worst]
    helped = [o for o in reversed(ranked) if o.delta > 0][:worst]
    for heading, rows in ((None, hurt), ("## Most helped", helped)):
        if heading:
            lines += ["", heading, ""]
        lines += [f"- `{o.query_id}` {o.query} — {o.before[PRIMARY]:.3f} → {o.after[PRIMARY]:.3f}" for o in rows]
        lines += [] if rows else ["None."]
    if report.depth:
        lines += [
            "",
            "## Depth",
            "",
            f"| k | {PRIMARY} before | {PRIMARY} after | rerank ms (p50) |",
            "|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {p.k} | {p.before[PRIMARY]:.4f} | {p.after[PRIMARY]:.4f} | "
            f"{'' if p.rerank_ms_p50 is None else f'{p.rerank_ms_p50:.0f}'} |"
            for p in report.depth
        ]
    return "\n".join(lines) + "\n"

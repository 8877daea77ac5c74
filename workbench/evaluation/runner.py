"""Run a judged query set through the engine and compare the rankings before and after reranking."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation.io import Dataset, Run
from workbench.evaluation.metrics import evaluate, unjudged_at
from workbench.evaluation.parallel import executed_elsewhere, search_all
from workbench.evaluation.report import (
    PRIMARY,
    DocumentLabel,
    EvaluationReport,
    GroupFigures,
    QueryOutcome,
    RunComparison,
)
from workbench.evaluation.runs import ScoredChunk, fold_documents, scored_chunks
from workbench.evaluation.sanity import run_checks
from workbench.evaluation.sequential import SequentialPlan, run_until_settled, seeded_order
from workbench.evaluation.significance import paired_comparison
from workbench.evaluation.verdict import measured_verdict, with_judge_limits
from workbench.fusion import first_stage_name
from workbench.redact import plain_text
from workbench.rerankers.executors import score_executor as executor_of
from workbench.types import Chunk, SearchPlan, SearchResult, StageTimings
from workbench.vocab import ENOUGH_JUDGED, JUDGED_10, NDCG_10_JUDGED, SNIPPET_CHARS


def run_evaluation(
    engine: Engine,
    dataset: Dataset,
    plan: SearchPlan,
    *,
    progress: Callable[[int, int], None] | None = None,
    max_queries: int | None = None,
    use_cache: bool = True,
    sequential: SequentialPlan | None = None,
    workers: int | None = None,
) -> EvaluationReport:
    """Every judged query answered as `plan` says; metrics of the first-stage order (before) and of the reranked
    order of the same k candidates (after), per query and averaged, with a paired test on nDCG@10. With
    `sequential` (and a reranker), the queries run in a seeded order until the verdict is settled
    (`evaluation/sequential.py`). `workers`: searches at once (default: the reranker's, `concurrency_for`)."""
    started = time.perf_counter()
    items = list(dataset.queries.items())[:max_queries] if max_queries else list(dataset.queries.items())
    collection = plan.collection or engine.settings.collection
    if sequential is not None and plan.reranker:
        report = _until_settled(engine, dataset, plan.with_(collection=collection), items, sequential, progress,
                                use_cache, started, workers)  # fmt: skip
    else:
        results = search_all(engine, plan, [text for _, text in items], progress, use_cache, workers)
        report = report_of(dataset, plan.with_(collection=collection), items, results, time.perf_counter() - started)
    executor = executor_of(engine.settings) if use_cache and executed_elsewhere(engine, plan) else None
    if executor is not None:
        report.scored_on = executor.describe()
    return report


def _until_settled(
    engine: Engine,
    dataset: Dataset,
    plan: SearchPlan,
    items: list[tuple[str, str]],
    sequential: SequentialPlan,
    progress: Callable[[int, int], None] | None,
    use_cache: bool,
    started: float,
    workers: int | None = None,
) -> EvaluationReport:
    """The queries in the seeded order, a block at a time, until the stopping rule settles the verdict: the report
    of the queries it took, with `sequential` saying how many decided it and by which rule."""
    ordered = seeded_order(items, sequential.seed)
    results: list[SearchResult] = []
    deltas: list[float] = []  # per query, in order: a query's nDCG@10 needs no other query, so each block is new work
    condensed: list[float] = []  # the judged-only nDCG@10 changes, what a verdict on sparse judgments rests on
    judged: list[tuple[float, float]] = []  # each query's judged@10 before and after
    scored: dict[str, list[ScoredChunk]] = {}  # every block's rerank scores, for the run checks at each look

    def deltas_of_first(used: int) -> list[float]:
        def told(done: int, _: int) -> None:
            if progress is not None:
                progress(len(results) + done, len(ordered))

        wanted = ordered[len(results) : used]
        found = search_all(engine, plan, [text for _, text in wanted], told, use_cache, workers)
        results.extend(found)
        answers = _answers(wanted, found)
        scored.update(answers.candidates)
        qrels = {qid: dataset.qrels[qid] for qid, _ in wanted}
        per_before = evaluate(qrels, answers.before_run, plan.k)[1]
        per_after = evaluate(qrels, answers.after_run, plan.k)[1]
        deltas.extend(per_after[q][PRIMARY] - per_before[q][PRIMARY] for q in per_before)
        condensed.extend(per_after[q][NDCG_10_JUDGED] - per_before[q][NDCG_10_JUDGED] for q in per_before)
        judged.extend((per_before[q].get(JUDGED_10, 0.0), per_after[q].get(JUDGED_10, 0.0)) for q in per_before)
        return deltas

    def judged_only_of_first(used: int) -> list[float] | None:
        """As the verdict decides: below ENOUGH_JUDGED judged@10 (either run's mean), the judged-only changes."""
        taken = judged[:used]
        means = [sum(pair[i] for pair in taken) / max(len(taken), 1) for i in (0, 1)]
        return condensed[:used] if min(means) < ENOUGH_JUDGED else None

    def fault() -> str:
        checks = run_checks(scored, plan.top_n, results[-1].score_scale if results else None)
        return "; ".join(check.words for check in checks)

    stop = run_until_settled(deltas_of_first, len(ordered), sequential, fault, judged_only_of_first)
    used = stop.queries_used  # a block may have searched a few queries past the look that settled it
    report = report_of(dataset, plan, ordered[:used], results[:used], time.perf_counter() - started)
    report.sequential = stop
    return report


def report_of(
    dataset: Dataset, plan: SearchPlan, items: list[tuple[str, str]], results: list[SearchResult], seconds: float
) -> EvaluationReport:
    """The evaluation report of `plan`'s results for the judged queries `items` ((id, text), in order): what
    `run_evaluation` returns, made from searches run elsewhere (a tuning run's cells)."""
    collection, k, top_n = plan.collection or "", plan.k, plan.top_n
    answers = _answers(items, results)
    if items and not any(answers.candidates.values()):
        raise InputError(
            f"Nothing was measured: none of the {len(items):,} evaluated queries got a candidate from "
            f"{first_stage_name(plan.retrieval, plan.fusion)} on '{plain_text(collection)[:80]}' (a candidates file "
            "of other queries, or an empty collection?), so there is no verdict and no recommendation."
        )
    before_run, after_run = answers.before_run, answers.after_run
    qrels = {qid: dataset.qrels[qid] for qid, _ in items}
    measured = measured_verdict(qrels, before_run, after_run, k)
    before, after, per_before, per_after = measured.before, measured.after, measured.per_before, measured.per_after
    ids = list(per_before)
    paired = paired_comparison([per_before[q][PRIMARY] for q in ids], [per_after[q][PRIMARY] for q in ids])
    groups = _group_figures(dataset.groups, ids, per_before, per_after)
    judgement = measured.verdict
    checks = run_checks(answers.candidates, top_n, answers.score_scale) if answers.reranker_model else []
    if checks:  # the figures are about how the reranker ran: no "helps" or "hurts" about the model
        judgement = judgement.model_copy(update={"direction": "unknown", "not_as_intended": checks})
    elif answers.reranker_model and dataset.grade_sources is not None:
        judgement = with_judge_limits(
            judgement, dataset.grade_sources, qrels, before_run, after_run, k, answers.reranker_model
        )
        if judgement.corrected is not None:  # the queries to grade next named by their texts too
            judgement = judgement.model_copy(update={"corrected": judgement.corrected.with_texts(dataset.queries)})
    unjudged_before, looked = unjudged_at(qrels, before_run, top_n)
    unjudged_after, _ = unjudged_at(qrels, after_run, top_n)
    report = EvaluationReport(
        dataset=dataset.name,
        collection=collection,
        embedding_model=answers.embedding_model,
        reranker_model=answers.reranker_model,
        reranker_backend=answers.reranker_backend if answers.reranker_model else None,
        score_scale=answers.score_scale,
        retrieval=plan.retrieval,
        fusion=plan.fusion,
        k=k,
        top_n=top_n,
        queries=len(ids),
        before=before,
        after=after,
        **paired.model_dump(),
        unjudged_before=unjudged_before,
        unjudged_after=unjudged_after,
        judged_looked_at=looked,
        seconds=seconds,
        score_cache_hits=answers.cache_hits,
        per_query=[
            QueryOutcome(
                query_id=q,
                query=dataset.queries[q],
                before=per_before[q],
                after=per_after[q],
                **answers.measured.get(q, {}),
            )
            for q in ids
        ],
        groups=groups,
        verdict=judgement if answers.reranker_model else None,
        latency_p50=_percentiles(answers.timings, 50),
        latency_p95=_percentiles(answers.timings, 95),
        qrels=qrels,
        before_run=before_run,
        after_run=after_run,
        candidates=answers.candidates,
    )
    report.documents = {doc: answers.labels[doc] for doc in report.extreme_documents() if doc in answers.labels}
    if plan.skip_gap is not None and answers.reranker_model:
        report.reranked_queries = sum(not r.rerank_skipped for r in results)
    return report


def report_of_runs(
    dataset: Dataset,
    plan: SearchPlan,
    before_run: Run,
    after_run: Run,
    *,
    embedding_model: str,
    warnings: list[str] | None = None,
) -> EvaluationReport:
    """A report of two runs kept elsewhere (a blind preference session's lists: A as `before_run`, B as `after_run`)
    against the dataset's judgments: the same metrics, paired test and verdict as `report_of`, over the queries that
    have grades (none: every figure 0 and no verdict, said in a warning)."""
    qrels = {qid: grades for qid, grades in dataset.qrels.items() if qid in after_run and grades}
    k = max(plan.top_n, 1)
    measured = measured_verdict(qrels, before_run, after_run, k)
    ids = list(measured.per_before)
    before_values = [measured.per_before[q][PRIMARY] for q in ids]
    after_values = [measured.per_after[q][PRIMARY] for q in ids]
    paired = paired_comparison(before_values, after_values) if ids else None
    unjudged_before, looked = unjudged_at(qrels, before_run, plan.top_n)
    unjudged_after, _ = unjudged_at(qrels, after_run, plan.top_n)
    said = list(warnings or [])
    if not ids:
        said.append("None of these queries has a relevant grade: the graded figures are empty, the verdict is not.")
    return EvaluationReport(
        dataset=dataset.name, collection=plan.collection or "", embedding_model=embedding_model,
        reranker_model=plan.reranker if plan.reranks else None, retrieval=plan.retrieval, fusion=plan.fusion,
        k=plan.k, top_n=plan.top_n, queries=len(ids), before=measured.before, after=measured.after,
        **(paired.model_dump() if paired else {"wins": 0, "ties": 0, "losses": 0, "p_value": 1.0}),
        unjudged_before=unjudged_before, unjudged_after=unjudged_after, judged_looked_at=looked, seconds=0.0,
        score_cache_hits=0,
        per_query=[
            QueryOutcome(query_id=q, query=dataset.queries.get(q, ""), before=measured.per_before[q],
                         after=measured.per_after[q])
            for q in ids
        ],
        verdict=measured.verdict if ids else None, warnings=said, qrels=qrels, before_run=before_run,
        after_run=after_run,
    )  # fmt: skip


@dataclass
class _Answers:
    """Every query's search folded into runs: before and after reranking, the scored chunks, cache hits, the timings
    of the searches that ran, and the models that answered."""

    before_run: Run = field(default_factory=dict)
    after_run: Run = field(default_factory=dict)
    candidates: dict[str, list[ScoredChunk]] = field(default_factory=dict)
    labels: dict[str, DocumentLabel] = field(default_factory=dict)  # each document's title and first words
    cache_hits: int = 0
    timings: list[StageTimings] = field(default_factory=list)
    measured: dict[str, dict[str, float]] = field(default_factory=dict)  # per query: first_stage_ms, rerank_ms
    embedding_model: str = ""
    reranker_model: str | None = None
    reranker_backend: str | None = None
    score_scale: str | None = None


def _answers(items: list[tuple[str, str]], results: list[SearchResult]) -> _Answers:
    answers = _Answers()
    for (qid, _), result in zip(items, results, strict=True):
        answers.candidates[qid] = scored_chunks(result.candidates)
        for candidate in result.candidates:
            doc = str(candidate.metadata.get("document_id", candidate.id))
            if doc not in answers.labels:
                answers.labels[doc] = document_label(candidate)
        answers.before_run[qid], answers.after_run[qid] = fold_documents(answers.candidates[qid])
        answers.cache_hits += result.cache.score_hits + (len(result.candidates) if result.cache.result_cached else 0)
        if not result.cache.result_cached:
            answers.timings.append(result.timings)
            spent = result.timings
            answers.measured[qid] = {"first_stage_ms": spent.embed_ms + spent.search_ms, "rerank_ms": spent.rerank_ms}
        answers.embedding_model = result.embedding_model or ""
        answers.reranker_model, answers.score_scale = result.reranker_model, result.score_scale
        answers.reranker_backend = result.reranker_backend or answers.reranker_backend
    return answers


def document_label(chunk: Chunk) -> DocumentLabel:
    """A document named for a reader: its title (or source) and the first words of the chunk found."""
    text = " ".join(chunk.text.split())
    snippet = text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS].rsplit(" ", 1)[0] + "…"
    return DocumentLabel(title=str(chunk.metadata.get("title") or chunk.metadata.get("source") or ""), snippet=snippet)


def _percentiles(timings: list[StageTimings], q: float) -> dict[str, float]:
    """The q-th percentile of each stage's milliseconds over searches that ran (cached results took none)."""
    if not timings:
        return {}
    stages = {"embed": "embed_ms", "search": "search_ms", "rerank": "rerank_ms", "total": "total_ms"}
    return {name: float(np.percentile([getattr(t, field) for t in timings], q)) for name, field in stages.items()}


def _group_figures(
    groups: dict[str, str], ids: list[str], before: dict[str, dict[str, float]], after: dict[str, dict[str, float]]
) -> list[GroupFigures]:
    """Per query group (when the queries file names groups): means, wins/ties/losses and the p-value."""
    members: dict[str, list[str]] = {}
    for qid in ids:
        if qid in groups:
            members.setdefault(groups[qid], []).append(qid)
    figures = []
    for group, qids in members.items():
        paired = paired_comparison([before[q][PRIMARY] for q in qids], [after[q][PRIMARY] for q in qids])
        figures.append(
            GroupFigures(
                group=group,
                queries=len(qids),
                before={m: float(np.mean([before[q][m] for q in qids])) for m in before[qids[0]]},
                after={m: float(np.mean([after[q][m] for q in qids])) for m in after[qids[0]]},
                **paired.model_dump(),
            )
        )
    return figures


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
    paired = paired_comparison([per_a[q][PRIMARY] for q in ids], [per_b[q][PRIMARY] for q in ids])
    return RunComparison(
        name_a=names[0],
        name_b=names[1],
        a=a,
        b=b,
        queries=len(ids),
        **paired.model_dump(),
    )

"""The judging queue: the unjudged documents in the top n of an evaluation, before and after reranking, ordered
by how much their grade could move the verdict.

A document's weight is its reach (`workbench.evaluation.settling`): how far the mean nDCG@10 change would move if
it were found relevant at the top grade: its discount 1/log2(rank + 1) in the reranked top 10 minus its discount
in the first-stage top 10, times the top grade over the query's ideal DCG, divided by the number of queries. A
document the reranker brought in, or dropped, in a query with few relevant documents weighs most; one at the same
rank in both lists cannot move the change at all, and comes last (it still moves both figures). Grading in this
order narrows the bounds on the change fastest. Documents graded since the evaluation ran leave the queue.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from workbench.engine import Engine
from workbench.evaluation.report import EvaluationReport
from workbench.evaluation.settling import Judging, SettleState, discount, judging_settled, reach_scale, top_grade
from workbench.judgments.service import Judgments
from workbench.models import short_model_name
from workbench.types import Chunk
from workbench.vocab import MAX_QUEUE_TEXT_CHUNKS

POOLED_CONFIGURATIONS = 6  # the most configurations the app's queue pools


class QueueItem(BaseModel):
    """One unjudged (query, document) pair to grade, where it ranked, and its weight on the verdict."""

    query_id: str
    query: str
    doc_id: str
    rank_before: int | None
    rank_after: int | None
    weight: float
    configurations: list[str]


def configuration_label(report: EvaluationReport) -> str:
    """A configuration as the queue names it: first stage, k, top n and reranker."""
    reranker = short_model_name(report.reranker_model) if report.reranker_model else "no reranker"
    return f"{report.retrieval} k={report.k} top {report.top_n} → {reranker}"


def pooled_reports(
    pool: Sequence[EvaluationReport], report: EvaluationReport, most: int = POOLED_CONFIGURATIONS
) -> list[EvaluationReport]:
    """The reports a queue pools after `report` ran: the earlier ones on the same collection and judgments (a
    report of the same configuration is replaced), newest last, at most `most`."""
    kept = [
        r
        for r in pool
        if r.collection == report.collection
        and r.dataset == report.dataset
        and configuration_label(r) != configuration_label(report)
    ]
    return [*kept, report][-most:]


def judging_queue(
    reports: Sequence[EvaluationReport], judgments: Judgments | None = None, limit: int | None = None
) -> list[QueueItem]:
    """The unjudged documents of the reports' top n lists (pooled over reports, before and after reranking),
    heaviest first; `judgments` (the store's, read now) drops pairs graded since the reports ran."""
    pooled: dict[tuple[str, str], QueueItem] = {}
    for report in reports:
        label = configuration_label(report)
        texts = {o.query_id: o.query for o in report.per_query}
        best = top_grade(report.qrels)
        for query_id, query in texts.items():
            graded = judgments.for_query(query) if judgments is not None else None
            now = graded[1] if graded else {}
            scale = reach_scale(report.qrels.get(query_id, {}), best, report.queries)
            before, after = report.top_lists(query_id)
            ranks_before = {doc: rank for rank, (doc, _) in enumerate(before, start=1)}
            ranks_after = {doc: rank for rank, (doc, _) in enumerate(after, start=1)}
            for doc, grade in [*before, *after]:
                if grade is not None or doc in now:
                    continue
                rank_b, rank_a = ranks_before.get(doc), ranks_after.get(doc)
                weight = abs(discount(rank_a) - discount(rank_b)) * scale
                item = pooled.get((query_id, doc))
                if item is None:
                    pooled[(query_id, doc)] = QueueItem(
                        query_id=query_id, query=query, doc_id=doc, rank_before=rank_b, rank_after=rank_a,
                        weight=weight, configurations=[label],
                    )  # fmt: skip
                elif label not in item.configurations:
                    item.configurations.append(label)
                    item.weight = max(item.weight, weight)
    ranked = sorted(
        pooled.values(),
        key=lambda i: (-i.weight, min(i.rank_before or 10**6, i.rank_after or 10**6), i.query_id, i.doc_id),
    )
    return ranked[:limit] if limit else ranked


def settle_now(report: EvaluationReport, judgments: Judgments | None) -> SettleState | None:
    """Whether the report's verdict is settled with the grades given since it ran (the judgments store's, read
    now), else about how many grades settle it; None when nothing was reranked."""
    if report.verdict is None:
        return None
    judging = Judging.of(report)
    if judgments is not None:
        now = {q: {**report.qrels.get(q, {}), **judgments.qrels.get(q, {})} for q in judging.query_ids}
        if now != {q: report.qrels.get(q, {}) for q in judging.query_ids}:
            judging = judging.with_qrels(now)
    return judging_settled(judging)


def document_chunks(
    engine: Engine, collection: str, doc_ids: Sequence[str], most: int = MAX_QUEUE_TEXT_CHUNKS
) -> dict[str, Chunk]:
    """Each document's first chunk (its text, and its title in the metadata), for the queue's cards (read from the
    store; empty for collections of more than `most` chunks, where the queue shows ids only)."""
    store = engine.registry.get(collection)
    if store.count() > most:
        return {}
    wanted = set(doc_ids)
    chunks: dict[str, Chunk] = {}
    for chunk in store.all_chunks():
        doc = str(chunk.metadata.get("document_id", chunk.id))
        if doc in wanted and doc not in chunks:
            chunks[doc] = chunk
    return chunks


def document_texts(
    engine: Engine, collection: str, doc_ids: Sequence[str], most: int = MAX_QUEUE_TEXT_CHUNKS
) -> dict[str, str]:
    """Each document's first chunk text (`document_chunks`' texts)."""
    return {doc: chunk.text for doc, chunk in document_chunks(engine, collection, doc_ids, most).items()}

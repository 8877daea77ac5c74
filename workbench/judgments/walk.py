"""Grading a query set: the documents a person should grade for each query, one after another, and how far each
rater has got through them.

A walk holds, for each query, the documents of its top n before and after reranking (one search per query with
the given plan, documents folded from their chunks), in the order a person reads them: the query's reranked top
first, then what only the first stage kept. With `only_unjudged`, pairs that already have a grade are left out. A
judging queue (Evaluate's, `queue.judging_queue`) becomes a walk too, heaviest first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from workbench.engine import Engine
from workbench.judgments.queue import QueueItem, document_chunks
from workbench.judgments.service import Judgments, normal_query
from workbench.judgments.store import JudgmentRow
from workbench.types import Chunk, SearchPlan, SearchResult


@dataclass(frozen=True)
class WalkItem:
    """One (query, document) pair to grade, with what a person needs to grade it."""

    query: str
    doc_id: str
    title: str
    text: str
    rank_before: int | None
    rank_after: int | None


def _document(hit: Chunk) -> str:
    return str(hit.metadata.get("document_id", hit.id))


def _title(hit: Chunk) -> str:
    return str(hit.metadata.get("title") or hit.metadata.get("source") or "")


def _items_of(result: SearchResult) -> list[WalkItem]:
    """A result's documents in reading order: the reranked top n, then the first stage's top n not in it."""
    before: dict[str, int] = {}
    for rank, candidate in enumerate(result.candidates[: result.top_n], start=1):
        before.setdefault(_document(candidate), rank)
    after: dict[str, int] = {}
    for rank, row in enumerate(result.reranked, start=1):
        after.setdefault(_document(row), rank)
    hits = {_document(h): h for h in [*result.candidates[: result.top_n], *result.reranked]}
    order = [*after, *(doc for doc in before if doc not in after)]
    return [
        WalkItem(
            query=result.query, doc_id=doc, title=_title(hits[doc]), text=hits[doc].text,
            rank_before=before.get(doc), rank_after=after.get(doc),
        )
        for doc in order
    ]  # fmt: skip


def _graded(judgments: Judgments | None, query: str, doc_id: str) -> bool:
    match = judgments.for_query(query) if judgments is not None else None
    return match is not None and doc_id in match[1]


def grading_walk(
    engine: Engine,
    queries: Sequence[str],
    plan: SearchPlan,
    *,
    judgments: Judgments | None = None,
    only_unjudged: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> list[WalkItem]:
    """The pairs to grade for `queries`, searched with `plan` (its top n before and after reranking); with
    `only_unjudged`, those `judgments` have no grade for."""
    items: list[WalkItem] = []
    for done, query in enumerate(queries, start=1):
        result = engine.search(query, plan)
        items += [i for i in _items_of(result) if not (only_unjudged and _graded(judgments, query, i.doc_id))]
        if progress is not None:
            progress(done, len(queries))
    return items


def queue_walk(engine: Engine, collection: str, queue: Sequence[QueueItem]) -> list[WalkItem]:
    """A judging queue as a walk, in its order (heaviest on the verdict first), with each document's text."""
    chunks = document_chunks(engine, collection, [item.doc_id for item in queue])
    return [
        WalkItem(query=item.query, doc_id=item.doc_id, title=_title(chunks[item.doc_id]) if item.doc_id in chunks
                 else "", text=chunks[item.doc_id].text if item.doc_id in chunks else "",
                 rank_before=item.rank_before, rank_after=item.rank_after)
        for item in queue
    ]  # fmt: skip


def rater_progress(items: Sequence[WalkItem], rows: Sequence[JudgmentRow], queries: dict[str, str]) -> dict[str, int]:
    """How many of the walk's pairs each rater has graded (any grade, at any time), most first; `queries` maps the
    collection's judged query ids to their texts."""
    ids_of: dict[str, set[str]] = {}
    for qid, text in queries.items():
        ids_of.setdefault(normal_query(text), set()).add(qid)
    wanted = {(qid, item.doc_id) for item in items for qid in ids_of.get(normal_query(item.query), set())}
    graded: dict[str, set[tuple[str, str]]] = {}
    for row in rows:
        if (row.query_id, row.doc_id) in wanted:
            graded.setdefault(row.rater, set()).add((row.query_id, row.doc_id))
    counts = {rater: len(pairs) for rater, pairs in graded.items()}
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))

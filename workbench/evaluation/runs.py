"""Search results as evaluation runs: chunks folded to the documents the judgments name.

A collection stores chunks; judgments grade documents. A document's score in a run is its best chunk's score,
before reranking (the first stage's) and after (the reranker's, or the first stage's where none was given).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from workbench.types import Candidate

# (document id, first-stage score, rerank score or None): one scored chunk.
ScoredChunk = tuple[str, float, float | None]


def fold_documents(rows: Iterable[ScoredChunk]) -> tuple[dict[str, float], dict[str, float]]:
    """Each document's best chunk score before and after reranking."""
    before: dict[str, float] = {}
    after: dict[str, float] = {}
    for doc, vector, rerank in rows:
        before[doc] = max(before.get(doc, float("-inf")), vector)
        score = rerank if rerank is not None else vector
        after[doc] = max(after.get(doc, float("-inf")), score)
    return before, after


def scored_chunks(candidates: Sequence[Candidate]) -> list[ScoredChunk]:
    """A search result's candidates as (document id, first-stage score, rerank score), in first-stage order."""
    return [(str(c.metadata.get("document_id", c.id)), c.vector_score, c.rerank_score) for c in candidates]


def document_runs(candidates: Sequence[Candidate]) -> tuple[dict[str, float], dict[str, float]]:
    """A search result's candidates as document runs before and after reranking (best chunk per document)."""
    return fold_documents(scored_chunks(candidates))

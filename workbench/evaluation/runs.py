"""Search results as evaluation runs: chunks folded to the documents the judgments name.

A collection stores chunks; judgments grade documents. A document's score in a run is its best chunk's score,
before reranking (the first stage's) and after (the reranker's, or the first stage's where none was given).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from workbench.types import Candidate

# (document id, first-stage score, rerank score or None): one scored chunk.
ScoredChunk = tuple[str, float, float | None]


def fold_documents(rows: Iterable[ScoredChunk]) -> tuple[dict[str, float], dict[str, float]]:
    """Each document's best chunk score before and after reranking, as runs that encode the order the user sees.

    `rows` come in first-stage order. The lists break tied scores by the first-stage rank (the engine's reranked
    order does, and the first stage's order is its own), while trec_eval (pytrec_eval, ir-measures) breaks them by
    document id, and reads scores in single precision: two scores closer than that tie there. So a document whose
    score ties the one before it, at single precision, gets the next single-precision number below it: the run's
    order is the shown order for every metric and every TREC file, and every score that does not tie stays exactly
    as it was. A reranker that gives every document the same score has an "after" equal to its "before", to the
    last digit."""
    before: dict[str, float] = {}
    after: dict[str, float] = {}
    first_seen: dict[str, int] = {}
    for position, (doc, vector, rerank) in enumerate(rows):
        first_seen.setdefault(doc, position)
        before[doc] = max(before.get(doc, float("-inf")), vector)
        score = rerank if rerank is not None else vector
        after[doc] = max(after.get(doc, float("-inf")), score)
    return shown_order(before, first_seen), shown_order(after, first_seen)


def shown_order(best: dict[str, float], first_seen: dict[str, int]) -> dict[str, float]:
    """Scores strictly decreasing at single precision in the shown order (score, then first-stage position), in that
    order: a tied score becomes the next single-precision number below the one before it."""
    ordered = sorted(best, key=lambda doc: (-best[doc], first_seen[doc]))
    run: dict[str, float] = {}
    previous = np.float32(np.inf)
    for doc in ordered:
        score = best[doc]
        if np.float32(score) >= previous:
            score = float(np.nextafter(previous, np.float32(-np.inf)))
        run[doc] = score
        previous = np.float32(score)
    return run


def scored_chunks(candidates: Sequence[Candidate]) -> list[ScoredChunk]:
    """A search result's candidates as (document id, first-stage score, rerank score), in first-stage order."""
    return [(str(c.metadata.get("document_id", c.id)), c.vector_score, c.rerank_score) for c in candidates]


def document_runs(candidates: Sequence[Candidate]) -> tuple[dict[str, float], dict[str, float]]:
    """A search result's candidates as document runs before and after reranking (best chunk per document)."""
    return fold_documents(scored_chunks(candidates))

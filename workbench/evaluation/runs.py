"""Search results as evaluation runs: chunks folded to the documents the judgments name.

A collection stores chunks; judgments grade documents. A document's score in a run is its best chunk's score,
before reranking (the first stage's) and after (the reranker's, or the first stage's where none was given).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from workbench.types import Candidate

# (document id, first-stage score, rerank score or None): one scored chunk.
ScoredChunk = tuple[str, float, float | None]


def fold_documents(rows: Iterable[ScoredChunk]) -> tuple[dict[str, float], dict[str, float]]:
    """Each document's best chunk score before and after reranking, as runs that encode the order the user sees.

    `rows` come in first-stage order. The lists break tied scores by the first-stage rank (the engine's reranked
    order does, and the first stage's order is its own), while trec_eval and every metric built on it break them by
    document id. So where two documents tie (a saturated, rounded or constant reranker; BM25's equal scores), the
    later one's score is lowered to the next float below the one before it: the run's order is the shown order, and
    every score that does not tie stays exactly as it was. A reranker that gives every document the same score has
    an "after" equal to its "before", to the last digit."""
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
    """Scores strictly decreasing in the shown order (score, then first-stage position): tied ones nudged down by
    the fewest floats that part them."""
    ordered = sorted(best, key=lambda doc: (-best[doc], first_seen[doc]))
    run: dict[str, float] = {}
    previous = math.inf
    for doc in ordered:
        score = best[doc]
        if score >= previous:
            score = math.nextafter(previous, -math.inf)
        run[doc] = previous = score
    return run


def scored_chunks(candidates: Sequence[Candidate]) -> list[ScoredChunk]:
    """A search result's candidates as (document id, first-stage score, rerank score), in first-stage order."""
    return [(str(c.metadata.get("document_id", c.id)), c.vector_score, c.rerank_score) for c in candidates]


def document_runs(candidates: Sequence[Candidate]) -> tuple[dict[str, float], dict[str, float]]:
    """A search result's candidates as document runs before and after reranking (best chunk per document)."""
    return fold_documents(scored_chunks(candidates))

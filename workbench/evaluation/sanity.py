"""Did the reranker run as intended? Checks on the scores an evaluation's reranker gave, before any verdict.

A reranker that silently does nothing (its scores tie or saturate, so the first stage's order survives), scores
with a head it does not have (noise), or whose scores were squashed twice, makes "no measurable difference" or
"hurts" a statement about how it ran, not about the model. Each check reads the scores of every evaluated query
(chunks in first-stage order, with their rerank scores) and fires when the fault shows on most of them:

- **constant**: every candidate of a query got the same score (at single precision, as trec_eval reads scores);
- **tied**: in the reranked top n, at least `TIE_SHARE` of neighbouring scores tie (a saturated or rounded score:
  bf16 at 1.0, a score rounded to two places);
- **identity**: the reranked order is the first stage's (Kendall's tau at least `IDENTITY_TAU` over queries of
  at least `IDENTITY_MIN_CANDIDATES` candidates): the reranker moved nothing;
- **split**: the reranked order never moves a passage out of its block of `b` first-stage candidates (for one `b` of
  at most half the list, on most queries that moved): the candidates were ranked in separate calls of `b` (a listwise
  reranker's query split across calls, a service's document limit), so the top was never compared with the rest;
- **squashed**: probability-scale scores that all lie in the sigmoid's image of [0, 1] (0.5 to 0.7311): a
  probability put through the sigmoid once more, so every score reads "about half relevant";
- **cut**: on most queries with a judged-relevant candidate, one of them lost at least `CUT_FIRES` of its tokens at
  the model's max length: the reranker never read where the answers are (`cut_check`, from the diagnosis, which
  reads the candidates' texts; local models only: a service does not say what it cut);
- **served**: the reranker is a served copy that the last parity audit (`workbench doctor --parity ... --served ID`)
  found unfaithful to its local reference (evaluation/parity.py keeps the verdict).

While one fires, the verdict says the reranker did not run as intended, instead of calling the model good or bad.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel
from scipy.stats import kendalltau

from workbench.evaluation.runs import ScoredChunk, scored_chunks
from workbench.serving import SAME_SCORES, same_scores
from workbench.types import SearchResult

CheckName = Literal["constant", "tied", "identity", "split", "squashed", "cut", "served"]
CUT_FIRES = 0.5  # the share of a relevant passage's tokens cut at max length for its query to count as cut
TIE_SHARE = 0.3  # of the top n's neighbouring pairs, for a query to count as tied
IDENTITY_TAU = 0.95
IDENTITY_MIN_CANDIDATES = 5
SPLIT_MIN_BLOCK = 3  # the smallest block the split check looks for (2 would fire on a reranker that swaps pairs)
SPLIT_MIN_QUERIES = 5  # queries that moved, before a split can be told from chance
MOST = 0.5  # the share of the checked queries on which a fault must show for the check to fire
SIGMOID_OF_UNIT = (0.5, 1.0 / (1.0 + math.exp(-1.0)))  # sigmoid(0), sigmoid(1)


class RunCheck(BaseModel):
    """A check that fired: its name, on how many of the checked queries, and what it means, in words."""

    name: CheckName
    queries: int
    checked: int
    words: str


def _scores(rows: Sequence[ScoredChunk]) -> np.ndarray | None:
    scores = [rerank for _, _, rerank in rows if rerank is not None]
    return np.asarray(scores, dtype=np.float32) if len(scores) >= 2 and len(scores) == len(rows) else None


def _tie_share(scores: np.ndarray, top_n: int) -> float:
    top = np.sort(scores)[::-1][: max(top_n, 2)]
    return float(np.mean(top[1:] == top[:-1])) if len(top) >= 2 else 0.0


def _tau(scores: np.ndarray) -> float | None:
    """Kendall's tau between the first stage's order and the reranked one (ties broken by first-stage rank, as
    the reranked list breaks them)."""
    if len(scores) < IDENTITY_MIN_CANDIDATES:
        return None
    value = kendalltau(np.arange(len(scores)), _reranked_ranks(scores)).statistic
    return None if np.isnan(value) else float(value)


def _reranked_ranks(scores: np.ndarray) -> np.ndarray:
    """Each candidate's place in the reranked order (ties by first-stage rank, as the list breaks them)."""
    order = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))
    ranks = np.empty(len(scores), dtype=int)
    ranks[order] = np.arange(len(scores))
    return ranks


def _kept_blocks(scores: np.ndarray) -> set[int] | None:
    """The block sizes b (SPLIT_MIN_BLOCK to half the list) whose blocks of first-stage candidates the reranked
    order keeps whole (every candidate stays among the b it came with); None for a list too short, or unmoved."""
    ranks = _reranked_ranks(scores)
    if len(scores) < 2 * SPLIT_MIN_BLOCK or np.array_equal(ranks, np.arange(len(scores))):
        return None
    first = np.arange(len(scores))
    return {b for b in range(SPLIT_MIN_BLOCK, len(scores) // 2 + 1) if np.array_equal(ranks // b, first // b)}


def _split(per_query: Sequence[np.ndarray]) -> RunCheck | None:
    """The **split** check: one block size kept whole on most of the queries that moved."""
    kept = [blocks for blocks in (_kept_blocks(s) for s in per_query) if blocks is not None]
    if len(kept) < SPLIT_MIN_QUERIES:
        return None
    counts: dict[int, int] = {}
    for blocks in kept:
        for b in blocks:
            counts[b] = counts.get(b, 0) + 1
    if not counts:
        return None
    block = max(counts, key=lambda b: (counts[b], -b))  # the finest split that holds
    what = (
        f"no passage ever left its block of {block} first-stage candidates: the candidates were ranked in separate "
        f"calls of {block} (a listwise query split across calls, or a service's document limit), so the top was "
        "never compared with the rest"
    )
    return _fired("split", counts[block], len(kept), what)


def _fired(name: CheckName, hits: int, checked: int, what: str) -> RunCheck | None:
    if checked and hits / checked >= MOST:
        return RunCheck(name=name, queries=hits, checked=checked, words=f"{what} on {hits} of {checked} queries")
    return None


def run_checks(candidates: Mapping[str, Sequence[ScoredChunk]], top_n: int, score_scale: str | None) -> list[RunCheck]:
    """The checks that fire on an evaluation's rerank scores (per query: chunks in first-stage order with their
    rerank scores); none when nothing was reranked."""
    per_query = [s for s in (_scores(rows) for rows in candidates.values()) if s is not None]
    if not per_query:
        return []
    constant = sum(same_scores(s) for s in per_query)
    tied = sum(_tie_share(s, top_n) >= TIE_SHARE for s in per_query if not np.all(s == s[0]))
    taus = [t for t in (_tau(s) for s in per_query) if t is not None]
    identity = sum(t >= IDENTITY_TAU for t in taus)
    tie_words = f"at least {TIE_SHARE:.0%} of neighbouring scores in the top {top_n} tie (saturated or rounded)"
    moved = f"the reranked order is the first stage's (Kendall's tau ≥ {IDENTITY_TAU}): the reranker moved nothing"
    found = [
        _fired("constant", constant, len(per_query), SAME_SCORES),
        _fired("tied", tied, len(per_query) - constant, tie_words),
        # constant scores keep the first stage's order: said once, as constant
        None if constant / len(per_query) >= MOST else _fired("identity", identity, len(taus), moved),
        _split(per_query),
    ]
    every = np.concatenate(per_query)
    low, high = SIGMOID_OF_UNIT
    if score_scale == "probability" and np.all((every >= low) & (every <= high + 1e-6)):
        words = (
            f"every score lies in {low:.2f}–{high:.4f}, the sigmoid of a probability: the scores were squashed twice"
        )
        found.append(RunCheck(name="squashed", queries=len(per_query), checked=len(per_query), words=words))
    return [check for check in found if check is not None]


def cut_check(relevant_cut_shares: Sequence[float | None], max_length: int | None) -> RunCheck | None:
    """The **cut** check over an evaluation's queries: each query's largest cut share among its judged-relevant
    candidates (None: no relevant candidate, or a reranker that does not say)."""
    shares = [share for share in relevant_cut_shares if share is not None]
    at = f" ({max_length} tokens)" if max_length else ""
    what = (
        f"a relevant passage lost at least {CUT_FIRES:.0%} of its tokens at the model's max length{at}, so the "
        "reranker never read where the answers are (raise RERANKER_MAX_LENGTH, ingest smaller passages, or try "
        "--long-documents maxp)"
    )
    return _fired("cut", sum(share >= CUT_FIRES for share in shares), len(shares), what)


def result_checks(result: SearchResult) -> list[RunCheck]:
    """The checks one search's rerank scores fail (Explore's and Compare's banner): constant, tied and squashed
    scores. The first stage's order kept by a reranker is a fact about one query, not a fault, so it is said only
    over an evaluation's queries."""
    if result.reranker_model is None:
        return []
    checks = run_checks({result.query: scored_chunks(result.candidates)}, result.top_n, result.score_scale)
    return [check for check in checks if check.name != "identity"]


def not_as_intended(checks: Sequence[RunCheck]) -> str:
    """The checks that fired, as the sentence a verdict gives in their place."""
    return (
        "The reranker did not run as intended: "
        + "; ".join(check.words for check in checks)
        + ". No verdict on the model: the figures say how it ran, not what it is worth. Check its kind, template, "
        "score scale and precision (workbench doctor), then evaluate again."
    )

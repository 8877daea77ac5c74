"""MaxP and SumP: a long document scored by its windows (Dai and Callan 2019). The reranker cuts each document
(`windows`, by its own tokenizer); every window is scored beside the query through the score cache and the batcher,
like any passage; a document then scores its best window (MaxP) or its windows' probabilities added up (SumP)."""

from __future__ import annotations

from workbench.errors import InputError
from workbench.passages import LongDocuments
from workbench.redact import public_name
from workbench.rerankers.base import Reranker, to_probability
from workbench.vocab import ScoreScale


def windowed_scale(reranker: Reranker, strategy: LongDocuments | None) -> ScoreScale:
    """The scale of the scores a strategy gives: the reranker's own, or for SumP a sum of probabilities."""
    return "probability sum" if strategy is not None and strategy.strategy == "sump" else reranker.score_scale


def windowed_scores(
    reranker: Reranker,
    query: str,
    texts: list[str],
    strategy: LongDocuments,
    use_cache: bool = True,
    deadline: float | None = None,
) -> tuple[list[float], int, int]:
    """Each text's score under MaxP or SumP, how many window scores came from the cache, and how many windows were
    scored. InputError for a reranker that cannot cut documents (a service: its tokenizer is not the workbench's)."""
    cut = getattr(reranker, "windows", None)
    if cut is None:
        raise InputError(
            f"{strategy.strategy} cuts documents into windows with the reranker's own tokenizer, and "
            f"'{public_name(reranker.model_id)}' is a service whose tokenizer the workbench does not hold: use firstp "
            "(the service reads each document's start) or a local cross-encoder."
        )
    per_text = [cut(query, text, strategy.windows, strategy.stride) for text in texts]
    flat = [window for windows in per_text for window in windows]
    scores, cached = reranker.score(query, flat, use_cache, deadline)
    combined, at = [], 0
    for windows in per_text:
        part = list(scores[at : at + len(windows)])
        at += len(windows)
        if strategy.strategy == "maxp":
            combined.append(max(part))
        else:
            combined.append(sum(to_probability(score, reranker.score_scale) for score in part))
    return combined, cached, len(flat)

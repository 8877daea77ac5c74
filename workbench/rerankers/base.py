"""What every reranker is: the protocol the engine calls, whatever kind of reranker stands behind it, what it
counts, and the one mapping between the scales rerankers score on."""

from __future__ import annotations

import math
import threading
from abc import ABC, abstractmethod
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from workbench.errors import InputError
from workbench.rerankers.scores.cache import ScoreCache, cached_scores
from workbench.vocab import ORDER_SCALE, ScoreScale


class RerankerUsage(BaseModel):
    """What a reranker has done since it was created: model calls or service requests, documents scored, tokens
    (a local model's, or what a service reported) and billed units (a hosted API's own count, e.g. Cohere's
    searches)."""

    requests: int = 0
    documents: int = 0
    tokens: int = 0
    billed_units: float = 0.0


@runtime_checkable
class Reranker(Protocol):
    """Scores (query, document) pairs; higher is more relevant.

    `model_id` is the id the reranker was created from (what `create_reranker` took); `backend` says what runs
    it ('torch:cpu', 'onnx-int8:cpu', 'service http://host:port', 'cohere'); `score_scale` is 'logit' (a raw
    model output) or 'probability' (0 to 1, as services answer); `model_calls` counts model runs or requests.
    """

    model_id: str
    backend: str
    score_scale: ScoreScale
    model_calls: int

    @property
    def usage(self) -> RerankerUsage: ...

    def score(
        self, query: str, texts: list[str], use_cache: bool = True, deadline: float | None = None
    ) -> tuple[list[float], int]:
        """Scores for each text, and how many of them came from the cache; QueryTimeoutError once `deadline`
        (a time.monotonic() instant) has passed, so a search nobody waits for stops using the model."""
        ...

    def score_pairs(self, pairs: list[tuple[str, str]], deadline: float | None = None) -> list[float]:
        """Scores for (query, text) pairs whose queries differ, bypassing the score cache, in as few model calls as
        the kind allows: one for a local model, one request per distinct query for a service."""
        ...

    def notes(self, query: str, texts: list[str]) -> list[str]:
        """What the reranker has to say of its answer for this list beyond its scores (a listwise answer that needed
        a repair); empty for most kinds."""
        ...

    def score_many(self, pairs: list[tuple[str, str]]) -> tuple[list[float], int]:
        """Scores for (query, text) pairs whose queries differ, from the score cache where kept; the rest scored
        together (`score_pairs`: one model call for a local model, its pairs sorted by length across queries) and
        kept; and how many came from the cache."""
        ...


def by_query(pairs: list[tuple[str, str]]) -> dict[str, list[int]]:
    """The places of each distinct query's pairs, queries in first-seen order."""
    places: dict[str, list[int]] = {}
    for i, (query, _) in enumerate(pairs):
        places.setdefault(query, []).append(i)
    return places


class BaseReranker(ABC):
    """What every kind of reranker shares, so that a kind is only how it scores: the score cache in front of
    `predict` (single-flight: concurrent searches share one model run), the usage counters behind one lock, and
    `score_pairs` as one `predict` per distinct query. A kind sets `backend` and `score_scale`, writes `predict`
    (and may write a faster `score_pairs`, or a `cache_key` that changes while it warms up), and calls `counted`
    after each model run or request. A new kind is a subclass in a file of its own and one line in the factory's
    `KINDS`."""

    backend: str
    score_scale: ScoreScale

    def __init__(self, model_id: str, cache: ScoreCache) -> None:
        self.model_id = model_id
        self.cache = cache
        self._usage = RerankerUsage()
        self._usage_lock = threading.Lock()

    @abstractmethod
    def predict(self, query: str, texts: list[str], deadline: float | None = None) -> list[float]:
        """Every text scored with the model or service, no cache; QueryTimeoutError once `deadline` passes."""

    @property
    def cache_key(self) -> str:
        """What its scores are cached under: its id (another backend of one model has another id)."""
        return self.model_id

    @property
    def store_key(self) -> str | None:
        """Its fingerprint in the score store that lasts across processes (what made the scores: weights, backend,
        max length, template); None keeps its scores in this process only (a service may change behind its URL)."""
        return None

    def score(
        self, query: str, texts: list[str], use_cache: bool = True, deadline: float | None = None
    ) -> tuple[list[float], int]:
        """Scores for each text (on `score_scale`), and how many came from the score cache (or a concurrent
        search asking for the same pairs)."""
        return cached_scores(
            self.cache, self.cache_key, query, texts, self.predict, use_cache, deadline, self.store_key
        )

    def notes(self, query: str, texts: list[str]) -> list[str]:
        """Nothing beyond the scores (a listwise reranker says when its answer needed a repair)."""
        return []

    def score_pairs(self, pairs: list[tuple[str, str]], deadline: float | None = None) -> list[float]:
        """Scores for (query, text) pairs whose queries differ, one `predict` per distinct query; no cache."""
        scores = [0.0] * len(pairs)
        for query, indices in by_query(pairs).items():
            for i, value in zip(indices, self.predict(query, [pairs[i][1] for i in indices], deadline), strict=True):
                scores[i] = value
        return scores

    def score_many(self, pairs: list[tuple[str, str]]) -> tuple[list[float], int]:
        """Scores for (query, text) pairs whose queries differ, from the score cache where kept; the rest scored
        together by `score_pairs` and kept in the cache; and how many came from the cache."""
        keys = [ScoreCache.key(self.cache_key, query, text) for query, text in pairs]
        return self.cache.resolve(keys, lambda indices: self.score_pairs([pairs[i] for i in indices]), self.store_key)

    def counted(self, *, documents: int, tokens: int = 0, billed_units: float = 0.0) -> None:
        """One model run or service request done: what it scored, read and was billed."""
        with self._usage_lock:
            self._usage.requests += 1
            self._usage.documents += documents
            self._usage.tokens += tokens
            self._usage.billed_units += billed_units

    @property
    def usage(self) -> RerankerUsage:
        with self._usage_lock:
            return self._usage.model_copy()

    @property
    def model_calls(self) -> int:
        """Model runs or service requests so far (a micro-batched run that served several searches counts once)."""
        return self.usage.requests


def sigmoid(logit: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(min(logit, 60.0), -60.0)))


# What a reranker's numbers are, in one sentence per score contract (the CLI's note, the pages' caption).
SCALE_WORDS: dict[str, str] = {
    "logit": "Rerank scores are the model's raw logits (higher is more relevant); σ squashes them to 0–1, which is "
    "easier to read but not a calibrated probability.",
    "probability": "Rerank scores are 0–1, the service's or model's own (higher is more relevant); not a calibrated "
    "probability either.",
    "probability sum": "Rerank scores are SumP's: each window's 0–1 score added up (0 to the number of windows).",
    "raw": "Rerank scores are MaxSim sums (a ColBERT model: each query token's best match in the passage, added up): "
    "unbounded and with no 0–1 reading; only their order compares across rerankers.",
    ORDER_SCALE: "A listwise reranker answers an order, not scores: only its ranks are shown, and nothing is "
    "thresholded, calibrated or explained from them.",
}


def scale_words(scale: str | None) -> str:
    """What the numbers of a reranker on `scale` are, in one sentence."""
    return SCALE_WORDS.get(scale or "logit", SCALE_WORDS["logit"])


def needs_scores(scale: str | None, what: str, *, zero_one: bool = False) -> None:
    """InputError naming `what` when the reranker answers an order (a listwise LLM), which has no scores to use;
    with `zero_one`, also when its scores have no 0-1 reading (a ColBERT model's MaxSim)."""
    if zero_one and scale == "raw":
        raise InputError(
            f"{what} needs scores with a 0–1 reading, and a ColBERT model's MaxSim sums have none: use its ranks, or "
            "a reranker that scores on a logit or 0–1 scale."
        )
    if scale == ORDER_SCALE:
        raise InputError(
            f"{what} needs rerank scores, and a listwise reranker answers an order (ranks), not scores: use a "
            "reranker that scores (a cross-encoder, a causal-LM reranker or a /rerank service), or leave it out."
        )


def to_probability(score: float, scale: str) -> float:
    """A score on the 0-1 scale: a logit through the sigmoid, a probability as it is. Two rerankers' scores are
    compared on this scale (it is not a calibrated probability of relevance for either). An order has none
    (InputError)."""
    needs_scores(scale, "A score on the 0–1 scale", zero_one=True)
    if scale == "probability sum":  # SumP's windows added up: at least as likely as its best window, at most 1
        return min(float(score), 1.0)
    return sigmoid(score) if scale == "logit" else float(score)

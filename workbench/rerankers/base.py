"""What every reranker is: the protocol the engine calls, whatever kind of reranker stands behind it, what it
counts, and the one mapping between the scales rerankers score on."""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from workbench.vocab import ScoreScale


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


def sigmoid(logit: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(min(logit, 60.0), -60.0)))


def to_probability(score: float, scale: str) -> float:
    """A score on the 0-1 scale: a logit through the sigmoid, a probability as it is. Two rerankers' scores are
    compared on this scale (it is not a calibrated probability of relevance for either)."""
    return sigmoid(score) if scale == "logit" else float(score)

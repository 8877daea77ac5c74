"""What every reranker is: the protocol the engine calls, whatever kind of reranker stands behind it."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Reranker(Protocol):
    """Scores (query, document) pairs; higher is more relevant.

    `model_id` is the id the reranker was created from (what `create_reranker` took); `backend` says what runs
    it ('torch:cpu', 'onnx-int8:cpu', ...); `model_calls` counts the model runs it made.
    """

    model_id: str
    backend: str
    model_calls: int

    def score(self, query: str, texts: list[str], use_cache: bool = True) -> tuple[list[float], int]:
        """Scores for each text, and how many of them came from the cache."""
        ...

"""Rerankers: a protocol, the cross-encoder (backends torch, onnx, onnx-int8; fp16/bf16 on CUDA), the score
and token caches, and micro-batching of concurrent searches."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from workbench.rerankers.backends import BACKENDS, ExportCache, choose_backend, fingerprint
from workbench.rerankers.batching import MicroBatcher
from workbench.rerankers.cache import ScoreCache, TokenCache
from workbench.rerankers.crossencoder import CrossEncoderReranker, truncate_pair


@runtime_checkable
class Reranker(Protocol):
    """Scores (query, document) pairs; higher is more relevant."""

    model_id: str
    backend: str

    def score(self, query: str, texts: list[str], use_cache: bool = True) -> tuple[list[float], int]:
        """Scores for each text, and how many of them came from the cache."""
        ...


__all__ = [
    "BACKENDS",
    "CrossEncoderReranker",
    "ExportCache",
    "MicroBatcher",
    "Reranker",
    "ScoreCache",
    "TokenCache",
    "choose_backend",
    "fingerprint",
    "truncate_pair",
]

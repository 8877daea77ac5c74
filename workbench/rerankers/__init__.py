"""Rerankers: one protocol (`Reranker`), one factory choosing the kind from the model id (`create_reranker`),
the cross-encoder (backends torch, onnx, onnx-int8, openvino; fp16/bf16 on CUDA), the score and token caches, and
micro-batching of concurrent searches."""

from __future__ import annotations

from workbench.rerankers.base import Reranker, RerankerUsage, needs_scores, scale_words, sigmoid, to_probability
from workbench.rerankers.crossencoder import CrossEncoderReranker, truncate_pair
from workbench.rerankers.discovery import discover_rerankers
from workbench.rerankers.factory import KINDS, RerankerKind, create_reranker, is_no_reranker, reranker_kind, runs_here
from workbench.rerankers.local.backends import ExportCache, choose_backend, fingerprint, load_cross_encoder
from workbench.rerankers.local.batching import MicroBatcher
from workbench.rerankers.scores.cache import ScoreCache, TokenCache
from workbench.vocab import BACKENDS

__all__ = [
    "BACKENDS",
    "KINDS",
    "CrossEncoderReranker",
    "ExportCache",
    "MicroBatcher",
    "Reranker",
    "RerankerKind",
    "RerankerUsage",
    "ScoreCache",
    "TokenCache",
    "choose_backend",
    "create_reranker",
    "discover_rerankers",
    "fingerprint",
    "is_no_reranker",
    "load_cross_encoder",
    "needs_scores",
    "reranker_kind",
    "runs_here",
    "scale_words",
    "sigmoid",
    "to_probability",
    "truncate_pair",
]

"""The one way to make a reranker: `create_reranker(model_id, settings)` chooses the kind from the id's form.

Each kind is a `RerankerKind`: a test on the id and a constructor. A new kind (a reranker service, a hosted API)
is one new file and one line in `KINDS`; the first kind whose test accepts the id builds it. A folder or a hub id
is a local cross-encoder, the last kind, which accepts any id.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from workbench.config import Settings
from workbench.errors import InputError
from workbench.rerankers.base import Reranker
from workbench.rerankers.cache import ScoreCache, TokenCache
from workbench.rerankers.crossencoder import CrossEncoderReranker
from workbench.vocab import NO_RERANKER

Progress = Callable[[str], None]


@dataclass(frozen=True)
class RerankerKind:
    """A kind of reranker: its name, which ids it takes, and how to build one from an id."""

    name: str
    accepts: Callable[[str], bool]
    build: Callable[[str, Settings, ScoreCache, TokenCache, Progress | None], Reranker]


def _cross_encoder(
    model_id: str, settings: Settings, cache: ScoreCache, tokens: TokenCache, progress: Progress | None
) -> Reranker:
    return CrossEncoderReranker(model_id, settings, cache=cache, token_cache=tokens, progress=progress)


KINDS: tuple[RerankerKind, ...] = (RerankerKind("cross-encoder", lambda model_id: True, _cross_encoder),)


def is_no_reranker(model_id: str | None) -> bool:
    """True for the ids that mean "no reranking": None, empty, or 'none'."""
    return model_id is None or model_id.strip().lower() in {NO_RERANKER, ""}


def reranker_kind(model_id: str) -> RerankerKind:
    """The kind of reranker an id names."""
    return next(kind for kind in KINDS if kind.accepts(model_id))


def create_reranker(
    model_id: str,
    settings: Settings,
    *,
    cache: ScoreCache | None = None,
    token_cache: TokenCache | None = None,
    progress: Progress | None = None,
) -> Reranker:
    """The reranker a model id names, sharing `cache` and `token_cache` when given (the engine's)."""
    if not isinstance(model_id, str) or is_no_reranker(model_id):
        raise InputError(f"A reranker needs a model id or folder; got {model_id!r}.")
    scores = cache if cache is not None else ScoreCache(settings.cache_ttl, settings.cache_max_size)
    tokens = token_cache if token_cache is not None else TokenCache(settings.cache_max_size * 5)
    return reranker_kind(model_id).build(model_id, settings, scores, tokens, progress)

"""The one way to make a reranker: `create_reranker(model_id, settings)` chooses the kind from the id's form.

    tei+http(s)://host:port      text-embeddings-inference's POST /rerank
    listwise+http(s)://host:port/v1#MODEL   an LLM ranking windows of passages over an OpenAI-compatible chat endpoint
    chat+http(s)://host:port/v1#MODEL   an LLM asked pair by pair over a chat endpoint: P(yes) from its logprobs
    vllm+http(s)://host:port#qwen3   a causal-LM reranker served by vLLM, asked through POST /score with its template
    http(s)://host:port[/path]   a server speaking the Cohere-style POST /rerank (Infinity, vLLM, workbench serve)
    cohere:MODEL  jina:MODEL  voyage:MODEL   the hosted APIs (keys from COHERE_API_KEY, JINA_API_KEY, ...)
    FOLDER or HUB-ID[@BACKEND]   a local cross-encoder, on RERANKER_BACKEND or the backend named after '@'; a folder
                                 of a causal-LM reranker or a PyLate ColBERT model by what its config says it is

Each kind is a `RerankerKind`: a test on the id and a constructor. A new kind is one new file and one line in
`KINDS`; the first kind whose test accepts the id builds it. The local cross-encoder is last and accepts any id.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from workbench.config import Settings
from workbench.errors import ConfigError, InputError, ModelNotFoundError, WorkbenchError
from workbench.models import load_failure, resolve_model, short_model_name
from workbench.redact import plain_text
from workbench.rerankers.base import Reranker
from workbench.rerankers.causal_lm import CausalLMReranker
from workbench.rerankers.crossencoder import CrossEncoderReranker
from workbench.rerankers.families import ModelFamily, model_family, refusal
from workbench.rerankers.late_interaction import ColbertReranker
from workbench.rerankers.local.backends import backend_choice, backend_measured, background_measurement
from workbench.rerankers.local.machine import BackendChoice, MachineFacts
from workbench.rerankers.scores.cache import ScoreCache, TokenCache
from workbench.rerankers.served.chat_pointwise import ChatPointwiseReranker
from workbench.rerankers.served.listwise import ListwiseReranker
from workbench.rerankers.served.remote import CohereReranker, JinaReranker, RerankService, TeiReranker, VoyageReranker
from workbench.rerankers.served.served_causal import VllmScoreReranker
from workbench.vocab import (
    BACKEND_CHOICES,
    BACKEND_SEPARATOR,
    CHAT_KIND,
    CHAT_SCHEMES,
    CROSS_ENCODER_KIND,
    LISTWISE_KIND,
    LISTWISE_SCHEMES,
    NO_RERANKER,
    SERVICE_KIND,
    SERVICE_SCHEMES,
    TEI_KIND,
    TEI_SCHEMES,
    UNSUPPORTED_URL_KIND,
    VLLM_KIND,
    VLLM_SCHEMES,
)

Progress = Callable[[str], None]


@dataclass(frozen=True)
class RerankerKind:
    """A kind of reranker: its name, which ids it takes, and how to build one from an id."""

    name: str
    accepts: Callable[[str], bool]
    build: Callable[[str, Settings, ScoreCache, TokenCache, Progress | None], Reranker]
    local: bool = False  # runs in this process (its backends, exports and calibration apply), not a service


def split_backend(model_id: str) -> tuple[str, str | None]:
    """A cross-encoder id and the backend named after '@' ('minilm@onnx-int8' -> ('minilm', 'onnx-int8'))."""
    base, separator, backend = model_id.rpartition(BACKEND_SEPARATOR)
    return (base, backend) if separator and base and backend in BACKEND_CHOICES else (model_id, None)


def on_backend(model_id: str, backend: str) -> str:
    """The id of the same local cross-encoder on `backend` ('minilm@onnx-int8', 'torch' -> 'minilm@torch');
    a service or hosted id as it is (its backend is the service's)."""
    if not runs_here(model_id):
        return model_id
    return f"{split_backend(model_id)[0]}{BACKEND_SEPARATOR}{backend}"


@dataclass(frozen=True)
class LocalFamily:
    """A local model family other than the cross-encoder: how it is named in a refusal, and how it is made from its
    folder (`families.model_family` tells which family a folder is). It runs on torch only."""

    words: str
    make: Callable[[str, str, ModelFamily, Settings, ScoreCache], Reranker]


# A new local family is its reranker's file, its rule in `families.model_family`, and one line here.
LOCAL_FAMILIES: dict[str, LocalFamily] = {
    "causal-lm": LocalFamily("A causal-LM reranker", CausalLMReranker),
    "late-interaction": LocalFamily(
        "A ColBERT reranker",
        lambda model_id, path, _family, settings, cache: ColbertReranker(model_id, path, settings, cache),
    ),
}


def _local(
    model_id: str, settings: Settings, cache: ScoreCache, tokens: TokenCache, progress: Progress | None
) -> Reranker:
    """A local model folder (or hub id), by what its config says it is (`families.model_family`): a cross-encoder,
    a family of `LOCAL_FAMILIES` (a causal-LM reranker of a known profile, a PyLate ColBERT), or refused naming
    what it is. Nothing is loaded as what it is not."""
    folder, backend = split_backend(model_id)
    try:
        path = resolve_model(folder, settings, setting="RERANKER_MODEL")
    except ModelNotFoundError:  # the cross-encoder's own loading names every place looked in
        return _cross_encoder(model_id, settings, cache, tokens, progress)
    family = model_family(path)
    if family.name == "refused":
        raise refusal(folder, family)
    local = LOCAL_FAMILIES.get(family.name)
    if local is None:
        return _cross_encoder(model_id, settings, cache, tokens, progress)
    if backend not in (None, "torch", "auto"):
        raise ConfigError(f"{local.words} runs on torch; '@{backend}' is a cross-encoder backend.")
    try:
        return local.make(model_id, path, family, settings, cache)
    except WorkbenchError:
        raise
    except Exception as exc:  # a damaged folder: one line, as the cross-encoder's loader says it
        raise load_failure(str(path), "RERANKER_MODEL", exc) from exc


def _cross_encoder(
    model_id: str, settings: Settings, cache: ScoreCache, tokens: TokenCache, progress: Progress | None
) -> Reranker:
    folder, backend = split_backend(model_id)
    reranker = CrossEncoderReranker(
        folder, settings, cache=cache, token_cache=tokens, progress=progress, backend=backend
    )
    reranker.model_id = model_id  # scores are cached under the whole id: another backend scores differently
    return reranker


_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")


_KIND_PREFIX = re.compile(r"^(?:listwise|chat|vllm|tei)\+", re.IGNORECASE)  # a served kind's prefix: a URL follows it


def _unsupported_url(model_id: str, *_: object) -> Reranker:
    if "://" not in model_id:  # "listwise+#m": the kind named, its server's URL missing
        prefix = plain_text(model_id.split("+", 1)[0])[:20]
        rest = {"listwise": "/v1#MODEL", "chat": "/v1#MODEL", "vllm": "#qwen3"}.get(prefix.lower(), "")
        raise ConfigError(
            f"The reranker '{plain_text(model_id)[:60]}' names the {prefix}+ kind without its server's URL: write "
            f"{prefix}+http(s)://HOST:PORT{rest} (nothing is looked up on a hub for it)."
        )
    scheme = plain_text(model_id.split("://", 1)[0])[:20]
    raise ConfigError(
        f"A reranker URL starting '{scheme}://' names no kind of reranker: use http(s):// (a Cohere-style /rerank "
        f"server), tei+http(s):// (text-embeddings-inference), listwise+http(s)://HOST/v1#MODEL (an LLM over an "
        f"OpenAI-compatible chat endpoint), chat+http(s)://HOST/v1#MODEL (an LLM asked pair by pair, P(yes) from its "
        f"logprobs), vllm+http(s)://HOST:PORT#qwen3 (a causal-LM reranker served by vLLM), "
        f"cohere:, jina: or voyage:MODEL, or a model folder."
    )


def _remote(kind: type) -> Callable[[str, Settings, ScoreCache, TokenCache, Progress | None], Reranker]:
    return lambda model_id, settings, cache, _tokens, _progress: kind(model_id, settings, cache)


KINDS: tuple[RerankerKind, ...] = (
    RerankerKind(TEI_KIND, lambda model_id: model_id.startswith(TEI_SCHEMES), _remote(TeiReranker)),
    RerankerKind(SERVICE_KIND, lambda model_id: model_id.startswith(SERVICE_SCHEMES), _remote(RerankService)),
    RerankerKind(LISTWISE_KIND, lambda model_id: model_id.startswith(LISTWISE_SCHEMES), _remote(ListwiseReranker)),
    RerankerKind(CHAT_KIND, lambda model_id: model_id.startswith(CHAT_SCHEMES), _remote(ChatPointwiseReranker)),
    RerankerKind(VLLM_KIND, lambda model_id: model_id.startswith(VLLM_SCHEMES), _remote(VllmScoreReranker)),
    *(
        RerankerKind(
            hosted.kind, lambda model_id, prefix=f"{hosted.kind}:": model_id.startswith(prefix), _remote(hosted)
        )
        for hosted in (CohereReranker, JinaReranker, VoyageReranker)
    ),
    RerankerKind(
        UNSUPPORTED_URL_KIND,
        lambda model_id: _URL.match(model_id) is not None or _KIND_PREFIX.match(model_id) is not None,
        _unsupported_url,
    ),
    RerankerKind(CROSS_ENCODER_KIND, lambda model_id: True, _local, local=True),  # a folder: its family from its config
)


def is_no_reranker(model_id: str | None) -> bool:
    """True for the ids that mean "no reranking": None, empty, or 'none'."""
    return model_id is None or model_id.strip().lower() in {NO_RERANKER, ""}


def reranker_kind(model_id: str) -> RerankerKind:
    """The kind of reranker an id names."""
    return next(kind for kind in KINDS if kind.accepts(model_id))


def runs_here(model_id: str) -> bool:
    """Whether the reranker an id names runs in this process (a local kind), not behind a service."""
    return reranker_kind(model_id).local


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


def first_use_words(settings: Settings, model_id: str) -> str | None:
    """What the first search with a reranker waits for, in words a page shows while it waits (None for a service:
    nothing is loaded here)."""
    if not runs_here(model_id):
        return None
    folder, named_backend = split_backend(model_id)
    name = short_model_name(folder)
    try:
        path = resolve_model(folder, settings, setting="RERANKER_MODEL")
        if model_family(path).name != "cross-encoder":
            return f"Loading {name} (its first use in this app)…"
        measured = (
            (named_backend or settings.reranker_backend) != "auto"
            or not settings.reranker_calibrate
            or backend_measured(path, settings.reranker_device, exports_root=settings.exports_dir)
        )
    except (OSError, ConfigError, InputError):  # the search itself names what is wrong with the model
        return None
    if measured:
        return f"Loading {name} (its first use in this app: usually a few seconds)…"
    if not background_measurement():
        return (
            f"First use of {name} on this machine: loading it and measuring which backend (torch, ONNX, int8, "
            "OpenVINO) runs it fastest. This happens once per machine and usually takes 1–2 minutes on 2 cores; "
            "later searches start at once."
        )
    return (
        f"Loading {name} (its first use on this machine: a few seconds). Which backend (torch, ONNX, int8, "
        "OpenVINO) runs it fastest is then measured in the background, once per machine; searches run on torch "
        "meanwhile and switch when it is done."
    )


def reranker_backend_choice(
    settings: Settings, model_id: str | None = None, *, recalibrate: bool = False, progress: Progress | None = None
) -> tuple[MachineFacts, BackendChoice | None] | None:
    """This machine and `auto`'s choice for a local cross-encoder (the configured one by default), measured
    now if it never was (or when `recalibrate`); None for a reranker that is a service."""
    model_id = model_id or settings.reranker_model
    if not runs_here(model_id):
        return None
    path = resolve_model(split_backend(model_id)[0], settings, setting="RERANKER_MODEL")
    if model_family(path).name != "cross-encoder":  # the backends measured are a cross-encoder's
        return None
    return backend_choice(
        path, settings.reranker_device, settings.reranker_max_length, exports_root=settings.exports_dir,
        recalibrate=recalibrate, progress=progress,
    )  # fmt: skip

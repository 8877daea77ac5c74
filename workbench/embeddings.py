"""Embedders: sentence-transformers by default, OpenAI through langchain-openai, or any LangChain Embeddings.

Every embedder returns L2-normalised float32 vectors so that cosine similarity is a dot product and scores
read the same on every store.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import httpx
import numpy as np
from langchain_core.embeddings import Embeddings

from workbench.config import Settings, get_settings
from workbench.errors import ConfigError, ModelError, WorkbenchError, is_connection_problem
from workbench.extras import require_extra
from workbench.models import LOADED, load_failure, pick_device, quiet_transformers, resolve_model
from workbench.redact import plain_text, redact_text, redact_url
from workbench.rerankers.local.backends import fingerprint, intact_export, quiet_export, staged_export
from workbench.service_calls import InvalidAnswer, ServiceCaller, ServiceWords, finite_number, service_address
from workbench.vocab import LANGCHAIN_EMBEDDING_PREFIX, OPENAI_EMBEDDING_PREFIX, SERVED_MODEL_SEPARATOR, SERVICE_SCHEMES

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

SETTING = "WORKBENCH_EMBEDDING_MODEL"
log = logging.getLogger("workbench.embeddings")


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. `model_id` is what collections record as their embedding model."""

    model_id: str

    @property
    def dimension(self) -> int: ...

    def embed_documents(self, texts: list[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def load_sentence_transformer(
    path: str,
    device: str = "auto",
    setting: str = "WORKBENCH_EMBEDDING_MODEL",
    backend: str = "torch",
    exports_root: str | Path | None = None,
) -> SentenceTransformer:
    """The SentenceTransformer at a resolved path, loaded once per process, device and backend: torch, or
    "openvino" (fp32 on the CPU, from an export made once under `exports_root`, `openvino_export`)."""
    if backend == "openvino" and device not in ("auto", "cpu"):
        raise ConfigError(
            f"WORKBENCH_EMBEDDING_BACKEND=openvino runs on the CPU, not WORKBENCH_EMBEDDING_DEVICE={device}: set "
            "the device to cpu or auto, or the backend to torch."
        )
    chosen = "cpu" if backend == "openvino" else pick_device(device, "WORKBENCH_EMBEDDING_DEVICE")

    def load() -> SentenceTransformer:
        from sentence_transformers import SentenceTransformer

        quiet_transformers()
        try:
            if backend == "openvino":
                folder = openvino_export(path, Path(exports_root or get_settings().exports_dir))
                return SentenceTransformer(
                    str(folder), device="cpu", backend="openvino", model_kwargs={"ov_config": OPENVINO_FP32}
                )
            return SentenceTransformer(path, device=chosen)
        except WorkbenchError:
            raise
        except Exception as exc:
            raise load_failure(path, setting, exc) from exc

    return LOADED.get("sentence_transformer", (path, chosen, backend), load)


# fp32 as torch computes it: left to itself OpenVINO runs bf16 on a CPU that multiplies bf16, and the vectors move
OPENVINO_FP32 = {"INFERENCE_PRECISION_HINT": "f32"}
OPENVINO_XML = "openvino/openvino_model.xml"
_export_lock = threading.Lock()


def openvino_export(path: str, exports_root: Path) -> Path:
    """The folder of an intact OpenVINO export of the embedder at `path` (sentence-transformers' own export, with
    its pooling and normalisation modules), made once and kept under `exports_root`; made again when the model's
    files or the export's change (`intact_export`, as the rerankers' exports)."""
    model_print = fingerprint(path)
    folder = exports_root / f"embedder-{Path(path).name}-{model_print[:16]}"
    with _export_lock:
        if intact_export(folder, model_print, OPENVINO_XML):
            return folder
        log.warning(
            "Exporting %s for the openvino embedding backend (once; kept in %s)…", Path(path).name, exports_root
        )

        def make(staging: Path) -> None:
            from sentence_transformers import SentenceTransformer

            with quiet_export():
                model = SentenceTransformer(
                    path, device="cpu", backend="openvino", model_kwargs={"ov_config": OPENVINO_FP32}
                )
                model.save_pretrained(str(staging))

        try:
            staged_export(folder, make, model_print)
        except Exception as exc:
            raise ModelError(
                f"Exporting {Path(path).name} to OpenVINO failed ({type(exc).__name__}). "
                "Set WORKBENCH_EMBEDDING_BACKEND=torch to run without it."
            ) from exc
        return folder


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


class SentenceTransformerEmbedder:
    """A sentence-transformers bi-encoder, resolved through the model resolver and loaded once per process."""

    def __init__(self, model_id: str, settings: Settings) -> None:
        self.model_id = model_id
        self.path = resolve_model(model_id, settings, setting="WORKBENCH_EMBEDDING_MODEL")
        self.backend = settings.embedding_backend
        self._model = load_sentence_transformer(
            self.path, settings.embedding_device, backend=self.backend, exports_root=settings.exports_dir
        )
        self._batch_size = settings.embedding_batch_size
        # One query at a time: each is one short forward pass that already uses every core, and concurrent
        # searches (an evaluation against a remote reranker, the API under load) would only fight over them.
        self._query_lock = threading.Lock()

    @property
    def dimension(self) -> int:
        model = self._model
        # sentence-transformers 5 names it get_sentence_embedding_dimension, 6 get_embedding_dimension
        getter = getattr(model, "get_sentence_embedding_dimension", None) or model.get_embedding_dimension
        return int(getter())

    @property
    def max_seq_length(self) -> int:
        """Tokens of a text the model reads; the rest is cut off (what an ingest's time depends on)."""
        return int(self._model.max_seq_length)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self._model.encode(
            texts, batch_size=self._batch_size, normalize_embeddings=True, convert_to_numpy=True
        )
        return np.asarray(vectors, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        with self._query_lock:
            return self.embed_documents([text])[0]


class LangChainEmbedder:
    """Any LangChain `Embeddings` object (OpenAIEmbeddings, HuggingFaceEmbeddings, ...) as an embedder."""

    def __init__(self, embeddings: Any, model_id: str | None = None) -> None:
        if not hasattr(embeddings, "embed_documents") or not hasattr(embeddings, "embed_query"):
            raise ConfigError(
                f"{type(embeddings).__name__} is not a LangChain Embeddings object "
                "(it needs embed_documents and embed_query)."
            )
        self.embeddings = embeddings
        self.model_id = model_id or _langchain_model_id(embeddings)
        self._dimension: int | None = None

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = len(self.embed_query("dimension probe"))
        return self._dimension

    def _call(self, method: str, argument: Any) -> np.ndarray:
        try:
            return np.asarray(getattr(self.embeddings, method)(argument), dtype=np.float32)
        except WorkbenchError:
            raise
        except Exception as exc:
            reason = redact_text(" ".join(str(exc).split())[:300]) or type(exc).__name__
            if is_connection_problem(exc):
                raise ModelError(
                    f"The embedding service of '{self.model_id}' cannot be reached ({reason}). Check the network "
                    "and the key, or use a local model (WORKBENCH_EMBEDDING_MODEL)."
                ) from exc
            raise ModelError(f"The embedding model '{self.model_id}' failed: {reason}") from exc

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        vectors = _normalise(self._call("embed_documents", list(texts)))
        self._dimension = vectors.shape[1]
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        vector = _normalise(self._call("embed_query", text))
        self._dimension = vector.shape[0]
        return vector


def _langchain_model_id(embeddings: Any) -> str:
    if isinstance(embeddings, EmbedderAsLangChain):  # a workbench embedder passed through LangChain and back
        return embeddings.embedder.model_id
    name = getattr(embeddings, "model", None) or getattr(embeddings, "model_name", None)
    openai = type(embeddings).__name__.startswith(("OpenAI", "AzureOpenAI"))
    prefix = OPENAI_EMBEDDING_PREFIX if openai else LANGCHAIN_EMBEDDING_PREFIX
    return f"{prefix}{name}" if name else f"{LANGCHAIN_EMBEDDING_PREFIX}{type(embeddings).__name__}"


class EmbedderAsLangChain(Embeddings):
    """A workbench embedder seen from LangChain, to hand to LangChain vector stores and tools."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embedder.embed_documents(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embedder.embed_query(text).tolist()


class EmbeddingService:
    """A server speaking OpenAI's `POST /embeddings` (Infinity, text-embeddings-inference, vLLM, OpenAI itself),
    named `http(s)://HOST:PORT[/PATH][#MODEL]`.

    The model is the one after '#', else the one the server lists at `GET /models` when it serves exactly one;
    `model_id` then carries it (`http://gpu:7997#all-MiniLM-L6-v2`), so a collection records which served model
    made its vectors. Texts go in batches of WORKBENCH_EMBEDDING_BATCH_SIZE, WORKBENCH_EMBEDDING_CONCURRENCY at
    once. It is called the way the remote rerankers are (`ServiceCaller`: one deadline a try, retries, replicas'
    own tokens), not through an SDK, because every answer is checked before a vector is kept: one vector for each
    text, placed by its `index` (never by position), all of one width, every number finite, no vector of zero
    length; each failure is one line naming the service. The token comes from the URL's user info or
    WORKBENCH_EMBEDDING_API_KEY; neither is ever part of the id."""

    def __init__(self, given: str, settings: Settings) -> None:
        base, _, model = given.partition(SERVED_MODEL_SEPARATOR)
        address = service_address(base, "/embeddings", SETTING)
        key = address.token or (settings.embedding_api_key.get_secret_value() if settings.embedding_api_key else None)
        self.base_url = str(address.url).removesuffix("/embeddings")
        self.timeout = settings.rerank_timeout
        words = ServiceWords(
            "The embedding service", SETTING, "set WORKBENCH_EMBEDDING_API_KEY to a valid token, or give it in the "
            "URL (http://:TOKEN@host)", "WORKBENCH_RERANK_TIMEOUT",
        )  # fmt: skip
        self.service = ServiceCaller(
            [str(address.url)], [key], words, timeout=self.timeout, retries=settings.rerank_retries
        )
        self.model = model.strip() or self._served_model()
        self.model_id = f"{address.public_id}{SERVED_MODEL_SEPARATOR}{self.model}"
        self.service.words = dataclasses.replace(words, noun=f"The embedding service for '{self.model}'")
        self.batch_size = settings.embedding_batch_size
        self.concurrency = settings.embedding_concurrency
        self._dimension: int | None = None

    def _served_model(self) -> str:
        try:
            listed = self.service.client.get(f"{self.base_url}/models", headers=self.service.headers())
        except httpx.HTTPError as exc:
            raise self.service.unreachable(exc) from exc
        try:
            served = [m.get("id") for m in listed.json().get("data", [])] if listed.status_code == 200 else []
        except (ValueError, AttributeError):
            served = []
        if len(served) != 1 or not isinstance(served[0], str):
            raise ConfigError(
                f"The embedding service at {redact_url(self.base_url)} lists {len(served)} models at /models: name "
                f"the one to use after '#' in {SETTING} (http://HOST:PORT#MODEL)."
            )
        return plain_text(served[0])

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = len(self.embed_query("dimension probe"))
        return self._dimension

    def _batch(self, texts: list[str]) -> np.ndarray:
        try:
            answer = self.service.post({"model": self.model, "input": texts, "encoding_format": "float"})
            vectors = served_vectors(answer, len(texts), self._dimension)
        except InvalidAnswer as exc:
            raise ModelError(
                f"{self.service.words.noun} at {self.service.shown_url} answered {exc}: its vectors cannot be "
                f"trusted, so none are kept. Check the service, or {SETTING}."
            ) from exc
        self._dimension = vectors.shape[1]
        return vectors

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        batches = [list(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        if len(batches) == 1 or self.concurrency == 1:
            return _normalise(np.vstack([self._batch(batch) for batch in batches]))
        with ThreadPoolExecutor(min(self.concurrency, len(batches)), thread_name_prefix="workbench-embed") as pool:
            return _normalise(np.vstack(list(pool.map(self._batch, batches))))

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def served_vectors(answer: Any, count: int, width: int | None) -> np.ndarray:
    """The vectors of an OpenAI-style `/embeddings` answer (`{data: [{index, embedding}]}`), in input order by
    their `index`; InvalidAnswer for anything a vector cannot be trusted from."""
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list):
        raise InvalidAnswer("without a list of vectors in 'data'")
    if len(data) != count:
        raise InvalidAnswer(f"{len(data)} vectors for {count} texts sent")
    rows: list[list[float] | None] = [None] * count
    for item in data:
        index = item.get("index") if isinstance(item, dict) else None
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            raise InvalidAnswer(f"index {plain_text(json.dumps(index))[:40]} for {count} texts sent")
        if rows[index] is not None:
            raise InvalidAnswer(f"text {index} twice")
        vector = item.get("embedding")
        if not isinstance(vector, list) or not vector:
            shown = "text (base64?)" if isinstance(vector, str) else plain_text(json.dumps(vector))[:20]
            raise InvalidAnswer(f"{shown} as the vector of text {index}, which is not a list of numbers")
        rows[index] = [finite_number(x, f"a number of the vector of text {index}") for x in vector]
    widths = {len(row) for row in rows if row is not None}
    if len(widths) != 1 or (width is not None and widths != {width}):
        expected = f" (this service's vectors have {width})" if width is not None else ""
        raise InvalidAnswer(f"vectors of {sorted(widths)} numbers{expected}")
    vectors = np.asarray(rows, dtype=np.float32)
    zero = np.flatnonzero(np.linalg.norm(vectors, axis=1) == 0)
    if zero.size:
        raise InvalidAnswer(f"a vector of zero length for text {int(zero[0])}, which matches nothing")
    return vectors


def _openai(model_id: str, settings: Settings) -> Embedder:
    if not os.environ.get("OPENAI_API_KEY"):
        raise ConfigError(f"Embedding model '{model_id}' needs OPENAI_API_KEY in the environment.")
    require_extra("openai", f"Embedding model '{model_id}'")
    from langchain_openai import OpenAIEmbeddings

    name = model_id.removeprefix(OPENAI_EMBEDDING_PREFIX)
    timeout = settings.store_timeout * 3
    return LangChainEmbedder(OpenAIEmbeddings(model=name, timeout=timeout, max_retries=1), model_id=model_id)


def _langchain_object(model_id: str, settings: Settings) -> Embedder:
    raise ConfigError(
        f"Collection was embedded with '{model_id}', a LangChain embeddings object the workbench cannot "
        "recreate by name: pass the same object as `embedder=` to the engine."
    )


@dataclasses.dataclass(frozen=True)
class EmbedderKind:
    """A kind of embedder: its name, which ids it takes, and how to build one from an id (as rerankers' kinds)."""

    name: str
    accepts: Callable[[str], bool]
    build: Callable[[str, Settings], Embedder]


# One line a kind; the first whose test accepts the id builds it. sentence-transformers is last and takes any id.
EMBEDDER_KINDS: tuple[EmbedderKind, ...] = (
    EmbedderKind("service", lambda model_id: model_id.startswith(SERVICE_SCHEMES), EmbeddingService),
    EmbedderKind("openai", lambda model_id: model_id.startswith(OPENAI_EMBEDDING_PREFIX), _openai),
    EmbedderKind("langchain", lambda model_id: model_id.startswith(LANGCHAIN_EMBEDDING_PREFIX), _langchain_object),
    EmbedderKind("sentence-transformers", lambda model_id: True, SentenceTransformerEmbedder),
)


def embedder_kind(model_id: str) -> EmbedderKind:
    """The kind of embedder an id names."""
    return next(kind for kind in EMBEDDER_KINDS if kind.accepts(model_id))


def create_embedder(model_id: str, settings: Settings) -> Embedder:
    """The embedder a model id names: `http(s)://...` an OpenAI-compatible embedding service, `openai:<model>`
    through langchain-openai, else sentence-transformers (`EMBEDDER_KINDS`, one line a kind)."""
    return embedder_kind(model_id).build(model_id, settings)

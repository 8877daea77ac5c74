"""Any LangChain or LlamaIndex vector store, attached from workbench.toml by its class and arguments, read-only.

    [collections.handbook]
    store = "langchain"                      # or "llamaindex"
    class = "langchain_milvus.Milvus"        # the store's class, by its import path
    embedding_model = "all-MiniLM-L6-v2"     # what its vectors were made with (the workbench embeds the queries)
    embedding_argument = "embedding_function"  # LangChain only: the keyword its embeddings go in (default "embedding")
    [collections.handbook.arguments]         # the class's own keyword arguments, as its documentation gives them
    collection_name = "handbook"
    connection_args = { uri = "./milvus.db" }

The class must live in a LangChain or LlamaIndex package (`langchain*`, `llama_index*`) and be one of its vector
store classes; nothing else is imported or called. A LangChain store is handed the embedding model wrapped as
LangChain `Embeddings` and searched as `LangChainCollection` searches it; a LlamaIndex store is asked with the query's
vector (`VectorStoreQuery`). Either is read: an ingest into it, or a delete, is refused in one line (the store's
writer owns it). Milvus Lite and LanceDB, whose engines ship inside their PyPI packages, are the tests' real stores.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from workbench.errors import ConfigError, StoreError
from workbench.redact import plain_text, shown
from workbench.stores.base import CONTENT_HASH_KEY, Collection
from workbench.stores.langchain import LangChainCollection
from workbench.types import Chunk, CollectionInfo, Hit, Metadata
from workbench.vocab import LANGCHAIN_STORE, LLAMAINDEX_STORE

OBJECT_STORE_KINDS = (LANGCHAIN_STORE, LLAMAINDEX_STORE)
EmbedderFor = Callable[[str], Any]  # a model id -> the workbench's embedder for it (the engine's `embedder`)
_PACKAGES = {LANGCHAIN_STORE: ("langchain",), LLAMAINDEX_STORE: ("llama_index",)}
_CLASS_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")
_KEYS = {"store", "class", "arguments", "embedding_model", "embedding_argument"}


@dataclass(frozen=True)
class ObjectStoreSpec:
    """A `[collections.<name>]` table naming a LangChain or LlamaIndex store class, checked."""

    name: str
    kind: str
    class_path: str
    arguments: dict[str, Any] = field(default_factory=dict, hash=False)
    embedding_model: str | None = None
    embedding_argument: str = "embedding"

    @classmethod
    def from_table(cls, name: str, table: dict[str, Any]) -> ObjectStoreSpec:
        """The table's store class and arguments; ConfigError naming the first thing wrong."""
        where = f"[collections.{plain_text(name)[:60]}]"
        kind = str(table.get("store"))
        unknown = sorted(set(table) - _KEYS)
        if unknown:
            said = ", ".join(plain_text(str(k))[:40] for k in unknown[:5])
            takes = ", ".join(sorted(_KEYS))
            raise ConfigError(f"{where} has keys a {kind} store does not take: {said} (it takes {takes}).")
        class_path = table.get("class")
        if not isinstance(class_path, str) or not _CLASS_PATH.match(class_path):
            raise ConfigError(f'{where} needs class = "package.module.Class": the {kind} store\'s import path.')
        if not class_path.split(".")[0].startswith(_PACKAGES[kind]):
            raise ConfigError(
                f"{where} class '{plain_text(class_path)[:80]}' is not in a {kind} package "
                f"({' or '.join(p + '*' for p in _PACKAGES[kind])}): only their vector stores are attached."
            )
        arguments = table.get("arguments", {})
        if not isinstance(arguments, dict):
            raise ConfigError(f"{where} arguments must be a table of the class's keyword arguments.")
        model = table.get("embedding_model")
        if model is not None and (not isinstance(model, str) or not model.strip()):
            raise ConfigError(f"{where} embedding_model must name a model (an id, a folder or a server's URL).")
        if kind == LLAMAINDEX_STORE and model is None:
            raise ConfigError(f"{where} needs embedding_model: a LlamaIndex store is asked with the query's vector.")
        argument = table.get("embedding_argument", "embedding")
        if not isinstance(argument, str) or not argument.isidentifier():
            raise ConfigError(f"{where} embedding_argument must be the keyword the class takes its embeddings in.")
        return cls(name, kind, class_path, dict(arguments), model, argument)

    def store_class(self) -> type:
        """The class, imported and checked to be a vector store of its family."""
        module_name, _, class_name = self.class_path.rpartition(".")
        where, named = f"[collections.{plain_text(self.name)[:60]}]", plain_text(self.class_path)[:80]
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            why = _one_line(exc, 120)
            raise ConfigError(f"{where} class '{named}': its package is not installed ({why}).") from exc
        found = getattr(module, class_name, None)
        base = _vector_store_base(self.kind)
        if not isinstance(found, type) or not issubclass(found, base):
            raise ConfigError(f"{where} class '{named}' is not a {self.kind} vector store (a {base.__name__}).")
        return found


def _one_line(error: object, limit: int) -> str:
    """An error's words as one line, control characters and secrets (a token in the arguments) masked."""
    return " ".join(shown(error).split())[:limit]


def _vector_store_base(kind: str) -> type:
    if kind == LANGCHAIN_STORE:
        from langchain_core.vectorstores import VectorStore

        return VectorStore
    from llama_index.core.vector_stores.types import BasePydanticVectorStore

    return BasePydanticVectorStore


def open_object_store(spec: ObjectStoreSpec, embedder_for: EmbedderFor | None = None) -> Collection:
    """The store the table names, made with its arguments (a LangChain store also gets the embedding model as its
    embeddings, `embedder_for(model_id)` asked on first use: the engine's own embedders), as a read-only
    collection."""
    store_class = spec.store_class()
    arguments = dict(spec.arguments)
    if spec.kind == LANGCHAIN_STORE:
        if spec.embedding_model is None:
            where = f"[collections.{plain_text(spec.name)[:60]}]"
            raise ConfigError(f"{where} needs embedding_model: the store embeds queries with it.")
        arguments[spec.embedding_argument] = langchain_embeddings(spec.embedding_model, embedder_for)
    try:
        store = store_class(**arguments)
    except Exception as exc:
        raise StoreError(
            f"{spec.class_path.rpartition('.')[2]} for collection '{plain_text(spec.name)[:60]}' did not open: "
            f"{type(exc).__name__}: {_one_line(exc, 160)}"
        ) from exc
    if spec.kind == LANGCHAIN_STORE:
        return ReadOnlyLangChainCollection(store, name=spec.name, embedding_model=spec.embedding_model)
    return LlamaIndexCollection(store, spec.name, spec.embedding_model or "")


def langchain_embeddings(model_id: str, embedder_for: EmbedderFor | None) -> Any:
    """The workbench's embedder for `model_id` as LangChain `Embeddings` (what a LangChain store embeds queries
    with), made on first use."""
    from langchain_core.embeddings import Embeddings

    def embedder() -> Any:
        if embedder_for is None:
            raise ConfigError(f"The store needs the embedder '{model_id}': search it through an Engine.")
        return embedder_for(model_id)

    class WorkbenchEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return np.asarray(embedder().embed_documents(texts), dtype=np.float32).tolist()

        def embed_query(self, text: str) -> list[float]:
            return np.asarray(embedder().embed_query(text), dtype=np.float32).tolist()

    return WorkbenchEmbeddings()


def _read_only(name: str, doing: str) -> StoreError:
    return StoreError(
        f"Collection '{name}' is attached read-only from workbench.toml (its writer owns it): it cannot {doing}."
    )


class ReadOnlyLangChainCollection(LangChainCollection):
    """A LangChain store attached from workbench.toml: searched, never written."""

    def info(self) -> CollectionInfo:
        return super().info().model_copy(update={"read_only": True, "written_by": f"LangChain ({self.location})"})

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray | None = None) -> None:
        raise _read_only(self.name, "take an ingest")

    def delete_chunks(self, ids: Sequence[str]) -> None:
        raise _read_only(self.name, "have chunks deleted")


class LlamaIndexCollection(Collection):
    """A LlamaIndex vector store, asked with the query's vector (the workbench embeds it with `embedding_model`)."""

    store: ClassVar[str] = LLAMAINDEX_STORE

    def __init__(self, vector_store: Any, name: str, embedding_model: str) -> None:
        self.vector_store, self.name, self._embedding_model = vector_store, name, embedding_model
        self.location = type(vector_store).__name__

    def count(self) -> int:
        return -1  # LlamaIndex's store interface has no count

    def info(self) -> CollectionInfo:
        return CollectionInfo(
            name=self.name, store=self.store, location=self.location, count=-1, embedding_model=self._embedding_model,
            written_by=f"LlamaIndex ({self.location})", read_only=True,
        )  # fmt: skip

    def search(
        self, k: int, filters: Metadata | None = None, *, vector: np.ndarray | None = None, text: str | None = None
    ) -> list[Hit]:
        from llama_index.core.vector_stores.types import ExactMatchFilter, MetadataFilters, VectorStoreQuery

        query = VectorStoreQuery(
            query_embedding=self.require_vector(vector), similarity_top_k=k,
            filters=MetadataFilters(filters=[ExactMatchFilter(key=key, value=value) for key, value in filters.items()])
            if filters else None,
        )  # fmt: skip
        found = self.vector_store.query(query)
        nodes = found.nodes or []
        similarities = found.similarities or [0.0] * len(nodes)
        hits = []
        for node, score in zip(nodes, similarities, strict=False):
            metadata = {key: value for key, value in (node.metadata or {}).items() if not key.startswith("_")}
            hits.append(Hit(id=str(node.node_id), text=node.get_content(), metadata=metadata, score=float(score)))
        return hits

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray | None) -> None:
        raise _read_only(self.name, "take an ingest")

    def stored_chunks(
        self, origins: Sequence[str], ids: Sequence[str] = (), key: str = CONTENT_HASH_KEY
    ) -> dict[str, str | None]:
        return {}  # never written by the workbench: none of its chunks are stored here

    def delete_chunks(self, ids: Sequence[str]) -> None:
        raise _read_only(self.name, "have chunks deleted")

    def browse(self, offset: int = 0, limit: int = 20) -> list[Chunk]:
        raise StoreError(f"{self.location} offers no way to list its documents; search it instead.")

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
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from workbench.errors import CollectionNotFoundError, ConfigError, StoreError
from workbench.redact import plain_text, shown
from workbench.stores.base import CONTENT_HASH_KEY, Collection
from workbench.stores.chroma import persistent_client, read_only_copy
from workbench.stores.langchain import LangChainCollection
from workbench.types import Chunk, CollectionInfo, Hit, Metadata
from workbench.vocab import LANGCHAIN_STORE, LLAMAINDEX_STORE

OBJECT_STORE_KINDS = (LANGCHAIN_STORE, LLAMAINDEX_STORE)
EmbedderFor = Callable[[str], Any]  # a model id -> the workbench's embedder for it (the engine's `embedder`)
_PACKAGES = {LANGCHAIN_STORE: ("langchain",), LLAMAINDEX_STORE: ("llama_index",)}
_CLASS_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")
_CLASS_PATH_MAX = 200  # characters: the longest import path of a vector store class in these packages is ~70
_ARGUMENTS_DEPTH = 8  # tables inside tables in `arguments` (connection_args = { ... } is two)
_KEYS = {"store", "class", "arguments", "embedding_model", "embedding_argument"}
# Constructor arguments with which a store class drops, empties or recreates what it opens: an attached store is
# read, so each is refused by name (unless it is set to a value that writes nothing). The values that write.
_WRITING_ARGUMENTS: dict[str, str] = {
    "drop_old": "drops the collection before opening it (langchain-milvus)",
    "pre_delete_collection": "deletes the collection before opening it (PGVector)",
    "force_recreate": "recreates the collection (Qdrant)",
    "recreate_collection": "recreates the collection",
    "overwrite": "overwrites the table",
    "delete_existing": "deletes what is stored",
    "reset": "empties the store",
}
_WRITING_MODES = {"overwrite", "create", "recreate"}  # LanceDB's `mode`
# LangChain's Chroma classes create the collection they are asked for, and Chroma's client writes to the folder it
# opens: these are opened on a read-only copy of the folder, and only for a collection the folder holds.
CHROMA_CLASSES = {
    "langchain_chroma.Chroma", "langchain_chroma.vectorstores.Chroma",
    "langchain_community.vectorstores.Chroma", "langchain_community.vectorstores.chroma.Chroma",
}  # fmt: skip
LANGCHAIN_CHROMA_DEFAULT = "langchain"  # the collection LangChain's Chroma opens when none is named


def _depth(value: Any, limit: int) -> int:
    """How deeply tables and arrays nest in `value`, counted up to `limit + 1` (never recursing past it)."""
    stack, deepest = [(value, 0)], 0
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level > limit:
            return deepest
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return deepest


def _writing_arguments(arguments: dict[str, Any]) -> list[str]:
    """The arguments among `arguments` with which a store class would write to what it opens."""
    named = []
    for key, value in arguments.items():
        if key in _WRITING_ARGUMENTS and value not in (False, None, 0, ""):
            named.append(f"{key} = {plain_text(str(value))[:20]}: {_WRITING_ARGUMENTS[key]}")
        elif key == "mode" and str(value).lower() in _WRITING_MODES:
            named.append(f'mode = "{plain_text(str(value))}": writes the table anew (LanceDB)')
    return named


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
        if isinstance(class_path, str) and len(class_path) > _CLASS_PATH_MAX:
            raise ConfigError(f"{where} class is {len(class_path):,} characters long: no store class is.")
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
        if _depth(arguments, _ARGUMENTS_DEPTH) > _ARGUMENTS_DEPTH:
            raise ConfigError(f"{where} arguments nest tables more than {_ARGUMENTS_DEPTH} deep: no store takes that.")
        writing = _writing_arguments(arguments)
        if writing:
            raise ConfigError(
                f"{where} is attached read-only, but its arguments would write to the store: {'; '.join(writing)}. "
                "Remove them: the workbench reads an attached store and never changes it."
            )
        model = table.get("embedding_model")
        if model is not None and (not isinstance(model, str) or not model.strip()):
            raise ConfigError(f"{where} embedding_model must name a model (an id, a folder or a server's URL).")
        if kind == LLAMAINDEX_STORE and model is None:
            raise ConfigError(f"{where} needs embedding_model: a LlamaIndex store is asked with the query's vector.")
        argument = table.get("embedding_argument", "embedding")
        if not isinstance(argument, str) or not argument.isidentifier():
            raise ConfigError(f"{where} embedding_argument must be the keyword the class takes its embeddings in.")
        return cls(name, kind, class_path, dict(arguments), model, argument)

    def info(self) -> CollectionInfo:
        """What the listing shows of this store without constructing it (a store is made when a search needs it):
        its class is checked importable and a vector store of its family, and a LangChain Chroma's folder to hold a
        Chroma database; a problem raises, as opening it would."""
        self.store_class()
        class_name = self.class_path.rpartition(".")[2]
        if self.class_path in CHROMA_CLASSES:
            folder = Path(str(self.arguments.get("persist_directory") or ""))
            if not (folder / "chroma.sqlite3").is_file():
                where = f"[collections.{plain_text(self.name)[:60]}]"
                raise StoreError(f"{where} persist_directory {folder} holds no Chroma database: nothing to read there.")
        family = "LangChain" if self.kind == LANGCHAIN_STORE else "LlamaIndex"
        return CollectionInfo(
            name=self.name, store=self.kind, location=class_name, count=-1, embedding_model=self.embedding_model,
            written_by=f"{family} ({class_name})", read_only=True,
        )  # fmt: skip

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


def open_object_store(
    spec: ObjectStoreSpec, embedder_for: EmbedderFor | None = None, *, snapshot_dir: str | Path | None = None
) -> Collection:
    """The store the table names, made with its arguments (a LangChain store also gets the embedding model as its
    embeddings, `embedder_for(model_id)` asked on first use: the engine's own embedders), as a read-only
    collection. A LangChain Chroma is opened on a copy of its folder kept under `snapshot_dir`, and only for a
    collection the folder holds (`chroma_arguments`)."""
    store_class = spec.store_class()
    arguments = dict(spec.arguments)
    if spec.class_path in CHROMA_CLASSES:
        arguments = chroma_arguments(spec, snapshot_dir)
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
    held = _held_collections(store)
    if held is not None:  # a store whose client can say it: the collection asked for is not there
        where = f"[collections.{plain_text(spec.name)[:60]}]"
        raise CollectionNotFoundError(
            plain_text(str(getattr(store, "collection_name", "")))[:60], f"{type(store).__name__} ({spec.name})", held,
            advice=f"It holds: {', '.join(held) or 'no collection'}. Set collection_name in {where[:-1]}.arguments].",
        )  # fmt: skip
    if spec.kind == LANGCHAIN_STORE:
        return ReadOnlyLangChainCollection(store, name=spec.name, embedding_model=spec.embedding_model)
    return LlamaIndexCollection(store, spec.name, spec.embedding_model or "")


def _held_collections(store: Any) -> list[str] | None:
    """The collections a store's client holds when the one the store was opened on is not among them (Milvus's
    client says so; searching it would answer "No index params provided"); None when it is there, or when the
    client cannot say."""
    client, name = getattr(store, "client", None), getattr(store, "collection_name", None)
    if not isinstance(name, str) or not callable(getattr(client, "has_collection", None)):
        return None
    if client.has_collection(name):
        return None
    listed = getattr(client, "list_collections", None)
    return sorted(plain_text(str(c))[:60] for c in listed()) if callable(listed) else []


def chroma_arguments(spec: ObjectStoreSpec, snapshot_dir: str | Path | None) -> dict[str, Any]:
    """A LangChain Chroma's arguments with its folder replaced by a client on a read-only copy of it: the folder
    must hold a Chroma database, and the collection must be one it holds (LangChain's Chroma creates any other)."""
    where = f"[collections.{plain_text(spec.name)[:60]}]"
    arguments = dict(spec.arguments)
    folder = arguments.pop("persist_directory", None)
    if not isinstance(folder, str) or not folder.strip() or {"client", "client_settings", "host"} & arguments.keys():
        raise ConfigError(
            f"{where} needs persist_directory: the folder LangChain's Chroma wrote (a Chroma server is attached "
            'with store = "chroma" and url = "http://...").'
        )
    name = arguments.get("collection_name", LANGCHAIN_CHROMA_DEFAULT)
    path = Path(folder)
    if not (path / "chroma.sqlite3").is_file():
        why = "does not exist" if not path.exists() else "holds no Chroma database (no chroma.sqlite3)"
        raise StoreError(f"{where} persist_directory {path} {why}: nothing to read there.")
    if snapshot_dir is None:
        raise ConfigError(f"{where} is a Chroma folder: it is opened through an Engine (a copy, never in place).")
    client = persistent_client(read_only_copy(path, Path(snapshot_dir)))
    held = sorted(c.name for c in client.list_collections())
    if not isinstance(name, str) or name not in held:
        shown_name = plain_text(str(name))[:60] + ("…" if len(str(name)) > 60 else "")
        raise CollectionNotFoundError(
            shown_name, f"chroma at {path}", held,
            advice=f"It holds: {', '.join(held) or 'no collection'}. Set collection_name in {where[:-1]}.arguments] "
            "to one of them (the workbench never creates one in an attached folder).",
        )  # fmt: skip
    arguments["client"] = client
    return arguments


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

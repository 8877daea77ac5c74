"""The store registry: a collection name maps to its store settings; stores load lazily, are cached, and
the registry is safe to call from many threads (no network call is made while its lock is held).

Reading never creates a store: listing or searching a folder that does not exist finds no collections
(a typo in --persist-dir does not leave an empty store behind); only creating a collection makes one.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.config import Settings
from workbench.errors import CollectionNotFoundError, ConfigError, InputError, error_message
from workbench.ingest_status import ingest_statuses
from workbench.inputs import validate_collection_name
from workbench.redact import plain_text, redact_url
from workbench.stores.base import Collection, StoreBackend
from workbench.stores.chroma import ChromaBackend
from workbench.stores.http_search import HttpSearchBackend
from workbench.stores.langchain import LangChainCollection
from workbench.stores.objects import OBJECT_STORE_KINDS, EmbedderFor, ObjectStoreSpec, open_object_store
from workbench.stores.pgvector import PgVectorBackend
from workbench.stores.qdrant import QdrantBackend
from workbench.types import CollectionInfo
from workbench.vocab import LANGCHAIN_STORE, STORE_KINDS, STORES, spoken

# The one registry of store kinds: each backend class carries its kind (named in `vocab.STORES`, with its URL
# setting and whether it runs embedded; tests/test_layout.py checks the two agree). A new kind is one class here.
STORE_BACKENDS: dict[str, type[StoreBackend]] = {
    backend.kind: backend for backend in (ChromaBackend, QdrantBackend, PgVectorBackend, HttpSearchBackend)
}
SERVER_STORES = STORE_KINDS


def _unknown_store(kind: str, where: str = "") -> ConfigError:
    return ConfigError(
        f"{where}Unknown store '{plain_text(kind)[:40]}': use {spoken(STORE_KINDS)}, or 'langchain' or 'llamaindex' "
        'with class = "package.Class" for any other vector store (docs/how-to/stores.md).'
    )


@dataclass(frozen=True)
class StoreConfig:
    """Where one named collection lives. `options` carries store-specific settings (pgvector's schema and
    table mapping)."""

    kind: str
    collection: str
    persist_dir: str | None = None
    url: str | None = None
    vector_store: Any = None
    timeout: float | None = None
    options: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @classmethod
    def at(
        cls,
        settings: Settings,
        kind: str,
        collection: str,
        *,
        url: str | None = None,
        persist_dir: str | Path | None = None,
        options: dict[str, Any] | None = None,
    ) -> StoreConfig:
        """A collection in a store of `kind`: at `url`, else in `persist_dir`, else at the URL configured for the
        kind (WORKBENCH_CHROMA_URL, ...), else in the kind's folder in the data folder (`<data_dir>/<kind>`)."""
        if kind not in STORES:
            raise _unknown_store(kind)
        url = url or (None if persist_dir else settings.url_of(kind))
        if not url and not persist_dir and STORES[kind].embedded:
            persist_dir = settings.embedded_dir(kind)
        return cls(
            kind=kind,
            collection=collection,
            persist_dir=None if url or persist_dir is None else str(persist_dir),
            url=url,
            timeout=settings.store_timeout,
            options={**settings.store_options(kind), **(options or {})},
        )

    @classmethod
    def from_settings(cls, settings: Settings, collection: str | None = None) -> StoreConfig:
        """A collection in the configured store (WORKBENCH_STORE and its URL or folder)."""
        return cls.at(
            settings,
            settings.store,
            collection or settings.collection,
            url=settings.store_url,
            persist_dir=settings.resolved_persist_dir,
        )

    @classmethod
    def from_mapping(cls, name: str, values: dict[str, Any], settings: Settings) -> StoreConfig:
        """A [collections.<name>] table of workbench.toml: store, url, persist_dir, collection, and the
        store's own options (pgvector: schema, table, id_column, text_column, embedding_column, ...)."""
        try:
            validate_collection_name(name)
        except InputError as exc:  # the judgments, experiments and files of a collection are kept by its name
            raise ConfigError(f"[collections.{plain_text(name)[:60]}] in workbench.toml: {exc}") from None
        values = dict(values)
        kind = str(values.pop("store", settings.store))
        if kind in OBJECT_STORE_KINDS:  # a LangChain or LlamaIndex class and its arguments
            spec = ObjectStoreSpec.from_table(name, {"store": kind, **values})
            return cls(kind=kind, collection=name, timeout=settings.store_timeout, options={"spec": spec})
        if kind not in STORES:
            raise _unknown_store(kind, f"Collection '{name}' names the store '{kind}'. ")
        url, persist_dir = values.pop("url", None), values.pop("persist_dir", None)
        target = str(values.pop("collection", name))
        return cls.at(settings, kind, target, url=url, persist_dir=persist_dir, options=values)

    @property
    def where(self) -> str:
        """The store this collection is in, safe to show and to compare: its kind and redacted URL or folder."""
        return f"{self.kind} {redact_url(self.url) if self.url else self.persist_dir or ''}".strip()

    @property
    def missing_folder(self) -> bool:
        """An embedded store with nothing to read yet: its folder does not exist, or (Chroma) holds no database.
        Reading such a folder opens nothing, so a listing or a search never writes a database into it."""
        if not (
            self.kind in STORES
            and STORES[self.kind].embedded
            and self.url is None
            and self.persist_dir not in (None, ":memory:")
        ):
            return False
        folder = Path(self.persist_dir)  # type: ignore[arg-type]
        return not folder.exists() or (
            self.kind == "chroma" and folder.is_dir() and not (folder / CHROMA_DATABASE).exists()
        )


CHROMA_DATABASE = "chroma.sqlite3"  # what a Chroma folder holds once anything was written to it


def open_backend(
    kind: str,
    persist_dir: str | Path | None = None,
    url: str | None = None,
    *,
    timeout: float | None = None,
    options: dict[str, Any] | None = None,
) -> StoreBackend:
    """The backend of a store kind at a folder or URL (clients are shared per location)."""
    if kind not in STORE_BACKENDS:
        raise _unknown_store(kind)
    return STORE_BACKENDS[kind].open(persist_dir, url, timeout=timeout, options=options)


def backend_for(config: StoreConfig) -> StoreBackend:
    """The backend holding the collection a StoreConfig names."""
    return open_backend(config.kind, config.persist_dir, config.url, timeout=config.timeout, options=config.options)


class StoreRegistry:
    """Maps collection names to store settings. Unregistered names live in the default store."""

    def __init__(self, settings: Settings, embedder: EmbedderFor | None = None) -> None:
        """`embedder(model_id)` gives the embedder a LangChain store named in workbench.toml embeds queries with
        (the engine passes its own)."""
        self.settings = settings
        self._embedder = embedder
        self._configs: dict[str, StoreConfig] = {}
        self._collections: dict[str, Collection] = {}
        self._lock = threading.RLock()

    def register(self, name: str, config: StoreConfig) -> None:
        """Point `name` at a collection in a particular store."""
        with self._lock:
            self._configs[name] = config
            self._collections.pop(name, None)

    def register_langchain(self, name: str, vector_store: Any) -> None:
        """Point `name` at a LangChain VectorStore object."""
        self.register(name, StoreConfig(kind=LANGCHAIN_STORE, collection=name, vector_store=vector_store))

    def register_collection(self, name: str, collection: Collection) -> None:
        """Serve `name` from a collection object already opened (its real store type is recorded)."""
        with self._lock:
            self._configs[name] = StoreConfig(
                kind=collection.store, collection=collection.name, vector_store=collection
            )
            self._collections[name] = collection

    def config(self, name: str) -> StoreConfig:
        """The store settings of `name`: registered in code, named in the settings, or the default store."""
        with self._lock:
            if name in self._configs:
                return self._configs[name]
        if name in self.settings.collections:
            return StoreConfig.from_mapping(name, self.settings.collections[name], self.settings)
        return StoreConfig.from_settings(self.settings, name)

    def _is_object(self, config: StoreConfig) -> bool:
        return config.vector_store is not None or config.kind in OBJECT_STORE_KINDS

    def backend(self, name: str | None = None) -> StoreBackend:
        """The backend holding `name` (the default store when None or unregistered)."""
        config = self.config(name or self.settings.collection)
        if self._is_object(config):
            raise ConfigError(
                f"'{name}' is a registered store object: it has no backend to create or delete collections."
            )
        return backend_for(config)

    def get(self, name: str) -> Collection:
        """The collection registered as `name`, opened on first use and cached."""
        with self._lock:
            if name in self._collections:
                return self._collections[name]
            config = self.config(name)
        if "spec" in config.options:  # named in workbench.toml by its class
            snapshots = self.settings.store_options("chroma")["snapshot_dir"]
            collection: Collection = open_object_store(config.options["spec"], self._embedder, snapshot_dir=snapshots)
        elif config.kind == LANGCHAIN_STORE:
            collection = LangChainCollection(config.vector_store, name=name)
        elif config.missing_folder:
            folder = Path(config.persist_dir or "").resolve()
            raise CollectionNotFoundError(name, f"{config.kind} at {folder}", advice=self._declared_advice(name, []))
        else:
            try:
                collection = backend_for(config).get(config.collection)
            except CollectionNotFoundError as exc:
                advice = self._declared_advice(name, exc.available, config.collection)
                if not advice or exc.advice:  # the store's own advice (a layout's names) says more
                    raise
                raise CollectionNotFoundError(config.collection, exc.store, exc.available, advice=advice) from exc
        with self._lock:
            return self._collections.setdefault(name, collection)

    def _declared_advice(self, name: str, available: list[str], collection: str | None = None) -> str:
        """What to do when a collection declared in workbench.toml is not where its table says (never "ingest":
        an attached store is its writer's); empty for a collection that is not declared."""
        if name not in self.settings.collections:
            return ""
        table = f"[collections.{plain_text(name)[:60]}]"
        if collection is None:
            return f"Its folder does not exist or holds no database yet: check persist_dir in {table}."
        held = ", ".join(plain_text(a)[:60] for a in sorted(available)[:20])
        if not held:
            return f"The store holds no collection: check persist_dir or url in {table}."
        return (
            f'The store holds: {held}. {table} reads the collection its key names unless collection = "..." '
            f'names another: add collection = "{plain_text(sorted(available)[0])[:60]}" (or the one you mean).'
        )

    def create(self, name: str, *, embedding_model: str, dimension: int) -> Collection:
        """Create (or open) `name` in its store, recording the embedding model and dimension."""
        config = self.config(name)
        if self._is_object(config):
            return self.get(name)
        collection = backend_for(config).create(config.collection, embedding_model=embedding_model, dimension=dimension)
        with self._lock:
            self._collections[name] = collection
        return collection

    def delete(self, name: str) -> None:
        """Delete the collection and forget the cached handle."""
        config = self.config(name)
        if config.missing_folder:
            raise CollectionNotFoundError(name, f"{config.kind} at {Path(config.persist_dir or '').resolve()}")
        self.backend(name).delete(config.collection)
        with self._lock:
            self._collections.pop(name, None)

    def forget(self, name: str) -> None:
        """Drop the cached handle of `name` (it is reopened on next use)."""
        with self._lock:
            self._collections.pop(name, None)

    def list(self) -> list[CollectionInfo]:
        """Collections in the default store, plus every registered one."""
        default = StoreConfig.from_settings(self.settings)
        infos = {} if default.missing_folder else {c.name: c for c in backend_for(default).list_collections()}
        with self._lock:
            registered = dict(self._configs)
        for name in self.settings.collections:
            if name not in registered:
                try:
                    registered[name] = self.config(name)
                except Exception as exc:  # a table that does not validate is listed with why
                    table = self.settings.collections[name]
                    kind = str(table.get("store", "?")) if isinstance(table, dict) else "?"
                    infos[name] = self._problem(name, kind, exc)
        for name, config in registered.items():
            if self._is_object(config) or name not in infos:
                infos[name] = self._listed(name, config)
        return sorted(self._with_ingests(infos, default).values(), key=lambda c: c.name)

    @staticmethod
    def _problem(
        name: str, kind: str, exc: BaseException, location: str = "", read_only: bool = True
    ) -> CollectionInfo:
        """A declared collection that cannot be opened, as the listing shows it: its problem in one line."""
        return CollectionInfo(
            name=name, store=plain_text(kind)[:40], location=location, count=-1, read_only=read_only,
            problem=error_message(exc),
        )  # fmt: skip

    def _listed(self, name: str, config: StoreConfig) -> CollectionInfo:
        """A registered collection as the listing shows it: a store class named in workbench.toml from its table
        (constructed only when a search needs it), any other opened; one that cannot be opened (not found, a
        server down, a class missing) is listed with its problem in one line, never left out."""
        spec = config.options.get("spec")
        try:
            with self._lock:
                opened = self._collections.get(name)
            if spec is not None and opened is None:
                return spec.info()
            return (opened or self.get(name)).info().model_copy(update={"name": name})
        except Exception as exc:
            return self._problem(name, config.kind, exc, config.where, read_only=spec is not None)

    def _with_ingests(self, infos: dict[str, CollectionInfo], default: StoreConfig) -> dict[str, CollectionInfo]:
        """The listing with the ingests under way into its collections (another process's included), and the
        collections an ingest is creating that the store does not list yet."""
        statuses = ingest_statuses(self.settings.data_dir)
        if not statuses:
            return infos
        for name, info in list(infos.items()):
            status = statuses.get((self.config(name).where, name))
            if status is not None:
                infos[name] = info.model_copy(update={"ingesting": status})
        for (where, name), status in statuses.items():
            if where == default.where and name not in infos:
                infos[name] = CollectionInfo(
                    name=name, store=default.kind, location=self.settings.store_location, count=0,
                    embedding_model=status.embedding_model, ingesting=status,
                )  # fmt: skip
        return infos

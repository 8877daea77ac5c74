"""PostgreSQL with pgvector: one table per collection in a configurable schema (default `workbench`).

Why one table per collection rather than one shared table with a collection column: each collection has its
own vector dimension (a `vector(dim)` column and its HNSW index need one), pgvector's HNSW index filters
*after* the nearest-neighbour walk, so a shared index would lose recall on small collections, and deleting
a collection is a `DROP TABLE`. A small `collections` table in the schema records each collection's table,
embedding model and dimension.

Tables: `id text primary key, text text, metadata jsonb, embedding vector(dim), origin text` with an HNSW
index (`vector_cosine_ops`) and a btree index on `origin`. Filters are JSONB containment (`metadata @>`),
which is equality with types: 2 matches 2, not "2". Scores are `1 - cosine distance`.

Existing tables (seed 004's `hc_ai_schema.hc_ai_table`) are read too: name the table and its id, text,
embedding and metadata columns (`table=`, `text_column=` ...); so are the tables LangChain's PGVector and LlamaIndex's
PGVectorStore write (`layout=`, `stores/pg_layouts.py`). Such collections are attached: read, never written.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from workbench.errors import CollectionNotFoundError, ConfigError, InputError, StoreError
from workbench.redact import redact_url
from workbench.stores.base import (
    CONTENT_HASH_KEY,
    ORIGIN_KEY,
    Collection,
    StoreBackend,
    batched,
    check_collection_name,
    clean_metadata,
)
from workbench.stores.pg_layouts import SOURCE_SCHEMA, PgSource, pg_source
from workbench.stores.postgres import close_pool, is_postgres_url, shared_pool, transaction
from workbench.stores.postgres import sql_ident as _ident
from workbench.types import Chunk, CollectionInfo, Hit, Metadata
from workbench.vocab import DEFAULT_STORE_TIMEOUT, STORES


def _qualified(table: str) -> str:
    schema, _, name = table.rpartition(".")
    return f"{_ident(schema, 'schema')}.{_ident(name, 'table')}" if schema else _ident(name, "table")


def table_for(collection: str) -> str:
    """The table a collection lives in: a readable prefix of its name and a hash (names may hold '.', '-')."""
    slug = re.sub(r"[^a-z0-9_]", "_", collection.lower())[:40]
    return f"c_{slug}_{hashlib.blake2b(collection.encode(), digest_size=4).hexdigest()}"


def _vector_text(vector: np.ndarray | Sequence[float]) -> str:
    return "[" + ",".join(f"{float(x):.8g}" for x in np.asarray(vector, dtype=np.float32)) + "]"


def _parse_vector(value: Any) -> list[float]:
    if isinstance(value, str):
        return [float(x) for x in value.strip("[]").split(",") if x]
    return [float(x) for x in value]


class PgVectorCollection(Collection):
    """One collection: a table the workbench made, or a named existing table (read-only)."""

    store: ClassVar[str] = "pgvector"

    def __init__(
        self,
        backend: PgVectorBackend,
        name: str,
        table: str,
        *,
        embedding_model: str | None,
        dimension: int | None,
        columns: dict[str, str | None] | None = None,
        source: PgSource | None = None,
    ) -> None:
        self._backend = backend
        self.source = source
        columns = source.columns if source is not None else columns
        self.name = name
        self.location = backend.location
        self.timeout = backend.timeout
        self.table = table
        self._embedding_model = embedding_model
        self._dimension = dimension
        self.external = columns is not None
        cols = columns or {"id": "id", "text": "text", "embedding": "embedding", "metadata": "metadata"}
        self._id = _ident(cols["id"] or "id", "id column")
        self._text = _ident(cols["text"] or "text", "text column")
        self._embedding = _ident(cols["embedding"] or "embedding", "embedding column")
        self._metadata = _ident(cols["metadata"], "metadata column") if cols.get("metadata") else None

    def _read_only(self) -> None:
        if self.source is not None:
            raise StoreError(
                f"'{self.name}' was written by {self.source.layout.writer}: the workbench reads it and never writes it."
            )
        if self.external:
            raise StoreError(
                f"'{self.name}' reads the existing table {self.table}: the workbench does not write to it. "
                "Ingest into a collection of its own instead."
            )

    def _meta(self) -> str:
        return self._metadata or "'{}'::jsonb"

    def _rows_of_this_collection(self, condition: str = "", params: Sequence[Any] = ()) -> tuple[str, list[Any]]:
        """A WHERE clause for the collection's rows (an attached source's, in a table it may share) and
        `condition`, with their parameters."""
        parts, values = [], []
        if self.source is not None and self.source.where:
            parts.append(f"({self.source.where})")
            values += list(self.source.params)
        if condition:
            parts.append(condition)
            values += list(params)
        return (f"WHERE {' AND '.join(parts)}" if parts else ""), values

    def _chunk(self, record_id: Any, text: str | None, metadata: Any) -> Chunk:
        if self.source is not None:
            return self.source.chunk(str(record_id), text, dict(metadata or {}))
        return Chunk(id=str(record_id), text=text or "", metadata=dict(metadata or {}))

    def count(self) -> int:
        where, params = self._rows_of_this_collection()
        with self._backend.cursor() as cur:
            cur.execute(f"SELECT count(*) FROM {_qualified(self.table)} {where}", params)
            return int(cur.fetchone()[0])

    def info(self) -> CollectionInfo:
        return CollectionInfo(
            name=self.name,
            store=self.store,
            location=self.location,
            count=self.count(),
            embedding_model=self._embedding_model,
            dimension=self._dimension,
            written_by=self.source.layout.writer
            if self.source is not None
            else ("another tool (its table named in workbench.toml)" if self.external else None),
            read_only=self.external,
        )

    def search(
        self,
        k: int,
        filters: Metadata | None = None,
        *,
        vector: np.ndarray | None = None,
        text: str | None = None,
        exact: bool = False,
    ) -> list[Hit]:
        query = _vector_text(self.require_vector(vector))
        condition, values = "", []
        if filters:
            if self._metadata is None:
                raise InputError(f"'{self.name}' has no metadata column to filter on.")
            condition, values = f"{self._metadata}::jsonb @> %s::jsonb", [json.dumps(filters)]
        where, params = self._rows_of_this_collection(condition, values)
        sql = (
            f"SELECT {self._id}::text, {self._text}, {self._meta()}, 1 - ({self._embedding} <=> %s::vector) "
            f"FROM {_qualified(self.table)} {where} ORDER BY {self._embedding} <=> %s::vector LIMIT %s"
        )
        with self._backend.cursor() as cur:
            # HNSW returns at most ef_search rows and filters after its walk: widen it and let it keep walking
            # until k rows pass the filter. `exact` reads every row instead (for recall measurements).
            cur.execute(f"SET LOCAL hnsw.ef_search = {min(max(2 * k, 100), 1000)}")
            cur.execute("SET LOCAL hnsw.iterative_scan = strict_order")
            if exact:
                cur.execute("SET LOCAL enable_indexscan = off")
            cur.execute(sql, [query, *params, query, k])
            rows = cur.fetchall()
        hits = []
        for record_id, text, metadata, score in rows:
            chunk = self._chunk(record_id, text, metadata)
            hits.append(Hit(id=chunk.id, text=chunk.text, metadata=chunk.metadata, score=float(score)))
        return hits

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray | None) -> None:
        self._read_only()
        if not chunks:
            return
        if vectors is None:
            raise InputError("pgvector collections store the workbench's vectors: pass vectors to upsert.")
        rows = []
        for chunk, vector in zip(chunks, vectors, strict=True):
            metadata = clean_metadata(chunk.metadata)
            rows.append((chunk.id, chunk.text, json.dumps(metadata), _vector_text(vector), metadata.get(ORIGIN_KEY)))
        with self._backend.cursor() as cur:
            cur.executemany(
                f"INSERT INTO {_qualified(self.table)} (id, text, metadata, embedding, origin) "
                "VALUES (%s, %s, %s::jsonb, %s::vector, %s) ON CONFLICT (id) DO UPDATE SET text = EXCLUDED.text, "
                "metadata = EXCLUDED.metadata, embedding = EXCLUDED.embedding, origin = EXCLUDED.origin",
                rows,
            )

    def stored_chunks(
        self, origins: Sequence[str], ids: Sequence[str] = (), key: str = CONTENT_HASH_KEY
    ) -> dict[str, str | None]:
        if self.external:
            return {}
        found: dict[str, str | None] = {}
        with self._backend.cursor() as cur:
            for column, values in (("origin", origins), ("id", ids)):
                for batch in batched(list(values), 1000):
                    cur.execute(
                        f"SELECT id, metadata->>%s FROM {_qualified(self.table)} WHERE {column} = ANY(%s)",
                        [key, list(batch)],
                    )
                    found.update({str(i): h for i, h in cur.fetchall()})
        return found

    def delete_chunks(self, ids: Sequence[str]) -> None:
        self._read_only()
        with self._backend.cursor() as cur:
            for batch in batched(list(ids), 1000):
                cur.execute(f"DELETE FROM {_qualified(self.table)} WHERE id = ANY(%s)", [list(batch)])

    def browse(self, offset: int = 0, limit: int = 20) -> list[Chunk]:
        where, params = self._rows_of_this_collection()
        with self._backend.cursor() as cur:
            cur.execute(
                f"SELECT {self._id}::text, {self._text}, {self._meta()} FROM {_qualified(self.table)} {where} "
                f"ORDER BY {self._id} OFFSET %s LIMIT %s",
                [*params, offset, limit],
            )
            return [self._chunk(i, t, m) for i, t, m in cur.fetchall()]

    def vectors(self, batch_size: int = 1000) -> tuple[list[str], np.ndarray]:
        where, params = self._rows_of_this_collection()
        with self._backend.cursor() as cur:
            cur.execute(
                f"SELECT {self._id}::text, {self._embedding}::text FROM {_qualified(self.table)} {where}", params
            )
            rows = cur.fetchall()
        return [str(i) for i, _ in rows], np.asarray([_parse_vector(v) for _, v in rows], dtype=np.float32)


class PgVectorBackend(StoreBackend):
    """Collections in a PostgreSQL database with the pgvector extension, at a `postgresql://` URL.

    `table` (with `id_column`, `text_column`, `embedding_column`, `metadata_column`) serves an existing
    table read-only, under any collection name.
    """

    kind: ClassVar[str] = "pgvector"

    def __init__(
        self,
        url: str,
        *,
        schema: str = "workbench",
        timeout: float = DEFAULT_STORE_TIMEOUT,
        table: str | None = None,
        id_column: str = "id",
        text_column: str = "text",
        embedding_column: str = "embedding",
        metadata_column: str | None = "metadata",
        embedding_model: str | None = None,
        layout: str | None = None,
    ) -> None:
        if not is_postgres_url(url):
            raise InputError(f"A PostgreSQL URL looks like postgresql://user@host:5432/db; got '{redact_url(url)}'.")
        self.url = url
        self.location = redact_url(url)
        self.timeout = timeout
        self.schema = schema
        _ident(schema, "schema")
        self._external = (
            {
                "table": table,
                "columns": {
                    "id": id_column,
                    "text": text_column,
                    "embedding": embedding_column,
                    "metadata": metadata_column,
                },
                "embedding_model": embedding_model,
            }
            if table
            else None
        )
        if table:
            _qualified(table)
        # another tool's tables (LangChain's, LlamaIndex's): found by name, in `public` unless a schema is named
        self._layout = layout if layout and not table else None
        self._embedding_model = embedding_model
        self._source_schema = SOURCE_SCHEMA if schema == "workbench" else schema
        self._pool = shared_pool(url, timeout)
        if not table and not self._layout:
            self._ensure_schema()

    @contextmanager
    def cursor(self) -> Iterator[Any]:
        """A cursor in a transaction (committed on success), from the shared pool."""
        with transaction(self._pool) as cur:
            yield cur

    @classmethod
    def open(
        cls,
        persist_dir: str | Path | None = None,
        url: str | None = None,
        *,
        timeout: float | None = None,
        options: dict[str, Any] | None = None,
    ) -> PgVectorBackend:
        if not url:
            raise ConfigError(
                f"The pgvector store needs a PostgreSQL URL: set {STORES['pgvector'].url_env} or pass --url."
            )
        return cls(url, timeout=timeout or DEFAULT_STORE_TIMEOUT, **(options or {}))

    def _ensure_schema(self) -> None:
        schema = _ident(self.schema, "schema")
        with self.cursor() as cur:
            cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
            cur.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
            cur.execute(
                f"CREATE TABLE IF NOT EXISTS {schema}.collections (name text PRIMARY KEY, table_name text NOT NULL, "
                "embedding_model text, dimension int, created_at timestamptz DEFAULT now())"
            )

    def _dimension_of(self, table: str, column: str) -> tuple[bool, int | None]:
        """Whether `table` has the vector column `column`, and its declared dimension (None when undeclared)."""
        schema, _, bare = table.rpartition(".")
        with self.cursor() as cur:
            cur.execute(
                "SELECT a.atttypmod FROM pg_attribute a JOIN pg_class c ON a.attrelid = c.oid "
                "JOIN pg_namespace n ON c.relnamespace = n.oid WHERE c.relname = %s AND n.nspname = %s "
                "AND a.attname = %s",
                [bare, schema or "public", column],
            )
            row = cur.fetchone()
        return row is not None, int(row[0]) if row and row[0] and row[0] > 0 else None

    def _row_dimension(self, table: str, column: str, where: str = "", params: tuple[Any, ...] = ()) -> int | None:
        """The dimension of the vectors a collection's rows hold, for a column that declares none (LangChain's
        PGVector, a `vector` column of a user's table): one row's `vector_dims`, so that a query embedder of another
        dimension is named before the search, not in PostgreSQL's words during it. None for no rows."""
        condition = f" WHERE {where}" if where else ""
        query = f"SELECT vector_dims({_ident(column, 'column')}) FROM {_qualified(table)}{condition} LIMIT 1"
        with self.cursor() as cur:
            cur.execute(query, params)
            row = cur.fetchone()
        return int(row[0]) if row and row[0] else None

    def _external_collection(self, name: str) -> PgVectorCollection:
        assert self._external is not None
        table = self._external["table"]
        column = self._external["columns"]["embedding"]
        found, dimension = self._dimension_of(table, column)
        if not found:
            raise CollectionNotFoundError(
                name, f"pgvector at {self.location} (no table {table} with a {column} column)"
            )
        dimension = dimension or self._row_dimension(table, column)
        return PgVectorCollection(
            self, name, table, embedding_model=self._external["embedding_model"], dimension=dimension,
            columns=self._external["columns"],
        )  # fmt: skip

    def _attached_collection(self, name: str) -> PgVectorCollection:
        assert self._layout is not None
        with self.cursor() as cur:
            source = pg_source(cur, self._layout, name, self._source_schema)
        if source is None:
            writers = {"langchain": "LangChain PGVector", "llamaindex": "LlamaIndex PGVectorStore"}
            named = writers.get(self._layout, "LangChain PGVector or LlamaIndex PGVectorStore")
            raise CollectionNotFoundError(
                name, f"pgvector at {self.location}",
                advice=f"No {named} collection is so named in schema {self._source_schema}: check the collection "
                f"(or LlamaIndex's table_name) and schema in its [collections.<name>] table of workbench.toml.",
            )  # fmt: skip
        column = source.columns["embedding"] or "embedding"
        _, dimension = self._dimension_of(source.table, column)
        dimension = dimension or self._row_dimension(source.table, column, source.where, source.params)
        return PgVectorCollection(
            self, name, source.table, embedding_model=self._embedding_model, dimension=dimension, source=source
        )

    def _rows(self) -> list[tuple[str, str, str | None, int | None]]:
        with self.cursor() as cur:
            cur.execute(
                f"SELECT name, table_name, embedding_model, dimension FROM {_ident(self.schema, 'schema')}.collections "
                "ORDER BY name"
            )
            return cur.fetchall()

    def _collection(self, row: tuple[str, str, str | None, int | None]) -> PgVectorCollection:
        name, table, model, dimension = row
        return PgVectorCollection(self, name, f"{self.schema}.{table}", embedding_model=model, dimension=dimension)

    def list_collections(self) -> list[CollectionInfo]:
        if self._external or self._layout:
            return []
        return [self._collection(row).info() for row in self._rows()]

    def exists(self, name: str) -> bool:
        return not self._external and not self._layout and any(row[0] == name for row in self._rows())

    def get(self, name: str) -> PgVectorCollection:
        if self._external:
            return self._external_collection(name)
        if self._layout:
            return self._attached_collection(name)
        rows = self._rows()
        for row in rows:
            if row[0] == name:
                return self._collection(row)
        raise CollectionNotFoundError(name, f"pgvector at {self.location}", [row[0] for row in rows])

    def create(self, name: str, *, embedding_model: str, dimension: int) -> PgVectorCollection:
        check_collection_name(name)
        if self._external or self._layout:
            where = self._external["table"] if self._external else f"{self._layout} tables"
            raise StoreError(f"{where}: an attached source, the workbench does not create collections there.")
        if self.exists(name):
            return self.get(name)
        schema = _ident(self.schema, "schema")
        bare = table_for(name)
        table = f"{schema}.{_ident(bare, 'table')}"
        with self.cursor() as cur:
            cur.execute(
                f"CREATE TABLE IF NOT EXISTS {table} (id text PRIMARY KEY, text text NOT NULL, "
                f"metadata jsonb NOT NULL DEFAULT '{{}}', embedding vector({int(dimension)}) NOT NULL, origin text)"
            )
            cur.execute(f"CREATE INDEX IF NOT EXISTS {bare}_hnsw ON {table} USING hnsw (embedding vector_cosine_ops)")
            cur.execute(f"CREATE INDEX IF NOT EXISTS {bare}_origin ON {table} (origin)")
            cur.execute(f"CREATE INDEX IF NOT EXISTS {bare}_metadata ON {table} USING gin (metadata jsonb_path_ops)")
            cur.execute(
                f"INSERT INTO {schema}.collections (name, table_name, embedding_model, dimension) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (name) DO NOTHING",
                [name, bare, embedding_model, int(dimension)],
            )
        return self.get(name)

    def delete(self, name: str) -> None:
        collection = self.get(name)
        if collection.external:
            collection._read_only()
        schema = _ident(self.schema, "schema")
        with self.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {_qualified(collection.table)}")
            cur.execute(f"DELETE FROM {schema}.collections WHERE name = %s", [name])

    def close(self) -> None:
        """Close the connection pool this backend shares with others on the same URL."""
        close_pool(self.url, self._pool)

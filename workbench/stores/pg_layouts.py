"""Tables other tools wrote into PostgreSQL with pgvector, read as attached collections (never written):

    LangChain (langchain-postgres `PGVector`)   one shared table `langchain_pg_embedding` (id, document, cmetadata,
                                                 embedding), its rows tied to a collection of
                                                 `langchain_pg_collection` by name
    LlamaIndex (`PGVectorStore`)                 a table `data_<table_name>` per store (node_id, text, metadata_,
                                                 embedding), the node's document in `metadata_.ref_doc_id`

`[collections.<name>] store = "pgvector"` with `layout = "langchain"` or `"llamaindex"` names the writer (the
collection's name, or its `collection = "..."`, is LangChain's collection or LlamaIndex's table name); `layout =
"auto"` finds which one holds it. The tables are in the `public` schema unless `schema` names another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workbench.errors import StoreError
from workbench.redact import plain_text
from workbench.stores.layouts import LANGCHAIN, LLAMAINDEX, Layout
from workbench.stores.postgres import sql_ident
from workbench.types import Chunk

PG_LAYOUTS = ("langchain", "llamaindex", "auto")
SOURCE_SCHEMA = "public"


@dataclass(frozen=True)
class PgSource:
    """Where an attached collection's rows are: the table, its columns, the rows that are the collection's (an SQL
    condition and its parameters), and the writer's layout (how a row's metadata become a chunk)."""

    table: str
    columns: dict[str, str | None]
    layout: Layout
    where: str = ""
    params: tuple[Any, ...] = field(default_factory=tuple)

    def chunk(self, record_id: str, text: str | None, metadata: dict[str, Any] | None) -> Chunk:
        """A row as a chunk, as the writer keeps it: the source's document id, its metadata without the writer's
        private keys."""
        payload = {self.layout.metadata_key: metadata or {}} if self.layout.metadata_key else dict(metadata or {})
        return self.layout.chunk(record_id, payload, document=text or "")


def langchain_source(name: str, schema: str = SOURCE_SCHEMA) -> PgSource:
    """LangChain's PGVector collection `name`: its rows of the shared embedding table."""
    quoted = sql_ident(schema, "schema")
    return PgSource(
        f"{schema}.langchain_pg_embedding",
        {"id": "id", "text": "document", "embedding": "embedding", "metadata": "cmetadata"},
        LANGCHAIN,
        f"collection_id = (SELECT uuid FROM {quoted}.langchain_pg_collection WHERE name = %s)",
        (name,),
    )


def llamaindex_source(name: str, schema: str = SOURCE_SCHEMA) -> PgSource:
    """LlamaIndex's PGVectorStore of table name `name`: the table `data_<name>` (LlamaIndex lowercases it)."""
    table = f"data_{name.lower()}"
    sql_ident(table, "table")
    return PgSource(
        f"{schema}.{table}", {"id": "node_id", "text": "text", "embedding": "embedding", "metadata": "metadata_"},
        LLAMAINDEX,
    )  # fmt: skip


def pg_source(cursor: Any, layout: str, name: str, schema: str = SOURCE_SCHEMA) -> PgSource | None:
    """The attached collection `name` in the layout named (`auto`: whichever writer's tables hold it), or None when
    they do not: reads the catalogue only."""
    if layout not in PG_LAYOUTS:
        raise StoreError(
            f"layout = '{plain_text(layout)[:40]}' is not a pgvector layout: use {', '.join(PG_LAYOUTS)}, or name the "
            "table and its columns (table, id_column, text_column, embedding_column, metadata_column)."
        )
    if layout in ("langchain", "auto") and _table_exists(cursor, schema, "langchain_pg_collection"):
        cursor.execute(f"SELECT 1 FROM {sql_ident(schema, 'schema')}.langchain_pg_collection WHERE name = %s", [name])
        if cursor.fetchone() is not None:
            return langchain_source(name, schema)
    if layout in ("llamaindex", "auto") and _table_exists(cursor, schema, f"data_{name.lower()}"):
        return llamaindex_source(name, schema)
    return None


def _table_exists(cursor: Any, schema: str, table: str) -> bool:
    cursor.execute(
        "SELECT 1 FROM pg_class c JOIN pg_namespace n ON c.relnamespace = n.oid "
        "WHERE c.relname = %s AND n.nspname = %s",
        [table, schema],
    )
    return cursor.fetchone() is not None

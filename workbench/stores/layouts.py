"""Where a record's text, id, document and metadata sit, for collections the workbench did not write.

A collection filled by LangChain, LlamaIndex or the workbench itself keeps the same things under other keys:

    the workbench   Qdrant payload {chunk_id, text, metadata}; Chroma documents + metadatas (with its origin keys)
    LangChain       Qdrant payload {page_content, metadata}; Chroma documents + metadatas
    LlamaIndex      Qdrant payload {_node_content (JSON with the text), doc_id, ref_doc_id, ... metadata keys at the
                    top}; Chroma documents + metadatas holding _node_content and the same keys

`detect` reads one record and names its writer; a `[collections.<name>]` table of workbench.toml may instead give
the keys (`text_key`, `id_key`, `document_key`, `title_key`, `metadata_key`), for any other writer. A collection
whose writer is not the workbench is *attached*: read, never written (`Layout.read_only`). Its documents keep the
source's own ids (a LlamaIndex node's `ref_doc_id`, a LangChain record's id), so judgments key on them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workbench.errors import StoreError
from workbench.redact import plain_text
from workbench.types import Chunk

MAPPING_KEYS = ("text_key", "id_key", "document_key", "title_key", "metadata_key")
_LLAMA_PRIVATE = ("_node_content", "_node_type", "doc_id", "ref_doc_id", "document_id")


@dataclass(frozen=True)
class Layout:
    """One writer's keys. `metadata_key` None: the metadata are the payload's other top-level keys."""

    name: str
    writer: str  # in words: "the workbench", "LangChain", "LlamaIndex", "the mapping in workbench.toml"
    text_key: str | None
    id_key: str | None
    document_key: str | None
    title_key: str | None = "title"
    metadata_key: str | None = "metadata"

    @property
    def read_only(self) -> bool:
        """Whether the workbench may write the collection: only its own."""
        return self.name != "workbench"

    def filter_key(self, key: str) -> str:
        """Where a metadata field sits in a Qdrant payload."""
        return f"{self.metadata_key}.{key}" if self.metadata_key else key

    def metadata(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        if self.metadata_key:
            return dict(payload.get(self.metadata_key) or {})
        private = {self.text_key, self.id_key, *(_LLAMA_PRIVATE if self.name == "llamaindex" else ())}
        return {k: v for k, v in payload.items() if k not in private}

    def text(self, payload: Mapping[str, Any], document: str | None = None) -> str:
        """The record's text: Chroma's document when it has one, else the payload's text key (LlamaIndex's node
        JSON for LlamaIndex)."""
        if document and not (self.name == "mapped" and self.text_key in payload):  # a declared key is used
            return document
        if self.name == "llamaindex":
            try:
                return str(json.loads(payload.get("_node_content") or "{}").get("text") or "")
            except (TypeError, ValueError):
                return ""
        value = payload.get(self.text_key) if self.text_key else None
        return "" if value is None else str(value)

    def chunk(self, record_id: object, payload: Mapping[str, Any], document: str | None = None) -> Chunk:
        """A stored record as a chunk: its id, text and metadata, with `document_id` the source's document (so
        judgments grade the source's own documents) and `title` where the writer keeps one."""
        chunk_id = str(payload.get(self.id_key) or record_id) if self.id_key else str(record_id)
        metadata = self.metadata(payload)
        if self.name != "workbench":
            document_id = payload.get(self.document_key) if self.document_key else None
            metadata.setdefault("document_id", str(document_id or chunk_id))
            if self.title_key and self.title_key not in metadata and payload.get(self.title_key):
                metadata["title"] = payload[self.title_key]
        return Chunk(id=chunk_id, text=self.text(payload, document), metadata=metadata)


WORKBENCH = Layout("workbench", "the workbench", "text", "chunk_id", None)
LANGCHAIN = Layout("langchain", "LangChain", "page_content", None, None)
LLAMAINDEX = Layout("llamaindex", "LlamaIndex", None, None, "ref_doc_id", metadata_key=None)
# Seed 001's Qdrant layout, and many a hand-written one: the text under `text`, every other key a metadata field.
PLAIN = Layout("plain", "another tool (its text under 'text')", "text", None, None, metadata_key=None)
KNOWN = {layout.name: layout for layout in (WORKBENCH, LANGCHAIN, LLAMAINDEX)}


def mapped(options: Mapping[str, Any]) -> Layout | None:
    """The layout a `[collections.<name>]` table names (`layout = "langchain"`, or the keys themselves), or None."""
    if options.get("layout") and options["layout"] != "auto":
        name = str(options["layout"])
        if name not in KNOWN:
            raise StoreError(
                f"layout = '{plain_text(name)[:40]}' names no layout: use auto, {', '.join(KNOWN)}, or the keys "
                f"({', '.join(MAPPING_KEYS)})."
            )
        return KNOWN[name]
    if not any(options.get(key) for key in MAPPING_KEYS):
        return None
    return Layout(
        "mapped", "the mapping in workbench.toml", options.get("text_key") or "text", options.get("id_key"),
        options.get("document_key"), options.get("title_key") or "title", options.get("metadata_key"),
    )  # fmt: skip


def detect(payload: Mapping[str, Any], *, has_document: bool = False) -> Layout | None:
    """The writer of a record, from its keys: the workbench, LangChain or LlamaIndex; None when the keys say
    nothing (a Chroma record with a document and plain metadata reads as LangChain's)."""
    if "_node_content" in payload:
        return LLAMAINDEX
    if "chunk_id" in payload and "text" in payload:
        return WORKBENCH
    if "page_content" in payload or has_document:
        return LANGCHAIN
    if isinstance(payload.get("text"), str):
        return PLAIN
    return None


def check_declared(layout: Layout, options: Mapping[str, Any], payload: Mapping[str, Any], *, has_document: bool,
                   name: str) -> Layout:  # fmt: skip
    """`layout`, once one stored record shows that what `[collections.<name>]` declares is there: a named layout
    is the one the record was written in, and every declared key is a key of the record. A declaration that would
    be silently ignored is refused, naming what the record holds."""
    keys = sorted(str(k) for k in payload)
    shown = ", ".join(plain_text(k)[:30] for k in keys[:12]) or "none"
    table = f"[collections.{plain_text(name)[:40]}]"
    if layout.name in KNOWN:
        found = detect(payload, has_document=has_document)
        if found is not None and found.name != layout.name:
            raise StoreError(
                f"{table} says layout = '{layout.name}', but its records were written by {found.writer} (their "
                f"keys: {shown}): use layout = '{found.name}' or 'auto'."
            )
        return layout
    for key in MAPPING_KEYS:
        value = options.get(key)
        if value and str(value) not in payload:
            raise StoreError(
                f"{table} declares {key} = '{plain_text(str(value))[:40]}', which its records do not hold (their "
                f"keys: {shown})."
            )
    return layout


def unknown_layout(name: str, keys: list[str]) -> StoreError:
    """The error for a collection whose records hold their text under keys no known writer uses."""
    shown = ", ".join(plain_text(k)[:30] for k in keys[:12]) or "none"
    return StoreError(
        f"'{name}' was not written by the workbench, LangChain or LlamaIndex (its records' keys: {shown}): name "
        f'where its text sits in workbench.toml, [collections.{plain_text(name)[:40]}] text_key = "..." (and '
        "id_key, document_key, title_key, metadata_key as needed)."
    )

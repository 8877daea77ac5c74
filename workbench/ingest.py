"""Ingestion: documents to chunks with stable ids, then embed + upsert in resumable units with progress.

Chunk ids are `<document id>::<chunk index>`; each chunk records a hash of its text and its `origin` (the
file, or BEIR passage, it came from). Documents are written one origin at a time, packed into units: for
each unit the store is asked which chunks it already holds for those origins; unchanged chunks are skipped,
new or changed ones are embedded and upserted, and chunks the origin no longer produces are deleted. So
re-ingesting the same files writes nothing, a shortened file loses its stale chunks, and an ingest killed
part-way (even with kill -9) resumes where it stopped and ends with exactly the chunks a clean run gives.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench.embeddings import Embedder
from workbench.errors import CollectionNotFoundError, IngestError, InputError
from workbench.inputs import normalise_value
from workbench.loaders import BEIR_ORIGIN, Document, load_path
from workbench.stores.base import CONTENT_HASH_KEY, ORIGIN_KEY, SOURCE_KEY, Collection
from workbench.stores.registry import StoreRegistry
from workbench.types import Chunk, IngestProblem, IngestReport

ProgressCallback = Callable[[int, int], None]
WriteListener = Callable[[list[Chunk], list[str]], None]
PlanListener = Callable[[list[Chunk]], None]  # the chunks to embed, before the first is embedded
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
# Chunks embedded and written per batch: small enough that an interrupted ingest loses little and the progress
# bar moves (the batches are cut from one length sort, so their size hardly changes the padding).
UNIT_CHUNKS = 256


def _units(text: str) -> list[str]:
    """Paragraphs, and sentences within long paragraphs: the pieces a chunk is packed from."""
    units: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = " ".join(paragraph.split())
        if paragraph:
            units.extend(_SENTENCE_END.split(paragraph))
    return units


def _hard_split(unit: str, size: int, overlap: int) -> list[str]:
    step = max(size - overlap, 1)
    return [unit[i : i + size] for i in range(0, max(len(unit) - overlap, 1), step)]


def split_text(text: str, chunk_size: int, chunk_overlap: int = 0) -> list[str]:
    """Pack sentences into chunks of at most `chunk_size` characters, each starting with up to
    `chunk_overlap` characters of the previous chunk's closing sentences."""
    if chunk_size < 1:
        raise InputError(f"chunk_size must be at least 1; got {chunk_size}.")
    if not 0 <= chunk_overlap < chunk_size:
        raise InputError(f"chunk_overlap must be at least 0 and below chunk_size ({chunk_size}); got {chunk_overlap}.")
    pieces: list[str] = []
    for unit in _units(text):
        pieces.extend(_hard_split(unit, chunk_size, chunk_overlap) if len(unit) > chunk_size else [unit])
    chunks: list[str] = []
    current: list[str] = []
    for piece in pieces:
        if current and len(" ".join([*current, piece])) > chunk_size:
            chunks.append(" ".join(current))
            carried: list[str] = []
            for previous in reversed(current):
                if (
                    len(" ".join([previous, *carried, piece])) > chunk_size
                    or len(" ".join([previous, *carried])) > chunk_overlap
                ):
                    break
                carried.insert(0, previous)
            current = carried
        current.append(piece)
    if current:
        chunks.append(" ".join(current))
    return chunks


def content_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


def chunk_documents(
    documents: Sequence[Document], chunk_size: int | None = 1000, chunk_overlap: int = 100, split_passages: bool = False
) -> list[Chunk]:
    """Split documents into chunks with stable ids. `chunk_size=None` keeps every document whole, and so do
    documents marked not chunkable (BEIR passages, which are final retrieval units) unless `split_passages` (a
    tuning run comparing chunk sizes on a BEIR corpus, its judgments folded back to documents)."""
    chunks: list[Chunk] = []
    for document in documents:
        if chunk_size is None or not (document.chunkable or split_passages):
            texts = [" ".join(document.text.split())]
        else:
            texts = split_text(document.text, chunk_size, chunk_overlap)
        for index, text in enumerate(texts):
            metadata = {
                **document.metadata,
                "document_id": document.id,
                "chunk_index": index,
                CONTENT_HASH_KEY: content_hash(text),
                ORIGIN_KEY: document.origin,
            }
            chunks.append(Chunk(id=f"{document.id}::{index}", text=text, metadata=metadata))
    return chunks


@dataclass
class WriteCounts:
    """What writing chunks to a collection did."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0


def _open_collection(registry: StoreRegistry, name: str, embedder: Embedder) -> Collection:
    try:
        existing = registry.get(name)
    except CollectionNotFoundError:
        return registry.create(name, embedding_model=embedder.model_id, dimension=embedder.dimension)
    recorded = existing.embedding_model()
    if recorded and not existing.embeds_documents and recorded != embedder.model_id:
        raise IngestError(
            f"Collection '{name}' was built with embedding model '{recorded}', not '{embedder.model_id}'. "
            f"Ingest into a new collection, or set WORKBENCH_EMBEDDING_MODEL={recorded}."
        )
    return existing


def _units_by_origin(chunks: Sequence[Chunk], size: int) -> list[list[Chunk]]:
    """Chunks grouped by origin (in first-seen order), the groups packed into units of about `size` chunks."""
    groups: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        groups.setdefault(str(chunk.metadata[ORIGIN_KEY]), []).append(chunk)
    units: list[list[Chunk]] = [[]]
    for group in groups.values():
        if units[-1] and len(units[-1]) + len(group) > size:
            units.append([])
        units[-1].extend(group)
    return [u for u in units if u]


def write_chunks(
    chunks: Sequence[Chunk],
    collection_name: str,
    *,
    registry: StoreRegistry,
    embedder: Embedder,
    unit_size: int = UNIT_CHUNKS,
    progress: ProgressCallback | None = None,
    on_write: WriteListener | None = None,
    on_plan: PlanListener | None = None,
) -> WriteCounts:
    """Write chunks: skip unchanged ones, delete stale ones, then embed and upsert the new or changed ones in
    batches of `unit_size`, longest first. `on_plan(chunks)` hears what is to be embedded before
    `progress` first hears anything; `on_write(upserted, deleted_ids)` hears of each write (the BM25 index follows
    them)."""
    ids = [c.id for c in chunks]
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        repeated = next(i for i in ids if i in seen or seen.add(i))  # type: ignore[func-returns-value]
        raise IngestError(f"Two documents produce the chunk id '{repeated}': give them distinct ids.")
    collection = _open_collection(registry, collection_name, embedder)
    counts = WriteCounts()
    total = len(chunks)
    todo: list[Chunk] = []
    stale: list[str] = []
    for unit in _units_by_origin(chunks, unit_size):  # what changed, origin by origin: reads only
        origins = sorted({str(c.metadata[ORIGIN_KEY]) for c in unit})
        stored = collection.stored_chunks(origins, [c.id for c in unit])
        changed = [c for c in unit if stored.get(c.id, "missing") != c.metadata[CONTENT_HASH_KEY]]
        produced = {c.id for c in unit}
        stale += [i for i in stored if i not in produced]
        todo += changed
        counts.unchanged += len(unit) - len(changed)
        counts.updated += sum(c.id in stored for c in changed)
        counts.added += sum(c.id not in stored for c in changed)
    if stale:
        collection.delete_chunks(stale)
        counts.removed = len(stale)
        if on_write:
            on_write([], stale)
    if on_plan:
        on_plan(todo)
    done = total - len(todo)
    if progress:
        progress(done, total)
    # One length sort over everything to embed: each batch holds texts of about one length, so little padding
    # (the embedder sorts only within a call). Each batch is stored as it is embedded: an ingest cut off loses
    # at most one batch, and the next run finds the rest unchanged.
    ordered = sorted(todo, key=lambda c: len(c.text), reverse=True)
    for start in range(0, len(ordered), unit_size):
        batch = ordered[start : start + unit_size]
        vectors = None if collection.embeds_documents else embedder.embed_documents([c.text for c in batch])
        collection.upsert(batch, vectors)
        if on_write:
            on_write(batch, [])
        done += len(batch)
        if progress:
            progress(done, total)
    return counts


def ingest_path(
    path: str | Path,
    collection_name: str,
    *,
    registry: StoreRegistry,
    embedder: Embedder,
    chunk_size: int | None = 1000,
    chunk_overlap: int = 100,
    text_columns: Sequence[str] | None = None,
    unit_size: int = UNIT_CHUNKS,
    progress: ProgressCallback | None = None,
    shown_as: str | None = None,
    on_write: WriteListener | None = None,
    on_plan: PlanListener | None = None,
    replace: bool = False,
    uploaded: bool = False,
    split_passages: bool = False,
) -> IngestReport:
    """Load, chunk, embed and store everything at `path` into `collection_name`.

    Files that cannot be read are listed in the report's `problems` and the rest are ingested; when no file
    yields any text, IngestError lists why. `shown_as` names `path` in messages (uploads live in temp folders).
    A local file whose name matches a document that came from a different file is kept beside it under a longer
    name, with a warning, unless `replace`. `uploaded` files have no lasting path: they are matched by name (a new
    upload of a name replaces it).
    """
    started = time.perf_counter()
    loaded = load_path(path, text_columns=text_columns, shown_as=shown_as)
    documents = _distinct_documents(loaded.documents, loaded.problems)
    if not documents:
        raise IngestError(_nothing_to_ingest(shown_as or path, loaded.problems))
    warnings: list[str] = []
    if not uploaded:  # a local path: each file's full path tells a different file from a new version
        documents = _keep_different_files_apart(documents, Path(path), registry, collection_name, replace, warnings)
    chunks = chunk_documents(documents, chunk_size, chunk_overlap, split_passages)
    counts = write_chunks(
        chunks,
        collection_name,
        registry=registry,
        embedder=embedder,
        unit_size=unit_size,
        progress=progress,
        on_write=on_write,
        on_plan=on_plan,
    )
    return IngestReport(
        collection=collection_name,
        store=registry.get(collection_name).store,
        files=loaded.files,
        documents=len(documents),
        chunks=len(chunks),
        added=counts.added,
        updated=counts.updated,
        unchanged=counts.unchanged,
        removed=counts.removed,
        problems=loaded.problems,
        warnings=warnings,
        seconds=round(time.perf_counter() - started, 3),
    )


def source_key(path: Path) -> str:
    """A short hash of a file's full path: what tells two files of the same name apart (the path itself is not
    stored, so no folder of the machine shows in a search result)."""
    return hashlib.sha256(str(path.resolve()).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _kept_as(key: str, stored: set[object]) -> bool:
    """Whether a file's source key is among the stored ones. Collections written before source keys were kept as
    text hold a key of digits (with at most one 'e') as the number it reads as: that number matches too, to the
    precision a store keeps a float in (Chroma returns 1.234e+300 as 1.2340000000000001e+300)."""
    if key in stored:
        return True
    number = normalise_value(key)
    if isinstance(number, str):
        return False
    return any(
        isinstance(kept, int | float) and not isinstance(kept, bool) and math.isclose(kept, number, rel_tol=1e-12)
        for kept in stored
    )


def _renamed(document: Document, old: str, new: str) -> Document:
    if document.id == old or document.id.startswith(f"{old}#"):
        new_id = new + document.id[len(old) :]
    else:  # ids of the file's own (CSV and JSONL rows)
        new_id = f"{new}:{document.id}"
    metadata = {**document.metadata, "source": new}
    return Document(new_id, document.text, metadata, document.chunkable, new)


def _keep_different_files_apart(
    documents: list[Document],
    root: Path,
    registry: StoreRegistry,
    collection_name: str,
    replace: bool,
    warnings: list[str],
) -> list[Document]:
    """Each document stamped with its file's source key; a file whose origin the collection already holds from a
    different file is renamed '<its folder>/<name>' (kept beside the other), unless `replace`."""
    base = root.resolve()
    for document in documents:
        where = base if base.is_file() else base / str(document.metadata.get("source") or document.origin)
        document.metadata[SOURCE_KEY] = source_key(where)
    try:
        collection = registry.get(collection_name)
    except CollectionNotFoundError:
        return documents
    keys = {d.origin: d.metadata[SOURCE_KEY] for d in documents}
    stored = collection.stored_chunks(sorted(keys), key=SOURCE_KEY)
    origins = collection.stored_chunks(sorted(keys), key=ORIGIN_KEY)
    stored_keys: dict[str, set[object]] = {}
    for chunk_id, key in stored.items():
        if key not in (None, "") and origins.get(chunk_id):  # a key kept as the number 0 is a key
            stored_keys.setdefault(str(origins[chunk_id]), set()).add(key)
    clashes = {o for o, k in keys.items() if o in stored_keys and not _kept_as(k, stored_keys[o])}
    passages = {o for o in clashes if o.startswith(BEIR_ORIGIN)}
    if passages:  # a passage is its corpus id, wherever the corpus lies: updated in place, never kept twice
        warnings.append(
            f"{len(passages)} passage(s) that '{collection_name}' holds came from a corpus in another folder: "
            "passages are matched by their corpus id, so this corpus's text replaces theirs where it differs "
            "(counted as updated)."
        )
        clashes -= passages
    if not clashes:
        return documents
    if replace:
        warnings.append(
            f"{len(clashes)} file(s) replaced documents of the same name that came from other files: "
            f"{', '.join(sorted(clashes)[:5])}."
        )
        return documents
    folder = (base.parent if base.is_file() else base).name or "other"
    renames = {origin: f"{folder}/{origin}" for origin in clashes}
    before = collection.stored_chunks(sorted(renames.values()), key=SOURCE_KEY)
    seen: set[object] = {key for key in before.values() if key not in (None, "")}
    for origin, new in sorted(renames.items()):
        if _kept_as(keys[origin], seen):
            continue  # kept beside it before: said then
        warnings.append(
            f"'{origin}' in '{collection_name}' came from a different file of the same name: this one is kept "
            f"beside it as '{new}'. Ingest with --replace (the app: \"Replace documents of the same name\") to "
            "replace it instead."
        )
    return [_renamed(d, d.origin, renames[d.origin]) if d.origin in renames else d for d in documents]


def _distinct_documents(documents: list[Document], problems: list[IngestProblem]) -> list[Document]:
    """Documents with distinct ids: a file that reuses an id another file already has is skipped whole."""
    owner: dict[str, str] = {}
    for document in documents:
        owner.setdefault(document.id, document.origin)
    clashing = {d.origin: owner[d.id] for d in documents if owner[d.id] != d.origin}
    for origin, other in clashing.items():
        problems.append(IngestProblem(name=origin, reason=f"uses document ids that {other} already has; skipped"))
    return [d for d in documents if d.origin not in clashing]


def _nothing_to_ingest(path: str | Path, problems: list[IngestProblem]) -> str:
    if not problems:
        return f"Nothing to ingest at {path}: the files hold no text."
    listed = "; ".join(f"{p.name}: {p.reason}" for p in problems[:5])
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return f"Nothing was ingested: no file could be read. {listed}{more}."

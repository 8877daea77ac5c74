"""Loaders: files and folders to documents (txt, md, pdf, csv, jsonl, and BEIR folders).

Every document gets an id that depends only on where it came from (a file's path relative to what was
ingested, plus its section, page or row) and an `origin`: the file (or BEIR passage) it belongs to, the unit
that re-ingest replaces whole. A file that cannot be read is reported as a `LoadProblem` with its name
(relative to the ingest root, never a temp path) and the reason, and the other files still load.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.errors import IngestError
from workbench.types import IngestProblem

SUPPORTED_SUFFIXES = (".txt", ".md", ".markdown", ".pdf", ".csv", ".jsonl")
_TEXT_KEYS = ("text", "content", "body", "passage", "document", "page_content")
_ID_KEYS = ("_id", "id", "doc_id", "docid", "document_id")
_PAGE_MARK = re.compile(r"<!--\s*page:?\s*(\d+)\s*-->", re.IGNORECASE)
CSV_FIELD_LIMIT = 16 * 1024 * 1024


@dataclass
class Document:
    """A unit of source text before chunking. `chunkable` is False for passages that are already final;
    `origin` is the file or passage it belongs to (re-ingesting an origin replaces all of its chunks)."""

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    chunkable: bool = True
    origin: str = ""

    def __post_init__(self) -> None:
        if not self.origin:
            self.origin = str(self.metadata.get("source") or self.id)


@dataclass
class Loaded:
    """What a path held: its documents, the files that could not be read, and how many files were read."""

    documents: list[Document]
    problems: list[IngestProblem]
    files: int


def is_beir_folder(path: Path) -> bool:
    """A BEIR dataset folder holds corpus.jsonl (and usually queries.jsonl and qrels/)."""
    return path.is_dir() and (path / "corpus.jsonl").is_file()


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


def load_path(path: str | Path, *, text_columns: Sequence[str] | None = None, shown_as: str | None = None) -> Loaded:
    """Every document in a file, a folder of files (recursively) or a BEIR folder.

    Raises IngestError only when the path itself is unusable; a bad file inside a folder becomes a problem.
    Hidden files and folders are skipped, and so are links that lead outside the folder. `shown_as` names
    the path in messages instead of the path itself (an upload's temp folder).
    """
    root = Path(path).expanduser()
    shown = shown_as or str(root)
    if not root.exists():
        raise IngestError(f"Nothing to ingest at {shown}: no such file or folder.")
    if is_beir_folder(root):
        return Loaded(list(load_beir_corpus(root / "corpus.jsonl")), [], 1)
    if root.is_file():
        return Loaded(load_file(root, root.name, text_columns=text_columns), [], 1)
    base = root.resolve()
    documents: list[Document] = []
    problems: list[IngestProblem] = []
    files = 0
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = file.relative_to(root)
        if _hidden(relative):
            continue
        name = relative.as_posix()
        if not file.resolve().is_relative_to(base):
            problems.append(IngestProblem(name=name, reason="a link to a file outside the folder; skipped"))
            continue
        if file.suffix.lower() not in SUPPORTED_SUFFIXES:
            problems.append(IngestProblem(name=name, reason=_unsupported(file.suffix)))
            continue
        files += 1
        try:
            documents.extend(load_file(file, name, text_columns=text_columns))
        except IngestError as exc:
            problems.append(IngestProblem(name=name, reason=str(exc).removeprefix(f"{name}: ")))
    if not files and not problems:
        raise IngestError(f"No files to ingest in {shown}: looked for {', '.join(SUPPORTED_SUFFIXES)}.")
    return Loaded(documents, problems, files)


def _unsupported(suffix: str) -> str:
    shown = suffix or "no extension"
    return f"unsupported type '{shown}' (use {', '.join(SUPPORTED_SUFFIXES)})"


def _read_text(path: Path, source: str) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise IngestError(f"{source}: not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8.") from exc
    except OSError as exc:
        raise IngestError(f"{source}: cannot be read ({exc.strerror or type(exc).__name__}).") from exc


def load_file(path: Path, source: str, *, text_columns: Sequence[str] | None = None) -> list[Document]:
    """The documents of one file; `source` is its name as recorded in ids, metadata and messages."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise IngestError(f"{source}: {_unsupported(path.suffix)}.")
    if suffix == ".pdf":
        return list(_load_pdf(path, source))
    text = _read_text(path, source)
    if "\x00" in text:
        raise IngestError(f"{source}: holds NUL bytes; it looks like a binary file, not {suffix} text.")
    if suffix == ".txt":
        return [Document(source, text, {"title": path.stem, "source": source})] if text.strip() else []
    if suffix in {".md", ".markdown"}:
        return list(_load_markdown(text, path.stem, source))
    if suffix == ".csv":
        return list(_load_csv(text, source, text_columns))
    return list(_load_jsonl(text.splitlines(), source))


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    if not text.startswith("---\n"):
        return {}, text
    end = text.find("\n---", 4)
    if end < 0:
        return {}, text
    fields = {}
    for line in text[4:end].splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip().strip('"')
    return fields, text[end + 4 :].lstrip("\n")


def _slug(heading: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-")


def _load_markdown(text: str, stem: str, source: str) -> Iterator[Document]:
    """One document per `## ` section; `# ` gives the title, `<!-- page: N -->` marks pages (a file without
    such marks has no pages: its passages carry none)."""
    meta, body = _front_matter(text)
    title = meta.pop("title", None)
    page: int | None = None
    section = ""
    index = 0
    seen_heading = False
    lines: list[str] = []

    def flush() -> Iterator[Document]:
        nonlocal index
        content = "\n".join(lines).strip()
        if content:
            metadata = {"title": title or stem, "source": source, **meta}
            if page is not None:
                metadata["page"] = page
            if section:
                metadata["section"] = section
                if "url" in meta:
                    metadata["url"] = f"{meta['url']}#{_slug(section)}"
            yield Document(f"{source}#{index}", content, metadata)
            index += 1

    for line in body.splitlines():
        mark = _PAGE_MARK.search(line)
        if mark:
            yield from flush()
            lines = []
            page = int(mark.group(1))
            continue
        if line.startswith("# ") and not seen_heading:
            title = title or line[2:].strip()
            seen_heading = True
            continue
        if line.startswith("## "):
            yield from flush()
            lines = []
            section = line[3:].strip()
            continue
        lines.append(line)
    yield from flush()


@contextlib.contextmanager
def _quiet_pdf_parser() -> Iterator[list[str]]:
    """pypdf's warnings about odd but readable files, kept (to explain a failure) instead of logged."""
    logger = logging.getLogger("pypdf")
    caught: list[str] = []

    class _Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            caught.append(record.getMessage())

    handler = _Keep(level=logging.WARNING)
    previous = (logger.propagate, logger.level)
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.WARNING)
    try:
        yield caught
    finally:
        logger.removeHandler(handler)
        logger.propagate, level = previous
        logger.setLevel(level)


def _load_pdf(path: Path, source: str) -> Iterator[Document]:
    with _quiet_pdf_parser() as warnings:
        try:
            from pypdf import PdfReader

            reader = PdfReader(str(path))
            if reader.is_encrypted:
                raise IngestError(f"{source}: the PDF is encrypted; save an unprotected copy.")
            title = (reader.metadata.title if reader.metadata else None) or path.stem
            pages = [(number, page.extract_text() or "") for number, page in enumerate(reader.pages, start=1)]
        except IngestError:
            raise
        except Exception as exc:
            detail = f"; parser said: {warnings[-1]}" if warnings else ""
            raise IngestError(f"{source}: not a readable PDF ({type(exc).__name__}: {exc}){detail}.") from exc
    for number, text in pages:
        if text.strip():
            yield Document(f"{source}#p{number}", text, {"title": str(title), "source": source, "page": number})


def _pick(row: Iterable[str], keys: tuple[str, ...]) -> str | None:
    lowered = {k.lower(): k for k in row if isinstance(k, str)}
    return next((lowered[k] for k in keys if k in lowered), None)


def _load_csv(text: str, source: str, text_columns: Sequence[str] | None) -> Iterator[Document]:
    """Rows as documents. The text is the `text`-like column, else the columns the user picked, else every
    column as 'name: value' lines; the other columns become metadata."""
    csv.field_size_limit(CSV_FIELD_LIMIT)
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        fieldnames = [name.strip() if isinstance(name, str) else name for name in (reader.fieldnames or [])]
    except csv.Error as exc:
        raise IngestError(f"{source}: not a readable CSV ({exc}).") from exc
    if not fieldnames:
        raise IngestError(f"{source}: the CSV has no header row.")
    if text_columns:
        missing = [c for c in text_columns if c not in fieldnames]
        if missing:
            raise IngestError(f"{source}: no column {', '.join(missing)} (columns: {', '.join(fieldnames)}).")
        body_keys = list(text_columns)
    else:
        text_key = _pick(fieldnames, _TEXT_KEYS)
        body_keys = [text_key] if text_key else []
    id_key = _pick(fieldnames, _ID_KEYS)
    seen: dict[str, int] = {}
    try:
        for number, raw in enumerate(reader, start=2):
            row = {(k.strip() if isinstance(k, str) else k): v for k, v in raw.items() if k is not None}
            keys = body_keys or [k for k in fieldnames if k != id_key]
            if len(keys) == 1:
                body = (row.get(keys[0]) or "").strip()
            else:
                body = "\n".join(f"{k}: {row[k].strip()}" for k in keys if (row.get(k) or "").strip())
            if not body:
                continue
            row_id = (row.get(id_key) or "").strip() if id_key else ""
            if row_id:
                if row_id in seen:
                    raise IngestError(f"{source}, line {number}: id '{row_id}' repeats line {seen[row_id]}.")
                seen[row_id] = number
            skip = set(body_keys) | {id_key}
            metadata = {k: v for k, v in row.items() if k not in skip and isinstance(v, str) and v.strip()}
            metadata.setdefault("source", source)
            yield Document(f"{source}#{row_id or number - 1}", body, metadata, origin=source)
    except csv.Error as exc:
        raise IngestError(f"{source}, line {reader.line_num}: {exc}.") from exc


def _json_document(record: dict[str, Any], default_id: str, source: str, location: str) -> Document | None:
    text_key = _pick(record, _TEXT_KEYS)
    if text_key is None:
        raise IngestError(f"{location}: no text field (one of {', '.join(_TEXT_KEYS)}).")
    body = str(record.get(text_key) or "").strip()
    if not body:
        return None
    id_key = _pick(record, _ID_KEYS)
    doc_id = str(record[id_key]) if id_key and record.get(id_key) not in (None, "") else default_id
    metadata = dict(record.get("metadata") or {}) if isinstance(record.get("metadata"), dict) else {}
    for key, value in record.items():
        if key not in {text_key, id_key, "metadata"} and isinstance(value, str | int | float | bool):
            metadata.setdefault(key, value)
    metadata.setdefault("source", source)
    return Document(doc_id, body, metadata, origin=source)


def iter_jsonl(lines: Iterable[str], location: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; IngestError naming the line when one is not an object."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            raise IngestError(f"{location}, line {number}: not valid JSON ({reason}).") from exc
        if not isinstance(record, dict):
            raise IngestError(f"{location}, line {number}: expected a JSON object.")
        yield number, record


def _load_jsonl(lines: list[str], source: str) -> Iterator[Document]:
    seen: dict[str, int] = {}
    for number, record in iter_jsonl(lines, source):
        document = _json_document(record, f"{source}#{number}", source, f"{source}, line {number}")
        if document is None:
            continue
        if document.id in seen:
            raise IngestError(f"{source}, line {number}: id '{document.id}' repeats line {seen[document.id]}.")
        seen[document.id] = number
        yield document


BEIR_ORIGIN = "beir:"  # a BEIR passage's origin is its corpus id: the same id is the same passage, wherever it is


def load_beir_corpus(path: Path) -> Iterator[Document]:
    """A BEIR corpus.jsonl: one passage per line, embedded as 'title text' as MTEB does; never chunked.
    Each passage is its own origin."""
    seen: dict[str, int] = {}
    name = f"{path.parent.name}/{path.name}"
    try:
        with path.open(encoding="utf-8-sig") as handle:
            for number, record in iter_jsonl(handle, name):
                doc_id = str(record.get("_id", number))
                if doc_id in seen:
                    raise IngestError(f"{name}, line {number}: _id '{doc_id}' repeats line {seen[doc_id]}.")
                seen[doc_id] = number
                title = str(record.get("title") or "").strip()
                body = str(record.get("text") or "").strip()
                text = f"{title} {body}".strip()
                if not text:
                    continue
                metadata = {"title": title or doc_id, "source": path.parent.name}
                extra = record.get("metadata")
                if isinstance(extra, dict):
                    metadata.update({k: v for k, v in extra.items() if isinstance(v, str | int | float | bool)})
                yield Document(doc_id, text, metadata, chunkable=False, origin=f"{BEIR_ORIGIN}{doc_id}")
    except UnicodeDecodeError as exc:
        raise IngestError(f"{name}: not UTF-8 text ({exc.reason}).") from exc

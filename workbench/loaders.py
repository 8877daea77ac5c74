"""Loaders: files and folders to documents (txt, md, pdf, csv, jsonl, and BEIR folders).

Every document gets an id that depends only on where it came from (a file's path relative to what was
ingested, plus its section, page or row), so ingesting the same files again yields the same ids.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.errors import IngestError

SUPPORTED_SUFFIXES = (".txt", ".md", ".markdown", ".pdf", ".csv", ".jsonl")
_TEXT_KEYS = ("text", "content", "body", "passage", "document", "page_content")
_ID_KEYS = ("_id", "id", "doc_id", "docid", "document_id")
_PAGE_MARK = re.compile(r"<!--\s*page:?\s*(\d+)\s*-->", re.IGNORECASE)


@dataclass
class Document:
    """A unit of source text before chunking. `chunkable` is False for passages that are already final."""

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    chunkable: bool = True


def is_beir_folder(path: Path) -> bool:
    """A BEIR dataset folder holds corpus.jsonl (and usually queries.jsonl and qrels/)."""
    return path.is_dir() and (path / "corpus.jsonl").is_file()


def load_path(path: str | Path) -> list[Document]:
    """Every document in a file, a folder of files (recursively) or a BEIR folder."""
    root = Path(path).expanduser()
    if not root.exists():
        raise IngestError(f"Nothing to ingest at {root}: no such file or folder.")
    if is_beir_folder(root):
        return list(load_beir_corpus(root / "corpus.jsonl"))
    if root.is_file():
        return load_file(root, root.name)
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES)
    if not files:
        raise IngestError(f"No files to ingest in {root}: looked for {', '.join(SUPPORTED_SUFFIXES)}.")
    documents: list[Document] = []
    for file in files:
        documents.extend(load_file(file, file.relative_to(root).as_posix()))
    return documents


def load_file(path: Path, source: str) -> list[Document]:
    """The documents of one file; `source` is its name as recorded in ids and metadata."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".pdf":
            return list(_load_pdf(path, source))
        text = path.read_text(encoding="utf-8")
    except IngestError:
        raise
    except UnicodeDecodeError as exc:
        raise IngestError(f"Cannot read {path}: it is not UTF-8 text ({exc.reason}).") from exc
    except Exception as exc:
        raise IngestError(f"Cannot read {path}: {exc}") from exc
    if suffix == ".txt":
        return [Document(source, text, {"title": path.stem, "source": source})] if text.strip() else []
    if suffix in {".md", ".markdown"}:
        return list(_load_markdown(text, path.stem, source))
    if suffix == ".csv":
        return list(_load_csv(text, source))
    if suffix == ".jsonl":
        return list(_load_jsonl(text.splitlines(), source, path))
    raise IngestError(f"Cannot ingest {path}: unsupported type '{suffix}' (use {', '.join(SUPPORTED_SUFFIXES)}).")


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
    """One document per `## ` section; `# ` gives the title, `<!-- page: N -->` marks pages."""
    meta, body = _front_matter(text)
    title = meta.pop("title", None)
    page = 1
    section = ""
    index = 0
    seen_heading = False
    lines: list[str] = []

    def flush() -> Iterator[Document]:
        nonlocal index
        content = "\n".join(lines).strip()
        if content:
            metadata = {"title": title or stem, "source": source, "page": page, **meta}
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


def _load_pdf(path: Path, source: str) -> Iterator[Document]:
    try:
        from pypdf import PdfReader

        reader = PdfReader(str(path))
        title = (reader.metadata.title if reader.metadata else None) or path.stem
        pages = [(number, page.extract_text() or "") for number, page in enumerate(reader.pages, start=1)]
    except Exception as exc:
        raise IngestError(f"Cannot read PDF {path}: {exc}") from exc
    for number, text in pages:
        if text.strip():
            yield Document(f"{source}#p{number}", text, {"title": title, "source": source, "page": number})


def _pick(row: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    lowered = {k.lower(): k for k in row}
    return next((lowered[k] for k in keys if k in lowered), None)


def _load_csv(text: str, source: str) -> Iterator[Document]:
    reader = csv.DictReader(text.splitlines())
    if not reader.fieldnames:
        raise IngestError(f"{source}: the CSV has no header row.")
    header = {name: name for name in reader.fieldnames}
    text_key = _pick(header, _TEXT_KEYS)
    if text_key is None:
        raise IngestError(
            f"{source}: no text column; name one of the columns {', '.join(_TEXT_KEYS)} "
            f"(found {', '.join(reader.fieldnames)})."
        )
    id_key = _pick(header, _ID_KEYS)
    for number, row in enumerate(reader, start=1):
        body = (row.get(text_key) or "").strip()
        if not body:
            continue
        row_id = (row.get(id_key) or "").strip() if id_key else ""
        metadata = {k: v for k, v in row.items() if k not in {text_key, id_key} and v not in (None, "")}
        metadata.setdefault("source", source)
        yield Document(f"{source}#{row_id or number}", body, metadata)


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
    return Document(doc_id, body, metadata)


def iter_jsonl(lines: Iterable[str], location: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; IngestError naming the line when one is not an object."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise IngestError(f"{location}, line {number}: not valid JSON ({exc.msg}).") from exc
        if not isinstance(record, dict):
            raise IngestError(f"{location}, line {number}: expected a JSON object.")
        yield number, record


def _load_jsonl(lines: list[str], source: str, path: Path) -> Iterator[Document]:
    for number, record in iter_jsonl(lines, path):
        document = _json_document(record, f"{source}#{number}", source, f"{path}, line {number}")
        if document:
            yield document


def load_beir_corpus(path: Path) -> Iterator[Document]:
    """A BEIR corpus.jsonl: one passage per line, embedded as 'title text' as MTEB does; never chunked."""
    with path.open(encoding="utf-8") as handle:
        for number, record in iter_jsonl(handle, path):
            doc_id = str(record.get("_id", number))
            title = str(record.get("title") or "").strip()
            body = str(record.get("text") or "").strip()
            text = f"{title} {body}".strip()
            if not text:
                continue
            metadata = {"title": title or doc_id, "source": path.parent.name}
            extra = record.get("metadata")
            if isinstance(extra, dict):
                metadata.update({k: v for k, v in extra.items() if isinstance(v, str | int | float | bool)})
            yield Document(doc_id, text, metadata, chunkable=False)

"""Candidates from a file: the first stage a production system already ran, exported, as a read-only collection.

Two forms. JSONL, one query a line: `{"query_id": ..., "query": ..., "hits": [{"id": ..., "text": ..., "score": ...,
"title": ..., "metadata": {...}}]}` (hits best first; a missing score reads as the rank's). Or a TREC run (`qid Q0
docid rank score tag`) with the texts from a BEIR corpus.jsonl (`corpus=`) and the query texts from the judged
queries (`queries=`). Registered under a name, it serves each query's hits as a collection would
(`Engine.registry.register_collection`), so evaluation, the gate and Compare rerank exactly those candidates.
Nothing is dropped silently: unknown ids, hits without text, duplicate hits and judged queries the file does not
answer are counted and named in `CandidatesFile.problems`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from workbench.errors import InputError, StoreError
from workbench.inputs import decode_text, read_user_file
from workbench.loaders import load_beir_corpus
from workbench.redact import plain_text
from workbench.stores.base import CONTENT_HASH_KEY, Collection
from workbench.types import Chunk, CollectionInfo, Hit, Metadata
from workbench.vocab import MAX_EXPORT_BYTES

CANDIDATES_STORE = "candidates"
_SHOWN = 5  # ids named in a problem line


def _text_key(query: str) -> str:
    return " ".join(query.split()).lower()


def _named(items: Sequence[str]) -> str:
    shown = ", ".join(plain_text(i)[:40] for i in items[:_SHOWN])
    return shown + (f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else "")


def _lines(path: Path) -> list[str]:
    return decode_text(read_user_file(path, "candidates file", MAX_EXPORT_BYTES), path.name).splitlines()


def _score(value: Any, rank: int, where: str) -> float:
    if value is None:
        return -float(rank)  # best first: the rank's order
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(f"{where}: the score must be a finite number; got {plain_text(repr(value))[:40]}.")
    return float(value)


class CandidatesFile(Collection):
    """A file of first-stage candidates, served per query text (read-only)."""

    store: ClassVar[str] = CANDIDATES_STORE
    embeds_queries: ClassVar[bool] = True  # the file answers by query text: nothing is embedded

    def __init__(self, name: str, source: str, hits: dict[str, list[Hit]], problems: list[str]) -> None:
        self.name = name
        self.location = source
        self.hits = hits  # normalized query text -> hits, best first
        self.problems = problems

    @classmethod
    def read(
        cls,
        path: str | Path,
        name: str,
        *,
        queries: Mapping[str, str] | None = None,
        corpus: str | Path | Mapping[str, tuple[str, str]] | None = None,
    ) -> CandidatesFile:
        """A JSONL candidates file, or a TREC run with `corpus` (a BEIR folder or corpus.jsonl, or the texts
        themselves: document id -> (title, text)) and `queries` (id -> text, the judged queries). Problems are
        counted and named; a malformed line is an InputError."""
        path = Path(path)
        lines = _lines(path)
        first = next((line for line in lines if line.strip()), "")
        if first.lstrip().startswith(("{", "[")):
            hits, problems = _from_jsonl(path.name, lines)
        else:
            if corpus is None or queries is None:
                raise InputError(
                    f"{path.name} is a TREC run: give the corpus its document ids come from (--corpus) and the "
                    "judged queries, so that each hit has its text."
                )
            hits, problems = _from_trec(path.name, lines, queries, corpus)
        if queries is not None:
            missing = [qid for qid, text in queries.items() if _text_key(text) not in hits]
            if missing:
                problems.append(f"{len(missing)} judged queries have no candidates in {path.name}: {_named(missing)}")
        if not hits:
            raise InputError(f"{path.name} holds no query with candidates.")
        return cls(name, path.name, hits, problems)

    def count(self) -> int:
        return sum(len(h) for h in self.hits.values())

    def info(self) -> CollectionInfo:
        return CollectionInfo(
            name=self.name, store=self.store, location=self.location, count=self.count(),
            written_by=f"the candidates file {self.location}", read_only=True,
        )  # fmt: skip

    def search(
        self, k: int, filters: Metadata | None = None, *, vector: np.ndarray | None = None, text: str | None = None
    ) -> list[Hit]:
        if text is None:
            raise InputError(f"The candidates of '{self.name}' are found by query text: pass text=.")
        hits = self.hits.get(_text_key(text), [])
        if filters:
            hits = [h for h in hits if all(h.metadata.get(key) == value for key, value in filters.items())]
        return hits[:k]

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray | None) -> None:
        raise StoreError(f"'{self.name}' is a file of candidates: the workbench reads it and never writes it.")

    def stored_chunks(
        self, origins: Sequence[str], ids: Sequence[str] = (), key: str = CONTENT_HASH_KEY
    ) -> dict[str, str | None]:
        return {}

    def delete_chunks(self, ids: Sequence[str]) -> None:
        self.upsert([], None)

    def browse(self, offset: int = 0, limit: int = 20) -> list[Chunk]:
        every = [Chunk(id=h.id, text=h.text, metadata=h.metadata) for hits in self.hits.values() for h in hits]
        return every[offset : offset + limit]


def _hit(doc_id: str, text: str, score: float, title: Any = None, metadata: Any = None) -> Hit:
    meta = dict(metadata) if isinstance(metadata, dict) else {}
    meta.setdefault("document_id", doc_id)
    if title:
        meta.setdefault("title", str(title))
    return Hit(id=doc_id, text=text, metadata=meta, score=score)


def _from_jsonl(source: str, lines: list[str]) -> tuple[dict[str, list[Hit]], list[str]]:
    hits: dict[str, list[Hit]] = {}
    empty: list[str] = []
    repeated: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source} line {number}"
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise InputError(f"{where} is not JSON ({type(exc).__name__}).") from exc
        if not isinstance(row, dict) or not isinstance(row.get("query"), str) or not isinstance(row.get("hits"), list):
            raise InputError(f'{where}: each line is {{"query_id", "query", "hits": [{{"id", "text", "score"}}]}}.')
        kept: list[Hit] = []
        seen: set[str] = set()
        for rank, item in enumerate(row["hits"], start=1):
            if not isinstance(item, dict) or item.get("id") in (None, ""):
                raise InputError(f"{where}: hit {rank} has no id.")
            doc_id = str(item["id"])
            if doc_id in seen:
                repeated.append(doc_id)
                continue
            seen.add(doc_id)
            text = item.get("text")
            if not isinstance(text, str) or not text.strip():
                empty.append(doc_id)
                continue
            kept.append(
                _hit(doc_id, text, _score(item.get("score"), rank, f"{where} hit {rank}"), item.get("title"),
                     item.get("metadata"))
            )  # fmt: skip
        key = _text_key(row["query"])
        if key in hits:
            raise InputError(
                f"{where}: the query '{plain_text(row['query'])[:80]}' is on an earlier line too; give each query's "
                "hits on one line (which list would be the system's?)."
            )
        hits[key] = kept
    return hits, _problems(
        (empty, "hits have no text and were left out"),
        (repeated, "hits repeat an id of the same query and were left out"),
    )


def _corpus(corpus: Path) -> dict[str, tuple[str, str]]:
    """id -> (title, text) from a BEIR corpus.jsonl (or the folder holding one), each text as an ingested BEIR
    passage reads ('title text'), so the reranker sees what it would see on the workbench's own copy."""
    path = corpus / "corpus.jsonl" if corpus.is_dir() else corpus
    if not path.is_file():
        raise InputError(f"The corpus {path.name} does not exist.")
    return {
        d.id: (str(d.metadata.get("title")) if d.metadata.get("title") != d.id else "", d.text)
        for d in load_beir_corpus(path)
    }


def _problems(*found: tuple[list[str], str]) -> list[str]:
    """One line for each kind of thing a file could not give: how many, what, and the first of them named."""
    return [f"{len(items)} {words}: {_named(items)}" for items, words in found if items]


def _from_trec(
    source: str, lines: list[str], queries: Mapping[str, str], corpus: str | Path | Mapping[str, tuple[str, str]]
) -> tuple[dict[str, list[Hit]], list[str]]:
    texts = corpus if isinstance(corpus, Mapping) else _corpus(Path(corpus))
    ranked: dict[str, list[tuple[float, str]]] = {}
    for number, line in enumerate(lines, start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 6:
            raise InputError(f"{source} line {number}: a TREC run line is 'qid Q0 docid rank score tag'.")
        try:
            score = float(parts[4])
        except ValueError:
            raise InputError(
                f"{source} line {number}: the score {plain_text(parts[4])[:20]} is not a number."
            ) from None
        ranked.setdefault(parts[0], []).append((_score(score, 0, f"{source} line {number}"), parts[2]))
    hits: dict[str, list[Hit]] = {}
    unknown_ids: list[str] = []
    unknown_queries = [qid for qid in ranked if qid not in queries]
    for qid, pairs in ranked.items():
        if qid not in queries:
            continue
        kept = []
        for score, doc_id in sorted(pairs, key=lambda p: -p[0]):
            if doc_id not in texts:
                unknown_ids.append(doc_id)
                continue
            title, text = texts[doc_id]
            kept.append(_hit(doc_id, text, score, title))
        hits[_text_key(queries[qid])] = kept
    return hits, _problems(
        (unknown_ids, "hits name documents the corpus does not hold"),
        (unknown_queries, "queries of the run are not judged here"),
    )

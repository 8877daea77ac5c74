"""Query sets: named, saved lists of queries (each with an id and a weight, such as its frequency in a log), from a
file (one query a line; CSV; JSONL), from a collection's judged queries, or from a search history. Evaluate, the
comparison of two configurations, Latency's load run and the gate all take one."""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, field_validator, model_validator

from workbench.errors import InputError
from workbench.evaluation.io import Dataset
from workbench.experiments.record import checksum
from workbench.inputs import csv_records, decode_text, read_user_file, validate_doc_id, validate_query
from workbench.loaders import iter_jsonl
from workbench.redact import plain_text
from workbench.types import CheckedModel
from workbench.vocab import MAX_EXPORT_BYTES, MAX_NAME_CHARS, MAX_QUERY_SET_QUERIES, MAX_QUERY_SET_TEXT_CHARS

_ID_COLUMNS = ("id", "_id", "query_id", "query-id", "qid")
_TEXT_COLUMNS = ("text", "query", "query_text", "question")
_WEIGHT_COLUMNS = ("weight", "frequency", "count", "freq")


class QueryItem(CheckedModel):
    """One query of a set: its id, its text, and its weight (1 unless a log said how often it is asked). Checked
    the same way however it arrives (a file, the API, MCP): visible text only, no unknown fields."""

    model_config = ConfigDict(extra="forbid")

    id: str
    text: str
    weight: float = 1.0

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        value = validate_doc_id(value)
        if any(unicodedata.category(ch) == "Cf" for ch in value):
            raise InputError(
                f"A query id holds an invisible format character (a bidi mark, a zero-width space): "
                f"{plain_text(repr(value))[:40]}."
            )
        return value

    @field_validator("text")
    @classmethod
    def _text(cls, value: str) -> str:
        return validate_query(value, MAX_QUERY_SET_TEXT_CHARS)

    @field_validator("weight")
    @classmethod
    def _weight(cls, value: float) -> float:
        if not math.isfinite(value) or value <= 0:
            raise InputError(f"A query's weight must be a positive number; got {value}.")
        return value


class QuerySet(CheckedModel):
    """A named list of queries, ids unique, texts not blank."""

    model_config = ConfigDict(extra="forbid")

    name: str
    source: str = ""
    queries: list[QueryItem] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        value = plain_text(value).strip()
        if not value or len(value) > MAX_NAME_CHARS:
            raise InputError(f"A query set's name is 1 to {MAX_NAME_CHARS} characters.")
        return value

    @model_validator(mode="after")
    def _checked(self) -> QuerySet:
        if not self.queries:
            raise InputError(f"The query set '{self.name}' has no queries.")
        if len(self.queries) > MAX_QUERY_SET_QUERIES:
            raise InputError(
                f"The query set '{self.name}' has {len(self.queries)} queries; at most {MAX_QUERY_SET_QUERIES}."
            )
        seen: set[str] = set()
        for item in self.queries:
            if item.id in seen:
                raise InputError(f"The query set '{self.name}' names the query id '{item.id[:80]}' twice.")
            seen.add(item.id)
        return self

    @property
    def texts(self) -> dict[str, str]:
        """id -> text, in the set's order."""
        return {item.id: item.text for item in self.queries}

    @property
    def weights(self) -> dict[str, float]:
        return {item.id: item.weight for item in self.queries}

    @property
    def checksum(self) -> str:
        """Of the ids and texts (what a run depends on)."""
        return checksum(self.texts)

    def judged(self, dataset: Dataset) -> Dataset:
        """The dataset's judgments for this set's queries (queries it did not judge are left out); InputError when
        it judged none of them."""
        qrels = {item.id: dataset.qrels[item.id] for item in self.queries if item.id in dataset.qrels}
        if not qrels:
            raise InputError(
                f"None of the {len(self.queries)} queries of '{self.name}' is judged in {dataset.name}: the query "
                "set's ids must be the judgments' query ids."
            )
        return Dataset(self.name, self.texts, qrels, dataset.corpus, dataset.groups)


def _item(number: int, query_id: Any, text: Any, weight: Any, where: str) -> QueryItem:
    text = plain_text(str(text or "")).strip()
    if not text:
        raise InputError(f"{where}, line {number}: the query is empty.")
    try:
        return _checked_item(number, query_id, text, weight, where)
    except InputError as exc:
        if str(exc).startswith(where):
            raise
        raise InputError(f"{where}, line {number}: {exc}") from None


def _checked_item(number: int, query_id: Any, text: str, weight: Any, where: str) -> QueryItem:
    try:
        value = 1.0 if weight in (None, "") else float(weight)
    except (TypeError, ValueError):
        raise InputError(f"{where}, line {number}: the weight '{str(weight)[:40]}' is not a number.") from None
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"{where}, line {number}: the weight must be a positive number; got {str(weight)[:40]}.")
    return QueryItem(id=str(query_id).strip() if query_id not in (None, "") else f"q{number}", text=text, weight=value)


def _pick(row: dict[str, Any], names: Iterable[str]) -> Any:
    lowered = {str(key).strip().lower(): value for key, value in row.items()}
    return next((lowered[name] for name in names if name in lowered), None)


def parse_query_set(name: str, raw: bytes, filename: str) -> QuerySet:
    """A query set from a file's bytes: `.jsonl` (objects with `text` or `query`, optional `_id`/`id` and
    `weight`/`frequency`), `.csv` (a header naming those columns), `.tsv` (`id<TAB>text[<TAB>weight]`, as BEIR
    and TREC topics files are written, or a header naming the columns), anything else one query a line.
    InputError naming the file and line of anything wrong."""
    where = Path(filename).name
    text = decode_text(raw, where)
    suffix = Path(filename).suffix.lower()
    items: list[QueryItem] = []
    if suffix == ".jsonl":
        for number, record in iter_jsonl(text.splitlines(), where):
            if not isinstance(record, dict):
                raise InputError(f"{where}, line {number}: expected a JSON object with text (or query).")
            items.append(
                _item(number, _pick(record, _ID_COLUMNS), _pick(record, _TEXT_COLUMNS),
                      _pick(record, _WEIGHT_COLUMNS), where)
            )  # fmt: skip
    elif suffix == ".csv":
        fields, rows = csv_records(text, where)
        if not any(column in fields for column in _TEXT_COLUMNS):
            raise InputError(f"{where}: the header must name the query column ({', '.join(_TEXT_COLUMNS)}).")
        for number, row in rows:
            items.append(
                _item(number, _pick(row, _ID_COLUMNS), _pick(row, _TEXT_COLUMNS), _pick(row, _WEIGHT_COLUMNS), where)
            )
    elif suffix == ".tsv" or _all_tabbed(text):  # id<TAB>text in a file of another name is TSV too
        items = _tsv_items(text, where)
    else:
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                items.append(_item(number, None, line, None, where))
    return QuerySet(name=name, source=f"file {where}", queries=items)


def _all_tabbed(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    return bool(lines) and all("\t" in line for line in lines)


def _tsv_items(text: str, where: str) -> list[QueryItem]:
    rows = [(number, line.split("\t")) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not rows:
        return []
    header = [cell.strip().lower() for cell in rows[0][1]]
    columns = (0, 1, 2)
    if any(name in header for name in _TEXT_COLUMNS):

        def position(names: tuple[str, ...]) -> int:
            return next((header.index(n) for n in names if n in header), -1)

        columns = (position(_ID_COLUMNS), position(_TEXT_COLUMNS), position(_WEIGHT_COLUMNS))
        rows = rows[1:]
    items = []
    for number, cells in rows:
        if columns == (0, 1, 2) and len(cells) < 2:
            raise InputError(f"{where}, line {number}: a .tsv line is id<TAB>text (optionally <TAB>weight).")
        cell = {i: cells[i] if 0 <= i < len(cells) else None for i in columns}
        items.append(_item(number, cell[columns[0]], cell[columns[1]], cell[columns[2]], where))
    return items


def read_query_set(name: str, path: str | Path) -> QuerySet:
    """A query set from a file (see `parse_query_set`)."""
    path = Path(path)
    return parse_query_set(name, read_user_file(path, "query file", MAX_EXPORT_BYTES), path.name)


def judged_query_set(name: str, dataset: Dataset) -> QuerySet:
    """The judged queries of a dataset (the demo's, a BEIR folder's, a collection's in the judgments store)."""
    items = [QueryItem(id=qid, text=text) for qid, text in dataset.queries.items()]
    return QuerySet(name=name, source=f"judged queries of {dataset.name}", queries=items)


def history_query_set(name: str, queries: Iterable[str]) -> QuerySet:
    """Queries from a search history, oldest first: each distinct text once, weighted by how often it was asked."""
    counts: dict[str, int] = {}
    for query in queries:
        text = plain_text(query).strip()
        if text:
            counts[text] = counts.get(text, 0) + 1
    items = [
        QueryItem(id=f"h{number}", text=text, weight=count) for number, (text, count) in enumerate(counts.items(), 1)
    ]
    return QuerySet(name=name, source="search history", queries=items)

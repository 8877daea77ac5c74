"""Query sets: named, saved lists of queries (each with an id and a weight, such as its frequency in a log), from a
file (one query a line; CSV; JSONL), from a collection's judged queries, or from a search history. Evaluate, the
comparison of two configurations, Latency's load run and the gate all take one."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator

from workbench.errors import InputError
from workbench.evaluation.io import Dataset
from workbench.experiments.record import checksum
from workbench.loaders import iter_jsonl
from workbench.redact import plain_text
from workbench.types import CheckedModel
from workbench.vocab import MAX_NAME_CHARS, MAX_QUERY_SET_QUERIES

_ID_COLUMNS = ("id", "_id", "query_id", "qid")
_TEXT_COLUMNS = ("text", "query", "query_text", "question")
_WEIGHT_COLUMNS = ("weight", "frequency", "count", "freq")


class QueryItem(CheckedModel):
    """One query of a set: its id, its text, and its weight (1 unless a log said how often it is asked)."""

    id: str
    text: str
    weight: float = 1.0

    @field_validator("weight")
    @classmethod
    def _weight(cls, value: float) -> float:
        if not math.isfinite(value) or value <= 0:
            raise InputError(f"A query's weight must be a positive number; got {value}.")
        return value


class QuerySet(CheckedModel):
    """A named list of queries, ids unique, texts not blank."""

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
    `weight`/`frequency`), `.csv` (a header naming those columns), anything else one query a line. InputError
    naming the file and line of anything wrong."""
    where = Path(filename).name
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: not UTF-8 text (byte {exc.start}); save it as UTF-8.") from None
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
        reader = csv.DictReader(io.StringIO(text))
        fields = [str(f).strip().lower() for f in reader.fieldnames or []]
        if not any(column in fields for column in _TEXT_COLUMNS):
            raise InputError(f"{where}: the header must name the query column ({', '.join(_TEXT_COLUMNS)}).")
        for number, row in enumerate(reader, start=2):
            items.append(
                _item(number, _pick(row, _ID_COLUMNS), _pick(row, _TEXT_COLUMNS), _pick(row, _WEIGHT_COLUMNS), where)
            )
    else:
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                items.append(_item(number, None, line, None, where))
    return QuerySet(name=name, source=f"file {where}", queries=items)


def read_query_set(name: str, path: str | Path) -> QuerySet:
    """A query set from a file (see `parse_query_set`)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"No query file at {path.name}.")
    return parse_query_set(name, path.read_bytes(), path.name)


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

"""Click logs in: a plain log (CSV or JSON lines: query, the ids shown in order, the ids clicked, session, time) or
User Behavior Insights 1.0 (its query records, with the hit ids returned, and its event records, whose clicks name
the object clicked), read into impressions.

A record that cannot be read (not JSON, not an object, a CSV without the columns) stops the import with its line
number. A record that can be read but says nothing usable is skipped and counted, and the count is printed: an
empty list, a click on an id that was not shown, an event whose query is not in the file.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.clicks.impressions import Impression, json_records
from workbench.clicks.models import MAX_POSITIONS
from workbench.errors import InputError
from workbench.inputs import csv_records, decode_text, read_user_file, validate_doc_id, visible_text
from workbench.redact import plain_text
from workbench.vocab import MAX_CLICK_LOG_BYTES, MAX_CLICK_LOG_ROWS, MAX_QUERY_CHARS

_PLAIN_COLUMNS = ("query", "shown", "clicked")  # without clicks every pair would be graded 0
_SEPARATORS = ("|", ";")


@dataclass
class ClickLog:
    """The impressions a log holds, how many rows it had, and what was skipped (reason -> count)."""

    source: str
    format: str
    rows: int
    impressions: list[Impression]
    skipped: dict[str, int] = field(default_factory=dict)


def _text(value: Any, what: str, where: str) -> str:
    if isinstance(value, bool) or (value is not None and not isinstance(value, str | int | float)):
        raise InputError(f"{where}: the {what} must be text; got {type(value).__name__}.")
    text = visible_text(plain_text(str(value if value is not None else "")))  # an invisible query is no query
    if len(text) > MAX_QUERY_CHARS * 4:
        raise InputError(f"{where}: the {what} is over {MAX_QUERY_CHARS * 4} characters.")
    return text


def _ids(value: Any, where: str) -> list[str]:
    """Ids as a JSON list, or a text of ids separated by spaces, | or ;."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("["):
            try:
                value = json.loads(stripped)
            except (ValueError, RecursionError):
                raise InputError(f"{where}: the id list {stripped[:40]!r} is not a JSON list.") from None
        else:
            for separator in _SEPARATORS:
                stripped = stripped.replace(separator, " ")
            value = stripped.split()
    if not isinstance(value, list):
        raise InputError(f"{where}: ids must be a list; got {type(value).__name__}.")
    ids = []
    for item in value:
        if not isinstance(item, str | int) or isinstance(item, bool):
            raise InputError(f"{where}: an id must be text; got {type(item).__name__}.")
        try:
            ids.append(validate_doc_id(str(item)))
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
    return ids


def _records(raw: bytes, name: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of a JSON-lines file, a JSON array, or a CSV with a header."""
    text = decode_text(raw, name)
    head = text.lstrip()[:1]
    json_file = Path(name).suffix.lower() in (".jsonl", ".ndjson", ".json") or head in ("{", "[")
    if head == "[":
        try:
            loaded = json.loads(text)
        except (ValueError, RecursionError):
            raise InputError(f"{name} starts like a JSON array but is not valid JSON.") from None
        for number, record in enumerate(loaded if isinstance(loaded, list) else [loaded], start=1):
            yield number, _object(record, f"{name}, item {number}")
        return
    if json_file:
        yield from json_records(text, name)
        return
    columns, rows = csv_records(text, name)
    missing = [c for c in _PLAIN_COLUMNS if c not in columns]
    if missing:
        raise InputError(
            f"{name} is neither JSON lines nor a CSV with the columns query and shown, and clicked (session and "
            "time optional); "
            f"it has no {', '.join(missing)} (its columns: {', '.join(sorted(columns))[:120] or 'none'})."
        )
    yield from rows


def _object(record: Any, where: str) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise InputError(f"{where}: not a JSON object.")
    return record


def _plain(record: dict[str, Any], where: str, skipped: Counter[str]) -> Impression | None:
    query = _text(record.get("query"), "query", where)
    shown = _ids(record.get("shown"), where)
    clicked = _ids(record.get("clicked"), where)
    if not query:
        skipped["rows without a query"] += 1
        return None
    if not shown:
        skipped["rows that showed nothing"] += 1
        return None
    return _impression(query, shown, clicked, record.get("session"), record.get("time"), skipped)


def _impression(
    query: str, shown: list[str], clicked: list[str], session: Any, time: Any, skipped: Counter[str]
) -> Impression:
    unique = list(dict.fromkeys(shown))
    if len(unique) < len(shown):  # a list cannot show one document twice: its first place is the one counted
        skipped["ids shown twice in one list (the first place kept)"] += len(shown) - len(unique)
    if len(unique) > MAX_POSITIONS:
        skipped[f"results shown past position {MAX_POSITIONS} (not counted)"] += len(unique) - MAX_POSITIONS
    on_list = set(unique)
    off_list = [doc for doc in clicked if doc not in on_list]
    if off_list:
        skipped["clicks on ids not shown in their list"] += len(off_list)
    return Impression(
        query=query, shown=tuple(unique), clicked=frozenset(d for d in clicked if d in on_list),
        session=plain_text(str(session or ""))[:128], time=plain_text(str(time or ""))[:64],
    )  # fmt: skip


def _is_click(action: Any) -> bool:
    name = str(action or "").strip().lower()
    return name == "click" or name.startswith("click") or name.endswith("_click")


def _ubi_click(record: dict[str, Any], at: str, skipped: Counter[str]) -> tuple[str, list[str], str] | None:
    """(query_id, the object clicked, session) of a UBI click event; None for another event, or a click that names
    no query or object (counted)."""
    if not _is_click(record.get("action_name")):
        return None
    query_id = str(record.get("query_id") or "")
    attributes = record.get("event_attributes")
    target = attributes.get("object") if isinstance(attributes, dict) else None
    object_id = target.get("object_id") if isinstance(target, dict) else None
    if not query_id or object_id in (None, ""):
        skipped["click events without a query_id or object_id"] += 1
        return None
    return query_id, _ids([object_id], at), str(record.get("session_id") or "")


def _ubi(records: list[tuple[int, dict[str, Any]]], where: str, skipped: Counter[str]) -> list[Impression]:
    """UBI 1.0: query records (query_id, user_query, query_response_hit_ids, client_id, timestamp) and event records
    (action_name, query_id, session_id, event_attributes.object.object_id); a click event credits its object."""
    queries: dict[str, dict[str, Any]] = {}
    clicks: dict[str, list[str]] = {}
    sessions: dict[str, str] = {}
    for number, record in records:
        if "action_name" in record:
            click = _ubi_click(record, f"{where}, record {number}", skipped)
            if click is not None:
                query_id, objects, session = click
                clicks.setdefault(query_id, []).extend(objects)
                if session:
                    sessions.setdefault(query_id, session)
            continue
        query_id = str(record.get("query_id") or "")
        if not query_id:
            skipped["query records without a query_id"] += 1
        elif query_id in queries:
            skipped["repeated query_ids (the first record of each kept)"] += 1
        else:
            queries[query_id] = record
    if queries and not any("action_name" in r for _, r in records):
        raise InputError(
            f"{where} holds UBI queries but no events: give the events file (--events), or every pair would be "
            "graded 0."
        )
    impressions = []
    for query_id, record in queries.items():
        at = f"{where}, query {query_id[:40]}"
        text = _text(record.get("user_query"), "user_query", at)
        hits = record.get("query_response_hit_ids", record.get("query_response_object_ids"))
        shown = _ids(hits, at)
        if not text:
            skipped["queries without a user_query"] += 1
        elif not shown:
            skipped["queries that showed nothing"] += 1
        else:
            session = sessions.get(query_id) or record.get("session_id") or record.get("client_id")
            impressions.append(
                _impression(text, shown, clicks.pop(query_id, []), session, record.get("timestamp"), skipped)
            )
    unmatched = sum(len(c) for c in clicks.values())
    if unmatched:
        skipped["clicks whose query_id is not among the queries"] += unmatched
    return impressions


def read_click_log(path: str | Path, events: str | Path | None = None) -> ClickLog:
    """The impressions of a click log: plain (CSV or JSON lines with query, shown, clicked, session, time), or UBI
    1.0 (its queries, and its events in the same file or in `events`)."""
    files = [Path(path), *([Path(events)] if events is not None else [])]
    records: list[tuple[int, dict[str, Any]]] = []
    for file in files:
        for number, record in _records(read_user_file(file, "click log", MAX_CLICK_LOG_BYTES), file.name):
            records.append((number, record))
            if len(records) > MAX_CLICK_LOG_ROWS:
                raise InputError(
                    f"The click log has more than {MAX_CLICK_LOG_ROWS:,} rows; give a sample of it (the click models "
                    "need a few dozen impressions of a pair, not every one)."
                )
    if not records:
        raise InputError(f"{files[0].name} has no rows.")
    skipped: Counter[str] = Counter()
    ubi = any("user_query" in r or "action_name" in r for _, r in records[:100]) or events is not None
    if ubi:
        impressions = _ubi(records, files[0].name, skipped)
    else:
        read = (_plain(r, f"{files[0].name}, line {n}", skipped) for n, r in records)
        impressions = [i for i in read if i is not None]
    if not impressions:
        reasons = "; ".join(f"{count:,} {reason}" for reason, count in skipped.items()) or "no rows"
        raise InputError(f"{files[0].name} holds no impression with a query and the ids shown ({reasons}).")
    if not any(i.clicked for i in impressions):
        raise InputError(
            f"{files[0].name} holds {len(impressions):,} impressions and not one click on a shown id: every pair "
            "would be graded 0. Is the clicked column (or, for UBI, the events file) missing or misnamed?"
        )
    return ClickLog(
        source=" + ".join(f.name for f in files), format="UBI 1.0" if ubi else "plain log", rows=len(records),
        impressions=impressions, skipped=dict(skipped),
    )  # fmt: skip

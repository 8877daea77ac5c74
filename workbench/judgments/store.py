"""The judgments store: every grade ever given, with who gave it, when and how (person, LLM or import).

A re-rating adds a row; nothing is overwritten, so the history of a (query, document) pair is always there and
the current grade is chosen from it by a policy (`current_grades`). Queries are kept with their text, so a query
typed later that matches a judged one finds its grades.

SQLite in the data folder (`judgments.sqlite3`, WAL) by default; PostgreSQL (tables `judgments` and
`judged_queries` in the workbench's schema) when WORKBENCH_SESSION_DB is a `postgresql://` URL, the same place as
sessions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from workbench.config import Settings
from workbench.stores.kept import KeptStore, OnePerLocation, PostgresTables, SqliteFile, open_kept
from workbench.vocab import DEFAULT_STORE_TIMEOUT, MACHINE_SOURCES, RATER_POLICY_PREFIX

_COLUMNS = "collection, query_id, doc_id, grade, rater, source, reason, created_at"


class JudgmentRow(BaseModel):
    """One grade as given: which query and document, the grade, who gave it, how, why, and when."""

    collection: str
    query_id: str
    doc_id: str
    grade: int
    rater: str
    source: str
    reason: str = ""
    created_at: datetime


def now() -> datetime:
    return datetime.now(UTC)


def current_grades(rows: Iterable[JudgmentRow], policy: str = "latest") -> dict[str, dict[str, int]]:
    """The grade that counts for each (query, document), chosen from its history (rows oldest first).

    Each rater's latest grade is their grade. People outrank the LLM judge and click models (MACHINE_SOURCES):
    where any person graded a pair, only people's grades count (a person overrides the judge by rating once).
    Then, by policy:
    `latest` takes the most recent grade; `majority` the most common (a tie goes to the most recent of the tied);
    `rater:NAME` that rater's grade, and the latest for pairs they did not grade.
    """
    by_pair: dict[tuple[str, str], dict[str, JudgmentRow]] = {}
    for row in rows:
        by_pair.setdefault((row.query_id, row.doc_id), {})[row.rater] = row  # later rows replace earlier
    named = policy[len(RATER_POLICY_PREFIX) :] if policy.startswith(RATER_POLICY_PREFIX) else None
    qrels: dict[str, dict[str, int]] = {}
    for (query_id, doc_id), latest_by_rater in by_pair.items():
        people = [r for r in latest_by_rater.values() if r.source not in MACHINE_SOURCES]
        counted = sorted(people or latest_by_rater.values(), key=lambda r: r.created_at)
        if named and named in latest_by_rater:
            grade = latest_by_rater[named].grade
        elif policy == "majority":
            tally = Counter(r.grade for r in counted)
            top = max(tally.values())
            grade = next(r.grade for r in reversed(counted) if tally[r.grade] == top)
        else:
            grade = counted[-1].grade
        qrels.setdefault(query_id, {})[doc_id] = grade
    return qrels


class JudgmentStore(KeptStore, ABC):
    """Judgment rows and judged queries by collection; safe to use from many threads."""

    store_name = "the judgments store"

    def add(self, rows: list[JudgmentRow], queries: dict[str, str] | None = None, collection: str = "") -> int:
        """Append grades and keep the texts of their queries, in one transaction: a process killed on the way leaves
        all of it or none of it (never query texts without their grades). How many rows were added."""
        if not rows and not queries:
            return 0
        with self._errors("save judgments"):
            self._add(collection or rows[0].collection, rows, queries or {})
        return len(rows)

    def add_once(self, row: JudgmentRow, queries: dict[str, str] | None, request_key: str, request: str) -> str | None:
        """Append one grade unless `request_key` was used in the collection before, in one transaction: None when
        it was added; else what the earlier request with that key was (`request` as it was given), nothing added."""
        with self._errors("save judgments"):
            return self._insert_once(row, queries or {}, request_key, request)

    def rows(self, collection: str, pair: tuple[str, str] | None = None) -> list[JudgmentRow]:
        """Every grade given in the collection (or to one (query id, document id) pair), oldest first."""
        with self._errors("read judgments"):
            return self._rows(collection, pair)

    def queries(self, collection: str) -> dict[str, str]:
        """The collection's judged queries: id -> text."""
        with self._errors("read judged queries"):
            return self._queries(collection)

    def collections(self) -> list[str]:
        with self._errors("list judged collections"):
            return self._collections()

    def delete(self, collection: str) -> int:
        """Remove a collection's judgments and queries; how many rows there were."""
        with self._errors("delete judgments"):
            return self._delete(collection)

    @abstractmethod
    def _add(self, collection: str, rows: list[JudgmentRow], queries: dict[str, str]) -> None: ...

    @abstractmethod
    def _insert_once(self, row: JudgmentRow, queries: dict[str, str], request_key: str, request: str) -> str | None: ...

    @abstractmethod
    def _rows(self, collection: str, pair: tuple[str, str] | None) -> list[JudgmentRow]: ...

    @abstractmethod
    def _queries(self, collection: str) -> dict[str, str]: ...

    @abstractmethod
    def _collections(self) -> list[str]: ...

    @abstractmethod
    def _delete(self, collection: str) -> int: ...


def _row(values: tuple[Any, ...]) -> JudgmentRow:
    collection, query_id, doc_id, grade, rater, source, reason, at = values
    when = datetime.fromisoformat(at) if isinstance(at, str) else at
    return JudgmentRow(
        collection=collection, query_id=query_id, doc_id=doc_id, grade=int(grade), rater=rater, source=source,
        reason=reason or "", created_at=when,
    )  # fmt: skip


_QUERY_UPSERT = (
    "INSERT INTO {table} (collection, query_id, text) VALUES ({p}, {p}, {p}) "
    "ON CONFLICT (collection, query_id) DO UPDATE SET text = excluded.text"
)


def _query_values(collection: str, queries: dict[str, str]) -> list[tuple[str, str, str]]:
    return [(collection, q, t) for q, t in queries.items()]


def _values(row: JudgmentRow, at: Any) -> tuple[Any, ...]:
    return (row.collection, row.query_id, row.doc_id, row.grade, row.rater, row.source, row.reason, at)


class SqliteJudgmentStore(SqliteFile, JudgmentStore):
    """Judgments in one SQLite file (WAL, busy timeout), one connection per thread."""

    def __init__(self, path: str | Path) -> None:
        with self._errors("create its tables"):
            self._open_file(path)
        with self._errors("create its tables"), self._connection() as db:
            db.executescript(
                """
                CREATE TABLE IF NOT EXISTS judgments (
                    id INTEGER PRIMARY KEY AUTOINCREMENT, collection TEXT NOT NULL, query_id TEXT NOT NULL,
                    doc_id TEXT NOT NULL, grade INTEGER NOT NULL, rater TEXT NOT NULL, source TEXT NOT NULL,
                    reason TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL);
                CREATE INDEX IF NOT EXISTS judgments_by_collection ON judgments (collection, id);
                CREATE INDEX IF NOT EXISTS judgments_by_pair ON judgments (collection, query_id, doc_id);
                CREATE TABLE IF NOT EXISTS judged_queries (
                    collection TEXT NOT NULL, query_id TEXT NOT NULL, text TEXT NOT NULL,
                    PRIMARY KEY (collection, query_id));
                CREATE TABLE IF NOT EXISTS judgment_requests (
                    collection TEXT NOT NULL, request_key TEXT NOT NULL, request TEXT NOT NULL,
                    PRIMARY KEY (collection, request_key));
                """
            )

    def _add(self, collection: str, rows: list[JudgmentRow], queries: dict[str, str]) -> None:
        with self._connection() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(_QUERY_UPSERT.format(table="judged_queries", p="?"), _query_values(collection, queries))
                db.executemany(
                    f"INSERT INTO judgments ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [_values(r, r.created_at.isoformat()) for r in rows],
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def _insert_once(self, row: JudgmentRow, queries: dict[str, str], request_key: str, request: str) -> str | None:
        with self._connection() as db:
            db.execute("BEGIN IMMEDIATE")  # the key's check and the grade's insert as one step, across processes
            try:
                found = db.execute(
                    "SELECT request FROM judgment_requests WHERE collection = ? AND request_key = ?",
                    (row.collection, request_key),
                ).fetchone()
                if found is None:
                    db.execute(
                        "INSERT INTO judgment_requests (collection, request_key, request) VALUES (?, ?, ?)",
                        (row.collection, request_key, request),
                    )
                    db.execute(
                        f"INSERT INTO judgments ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        _values(row, row.created_at.isoformat()),
                    )
                    db.executemany(
                        _QUERY_UPSERT.format(table="judged_queries", p="?"), _query_values(row.collection, queries)
                    )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return found[0] if found else None

    def _rows(self, collection: str, pair: tuple[str, str] | None) -> list[JudgmentRow]:
        where, values = ("AND query_id = ? AND doc_id = ? ", pair) if pair else ("", ())
        with self._connection() as db:
            found = db.execute(
                f"SELECT {_COLUMNS} FROM judgments WHERE collection = ? {where}ORDER BY id", (collection, *values)
            )
            return [_row(row) for row in found.fetchall()]

    def _queries(self, collection: str) -> dict[str, str]:
        with self._connection() as db:
            found = db.execute("SELECT query_id, text FROM judged_queries WHERE collection = ?", (collection,))
            return dict(found.fetchall())

    def _collections(self) -> list[str]:
        with self._connection() as db:
            return [r[0] for r in db.execute("SELECT DISTINCT collection FROM judgments ORDER BY collection")]

    def _delete(self, collection: str) -> int:
        with self._connection() as db:
            removed = db.execute("DELETE FROM judgments WHERE collection = ?", (collection,)).rowcount
            db.execute("DELETE FROM judged_queries WHERE collection = ?", (collection,))
            db.execute("DELETE FROM judgment_requests WHERE collection = ?", (collection,))
        return int(removed)


class PostgresJudgmentStore(PostgresTables, JudgmentStore):
    """Judgments in PostgreSQL (tables `judgments` and `judged_queries` in a schema)."""

    def __init__(self, url: str, *, schema: str = "workbench", timeout: float = DEFAULT_STORE_TIMEOUT) -> None:
        self._open_pool(url, schema, timeout)
        self._create_tables(
            f"CREATE TABLE IF NOT EXISTS {self._schema}.judgments (id bigserial PRIMARY KEY, "
            "collection text NOT NULL, query_id text NOT NULL, doc_id text NOT NULL, grade integer NOT NULL, "
            "rater text NOT NULL, source text NOT NULL, reason text NOT NULL DEFAULT '', "
            "created_at timestamptz NOT NULL)",
            f"CREATE INDEX IF NOT EXISTS judgments_by_collection ON {self._schema}.judgments (collection, id)",
            f"CREATE INDEX IF NOT EXISTS judgments_by_pair ON {self._schema}.judgments (collection, query_id, doc_id)",
            f"CREATE TABLE IF NOT EXISTS {self._schema}.judged_queries (collection text NOT NULL, "
            "query_id text NOT NULL, text text NOT NULL, PRIMARY KEY (collection, query_id))",
            f"CREATE TABLE IF NOT EXISTS {self._schema}.judgment_requests (collection text NOT NULL, "
            "request_key text NOT NULL, request text NOT NULL, PRIMARY KEY (collection, request_key))",
        )

    def _add(self, collection: str, rows: list[JudgmentRow], queries: dict[str, str]) -> None:
        with self._cursor() as cur:  # one transaction: the cursor's block commits once, or rolls back
            if queries:
                cur.executemany(
                    _QUERY_UPSERT.format(table=f"{self._schema}.judged_queries", p="%s"),
                    _query_values(collection, queries),
                )
            if rows:
                cur.executemany(
                    f"INSERT INTO {self._schema}.judgments ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                    [_values(r, r.created_at) for r in rows],
                )

    def _insert_once(self, row: JudgmentRow, queries: dict[str, str], request_key: str, request: str) -> str | None:
        with self._cursor() as cur:  # one transaction: a concurrent insert of the same key waits, then finds it
            cur.execute(
                f"INSERT INTO {self._schema}.judgment_requests (collection, request_key, request) "
                "VALUES (%s, %s, %s) ON CONFLICT DO NOTHING RETURNING request_key",
                [row.collection, request_key, request],
            )
            if cur.fetchone() is None:
                cur.execute(
                    f"SELECT request FROM {self._schema}.judgment_requests WHERE collection = %s AND request_key = %s",
                    [row.collection, request_key],
                )
                return str(cur.fetchone()[0])
            cur.execute(
                f"INSERT INTO {self._schema}.judgments ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                _values(row, row.created_at),
            )
            values = _query_values(row.collection, queries)
            if values:
                cur.executemany(_QUERY_UPSERT.format(table=f"{self._schema}.judged_queries", p="%s"), values)
        return None

    def _rows(self, collection: str, pair: tuple[str, str] | None) -> list[JudgmentRow]:
        where, values = ("AND query_id = %s AND doc_id = %s ", pair) if pair else ("", ())
        with self._cursor() as cur:
            cur.execute(
                f"SELECT {_COLUMNS} FROM {self._schema}.judgments WHERE collection = %s {where}ORDER BY id",
                [collection, *values],
            )
            return [_row(row) for row in cur.fetchall()]

    def _queries(self, collection: str) -> dict[str, str]:
        with self._cursor() as cur:
            cur.execute(f"SELECT query_id, text FROM {self._schema}.judged_queries WHERE collection = %s", [collection])
            return dict(cur.fetchall())

    def _collections(self) -> list[str]:
        with self._cursor() as cur:
            cur.execute(f"SELECT DISTINCT collection FROM {self._schema}.judgments ORDER BY collection")
            return [r[0] for r in cur.fetchall()]

    def _delete(self, collection: str) -> int:
        with self._cursor() as cur:
            cur.execute(f"DELETE FROM {self._schema}.judgments WHERE collection = %s", [collection])
            removed = cur.rowcount
            cur.execute(f"DELETE FROM {self._schema}.judged_queries WHERE collection = %s", [collection])
            cur.execute(f"DELETE FROM {self._schema}.judgment_requests WHERE collection = %s", [collection])
        return int(removed)


_stores: OnePerLocation[JudgmentStore] = OnePerLocation()


def open_judgment_store(settings: Settings) -> JudgmentStore:
    """The judgments store the settings name (one per location per process): PostgreSQL when
    WORKBENCH_SESSION_DB is a postgresql:// URL, else `judgments.sqlite3` in the data folder."""
    return open_kept(_stores, settings, "judgments.sqlite3", postgres=PostgresJudgmentStore, sqlite=SqliteJudgmentStore)

"""Where preference sessions live: beside the judgments (the same SQLite file, `judgments.sqlite3`, or the same
PostgreSQL schema when WORKBENCH_SESSION_DB is a `postgresql://` URL). Sessions and shown lists are written once;
choices (undo included) are appended, never overwritten, each under a request key so a retry adds nothing."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from datetime import datetime
from pathlib import Path
from typing import Any

from workbench.config import Settings
from workbench.errors import ExperimentNotFoundError, InputError
from workbench.inputs import validate_experiment_id
from workbench.preferences.session import ChoiceRow, PreferenceSession, ShownLists, standing_choices
from workbench.stores.kept import KeptStore, OnePerLocation, PostgresTables, SqliteFile, open_kept
from workbench.vocab import DEFAULT_STORE_TIMEOUT

_CHOICE_COLUMNS = "session_id, query_id, rater, choice, a_side, created_at, request_key"


class PreferenceStore(KeptStore, ABC):
    """Preference sessions, the lists they showed and every choice made in them; safe from many threads and
    processes (each write is one transaction)."""

    store_name = "the preferences store"

    def add_session(self, session: PreferenceSession) -> None:
        with self._errors("save a preference session"):
            self._add_session(session.id, session.model_dump_json(), session.created_at)

    def session(self, session_id: str) -> PreferenceSession:
        """The session with this id (NotFoundError naming it when there is none)."""
        session_id = validate_experiment_id(session_id)
        with self._errors("read a preference session"):
            body = self._session(session_id)
        if body is None:
            raise ExperimentNotFoundError(
                f"No preference session '{session_id}' (`workbench preferences list` lists them)."
            )
        return PreferenceSession.model_validate_json(body)

    def sessions(self) -> list[PreferenceSession]:
        """Every session, newest first."""
        with self._errors("list preference sessions"):
            return [PreferenceSession.model_validate_json(body) for body in self._sessions()]

    def keep_lists(self, session_id: str, lists: ShownLists) -> ShownLists:
        """Keep the two lists a query showed, unless it showed some before: the lists as first kept."""
        with self._errors("save the lists shown"):
            found = self._keep_lists(session_id, lists.query_id, json.dumps(lists.a), json.dumps(lists.b))
        a, b = found
        return ShownLists(query_id=lists.query_id, a=json.loads(a), b=json.loads(b))

    def lists(self, session_id: str) -> dict[str, ShownLists]:
        """The lists each query of the session showed, by query id."""
        with self._errors("read the lists shown"):
            found = self._lists(session_id)
        return {q: ShownLists(query_id=q, a=json.loads(a), b=json.loads(b)) for q, a, b in found}

    def add_choice(self, row: ChoiceRow, *, undo_needs_a_choice: bool = False) -> bool:
        """Append a choice (or an undo) unless its request key was used in the session before: whether it was
        added. An undo with nothing of the rater's to take back is refused (InputError) when `undo_needs_a_choice`."""
        with self._errors("save a choice"):
            added = self._add_choice(row, undo_needs_a_choice)
        if added is None:
            raise InputError(f"Nothing of {row.rater}'s to undo in this session.")
        return added

    def choices(self, session_id: str) -> list[ChoiceRow]:
        """Every row of the session, oldest first."""
        with self._errors("read choices"):
            return [_choice(values) for values in self._choices(session_id)]

    @abstractmethod
    def _add_session(self, session_id: str, body: str, at: datetime) -> None: ...

    @abstractmethod
    def _session(self, session_id: str) -> str | None: ...

    @abstractmethod
    def _sessions(self) -> list[str]: ...

    @abstractmethod
    def _keep_lists(self, session_id: str, query_id: str, a: str, b: str) -> tuple[str, str]: ...

    @abstractmethod
    def _lists(self, session_id: str) -> list[tuple[str, str, str]]: ...

    @abstractmethod
    def _add_choice(self, row: ChoiceRow, undo_needs_a_choice: bool) -> bool | None: ...

    @abstractmethod
    def _choices(self, session_id: str) -> list[tuple[Any, ...]]: ...


def _choice(values: tuple[Any, ...]) -> ChoiceRow:
    session_id, query_id, rater, choice, a_side, at, key = values
    when = datetime.fromisoformat(at) if isinstance(at, str) else at
    return ChoiceRow(
        session_id=session_id, query_id=query_id, rater=rater, choice=choice, a_side=a_side, created_at=when,
        request_key=key,
    )  # fmt: skip


def _values(row: ChoiceRow, at: Any) -> tuple[Any, ...]:
    return (row.session_id, row.query_id, row.rater, row.choice, row.a_side, at, row.request_key)


_SQLITE_TABLES = """
CREATE TABLE IF NOT EXISTS preference_sessions (
    id TEXT PRIMARY KEY, body TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS preference_lists (
    session_id TEXT NOT NULL, query_id TEXT NOT NULL, a TEXT NOT NULL, b TEXT NOT NULL,
    PRIMARY KEY (session_id, query_id));
CREATE TABLE IF NOT EXISTS preference_choices (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, query_id TEXT NOT NULL, rater TEXT NOT NULL,
    choice TEXT NOT NULL, a_side TEXT NOT NULL, created_at TEXT NOT NULL, request_key TEXT NOT NULL,
    UNIQUE (session_id, request_key));
"""


class SqlitePreferenceStore(SqliteFile, PreferenceStore):
    """Preferences in the judgments' SQLite file (WAL, busy timeout), one connection per thread."""

    def __init__(self, path: str | Path) -> None:
        with self._errors("create its tables"):
            self._open_file(path)
        with self._errors("create its tables"), self._connection() as db:
            db.executescript(_SQLITE_TABLES)

    def _add_session(self, session_id: str, body: str, at: datetime) -> None:
        with self._connection() as db:
            db.execute("INSERT INTO preference_sessions (id, body, created_at) VALUES (?, ?, ?)",
                       (session_id, body, at.isoformat()))  # fmt: skip

    def _session(self, session_id: str) -> str | None:
        with self._connection() as db:
            found = db.execute("SELECT body FROM preference_sessions WHERE id = ?", (session_id,)).fetchone()
        return found[0] if found else None

    def _sessions(self) -> list[str]:
        with self._connection() as db:
            return [r[0] for r in db.execute("SELECT body FROM preference_sessions ORDER BY created_at DESC, id")]

    def _keep_lists(self, session_id: str, query_id: str, a: str, b: str) -> tuple[str, str]:
        with self._connection() as db:
            db.execute(
                "INSERT INTO preference_lists (session_id, query_id, a, b) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (session_id, query_id, a, b),
            )
            found = db.execute(
                "SELECT a, b FROM preference_lists WHERE session_id = ? AND query_id = ?", (session_id, query_id)
            ).fetchone()
        return found[0], found[1]

    def _lists(self, session_id: str) -> list[tuple[str, str, str]]:
        with self._connection() as db:
            found = db.execute("SELECT query_id, a, b FROM preference_lists WHERE session_id = ?", (session_id,))
            return list(found.fetchall())

    def _add_choice(self, row: ChoiceRow, undo_needs_a_choice: bool) -> bool | None:
        with self._connection() as db:
            db.execute("BEGIN IMMEDIATE")  # the key's check, the undo's check and the insert as one step
            try:
                seen = db.execute(
                    "SELECT 1 FROM preference_choices WHERE session_id = ? AND request_key = ?",
                    (row.session_id, row.request_key),
                ).fetchone()
                if seen is not None:
                    db.execute("COMMIT")
                    return False
                if undo_needs_a_choice and not _has_standing(self._rows_in(db, row.session_id), row.rater):
                    db.execute("COMMIT")
                    return None
                db.execute(
                    f"INSERT INTO preference_choices ({_CHOICE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    _values(row, row.created_at.isoformat()),
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return True

    @staticmethod
    def _rows_in(db: Any, session_id: str) -> list[ChoiceRow]:
        found = db.execute(
            f"SELECT {_CHOICE_COLUMNS} FROM preference_choices WHERE session_id = ? ORDER BY id", (session_id,)
        )
        return [_choice(values) for values in found.fetchall()]

    def _choices(self, session_id: str) -> list[tuple[Any, ...]]:
        with self._connection() as db:
            found = db.execute(
                f"SELECT {_CHOICE_COLUMNS} FROM preference_choices WHERE session_id = ? ORDER BY id", (session_id,)
            )
            return list(found.fetchall())


def _has_standing(rows: list[ChoiceRow], rater: str) -> bool:
    return any(r == rater for _, r in standing_choices(rows))


class PostgresPreferenceStore(PostgresTables, PreferenceStore):
    """Preferences in PostgreSQL, in the judgments' schema."""

    def __init__(self, url: str, *, schema: str = "workbench", timeout: float = DEFAULT_STORE_TIMEOUT) -> None:
        self._open_pool(url, schema, timeout)
        s = self._schema
        self._create_tables(
            f"CREATE TABLE IF NOT EXISTS {s}.preference_sessions (id text PRIMARY KEY, body text NOT NULL, "
            "created_at timestamptz NOT NULL)",
            f"CREATE TABLE IF NOT EXISTS {s}.preference_lists (session_id text NOT NULL, query_id text NOT NULL, "
            "a text NOT NULL, b text NOT NULL, PRIMARY KEY (session_id, query_id))",
            f"CREATE TABLE IF NOT EXISTS {s}.preference_choices (id bigserial PRIMARY KEY, session_id text NOT NULL, "
            "query_id text NOT NULL, rater text NOT NULL, choice text NOT NULL, a_side text NOT NULL, "
            "created_at timestamptz NOT NULL, request_key text NOT NULL, UNIQUE (session_id, request_key))",
        )

    def _add_session(self, session_id: str, body: str, at: datetime) -> None:
        with self._cursor() as cur:
            cur.execute(f"INSERT INTO {self._schema}.preference_sessions (id, body, created_at) VALUES (%s, %s, %s)",
                        [session_id, body, at])  # fmt: skip

    def _session(self, session_id: str) -> str | None:
        with self._cursor() as cur:
            cur.execute(f"SELECT body FROM {self._schema}.preference_sessions WHERE id = %s", [session_id])
            found = cur.fetchone()
        return found[0] if found else None

    def _sessions(self) -> list[str]:
        with self._cursor() as cur:
            cur.execute(f"SELECT body FROM {self._schema}.preference_sessions ORDER BY created_at DESC, id")
            return [r[0] for r in cur.fetchall()]

    def _keep_lists(self, session_id: str, query_id: str, a: str, b: str) -> tuple[str, str]:
        with self._cursor() as cur:
            cur.execute(
                f"INSERT INTO {self._schema}.preference_lists (session_id, query_id, a, b) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                [session_id, query_id, a, b],
            )
            cur.execute(
                f"SELECT a, b FROM {self._schema}.preference_lists WHERE session_id = %s AND query_id = %s",
                [session_id, query_id],
            )
            found = cur.fetchone()
        return found[0], found[1]

    def _lists(self, session_id: str) -> list[tuple[str, str, str]]:
        with self._cursor() as cur:
            cur.execute(
                f"SELECT query_id, a, b FROM {self._schema}.preference_lists WHERE session_id = %s", [session_id]
            )
            return list(cur.fetchall())

    def _add_choice(self, row: ChoiceRow, undo_needs_a_choice: bool) -> bool | None:
        with self._cursor() as cur:  # one transaction; the session's rows locked while an undo is checked
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [row.session_id])
            cur.execute(
                f"SELECT 1 FROM {self._schema}.preference_choices WHERE session_id = %s AND request_key = %s",
                [row.session_id, row.request_key],
            )
            if cur.fetchone() is not None:
                return False
            if undo_needs_a_choice:
                cur.execute(
                    f"SELECT {_CHOICE_COLUMNS} FROM {self._schema}.preference_choices WHERE session_id = %s "
                    "ORDER BY id",
                    [row.session_id],
                )
                if not _has_standing([_choice(v) for v in cur.fetchall()], row.rater):
                    return None
            cur.execute(
                f"INSERT INTO {self._schema}.preference_choices ({_CHOICE_COLUMNS}) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                _values(row, row.created_at),
            )
        return True

    def _choices(self, session_id: str) -> list[tuple[Any, ...]]:
        with self._cursor() as cur:
            cur.execute(
                f"SELECT {_CHOICE_COLUMNS} FROM {self._schema}.preference_choices WHERE session_id = %s ORDER BY id",
                [session_id],
            )
            return list(cur.fetchall())


_stores: OnePerLocation[PreferenceStore] = OnePerLocation()


def open_preference_store(settings: Settings) -> PreferenceStore:
    """The preferences store beside the judgments (one per location per process)."""
    return open_kept(
        _stores, settings, "judgments.sqlite3", postgres=PostgresPreferenceStore, sqlite=SqlitePreferenceStore
    )

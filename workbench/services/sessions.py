"""Session memory (seed 004): the recent turns of a conversation and its summary, kept in SQLite (a file in
the workbench's data folder, WAL mode, survives restarts) or in PostgreSQL when WORKBENCH_SESSION_DB is a
`postgresql://` URL. The HTTP API serves it (`/session/...`) and the app keeps each user's query history in it.

Turns are returned oldest first; `recent_limit` (SESSION_RECENT_LIMIT, 10) caps how many come back; turns and
summaries older than `ttl_days` (SESSION_TTL_DAYS, off) are dropped.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from workbench.config import Settings
from workbench.errors import InputError
from workbench.inputs import check_json, json_depth
from workbench.redact import plain_text
from workbench.stores.kept import KeptStore, OnePerLocation, PostgresTables, SqliteFile
from workbench.stores.postgres import is_postgres_url
from workbench.vocab import DEFAULT_STORE_TIMEOUT, MAX_JSON_DEPTH

MAX_SESSION_ID = 128
MAX_ROLE = 32
MAX_TEXT = 32_000
MAX_META_BYTES = 16_384
MAX_LIMIT = 200
_SESSION_ID = re.compile(r"^[A-Za-z0-9._:@-]{1,128}$")


class Turn(BaseModel):
    """One turn: who spoke (role), what was said, any metadata, when."""

    session_id: str
    role: str
    text: str
    meta: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime


class SessionView(BaseModel):
    """A session's recent turns (oldest first) and its summary."""

    session_id: str
    turns: list[Turn]
    summary: str | None = None
    summary_updated_at: datetime | None = None
    total_turns: int = 0


def check_session_id(session_id: Any) -> str:
    if not isinstance(session_id, str) or not _SESSION_ID.match(session_id):
        raise InputError(
            f"session_id must be 1-{MAX_SESSION_ID} characters of letters, digits and . _ : @ -; "
            f"got {plain_text(repr(session_id))[:40]}."
        )
    return session_id


def check_turn(role: Any, text: Any, meta: Any) -> tuple[str, str, dict[str, Any]]:
    """A turn's role (1-32 characters), text (1-32,000) and metadata (a JSON object, nested at most 32 levels,
    up to 16 KB)."""
    if not isinstance(role, str) or not role.strip() or len(role) > MAX_ROLE:
        raise InputError(f"role must be 1-{MAX_ROLE} characters, such as user or assistant.")
    if not isinstance(text, str) or not text.strip():
        raise InputError("text must be non-empty.")
    if len(text) > MAX_TEXT:
        raise InputError(f"text is {len(text)} characters long; the limit is {MAX_TEXT}.")
    meta = meta or {}
    if not isinstance(meta, dict):
        raise InputError("meta must be a JSON object.")
    check_json(meta, "meta", max_bytes=MAX_META_BYTES)
    return role.strip(), text, meta


def check_turn_id(turn_id: Any) -> str | None:
    """An idempotency key: a turn sent again with the same key (a client retrying after a lost reply) is stored
    once. 1-128 characters of letters, digits and . _ : @ -; None for no key."""
    if turn_id is None:
        return None
    if not isinstance(turn_id, str) or not _SESSION_ID.match(turn_id):
        raise InputError(
            f"turn_id must be 1-{MAX_SESSION_ID} characters of letters, digits and . _ : @ -; "
            f"got {plain_text(repr(turn_id))[:40]}."
        )
    return turn_id


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _readable(meta: Any) -> dict[str, Any]:
    """Stored metadata as it can be shown: a meta stored before depths were checked, and too deep to return, is
    replaced by a note instead of breaking every read of its session."""
    if isinstance(meta, dict) and json_depth(meta) <= MAX_JSON_DEPTH:
        return meta
    return {"dropped": f"this turn's meta was not a JSON object nested at most {MAX_JSON_DEPTH} levels"}


def check_limit(limit: Any, default: int) -> int:
    if limit is None:
        return default
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InputError(f"limit must be a whole number between 1 and {MAX_LIMIT}; got {limit!r}.")
    return limit


def _now() -> datetime:
    return datetime.now(UTC)


class SessionStore(KeptStore, ABC):
    """Turns and summaries by session id; safe to use from many threads."""

    store_name = "the session store"

    def __init__(self, recent_limit: int = 10, ttl_days: float | None = None) -> None:
        self.recent_limit = recent_limit
        self.ttl_days = ttl_days

    def _cutoff(self) -> datetime | None:
        return _now() - timedelta(days=self.ttl_days) if self.ttl_days else None

    def add_turn(
        self,
        session_id: str,
        role: str,
        text: str,
        meta: dict[str, Any] | None = None,
        return_limit: int | None = None,
        turn_id: str | None = None,
    ) -> SessionView:
        """Append a turn; return the recent turns and the summary. A `turn_id` already stored in the session
        (a retry) stores nothing again."""
        session_id = check_session_id(session_id)
        role, text, meta = check_turn(role, text, meta)
        turn_id = check_turn_id(turn_id)
        limit = check_limit(return_limit, self.recent_limit)
        with self._errors("add a turn"):
            self._insert(session_id, role, text, meta, _now(), turn_id)
        return self.get(session_id, limit)

    def get(self, session_id: str, limit: int | None = None) -> SessionView:
        """The recent turns (oldest first, at most `limit`) and the summary."""
        session_id = check_session_id(session_id)
        limit = check_limit(limit, self.recent_limit)
        with self._errors("read a session"):
            self._expire()
            return self._view(session_id, limit)

    def set_summary(self, session_id: str, summary: str) -> SessionView:
        session_id = check_session_id(session_id)
        if not isinstance(summary, str) or len(summary) > MAX_TEXT:
            raise InputError(f"summary must be text of at most {MAX_TEXT} characters.")
        with self._errors("save a summary"):
            self._upsert_summary(session_id, summary, _now())
        return self.get(session_id)

    def forget_turn(self, session_id: str, turn_id: str) -> int:
        """Remove one turn by its id (a search the app recorded that turned out to be a step of a slider held
        down); how many went (0 or 1)."""
        session_id = check_session_id(session_id)
        turn_id = check_turn_id(turn_id) or ""
        with self._errors("forget a turn"):
            return self._forget(session_id, turn_id)

    def delete(self, session_id: str) -> int:
        """Remove every turn and the summary; how many turns there were."""
        session_id = check_session_id(session_id)
        with self._errors("delete a session"):
            return self._delete(session_id)

    @abstractmethod
    def _insert(
        self, session_id: str, role: str, text: str, meta: dict[str, Any], at: datetime, turn_id: str | None
    ) -> None: ...

    @abstractmethod
    def _view(self, session_id: str, limit: int) -> SessionView: ...

    @abstractmethod
    def _upsert_summary(self, session_id: str, summary: str, at: datetime) -> None: ...

    @abstractmethod
    def _delete(self, session_id: str) -> int: ...

    @abstractmethod
    def _forget(self, session_id: str, turn_id: str) -> int: ...

    @abstractmethod
    def _expire(self) -> None: ...


class SqliteSessionStore(SqliteFile, SessionStore):
    """Sessions in one SQLite file (WAL, busy timeout), one connection per thread."""

    def __init__(self, path: str | Path, recent_limit: int = 10, ttl_days: float | None = None) -> None:
        super().__init__(recent_limit, ttl_days)
        self._open_file(path)
        with self._connection() as db:
            db.executescript(
                """
                CREATE TABLE IF NOT EXISTS turns (
                    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL,
                    text TEXT NOT NULL, meta TEXT NOT NULL, created_at TEXT NOT NULL);
                CREATE INDEX IF NOT EXISTS turns_by_session ON turns (session_id, id);
                CREATE TABLE IF NOT EXISTS summaries (
                    session_id TEXT PRIMARY KEY, summary TEXT NOT NULL, updated_at TEXT NOT NULL);
                """
            )
            columns = {row[1] for row in db.execute("PRAGMA table_info(turns)")}
            if "turn_id" not in columns:  # a database from before idempotency keys
                db.execute("ALTER TABLE turns ADD COLUMN turn_id TEXT")
            db.execute(
                "CREATE UNIQUE INDEX IF NOT EXISTS turns_once ON turns (session_id, turn_id) WHERE turn_id IS NOT NULL"
            )

    def _insert(
        self, session_id: str, role: str, text: str, meta: dict[str, Any], at: datetime, turn_id: str | None
    ) -> None:
        with self._connection() as db:
            db.execute(
                "INSERT OR IGNORE INTO turns (session_id, role, text, meta, created_at, turn_id) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, role, text, json.dumps(meta), at.isoformat(), turn_id),
            )

    def _view(self, session_id: str, limit: int) -> SessionView:
        with self._connection() as db:
            rows = db.execute(
                "SELECT role, text, meta, created_at FROM turns WHERE session_id = ? ORDER BY id DESC LIMIT ?",
                (session_id, limit),
            ).fetchall()
            total = db.execute("SELECT count(*) FROM turns WHERE session_id = ?", (session_id,)).fetchone()[0]
            summary = db.execute(
                "SELECT summary, updated_at FROM summaries WHERE session_id = ?", (session_id,)
            ).fetchone()
        turns = [
            Turn(session_id=session_id, role=r, text=t, meta=_readable(_loads(m)), created_at=datetime.fromisoformat(c))
            for r, t, m, c in reversed(rows)
        ]
        return SessionView(
            session_id=session_id,
            turns=turns,
            summary=summary[0] if summary else None,
            summary_updated_at=datetime.fromisoformat(summary[1]) if summary else None,
            total_turns=int(total),
        )

    def _upsert_summary(self, session_id: str, summary: str, at: datetime) -> None:
        with self._connection() as db:
            db.execute(
                "INSERT INTO summaries (session_id, summary, updated_at) VALUES (?, ?, ?) ON CONFLICT (session_id) "
                "DO UPDATE SET summary = excluded.summary, updated_at = excluded.updated_at",
                (session_id, summary, at.isoformat()),
            )

    def _delete(self, session_id: str) -> int:
        with self._connection() as db:
            removed = db.execute("DELETE FROM turns WHERE session_id = ?", (session_id,)).rowcount
            db.execute("DELETE FROM summaries WHERE session_id = ?", (session_id,))
        return int(removed)

    def _forget(self, session_id: str, turn_id: str) -> int:
        with self._connection() as db:
            return int(
                db.execute("DELETE FROM turns WHERE session_id = ? AND turn_id = ?", (session_id, turn_id)).rowcount
            )

    def _expire(self) -> None:
        cutoff = self._cutoff()
        if cutoff is not None:
            with self._connection() as db:
                db.execute("DELETE FROM turns WHERE created_at < ?", (cutoff.isoformat(),))
                db.execute("DELETE FROM summaries WHERE updated_at < ?", (cutoff.isoformat(),))


class PostgresSessionStore(PostgresTables, SessionStore):
    """Sessions in PostgreSQL (tables `session_turns` and `session_summaries` in a schema)."""

    def __init__(
        self,
        url: str,
        *,
        schema: str = "workbench",
        recent_limit: int = 10,
        ttl_days: float | None = None,
        timeout: float = DEFAULT_STORE_TIMEOUT,
    ) -> None:
        super().__init__(recent_limit, ttl_days)
        self._open_pool(url, schema, timeout)
        self._create_tables(
            f"CREATE TABLE IF NOT EXISTS {self._schema}.session_turns (id bigserial PRIMARY KEY, "
            "session_id text NOT NULL, role text NOT NULL, text text NOT NULL, meta jsonb NOT NULL, "
            "created_at timestamptz NOT NULL)",
            f"CREATE INDEX IF NOT EXISTS session_turns_by_session ON {self._schema}.session_turns (session_id, id)",
            f"ALTER TABLE {self._schema}.session_turns ADD COLUMN IF NOT EXISTS turn_id text",
            f"CREATE UNIQUE INDEX IF NOT EXISTS session_turns_once ON {self._schema}.session_turns "
            "(session_id, turn_id) WHERE turn_id IS NOT NULL",
            f"CREATE TABLE IF NOT EXISTS {self._schema}.session_summaries (session_id text PRIMARY KEY, "
            "summary text NOT NULL, updated_at timestamptz NOT NULL)",
        )

    def _insert(
        self, session_id: str, role: str, text: str, meta: dict[str, Any], at: datetime, turn_id: str | None
    ) -> None:
        with self._cursor() as cur:
            cur.execute(
                f"INSERT INTO {self._schema}.session_turns (session_id, role, text, meta, created_at, turn_id) "
                "VALUES (%s, %s, %s, %s::jsonb, %s, %s) "
                "ON CONFLICT (session_id, turn_id) WHERE turn_id IS NOT NULL DO NOTHING",
                [session_id, role, text, json.dumps(meta), at, turn_id],
            )

    def _view(self, session_id: str, limit: int) -> SessionView:
        with self._cursor() as cur:
            cur.execute(
                f"SELECT role, text, meta, created_at FROM {self._schema}.session_turns WHERE session_id = %s "
                "ORDER BY id DESC LIMIT %s",
                [session_id, limit],
            )
            rows = cur.fetchall()
            cur.execute(f"SELECT count(*) FROM {self._schema}.session_turns WHERE session_id = %s", [session_id])
            total = cur.fetchone()[0]
            cur.execute(
                f"SELECT summary, updated_at FROM {self._schema}.session_summaries WHERE session_id = %s",
                [session_id],
            )
            summary = cur.fetchone()
        turns = [
            Turn(session_id=session_id, role=r, text=t, meta=_readable(m or {}), created_at=c)
            for r, t, m, c in reversed(rows)
        ]
        return SessionView(
            session_id=session_id,
            turns=turns,
            summary=summary[0] if summary else None,
            summary_updated_at=summary[1] if summary else None,
            total_turns=int(total),
        )

    def _upsert_summary(self, session_id: str, summary: str, at: datetime) -> None:
        with self._cursor() as cur:
            cur.execute(
                f"INSERT INTO {self._schema}.session_summaries (session_id, summary, updated_at) VALUES (%s, %s, %s) "
                "ON CONFLICT (session_id) DO UPDATE SET summary = EXCLUDED.summary, updated_at = EXCLUDED.updated_at",
                [session_id, summary, at],
            )

    def _delete(self, session_id: str) -> int:
        with self._cursor() as cur:
            cur.execute(f"DELETE FROM {self._schema}.session_turns WHERE session_id = %s", [session_id])
            removed = cur.rowcount
            cur.execute(f"DELETE FROM {self._schema}.session_summaries WHERE session_id = %s", [session_id])
        return int(removed)

    def _forget(self, session_id: str, turn_id: str) -> int:
        with self._cursor() as cur:
            cur.execute(
                f"DELETE FROM {self._schema}.session_turns WHERE session_id = %s AND turn_id = %s",
                [session_id, turn_id],
            )
            return int(cur.rowcount)

    def _expire(self) -> None:
        cutoff = self._cutoff()
        if cutoff is not None:
            with self._cursor() as cur:
                cur.execute(f"DELETE FROM {self._schema}.session_turns WHERE created_at < %s", [cutoff])
                cur.execute(f"DELETE FROM {self._schema}.session_summaries WHERE updated_at < %s", [cutoff])


_stores: OnePerLocation[SessionStore] = OnePerLocation()


def open_session_store(settings: Settings) -> SessionStore:
    """The session store the settings name (one per location per process)."""
    target = settings.session_db or str(Path(settings.data_dir) / "sessions.sqlite3")
    key = f"{target}|{settings.session_recent_limit}|{settings.session_ttl_days}"

    def make() -> SessionStore:
        if is_postgres_url(target):
            return PostgresSessionStore(
                target,
                schema=settings.pg_schema,
                recent_limit=settings.session_recent_limit,
                ttl_days=settings.session_ttl_days,
                timeout=settings.store_timeout,
            )
        return SqliteSessionStore(target, settings.session_recent_limit, settings.session_ttl_days)

    return _stores.get(key, make)

"""What the stores the workbench keeps for itself (session memory, judgments) share: failures translated like
every other store's, one SQLite file with a connection per thread, or a PostgreSQL pool and schema."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from workbench.config import Settings
from workbench.errors import WorkbenchError
from workbench.redact import redact_url
from workbench.stores.base import translate_store_error
from workbench.stores.postgres import close_pool, is_postgres_url, shared_pool, sql_ident, transaction

Kept = TypeVar("Kept", bound="KeptStore")


class OnePerLocation(Generic[Kept]):
    """Kept stores, one per location per process, each made once. Made under the lock: two threads creating the
    same tables at once race even with IF NOT EXISTS (PostgreSQL's CREATE SCHEMA is not atomic against itself),
    and a store is made once per process, so the wait is brief."""

    def __init__(self) -> None:
        self._stores: dict[str, Kept] = {}
        self._lock = threading.Lock()

    def get(self, key: str, make: Callable[[], Kept]) -> Kept:
        """The store kept under `key`, made by `make()` the first time."""
        with self._lock:
            if key not in self._stores:
                self._stores[key] = make()
            return self._stores[key]


def kept_location(settings: Settings, file_name: str) -> tuple[str, str]:
    """Where a store the workbench keeps lives: the `postgresql://` URL WORKBENCH_SESSION_DB names, else `file_name`
    in the data folder; and the key under which one store per location is kept (`OnePerLocation`)."""
    target = settings.session_db if is_postgres_url(settings.session_db) else None
    target = target or str(Path(settings.data_dir) / file_name)
    return target, f"{target}|{settings.pg_schema}"


def open_kept(
    stores: OnePerLocation[Kept],
    settings: Settings,
    file_name: str,
    *,
    postgres: Callable[..., Kept],
    sqlite: Callable[[str], Kept],
) -> Kept:
    """The kept store the settings name, one per location per process: `postgres(url, schema=, timeout=)` when
    WORKBENCH_SESSION_DB is a postgresql:// URL, else `sqlite(path)` of `file_name` in the data folder."""
    target, key = kept_location(settings, file_name)

    def make() -> Kept:
        if is_postgres_url(target):
            return postgres(target, schema=settings.pg_schema, timeout=settings.store_timeout)
        return sqlite(target)

    return stores.get(key, make)


class KeptStore:
    """A store of the workbench's own records; `store_name` names it in error messages."""

    store_name: ClassVar[str]
    location: str
    timeout: float | None = None

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except WorkbenchError:
            raise
        except Exception as exc:
            raise translate_store_error(
                exc, store=self.store_name, location=self.location, action=action, timeout=self.timeout
            ) from exc


class SqliteFile(KeptStore):
    """One SQLite file (WAL, busy timeout), one connection per thread. `busy_seconds`: how long a statement waits
    for another process's lock before it fails (the timeout its errors name)."""

    busy_seconds: ClassVar[float] = 30.0

    def _open_file(self, path: str | Path) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.timeout = self.busy_seconds
        self._local = threading.local()
        with self._connection() as db:
            db.execute("PRAGMA journal_mode=WAL")

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=self.busy_seconds, isolation_level=None)
            db.execute(f"PRAGMA busy_timeout={int(self.busy_seconds * 1000)}")
            self._local.db = db
        yield db


class PostgresTables(KeptStore):
    """Tables in a PostgreSQL schema, through the pool shared by everything the workbench keeps there."""

    def _open_pool(self, url: str, schema: str, timeout: float) -> None:
        self.url = url
        self.location = redact_url(url)
        self.timeout = timeout
        self._schema = sql_ident(schema, "schema")
        self._pool = shared_pool(url, timeout, store=self.store_name)

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        with transaction(self._pool) as cur:
            yield cur

    def _create_tables(self, *statements: str) -> None:
        """The schema, then each statement (each one idempotent: `IF NOT EXISTS`), in one transaction."""
        with self._errors("create its tables"), self._cursor() as cur:
            cur.execute(f"CREATE SCHEMA IF NOT EXISTS {self._schema}")
            for statement in statements:
                cur.execute(statement)

    def close(self) -> None:
        close_pool(self.url, self._pool)

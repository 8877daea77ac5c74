"""PostgreSQL connections, shared by everything the workbench keeps in PostgreSQL (the pgvector store, session
memory): one pool per URL per process, each connection checked before use (a connection the server dropped
is replaced, never handed out), statement and connect timeouts from WORKBENCH_STORE_TIMEOUT, and failures to
connect translated like every other store's (`translate_store_error`)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from workbench.errors import ConfigError
from workbench.extras import require_extra
from workbench.redact import redact_url
from workbench.stores.base import translate_store_error

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_pools: dict[str, Any] = {}
_pools_lock = threading.Lock()


def is_postgres_url(url: str | None) -> bool:
    return bool(url) and str(url).startswith(POSTGRES_SCHEMES)


def sql_ident(name: str, what: str) -> str:
    """A SQL identifier, quoted; only plain names are accepted (they come from settings, not from users)."""
    if not _IDENT.match(name or ""):
        raise ConfigError(f"The PostgreSQL {what} '{name}' is not a plain SQL name (letters, digits, '_').")
    return f'"{name}"'


def shared_pool(url: str, timeout: float, *, store: str = "pgvector") -> Any:
    """The connection pool for `url`, opened on first use (StoreConnectionError naming the redacted URL and the
    timeout when the server cannot be reached)."""
    require_extra("pgvector", f"PostgreSQL ({store})")
    from psycopg_pool import ConnectionPool

    with _pools_lock:
        if url in _pools:
            return _pools[url]
    pool = ConnectionPool(
        url,
        min_size=1,
        max_size=8,
        timeout=timeout,
        check=ConnectionPool.check_connection,
        kwargs={
            "connect_timeout": max(round(timeout), 1),
            "options": f"-c statement_timeout={int(timeout * 1000)}",
            "autocommit": False,
        },
        open=False,
    )
    try:
        pool.open(wait=True, timeout=timeout)
    except Exception as exc:
        pool.close()
        raise translate_store_error(
            exc, store=store, location=redact_url(url), action="connect", timeout=timeout
        ) from exc
    with _pools_lock:
        if url in _pools:
            pool.close()
            return _pools[url]
        _pools[url] = pool
        return pool


@contextmanager
def transaction(pool: Any) -> Iterator[Any]:
    """A cursor in a transaction (committed on success, rolled back on an error), from `pool`."""
    with pool.connection() as connection, connection.transaction(), connection.cursor() as cur:
        yield cur


def close_pool(url: str, pool: Any) -> None:
    """Close the pool of `url` (a pool left open to a server that has gone keeps reconnecting in the background);
    the next `shared_pool(url)` opens a new one."""
    with _pools_lock:
        if _pools.get(url) is pool:
            _pools.pop(url)
    pool.close()

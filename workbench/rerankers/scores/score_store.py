"""Pair scores that last across runs and processes: one SQLite file in the data folder (`scores.sqlite3`), or a
table in the PostgreSQL that WORKBENCH_SESSION_DB names (shared by every machine that names it: a cluster's, a CI's
runners), keyed by the reranker's fingerprint (its weights, backend, max length, template), a hash of the query and
a hash of the text.

The in-memory score cache asks it for the pairs it does not hold and keeps every score it computes in it, so an
`eval`, `gate` or `tune` run again, in another process, scores only the pairs it has never seen; a changed document
or a changed reranker setting is another key, scored again. Bounded: past `max_rows` the oldest rows go. Processes
share it (WAL, a busy timeout): two runs at once each add what they scored.
"""

from __future__ import annotations

import logging
import math
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.config import Settings
from workbench.errors import WorkbenchError
from workbench.stores.kept import OnePerLocation, PostgresTables, SqliteFile, kept_location
from workbench.stores.postgres import is_postgres_url

SCORE_STORE_FILE = "scores.sqlite3"
_BATCH = 500  # keys in one SELECT (SQLite's variable limit is far above)
_BUSY_SECONDS = 2.0  # a score store locked longer than this is passed over (a search never waits on it)
_COLUMNS = ("reranker", "query", "text", "score", "at")
log = logging.getLogger("workbench.rerankers")

PairKey = tuple[str, str]  # (hash of the query, hash of the text)


def usable_score(value: Any) -> float | None:
    """A kept value as a score: a finite number, else None (a NaN, an infinity, a text or a blob written into the
    store by anything but the workbench is never lent as a score: the pair is scored again)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


class _Lending:
    """What the two stores share: the scores found, with values that are not finite numbers counted and passed
    over (`unusable`: how many so far in this process)."""

    unusable = 0

    def _usable(self, rows: Sequence[tuple[str, str, Any]]) -> dict[PairKey, float]:
        found: dict[PairKey, float] = {}
        for query, text, value in rows:
            score = usable_score(value)
            if score is None:
                self.unusable += 1
                continue
            found[(query, text)] = score
        return found


class PairScoreStore(_Lending, SqliteFile):
    """Scores by (reranker fingerprint, query hash, text hash) in a SQLite file; safe across threads and
    processes. A file that is not this store (not a database, damaged, another table of the same name) is refused
    when opened, naming the file."""

    store_name = "the score store"
    busy_seconds = _BUSY_SECONDS

    def __init__(self, path: str | Path, max_rows: int) -> None:
        self.max_rows = max_rows
        with self._errors("open"):
            self._open_file(path)
            with self._connection() as db:
                db.execute(
                    "CREATE TABLE IF NOT EXISTS pair_scores (reranker TEXT NOT NULL, query TEXT NOT NULL, "
                    "text TEXT NOT NULL, score REAL NOT NULL, at REAL NOT NULL, PRIMARY KEY (reranker, query, text))"
                )
                db.execute("CREATE INDEX IF NOT EXISTS pair_scores_by_age ON pair_scores (at)")
                columns = tuple(row[1] for row in db.execute("PRAGMA table_info(pair_scores)"))
                if columns != _COLUMNS:
                    raise sqlite3.DatabaseError(f"its pair_scores table has the columns {', '.join(columns)}")
                db.execute("SELECT reranker, query, text, score, at FROM pair_scores ORDER BY at DESC LIMIT 1")

    def get_many(self, reranker: str, keys: Sequence[PairKey]) -> list[float | None]:
        """The kept score of each (query hash, text hash) pair of `reranker`, None where there is none."""
        found: dict[PairKey, float] = {}
        with self._errors("read scores"), self._connection() as db:
            for start in range(0, len(keys), _BATCH):
                batch = keys[start : start + _BATCH]
                clause = " OR ".join(["(query = ? AND text = ?)"] * len(batch))
                rows = db.execute(
                    f"SELECT query, text, score FROM pair_scores WHERE reranker = ? AND ({clause})",
                    [reranker, *(part for key in batch for part in key)],
                )
                found.update(self._usable(rows.fetchall()))
        return [found.get(key) for key in keys]

    def put_many(self, reranker: str, scores: dict[PairKey, float]) -> None:
        """Keep scores (one transaction), then drop the oldest rows past `max_rows`."""
        if not scores:
            return
        now = time.time()
        with self._errors("keep scores"), self._connection() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(
                    "INSERT OR REPLACE INTO pair_scores (reranker, query, text, score, at) VALUES (?, ?, ?, ?, ?)",
                    [(reranker, q, t, float(s), now) for (q, t), s in scores.items()],
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            over = db.execute("SELECT COUNT(*) FROM pair_scores").fetchone()[0] - self.max_rows
            if over > 0:
                db.execute(
                    "DELETE FROM pair_scores WHERE rowid IN (SELECT rowid FROM pair_scores ORDER BY at LIMIT ?)",
                    (over,),
                )

    def counts(self) -> dict[str, int]:
        """Scores kept per reranker fingerprint."""
        with self._errors("read scores"), self._connection() as db:
            return dict(db.execute("SELECT reranker, COUNT(*) FROM pair_scores GROUP BY reranker ORDER BY reranker"))

    def clear(self, reranker: str | None = None) -> int:
        """Remove every kept score (or one reranker's); how many went."""
        with self._errors("clear scores"), self._connection() as db:
            if reranker is None:
                return int(db.execute("DELETE FROM pair_scores").rowcount)
            return int(db.execute("DELETE FROM pair_scores WHERE reranker = ?", (reranker,)).rowcount)


class PostgresScoreStore(_Lending, PostgresTables):
    """The same scores in a PostgreSQL table (`pair_scores` in WORKBENCH_PG_SCHEMA): one store for every process
    and machine that names the database."""

    store_name = "the score store"

    def __init__(self, url: str, *, schema: str, max_rows: int, timeout: float) -> None:
        self.max_rows = max_rows
        self._open_pool(url, schema, timeout)
        self._table = f"{self._schema}.pair_scores"
        self._create_tables(
            f"CREATE TABLE IF NOT EXISTS {self._table} (reranker TEXT NOT NULL, query TEXT NOT NULL, text TEXT NOT "
            "NULL, score DOUBLE PRECISION NOT NULL, at DOUBLE PRECISION NOT NULL, PRIMARY KEY (reranker, query, text))",
            f"CREATE INDEX IF NOT EXISTS pair_scores_by_age ON {self._table} (at)",
        )

    def get_many(self, reranker: str, keys: Sequence[PairKey]) -> list[float | None]:
        found: dict[PairKey, float] = {}
        with self._errors("read scores"), self._cursor() as cur:
            for start in range(0, len(keys), _BATCH):
                batch = keys[start : start + _BATCH]
                cur.execute(
                    f"SELECT query, text, score FROM {self._table} WHERE reranker = %s AND (query, text) IN "
                    f"(SELECT * FROM unnest(%s::text[], %s::text[]))",
                    (reranker, [q for q, _ in batch], [t for _, t in batch]),
                )
                found.update(self._usable(cur.fetchall()))
        return [found.get(key) for key in keys]

    def put_many(self, reranker: str, scores: dict[PairKey, float]) -> None:
        if not scores:
            return
        now = time.time()
        with self._errors("keep scores"), self._cursor() as cur:
            cur.executemany(
                f"INSERT INTO {self._table} (reranker, query, text, score, at) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (reranker, query, text) DO UPDATE SET score = EXCLUDED.score, at = EXCLUDED.at",
                [(reranker, q, t, float(s), now) for (q, t), s in scores.items()],
            )
            cur.execute(f"SELECT COUNT(*) FROM {self._table}")
            over = int(cur.fetchone()[0]) - self.max_rows
            if over > 0:
                cur.execute(
                    f"DELETE FROM {self._table} WHERE ctid IN (SELECT ctid FROM {self._table} ORDER BY at LIMIT %s)",
                    (over,),
                )

    def counts(self) -> dict[str, int]:
        with self._errors("read scores"), self._cursor() as cur:
            cur.execute(f"SELECT reranker, COUNT(*) FROM {self._table} GROUP BY reranker ORDER BY reranker")
            return {name: int(count) for name, count in cur.fetchall()}

    def clear(self, reranker: str | None = None) -> int:
        with self._errors("clear scores"), self._cursor() as cur:
            if reranker is None:
                cur.execute(f"DELETE FROM {self._table}")
            else:
                cur.execute(f"DELETE FROM {self._table} WHERE reranker = %s", (reranker,))
            return int(cur.rowcount)


ScoreStore = PairScoreStore | PostgresScoreStore
_stores: OnePerLocation[ScoreStore] = OnePerLocation()


def usable_score_store(settings: Settings) -> ScoreStore | None:
    """The score store as a search uses it: `open_score_store`, or None with one line in the log when it cannot be
    opened (a damaged or foreign file, a database that does not answer): scores are then computed and kept in
    memory only, and `workbench cache clear` removes the file."""
    try:
        return open_score_store(settings)
    except WorkbenchError as exc:
        log.warning("%s Scores are computed and kept in memory only; `workbench cache clear` removes it.", exc)
        return None


def open_score_store(settings: Settings) -> ScoreStore | None:
    """The score store the settings name (one per location per process): PostgreSQL when WORKBENCH_SESSION_DB is a
    postgresql:// URL, else `scores.sqlite3` in the data folder; None when WORKBENCH_SCORE_STORE is off."""
    if not settings.score_store or settings.cache_max_size == 0:
        return None
    target, key = kept_location(settings, SCORE_STORE_FILE)
    if is_postgres_url(target):
        return _stores.get(key, lambda: PostgresScoreStore(
            target, schema=settings.pg_schema, max_rows=settings.score_store_max_rows, timeout=settings.store_timeout
        ))  # fmt: skip
    path = Path(target)
    return _stores.get(str(path.resolve()), lambda: PairScoreStore(path, settings.score_store_max_rows))

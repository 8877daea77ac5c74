"""Pair scores that last across runs and processes: one SQLite file in the data folder (`scores.sqlite3`), keyed by
the reranker's fingerprint (its weights, backend, max length, template), a hash of the query and a hash of the text.

The in-memory score cache asks it for the pairs it does not hold and keeps every score it computes in it, so an
`eval`, `gate` or `tune` run again, in another process, scores only the pairs it has never seen; a changed document
or a changed reranker setting is another key, scored again. Bounded: past `max_rows` the oldest rows go. Processes
share it (WAL, a busy timeout): two runs at once each add what they scored.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from workbench.config import Settings
from workbench.stores.kept import OnePerLocation, SqliteFile

SCORE_STORE_FILE = "scores.sqlite3"
_BATCH = 500  # keys in one SELECT (SQLite's variable limit is far above)

PairKey = tuple[str, str]  # (hash of the query, hash of the text)


class PairScoreStore(SqliteFile):
    """Scores by (reranker fingerprint, query hash, text hash); safe across threads and processes."""

    store_name = "the score store"

    def __init__(self, path: str | Path, max_rows: int) -> None:
        self.max_rows = max_rows
        with self._errors("create its table"):
            self._open_file(path)
            with self._connection() as db:
                db.execute(
                    "CREATE TABLE IF NOT EXISTS pair_scores (reranker TEXT NOT NULL, query TEXT NOT NULL, "
                    "text TEXT NOT NULL, score REAL NOT NULL, at REAL NOT NULL, PRIMARY KEY (reranker, query, text))"
                )
                db.execute("CREATE INDEX IF NOT EXISTS pair_scores_by_age ON pair_scores (at)")

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
                found.update({(q, t): s for q, t, s in rows})
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


_stores: OnePerLocation[PairScoreStore] = OnePerLocation()


def open_score_store(settings: Settings) -> PairScoreStore | None:
    """The score store of the settings' data folder (one per process), or None when WORKBENCH_SCORE_STORE is off."""
    if not settings.score_store or settings.cache_max_size == 0:
        return None
    path = Path(settings.data_dir) / SCORE_STORE_FILE
    return _stores.get(str(path.resolve()), lambda: PairScoreStore(path, settings.score_store_max_rows))

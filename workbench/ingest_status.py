"""An ingest's progress, written where another process can read it, and the rate this machine embeds at.

While `Engine.ingest` runs, an `IngestTracker` keeps `<data_dir>/ingest/<key>.json` up to date (chunks done, the
total, the rate, the process id), so `workbench collections` in another terminal says "ingesting 1,200 of 5,183".
The file goes when the ingest ends; one left by a process that died reads as interrupted. Each finished ingest
keeps its rate per embedder in the user's cache folder (shared by every data folder on the machine), which is
what the next ingest's estimate is made from.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

from workbench.paths import user_cache_dir
from workbench.redact import public_name
from workbench.types import IngestStatus, spoken_duration

__all__ = ["IngestTracker", "estimate_words", "forget_ingest", "ingest_statuses", "kept_rate"]

_RATES_FILE = "ingest-rates.json"


def _status_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "ingest"


def _status_file(data_dir: Path, store_location: str, collection: str) -> Path:
    key = hashlib.sha256(f"{store_location}\0{collection}".encode()).hexdigest()[:24]
    return _status_dir(data_dir) / f"{key}.json"


def _alive(pid: int, host: str) -> bool:
    if pid <= 0:
        return False
    if host != socket.gethostname():
        return True  # another machine's process: trust its file
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def ingest_statuses(data_dir: Path) -> dict[tuple[str, str], IngestStatus]:
    """The ingests under way (or interrupted) that write their status under `data_dir`, by (store, collection)."""
    found: dict[tuple[str, str], IngestStatus] = {}
    folder = _status_dir(data_dir)
    if not folder.is_dir():
        return found
    for path in sorted(folder.glob("*.json")):
        try:
            status = IngestStatus.model_validate_json(path.read_bytes())
        except (OSError, ValueError):
            continue  # a file being replaced, or one that is not ours
        found[(status.store_location, status.collection)] = status.model_copy(
            update={"running": _alive(status.pid, status.host)}
        )
    return found


def forget_ingest(data_dir: Path, store_location: str, collection: str) -> None:
    """Drop what an interrupted ingest left about a collection (it was deleted)."""
    _status_file(data_dir, store_location, collection).unlink(missing_ok=True)


def _rates_path() -> Path:
    return user_cache_dir() / _RATES_FILE


def _read_rates() -> dict[str, float]:
    try:
        rates = json.loads(_rates_path().read_text())
    except (OSError, ValueError):
        return {}
    return (
        {str(k): float(v) for k, v in rates.items() if isinstance(v, int | float) and v > 0}
        if isinstance(rates, dict)
        else {}
    )


def kept_rate(embedding_model: str) -> float | None:
    """Chunks per second this machine embedded and stored at with this embedder, in its last ingest of some size."""
    return _read_rates().get(embedding_model)


def estimate_words(chunks: int, embedding_model: str) -> str:
    """'5,183 chunks to embed: about 16 min at 5.3 chunks/s (this machine's last ingest with all-MiniLM-L6-v2)'."""
    rate = kept_rate(embedding_model)
    name = public_name(embedding_model) or "the embedder"
    if rate is None:
        return f"{chunks:,} chunks to embed with {name}: the time left shows once the first batches are done"
    return (
        f"{chunks:,} chunks to embed: about {spoken_duration(chunks / rate)} at {rate:.1f} chunks/s "
        f"(this machine's last ingest with {name}; chunks found unchanged take no time)"
    )


def _keep_rate(embedding_model: str, rate: float) -> None:
    rates = _read_rates() | {embedding_model: round(rate, 3)}
    path = _rates_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(rates, indent=2))
        temporary.replace(path)
    except OSError:
        pass  # a read-only cache costs the next estimate, nothing else


class IngestTracker:
    """Wraps an ingest's progress callback: the status file follows each call; `close()` removes it and keeps
    the rate. The rate counts only chunks that were embedded, measured from the first one."""

    MIN_CHUNKS_FOR_RATE = 64  # fewer says little about the rate

    def __init__(
        self,
        data_dir: Path,
        store_location: str,
        collection: str,
        embedding_model: str,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self.path = _status_file(data_dir, store_location, collection)
        self.progress = progress
        now = time.time()
        self.status = IngestStatus(
            collection=collection, store_location=store_location, embedding_model=embedding_model,
            done=0, total=0, started=now, updated=now, pid=os.getpid(), host=socket.gethostname(),
            rate=kept_rate(embedding_model), estimated=True,
        )  # fmt: skip
        self._first: tuple[float, int] | None = None

    def __call__(self, done: int, total: int) -> None:
        now = time.time()
        if self._first is None and total:
            self._first = (now, done)
        elif self._first is not None and done - self._first[1] >= self.MIN_CHUNKS_FOR_RATE and now > self._first[0]:
            measured = (done - self._first[1]) / (now - self._first[0])
            self.status = self.status.model_copy(update={"rate": measured, "estimated": False})
        self.status = self.status.model_copy(update={"done": done, "total": total, "updated": now})
        self._write()  # once a batch: a batch takes far longer to embed than a small file to write
        if self.progress:
            self.progress(done, total)

    def _write(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_suffix(f".{os.getpid()}-{threading.get_ident()}.tmp")
            temporary.write_text(self.status.model_dump_json())
            temporary.replace(self.path)
        except OSError:
            pass  # progress another process cannot see is no reason to stop an ingest

    def close(self, finished: bool, embedded: int = 0) -> None:
        """The ingest ended: the status file goes, and the measured rate is kept when most of the chunks were
        embedded (a re-ingest that found them unchanged measures the store, not the embedder)."""
        if finished:
            self.path.unlink(missing_ok=True)
            mostly_embedded = embedded >= max(self.MIN_CHUNKS_FOR_RATE, 0.9 * self.status.total)
            if mostly_embedded and not self.status.estimated and self.status.rate:
                _keep_rate(self.status.embedding_model, self.status.rate)
        else:  # interrupted or failed: the file stays, and says so
            self.status = self.status.model_copy(update={"pid": 0})
            self._write()

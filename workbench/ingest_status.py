"""An ingest's progress, written where another process can read it, and the rate this machine embeds at.

While `Engine.ingest` runs, an `IngestTracker` keeps `<data_dir>/ingest/<key>.json` up to date (chunks done, the
total, the rate, the process id), so `workbench collections` in another terminal says "ingesting 1,200 of 5,183".
The file goes when the ingest ends; one left by a process that died reads as interrupted. Each finished ingest
keeps its rate per embedder in the user's cache folder (shared by every data folder on the machine), which is
what the next ingest's estimate is made from.

Rates are in characters read per second, a text's characters counted up to what its embedder reads (its
`max_seq_length` in tokens, at CHARACTERS_PER_TOKEN; all of them for an embedder that does not say). Chunk rates do
not carry from one corpus to another: all-MiniLM-L6-v2 on 2 cores ingested the demo's 320-character passages at 52
chunks/s and SciFact's 1,500-character abstracts at 17, but at 21,700 and 20,400 characters read per second.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from workbench.paths import user_cache_dir
from workbench.redact import public_name
from workbench.types import Chunk, IngestStatus, spoken_duration

__all__ = ["IngestTracker", "estimate_words", "forget_ingest", "ingest_statuses", "kept_rate"]

_RATES_FILE = "embedding-rates.json"  # characters read per second, per embedder
CHARACTERS_PER_TOKEN = 5  # about what English prose averages in WordPiece and BPE tokens


def characters_read(texts: Iterable[str], max_tokens: int | None) -> int:
    """The characters an embedder that reads `max_tokens` tokens of each text reads of these (all without a
    limit): what embedding them costs."""
    cap = max_tokens * CHARACTERS_PER_TOKEN if max_tokens else None
    return sum(len(text) if cap is None else min(len(text), cap) for text in texts)


def _status_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "ingest"


def _status_file(data_dir: Path, store_location: str, collection: str) -> Path:
    key = hashlib.sha256(f"{store_location}\0{collection}".encode()).hexdigest()[:24]
    return _status_dir(data_dir) / f"{key}.json"


def process_started(pid: int) -> float | None:
    """When a process of this machine started, in seconds since boot (Linux's /proc); None where it cannot be
    read (no such process, no /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _alive(pid: int, host: str, started: float | None = None) -> bool:
    """Whether the process that wrote a status still runs: its pid is alive and, where its start was recorded,
    started then (a pid the system gave to a newer process after the ingest died is not the ingest)."""
    if pid <= 0:
        return False
    if host != socket.gethostname():
        return True  # another machine's process: trust its file
    if started is not None:
        now = process_started(pid)
        if now is not None and abs(now - started) > 1.0:
            return False
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
            update={"running": _alive(status.pid, status.host, status.process_started)}
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
    """Characters read per second (see `characters_read`) this machine embedded and stored at with this embedder,
    in its last ingest of some size."""
    return _read_rates().get(embedding_model)


def estimate_words(chunks: int, characters: int, embedding_model: str) -> str:
    """'5,183 chunks to embed: about 5 min (this machine's last ingest with all-MiniLM-L6-v2 read 22,900
    characters/s)', for `chunks` whose embedder reads `characters` characters of them."""
    rate = kept_rate(embedding_model)
    name = public_name(embedding_model) or "the embedder"
    if rate is None:
        return f"{chunks:,} chunks to embed with {name}: the time left shows once the first batch is done"
    return (
        f"{chunks:,} chunks to embed: about {spoken_duration(characters / rate)} (this machine's last ingest with "
        f"{name} read {rate:,.0f} characters/s)"
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
    the rate. `planned` hears what is to be embedded, `wrote` each batch stored: the rates count only what was
    embedded, from the moment embedding began."""

    MIN_CHUNKS_FOR_RATE = 64  # fewer says little about the rate

    def __init__(
        self,
        data_dir: Path,
        store_location: str,
        collection: str,
        embedding_model: str,
        progress: Callable[[int, int], None] | None = None,
        max_tokens: int | None = None,
    ) -> None:
        self.path = _status_file(data_dir, store_location, collection)
        self.progress = progress
        self.max_tokens = max_tokens  # what the embedder reads of a text
        now = time.time()
        self.status = IngestStatus(
            collection=collection, store_location=store_location, embedding_model=embedding_model,
            done=0, total=0, started=now, updated=now, pid=os.getpid(), host=socket.gethostname(),
            process_started=process_started(os.getpid()),
            character_rate=kept_rate(embedding_model), estimated=True,
        )  # fmt: skip
        self._began: float | None = None
        self._characters = self._chunks = self._characters_written = self._chunks_written = 0

    def planned(self, todo: Sequence[Chunk]) -> str:
        """The chunks to embed are known (unchanged ones left out); the estimate, in words."""
        self._began = time.time()
        self._chunks, self._characters = len(todo), characters_read((c.text for c in todo), self.max_tokens)
        self.status = self.status.model_copy(update={"characters_left": self._characters})
        return estimate_words(self._chunks, self._characters, self.status.embedding_model)

    def wrote(self, upserted: Sequence[Chunk], deleted: Sequence[str]) -> None:
        """A batch was embedded and stored (an `on_write` listener)."""
        if self._began is None or not upserted:
            return
        self._chunks_written += len(upserted)
        self._characters_written += characters_read((c.text for c in upserted), self.max_tokens)
        update: dict[str, object] = {"characters_left": max(self._characters - self._characters_written, 0)}
        elapsed = time.time() - self._began
        if self._chunks_written >= self.MIN_CHUNKS_FOR_RATE and elapsed > 0:
            update |= {
                "rate": self._chunks_written / elapsed,
                "character_rate": self._characters_written / elapsed,
                "estimated": False,
            }
        self.status = self.status.model_copy(update=update)

    def __call__(self, done: int, total: int) -> None:
        self.status = self.status.model_copy(update={"done": done, "total": total, "updated": time.time()})
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

    def close(self, finished: bool) -> None:
        """The ingest ended: the status file goes, and the measured rate is kept when most of what was read was
        embedded (a re-ingest that found the chunks unchanged measures the store, not the embedder)."""
        if finished:
            self.path.unlink(missing_ok=True)
            mostly_embedded = self._chunks_written >= max(self.MIN_CHUNKS_FOR_RATE, 0.9 * self.status.total)
            if mostly_embedded and not self.status.estimated and self.status.character_rate:
                _keep_rate(self.status.embedding_model, self.status.character_rate)
        else:  # interrupted or failed: the file stays, and says so
            self.status = self.status.model_copy(update={"pid": 0})
            self._write()

"""Long runs as jobs: an evaluation or a gate started now and asked about later, with its progress (queries done of
all, the rate, the time left), its result when done, its one-line error when it failed, and a way to stop it.

A `JobBoard` runs its jobs one at a time, in the order they were started, on a thread of its own (they share the
engine and its reranker, which a second run at once would only slow); at most `MAX_WAITING` wait behind the running
one, and a finished job is kept for `KEEP_SECONDS` (at most `MAX_KEPT` of them), then forgotten. Jobs live in the
process that runs them: a server that restarts forgets them (the experiments they kept stay in the store).

The HTTP API's `/jobs` routes are its adapter; the work itself is the same function the synchronous routes call.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from workbench.errors import BusyError, JobNotFoundError, WorkbenchError, error_message

JobState = Literal["queued", "running", "done", "failed", "cancelled"]
Progress = Callable[[int, int], None]
MAX_WAITING = 8
MAX_KEPT = 100
KEEP_SECONDS = 3600.0


class JobCancelled(WorkbenchError):
    """Raised inside a job's progress call once the job was asked to stop."""


class JobStatus(BaseModel):
    """Where a job stands: its state, progress (queries done of all, queries per second, seconds left at that
    rate), and its result or its error once it ended."""

    id: str
    kind: str = Field(description="what runs: 'evaluation' or 'gate'")
    state: JobState
    done: int = 0
    total: int | None = None
    rate_per_s: float | None = Field(None, description="queries done per second so far")
    seconds_left: float | None = Field(None, description="at the rate so far")
    created_at: str
    started_at: str | None = None
    finished_at: str | None = None
    result: dict[str, Any] | None = None
    error: str | None = None


class _Job:
    def __init__(self, kind: str) -> None:
        self.id = secrets.token_hex(8)
        self.kind = kind
        self.state: JobState = "queued"
        self.done = 0
        self.total: int | None = None
        self.created = _now()
        self.started: str | None = None
        self.finished: str | None = None
        self.began = 0.0  # time.monotonic() when it started
        self.ended = 0.0
        self.result: dict[str, Any] | None = None
        self.error: str | None = None
        self.stop = threading.Event()

    def status(self) -> JobStatus:
        rate = left = None
        if self.state == "running" and self.done:
            rate = self.done / max(time.monotonic() - self.began, 1e-9)
            left = (self.total - self.done) / rate if self.total is not None else None
        elif self.state == "done" and self.done:
            rate = self.done / max(self.ended - self.began, 1e-9)
            left = 0.0
        return JobStatus(
            id=self.id, kind=self.kind, state=self.state, done=self.done, total=self.total,
            rate_per_s=round(rate, 3) if rate is not None else None,
            seconds_left=round(left, 1) if left is not None else None, created_at=self.created,
            started_at=self.started, finished_at=self.finished, result=self.result, error=self.error,
        )  # fmt: skip


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class JobBoard:
    """The jobs of one process (one per running API)."""

    def __init__(self) -> None:
        self._jobs: OrderedDict[str, _Job] = OrderedDict()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="workbench-job")

    def start(self, kind: str, work: Callable[[Progress], BaseModel]) -> JobStatus:
        """Queue `work(progress)` (its result a pydantic model, kept as JSON); its status now. BusyError when
        `MAX_WAITING` jobs already wait."""
        job = _Job(kind)
        with self._lock:
            self._forget_old()
            waiting = sum(j.state == "queued" for j in self._jobs.values())
            if waiting >= MAX_WAITING:
                raise BusyError(
                    f"{waiting} jobs are already waiting behind the one running: ask again when one is done "
                    "(GET /jobs lists them), or stop one (DELETE /jobs/ID)."
                )
            self._jobs[job.id] = job
        self._pool.submit(self._run, job, work)
        return job.status()

    def _run(self, job: _Job, work: Callable[[Progress], BaseModel]) -> None:
        if job.stop.is_set():
            return
        job.state, job.started, job.began = "running", _now(), time.monotonic()

        def progress(done: int, total: int) -> None:
            job.done, job.total = done, total
            if job.stop.is_set():
                raise JobCancelled("Stopped on request.")

        try:
            job.result = work(progress).model_dump(mode="json")
            job.state = "done"
        except JobCancelled:
            job.state, job.error = "cancelled", "Stopped on request: nothing of it was kept."
        except Exception as exc:  # one line for the client, never a traceback
            job.state, job.error = "failed", error_message(exc, remote=True)
        finally:
            job.finished, job.ended = _now(), time.monotonic()

    def status(self, job_id: str) -> JobStatus:
        """A job's status; JobNotFoundError for an id this process does not hold (never started, or forgotten)."""
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise JobNotFoundError(
                "No job with that id here: it was never started, or it ended over an hour ago, or the server restarted "
                "since (a kept experiment stays: GET /experiments)."
            )
        return job.status()

    def cancel(self, job_id: str) -> JobStatus:
        """A queued job never starts; a running one stops after the query it is on."""
        self.status(job_id)
        with self._lock:
            job = self._jobs[job_id]
            job.stop.set()
            if job.state == "queued":
                job.state, job.error, job.finished = "cancelled", "Stopped on request before it started.", _now()
        return job.status()

    def list(self) -> list[JobStatus]:
        """Every job held, newest first."""
        with self._lock:
            self._forget_old()
            return [job.status() for job in reversed(self._jobs.values())]

    def _forget_old(self) -> None:
        now = time.monotonic()
        for job_id, job in list(self._jobs.items()):
            ended = job.state in ("done", "failed", "cancelled")
            if ended and job.ended and now - job.ended > KEEP_SECONDS:
                del self._jobs[job_id]
        while len(self._jobs) > MAX_KEPT:
            oldest = next((i for i, j in self._jobs.items() if j.state in ("done", "failed", "cancelled")), None)
            if oldest is None:
                break
            del self._jobs[oldest]

    def close(self) -> None:
        """Every job asked to stop; the running one ends after its current query."""
        with self._lock:
            for job in self._jobs.values():
                job.stop.set()
        self._pool.shutdown(wait=False, cancel_futures=True)

"""Micro-batching: searches that arrive together share model calls.

Each request hands its (query, document) pairs to one worker thread per model. When the model is free, a
request runs at once; requests that arrive while a model call runs are gathered into the next call (continuous
batching), their pairs sorted by length and run in batches, each request handed its scores. So eight concurrent
searches make a handful of full batches instead of eight queues of small ones fighting over the same cores, and a
lone search pays no wait. A `window` above zero (RERANKER_BATCH_WINDOW_MS) makes a free model wait that long for
company first, which only pays where a call's fixed cost dwarfs its per-pair cost.

A request may carry a progress callback, taken from `reporting_progress` around the call that submits it: after
each batch of a model call, every request with pairs in that batch hears (its pairs scored so far, its pairs), so a
front end can show a rerank advance batch by batch.

A request may carry a deadline (`time.monotonic()` seconds): one already past is failed without running, and a
batch whose pairs all belong to requests past their deadline is skipped, so a search its caller gave up on (a
504) stops using the model at the next batch instead of starving the searches behind it.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from workbench.errors import QueryTimeoutError

Pair = Any  # an encoded pair: whatever the run function takes
Progress = Callable[[int, int], None]  # (pairs scored so far, pairs in the request)
Request = tuple[list[Pair], Future[list[float]], float | None, Progress | None]  # pairs, scores, deadline, progress
# (pairs, is pair i still wanted, these pairs were just scored) -> scores
RunFunction = Callable[[list[Pair], Callable[[int], bool], Callable[[list[int]], None]], list[float]]
_PROGRESS: ContextVar[Progress | None] = ContextVar("rerank_progress", default=None)
log = logging.getLogger("workbench.rerankers")


@contextmanager
def reporting_progress(progress: Progress | None) -> Iterator[None]:
    """Within this block, requests submitted by this thread report their progress to `progress`."""
    token = _PROGRESS.set(progress)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


class MicroBatcher:
    """Runs `run(pairs) -> scores` for the pairs of every request waiting within `window` seconds."""

    def __init__(
        self,
        run: RunFunction,
        window: float = 0.003,
        name: str = "rerank",
    ) -> None:
        self._run = run
        self.window = window
        self._queue: queue.Queue[Request] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._name = name
        self.runs = 0
        self.requests = 0

    def _ensure_worker(self) -> None:
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name=f"{self._name}-batcher", daemon=True)
                self._thread.start()

    def submit(self, pairs: Sequence[Pair], deadline: float | None = None) -> list[float]:
        """Scores for `pairs`, computed together with the pairs of concurrent requests; QueryTimeoutError when
        `deadline` passes before they are scored."""
        if not pairs:
            return []
        future: Future[list[float]] = Future()
        self._ensure_worker()
        self._queue.put((list(pairs), future, deadline, _PROGRESS.get()))
        return future.result()

    def _work(self) -> None:
        while True:
            first = self._queue.get()
            window_ends = time.perf_counter() + self.window
            batch = [first]
            while True:
                remaining = window_ends - time.perf_counter()
                if remaining <= 0:
                    break
                try:
                    batch.append(self._queue.get(timeout=remaining))
                except queue.Empty:
                    break
            while True:  # whatever else is already waiting joins too
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            self._serve(batch)

    def _serve(self, batch: list[Request]) -> None:
        """One model run for the gathered requests that are still wanted; each gets its scores or its error."""
        for _, future, deadline, _ in batch:
            if _expired(deadline):
                future.set_exception(_late())
        batch = [entry for entry in batch if not entry[1].done()]
        if not batch:
            return
        pairs = [pair for items, _, _, _ in batch for pair in items]
        owner = [i for i, (items, _, _, _) in enumerate(batch) for _ in items]

        def wanted(pair: int) -> bool:
            return not _expired(batch[owner[pair]][2])

        done = _progress_reporter(batch, owner)
        try:
            scores = self._run(pairs, wanted, done)
        except BaseException as exc:  # every waiting request gets the error, the worker lives on
            for _, future, _, _ in batch:
                future.set_exception(exc)
            return
        self.runs += 1
        self.requests += len(batch)
        start = 0
        for items, future, deadline, _ in batch:
            if _expired(deadline):
                future.set_exception(_late())
            else:
                future.set_result(scores[start : start + len(items)])
            start += len(items)


def _progress_reporter(batch: list[Request], owner: list[int]) -> Callable[[list[int]], None]:
    """What hears each model batch of one run: the pairs it scored (indices into the run), counted per request;
    each request whose pairs moved hears its count. A listener's failure never stops the model."""
    scored = [0] * len(batch)

    def done(indices: list[int]) -> None:
        touched = {owner[i] for i in indices}
        for i in indices:
            scored[owner[i]] += 1
        for request in touched:
            items, _, _, progress = batch[request]
            if progress is None:
                continue
            try:
                progress(scored[request], len(items))
            except Exception:
                log.exception("a rerank progress listener failed")

    return done


def _expired(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() > deadline


def _late() -> QueryTimeoutError:
    return QueryTimeoutError(
        "The search ran past its time limit (WORKBENCH_QUERY_TIMEOUT) and was stopped before the reranker finished."
    )

"""Micro-batching: searches that arrive together share model calls.

Each request hands its (query, document) pairs to one worker thread per model; the worker waits a few
milliseconds for other requests, sorts all their pairs by length, runs them in batches and hands each request
its scores. So eight concurrent searches make a handful of full batches instead of eight queues of small ones
fighting over the same cores.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

Pair = Any  # an encoded pair: whatever the run function takes


class MicroBatcher:
    """Runs `run(pairs) -> scores` for the pairs of every request waiting within `window` seconds."""

    def __init__(self, run: Callable[[list[Pair]], list[float]], window: float = 0.003, name: str = "rerank") -> None:
        self._run = run
        self.window = window
        self._queue: queue.Queue[tuple[list[Pair], Future[list[float]]]] = queue.Queue()
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

    def submit(self, pairs: Sequence[Pair]) -> list[float]:
        """Scores for `pairs`, computed together with the pairs of concurrent requests."""
        if not pairs:
            return []
        future: Future[list[float]] = Future()
        self._ensure_worker()
        self._queue.put((list(pairs), future))
        return future.result()

    def _work(self) -> None:
        while True:
            first = self._queue.get()
            deadline = time.perf_counter() + self.window
            batch = [first]
            while True:
                remaining = deadline - time.perf_counter()
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
            pairs = [pair for items, _ in batch for pair in items]
            try:
                scores = self._run(pairs)
            except BaseException as exc:  # every waiting request gets the error, the worker lives on
                for _, future in batch:
                    future.set_exception(exc)
                continue
            self.runs += 1
            self.requests += len(batch)
            start = 0
            for items, future in batch:
                future.set_result(scores[start : start + len(items)])
                start += len(items)

"""Fail open: a rerank budget and a circuit breaker for the paths that serve searches to apps and agents.

A search served under a budget (`Engine.search(..., rerank_budget_ms=B)`; the serving paths pass the request's
budget or WORKBENCH_RERANK_BUDGET_MS) reranks in a worker thread and waits at most B ms for it. Past the budget, when
the reranker fails, while its circuit is open, or when a run check says it is not running as intended (every
candidate scored the same; a served copy the last parity audit found unfaithful to its model), the answer is the
first stage's order, marked with the reason (`SearchResult.rerank_fallback`): never an error, never a list that mixes
some reranked scores into an order.

The circuit is per reranker (its model id; a served reranker's replicas share it): after `failures` failures in a
row (errors and budgets passed alike) it opens and the reranker is skipped, said as "circuit open"; after
`cooldown_s` one search probes it (half open) while the others still skip; the probe's success closes it, its
failure opens it again for another cooldown.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np

from workbench.errors import QueryTimeoutError, error_message, is_expected
from workbench.inputs import validate_rerank_budget_ms

log = logging.getLogger("workbench.serving")

T = TypeVar("T")

BUDGET = "budget"
CIRCUIT_OPEN = "circuit open"
RUN_CHECK = "run check"
SAME_SCORES = "every candidate got the same score"


def same_scores(scores: Sequence[float | None] | np.ndarray) -> bool:
    """Whether every one of two or more scores is the same at single precision (as trec_eval reads scores): the
    **constant** run check on one list (`evaluation.sanity`), whose order is then the first stage's by its ties."""
    known = [s for s in scores if s is not None]
    if len(known) < 2 or len(known) != len(scores):
        return False
    values = np.asarray(known, dtype=np.float32)
    return bool(np.all(values == values[0]))


def sooner(deadline: float, other: float | None) -> float:
    """The earlier of a budget's deadline and another (None: none), both on time.monotonic()."""
    return deadline if other is None else min(deadline, other)


def run_check_reason(words: str) -> str:
    """A run check's words as a fallback reason: 'run check: ...'."""
    return f"{RUN_CHECK}: {words}"


@dataclass
class Circuit:
    """One reranker's circuit: closed (used), open (skipped until `opened_at + cooldown_s`), half open (one probe)."""

    failures_in_a_row: int = 0
    opened_at: float | None = None
    probing: bool = False

    @property
    def state(self) -> str:
        if self.opened_at is None:
            return "closed"
        return "half open" if self.probing else "open"


@dataclass
class Served(Generic[T]):
    """What a budgeted rerank gave: its value, or None and why the first stage's order is served instead."""

    value: T | None
    fallback: str | None = None


@dataclass
class RerankGuard:
    """The budget and the circuits of one engine's rerankers. `clock` is time.monotonic (a test passes its own)."""

    failures: int = 5
    cooldown_s: float = 30.0
    clock: Callable[[], float] = time.monotonic
    _circuits: dict[str, Circuit] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def circuit(self, reranker: str) -> Circuit:
        """The reranker's circuit (a copy: what it is now)."""
        with self._lock:
            now = self._circuits.get(reranker, Circuit())
            return Circuit(now.failures_in_a_row, now.opened_at, now.probing)

    def _admit(self, reranker: str) -> bool:
        """Whether a search may call the reranker now: closed, or open past its cooldown with no probe out (this
        search becomes the probe)."""
        with self._lock:
            circuit = self._circuits.setdefault(reranker, Circuit())
            if circuit.opened_at is None:
                return True
            if circuit.probing or self.clock() < circuit.opened_at + self.cooldown_s:
                return False
            circuit.probing = True
            return True

    def _settle(self, reranker: str, ok: bool) -> None:
        with self._lock:
            circuit = self._circuits.setdefault(reranker, Circuit())
            if ok:
                if circuit.opened_at is not None:
                    log.info("The reranker %s answered again: its circuit is closed.", reranker)
                self._circuits[reranker] = Circuit()
                return
            circuit.failures_in_a_row += 1
            if circuit.probing or (circuit.opened_at is None and circuit.failures_in_a_row >= self.failures):
                log.warning(
                    "The reranker %s failed %d times in a row: skipped for %g s (searches serve the first stage's "
                    "order), then tried again.", reranker, circuit.failures_in_a_row, self.cooldown_s,
                )  # fmt: skip
                circuit.opened_at = self.clock()
            circuit.probing = False

    def run(
        self,
        reranker: str,
        rerank: Callable[[float], T],
        budget_ms: float,
        check: Callable[[T], str | None] | None = None,
    ) -> Served[T]:
        """`rerank(deadline)` within `budget_ms`, for the reranker named `reranker`: its value, or the reason the
        first stage's order is served instead ("budget", "circuit open", "error: ...", or "run check: ..." when
        `check(value)` names a fault: a failure, as an error is). A rerank past its budget is left to stop at its
        next batch (the deadline it was given); what it scores by then is kept in the score cache, never mixed into
        this answer."""
        if not self._admit(reranker):
            return Served(None, CIRCUIT_OPEN)
        deadline = time.monotonic() + budget_ms / 1000
        future: Future[T] = Future()

        def work() -> None:
            try:
                future.set_result(rerank(deadline))
            except BaseException as exc:  # handed to the waiting search, which says it
                future.set_exception(exc)

        # A thread of its own, not a pool's: a hung reranker's call (bounded by RERANK_TIMEOUT) must never make the
        # searches after it wait for a worker and pass their budgets while the reranker answers them in time.
        threading.Thread(target=work, name="workbench-budgeted-rerank", daemon=True).start()
        try:
            value = future.result(timeout=max(0.0, deadline - time.monotonic()))
        except (FutureTimeout, QueryTimeoutError):
            self._settle(reranker, ok=False)
            return Served(None, BUDGET)
        except Exception as exc:  # a reranker down, lying or broken: the first stage's order, with why
            return Served(None, self.failed(reranker, exc))
        fault = check(value) if check is not None else None
        if fault is not None:
            self._settle(reranker, ok=False)
            log.warning("Served the first stage's order: the reranker %s did not run as intended: %s", reranker, fault)
            return Served(None, run_check_reason(fault))
        self._settle(reranker, ok=True)
        return Served(value)

    def skipping(self, reranker: str) -> bool:
        """Whether the reranker's circuit is open and its cooldown not over (a search skips it without asking)."""
        with self._lock:
            circuit = self._circuits.get(reranker)
            return (
                circuit is not None
                and circuit.opened_at is not None
                and (circuit.probing or self.clock() < circuit.opened_at + self.cooldown_s)
            )

    def failed(self, reranker: str, exc: BaseException) -> str:
        """Count a failure of the reranker (its call, or making it: a served reranker that cannot be reached) and
        say it as a fallback reason, "error: ..." in the error table's words (no traceback, path or secret)."""
        self._settle(reranker, ok=False)
        words = error_message(exc, remote=True) if is_expected(exc) else f"the reranker failed ({type(exc).__name__})"
        log.warning("Served the first stage's order: the reranker %s failed: %s", reranker, words)
        return f"error: {words}"


def serving_budget(given: float | None, default: float | None) -> float | None:
    """The rerank budget a serving path searches under: the request's (checked), else the settings' (None: none)."""
    return validate_rerank_budget_ms(given) if given is not None else default

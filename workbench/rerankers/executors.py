"""Where an evaluation's pairs are scored: here, by the reranker in this process (`local`, what every search does),
or spread over the workers of a Ray cluster (`ray`), chosen by WORKBENCH_SCORE_EXECUTOR.

An executor takes a block of queries, each with the texts its search will ask the reranker about, and returns
every text's score. Each worker holds its own copy of the reranker, made from the same id on the same backend, and
scores a query's texts in one `predict` call, as a search here does: so a score is the same to the last digit
wherever it was computed, and the verdict, computed where the run started, is the same too. A worker whose copy is
not the same model on the same backend (another folder of that name on a cluster's machine) is refused by its
fingerprint before it scores anything.

Only rerankers that run here are spread (a cross-encoder, a causal-LM or a ColBERT model): a service is spread by
naming its replicas (`http://gpu1:7997,http://gpu2:7997`), and a listwise LLM's order is of one whole list.
"""

from __future__ import annotations

import atexit
import os
import socket
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from workbench.config import Settings
from workbench.errors import ConfigError, ModelError, WorkbenchError
from workbench.extras import require_extra
from workbench.redact import plain_text, redact_text
from workbench.rerankers.base import BaseReranker, Reranker
from workbench.rerankers.factory import create_reranker, on_backend, runs_here
from workbench.vocab import BACKEND_CHOICES, ORDER_SCALE

QueryTexts = tuple[str, list[str]]
LOCAL = "local"
QUERIES_PER_TASK = 4  # a worker's call: few enough that every worker gets some of a block, many enough to be cheap


class ScoreExecutor(Protocol):
    """Scores blocks of queries' texts with a reranker, wherever its workers are."""

    name: str

    def close(self) -> None:
        """Its workers stopped (and what it started)."""
        ...

    def describe(self) -> str:
        """Where the scores are computed, in a few words ("Ray at 127.0.0.1:6379, 2 workers")."""
        ...

    def score_queries(self, reranker: Reranker, work: Sequence[QueryTexts], settings: Settings) -> list[list[float]]:
        """Each query's texts scored by `reranker` (or a copy of it made with `settings`), in the order given."""
        ...


def spreadable(reranker: Reranker | None) -> bool:
    """Whether an executor may score this reranker's pairs elsewhere: a model that runs here and scores pairs (not a
    service, not a listwise order)."""
    return isinstance(reranker, BaseReranker) and reranker.score_scale != ORDER_SCALE and runs_here(reranker.model_id)


def worker_model_id(reranker: Reranker) -> str:
    """The id a worker makes its copy from: the reranker's id on the backend it runs on here ('minilm@onnx'), so
    no worker measures or picks another backend."""
    backend = reranker.backend.split(":", 1)[0]
    return on_backend(reranker.model_id, backend) if backend in BACKEND_CHOICES else reranker.model_id


def fingerprint(reranker: Reranker) -> tuple[str | None, str]:
    """What must match between the reranker here and a worker's copy: its store key (weights, backend, maximum
    length, template) where it has one, and its backend."""
    key = getattr(reranker, "store_key", None)
    return (str(key) if key else None), reranker.backend


def same_reranker(here: tuple[str | None, str], there: tuple[str | None, str]) -> bool:
    """Whether a worker's copy is the reranker here: the same store key where this one has one (one measuring its
    backends has none yet), else the same backend."""
    return here[0] == there[0] if here[0] is not None else here[1] == there[1]


class _PairScorer:
    """A worker's copy of the reranker (a Ray actor's body): made once, then asked for blocks of queries."""

    def __init__(self, model_id: str, settings: Settings, threads: int) -> None:
        import torch

        torch.set_num_threads(max(threads, 1))
        self.reranker = create_reranker(model_id, settings)

    def fingerprint(self) -> tuple[str | None, str]:
        return fingerprint(self.reranker)

    def score(self, work: list[QueryTexts]) -> list[list[float]]:
        return [self.reranker.predict(query, texts) if texts else [] for query, texts in work]


class RayExecutor:
    """Scores on a Ray cluster: the one `address` names ('auto', 'HOST:6379', 'ray://HOST:10001'), the one
    RAY_ADDRESS names, or a local one started here (and stopped when this process ends). `workers` actors per
    reranker, at most one per CPU the cluster has, each using its share of those CPUs."""

    name = "ray"

    def __init__(self, address: str | None, workers: int) -> None:
        require_extra("ray", "WORKBENCH_SCORE_EXECUTOR=ray")
        _token_if_held(address)  # read by Ray when it is imported
        import ray

        self._ray = ray
        self.address = address
        if not ray.is_initialized():
            _check_reachable(address)
            try:
                ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
            except (ConnectionError, ValueError, RuntimeError, TimeoutError) as exc:
                shown = plain_text(address or "a local cluster")[:200]
                raise ConfigError(
                    f"Ray at {shown} could not be joined ({redact_text(' '.join(str(exc).split()))[:200]}): check "
                    "WORKBENCH_SCORE_EXECUTOR (ray:ADDRESS) or RAY_ADDRESS, that the cluster is running, and, where it "
                    "asks for a token, that RAY_AUTH_TOKEN (or ~/.ray/auth_token) holds it."
                ) from exc
            atexit.register(ray.shutdown)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.workers = max(1, min(workers, cpus))
        self.threads = max(1, cpus // self.workers)
        self._actors: dict[str, list[Any]] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            for actors in self._actors.values():
                for actor in actors:
                    self._ray.kill(actor)
            self._actors.clear()
        if self._ray.is_initialized():
            self._ray.shutdown()

    def describe(self) -> str:
        where = self._ray.get_runtime_context().gcs_address
        return f"Ray at {plain_text(where)}, {self.workers} worker{'s' if self.workers != 1 else ''}"

    def _actors_for(self, reranker: Reranker, settings: Settings) -> list[Any]:
        key = f"{worker_model_id(reranker)}\x00{fingerprint(reranker)}"
        with self._lock:
            if key not in self._actors:
                remote = self._ray.remote(_PairScorer).options(
                    num_cpus=self.threads, max_restarts=2, max_task_retries=2
                )
                actors = [remote.remote(worker_model_id(reranker), settings, self.threads) for _ in range(self.workers)]
                mine = fingerprint(reranker)
                theirs = [tuple(print_) for print_ in self._get([actor.fingerprint.remote() for actor in actors])]
                other = next((print_ for print_ in theirs if not same_reranker(mine, print_)), None)  # type: ignore[arg-type]
                if other is not None:
                    for actor in actors:
                        self._ray.kill(actor)
                    theirs_said, mine_said = plain_text(str(other[0] or other[1])), plain_text(str(mine[0] or mine[1]))
                    raise ConfigError(
                        f"Ray's workers loaded another reranker than this process ({theirs_said[:160]} against "
                        f"{mine_said[:160]}): give them the same model folder (RERANKER_MODEL, WORKBENCH_MODELS_DIR) "
                        "and backend, or score locally."
                    )
                self._actors[key] = actors
            return self._actors[key]

    def _get(self, refs: list[Any]) -> list[Any]:
        """Ray's answers; a worker's own error as that error (a WorkbenchError says what to fix), any other as one
        ModelError line."""
        try:
            return self._ray.get(refs)
        except self._ray.exceptions.RayTaskError as exc:
            cause = exc.cause if isinstance(getattr(exc, "cause", None), BaseException) else None
            if isinstance(cause, WorkbenchError):
                raise cause from None
            reason = f"{type(cause).__name__}: {cause}" if cause else "a worker failed"
            raise ModelError(f"A Ray worker failed while scoring ({redact_text(reason)[:200]}).") from None
        except self._ray.exceptions.RayError as exc:
            raise ModelError(
                f"Ray could not score the pairs ({type(exc).__name__}): check the cluster, or score locally "
                "(WORKBENCH_SCORE_EXECUTOR=local)."
            ) from None

    def score_queries(self, reranker: Reranker, work: Sequence[QueryTexts], settings: Settings) -> list[list[float]]:
        if not work:
            return []
        actors = self._actors_for(reranker, settings)
        tasks = [list(work[start : start + QUERIES_PER_TASK]) for start in range(0, len(work), QUERIES_PER_TASK)]
        refs = [actors[i % len(actors)].score.remote(task) for i, task in enumerate(tasks)]
        return [scores for answered in self._get(refs) for scores in answered]


def _check_reachable(address: str | None) -> None:
    """ConfigError at once when `address` names a host and port nothing listens on (Ray itself would retry for
    minutes); 'auto', RAY_ADDRESS and a local cluster are left to Ray."""
    if not address or address == "auto":
        return
    where = address.removeprefix("ray://")
    host, _, port = where.rpartition(":")
    shown = plain_text(address)[:200]
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(
            f"WORKBENCH_SCORE_EXECUTOR names Ray at '{shown}', which is not HOST:PORT (ray:HOST:6379, "
            "ray:ray://HOST:10001 or ray:auto)."
        )
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        raise ConfigError(
            f"Nothing answers at Ray's address {shown} ({type(exc).__name__}): start the cluster (ray start --head) "
            "or fix WORKBENCH_SCORE_EXECUTOR; WORKBENCH_SCORE_EXECUTOR=local scores here."
        ) from None


def _token_if_held(address: str | None) -> None:
    """Token authentication turned on for a cluster joined by address when this machine holds a token
    (RAY_AUTH_TOKEN, ~/.ray/auth_token) and RAY_AUTH_MODE says nothing: Ray's own rule for the clusters it starts,
    which it does not apply when joining one (a cluster started by `ray start` asks for its token)."""
    held = os.environ.get("RAY_AUTH_TOKEN") or (Path.home() / ".ray" / "auth_token").is_file()
    if address and held and "RAY_AUTH_MODE" not in os.environ:
        os.environ["RAY_AUTH_MODE"] = "token"


_executors: dict[str, ScoreExecutor] = {}
_executors_lock = threading.Lock()


def score_executor(settings: Settings) -> ScoreExecutor | None:
    """The executor WORKBENCH_SCORE_EXECUTOR names (one per process and setting, its workers kept between runs), or
    None for `local`: the reranker here scores, as in every search."""
    named = settings.score_executor.strip()
    if named.lower() == LOCAL:
        return None
    address = named.split(":", 1)[1] if ":" in named else None
    key = f"{named}\x00{settings.score_workers}"
    with _executors_lock:
        if key not in _executors:
            _executors[key] = RayExecutor(address, settings.score_workers)
        return _executors[key]


def close_executors() -> None:
    """Every executor's workers stopped, and a Ray started here shut down (a test's end, a server's)."""
    with _executors_lock:
        for executor in _executors.values():
            executor.close()
        _executors.clear()

"""The depth curve: quality and rerank time as k grows, with rerank times measured once per engine and settings
(a second curve reports the first measurement until the collection changes or the engine's caches are cleared), and
kept in the data folder for as long as the cache's time to live, so an identical evaluation run again in another
process reuses them, and says so, instead of timing the reranker again."""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import weakref
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

from cachetools import TTLCache

from workbench.engine import Engine
from workbench.evaluation.io import Dataset, Qrels, Run
from workbench.evaluation.latency import rerank_time_by_k
from workbench.evaluation.metrics import evaluate
from workbench.evaluation.recommend import DepthPoint, TopNPoint
from workbench.evaluation.report import EvaluationReport
from workbench.evaluation.runs import fold_documents
from workbench.evaluation.significance import bootstrap_interval
from workbench.types import SearchPlan
from workbench.vocab import PRIMARY_METRIC, TOP_N_SWEEP, recall_at

_MEASURED: weakref.WeakKeyDictionary[Engine, TTLCache[Hashable, Any]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _measured_once(engine: Engine, key: Hashable, measure: Callable[[], Any]) -> tuple[Any, bool]:
    """What `measure()` gave for `key` on this engine before and True, or its value now and False. The key holds
    `engine.generation(collection)`, so a changed collection or cleared caches measure again."""
    with _LOCK:
        kept = _MEASURED.get(engine)
        if kept is None:
            kept = _MEASURED[engine] = TTLCache(maxsize=256, ttl=engine.settings.cache_ttl)
        if key in kept:
            return kept[key], True
    value = measure()
    with _LOCK:
        kept[key] = value
    return value, False


DEPTH_TIMINGS_FILE = "depth_timings.json"
_KEPT_TIMINGS = 200  # measurements kept in the file, the newest


def _timings_file(engine: Engine) -> Path:
    return Path(engine.settings.data_dir) / DEPTH_TIMINGS_FILE


def _kept(engine: Engine, key: str) -> dict[int, tuple[float, float]] | None:
    """Timings another process measured for the same key within the cache's time to live, or None."""
    try:
        kept = json.loads(_timings_file(engine).read_text(encoding="utf-8"))
        entry = kept.get(key) if isinstance(kept, dict) else None
        if not isinstance(entry, dict) or time.time() - float(entry["at"]) > engine.settings.cache_ttl:
            return None
        return {int(k): (float(p50), float(p95)) for k, (p50, p95) in entry["timings"].items()}
    except (OSError, ValueError, KeyError, TypeError):  # none kept, or a file that is not ours: measure again
        return None


def _keep(engine: Engine, key: str, timings: dict[int, tuple[float, float]]) -> None:
    """The timings kept under `key` (the newest _KEPT_TIMINGS), written whole or not at all."""
    path = _timings_file(engine)
    try:
        kept = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        kept = kept if isinstance(kept, dict) else {}
    except (OSError, ValueError):
        kept = {}
    kept[key] = {"at": time.time(), "timings": {str(k): list(v) for k, v in timings.items()}}
    newest = dict(sorted(kept.items(), key=lambda item: -float(item[1].get("at", 0)))[:_KEPT_TIMINGS])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        partial.write_text(json.dumps(newest), encoding="utf-8")
        partial.replace(path)
    except OSError:  # a read-only data folder: timings are measured again next time, nothing else is lost
        pass


def _lasting_key(engine: Engine, report: EvaluationReport, plan: SearchPlan, sample: list[str], ks: list[int]) -> str:
    """What the rerank times depend on, across processes: the collection (its store and size), the first stage,
    the reranker (its id, backend and fingerprint), the queries timed, the depths, this machine's processor."""
    reranker = engine.reranker_of(plan)
    try:
        info = engine.collection_info(report.collection)
        where = (info.store, info.location, info.count)
    except Exception:  # a collection that cannot say: never reused across processes
        return ""
    parts = [where, report.retrieval, report.fusion, report.reranker_model, getattr(reranker, "backend", None),
             getattr(reranker, "store_key", None), sample, ks, os.cpu_count(), plan.long_documents]  # fmt: skip
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()


def depth_curve(
    engine: Engine,
    report: EvaluationReport,
    dataset: Dataset,
    plan: SearchPlan,
    ks: Sequence[int] = (10, 20, 50, 100),
    *,
    timing_queries: int = 10,
) -> list[DepthPoint]:
    """Metrics and rerank time as k grows, for the report `plan` made. Vector search is deterministic, so the
    candidates at k are the first k of the report's candidates and their rerank scores are already known: quality
    needs no model call. Rerank time is measured (caches bypassed) on `timing_queries` queries per k, once: a
    second curve of the same settings on the same engine reports the first measurement
    (`report.depth_timings_reused`)."""
    ks = sorted({k for k in ks if 1 <= k <= report.k})
    qrels = {qid: dataset.qrels[qid] for qid in report.candidates}
    sample = [dataset.queries[qid] for qid in list(report.candidates)[:timing_queries]]
    timings: dict[int, tuple[float, float]] = {}
    if sample and ks:
        key = (report.collection, engine.generation(report.collection), report.retrieval, report.reranker_model,
               tuple(sample), tuple(ks))  # fmt: skip

        # read across processes only while this engine has neither changed the collection nor cleared its caches
        untouched = engine.generation(report.collection) == (0, 0)
        lasting = _lasting_key(engine, report, plan, sample, ks)
        earlier = _kept(engine, lasting) if lasting and untouched else None

        def measure() -> dict[int, tuple[float, float]]:
            points = rerank_time_by_k(engine, sample, plan, ks, max_query_chars=None)
            return {t.k: (t.rerank_ms_p50, t.rerank_ms_p95) for t in points}

        if earlier is not None and set(earlier) == set(ks):  # an identical run in another process timed these
            timings, report.depth_timings_reused = earlier, True
        else:
            timings, report.depth_timings_reused = _measured_once(engine, key, measure)
            if lasting and not report.depth_timings_reused:
                _keep(engine, lasting, timings)
    return [_point(report, qrels, k, timings.get(k)) for k in ks]


def _point(report: EvaluationReport, qrels: Qrels, k: int, timing: tuple[float, float] | None) -> DepthPoint:
    """Quality at depth k from the report's candidates (their first k), with its interval and ceiling."""
    before: Run = {}
    after: Run = {}
    for qid, rows in report.candidates.items():
        before[qid], after[qid] = fold_documents(rows[:k])
    before_means = evaluate(qrels, before, k)[0]
    after_means, after_per = evaluate(qrels, after, k)
    values = [figures[PRIMARY_METRIC] for figures in after_per.values()]
    return DepthPoint(
        k=k,
        before=before_means,
        after=after_means,
        rerank_ms_p50=timing[0] if timing else None,
        rerank_ms_p95=timing[1] if timing else None,
        after_ci=bootstrap_interval([0.0] * len(values), values) if values else None,
        recall_ceiling=before_means.get(recall_at(k)),
    )


def top_n_points(report: EvaluationReport, ns: Sequence[int] = TOP_N_SWEEP, *, k: int | None = None) -> list[TopNPoint]:
    """Recall@n of the reranked lists for each n up to k (the report's k unless given), with its 95 % bootstrap
    interval: how much of what is relevant a top n keeps. With `k`, the lists are the report's first k candidates
    reranked, as a search at that k returns them, so the top n advised for a depth is measured at that depth."""
    depth = report.k if k is None else min(k, report.k)
    after = report.after_run
    if depth != report.k:
        after = {qid: fold_documents(rows[:depth])[1] for qid, rows in report.candidates.items()}
    points = []
    for n in sorted({n for n in ns if 1 <= n <= depth}):
        _, per_query = evaluate(report.qrels, after, n)
        values = [figures[recall_at(n)] for figures in per_query.values()]
        if values:
            mean = sum(values) / len(values)
            points.append(TopNPoint(n=n, recall=mean, ci=bootstrap_interval([0.0] * len(values), values)))
    return points

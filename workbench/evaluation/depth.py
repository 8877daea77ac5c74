"""The depth curve: quality and rerank time as k grows, with rerank times measured once per engine and settings
(a second curve reports the first measurement until the collection changes or the engine's caches are cleared)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from cachetools import TTLCache

from workbench.engine import DEFAULT, Engine
from workbench.evaluation.io import Dataset, Run
from workbench.evaluation.metrics import evaluate
from workbench.evaluation.report import DepthPoint, EvaluationReport
from workbench.evaluation.runs import fold_documents
from workbench.services.latency import rerank_time_by_k

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


def depth_curve(
    engine: Engine,
    report: EvaluationReport,
    dataset: Dataset,
    ks: Sequence[int] = (10, 20, 50, 100),
    *,
    timing_queries: int = 10,
    reranker: Any = DEFAULT,
) -> list[DepthPoint]:
    """Metrics and rerank time as k grows. Vector search is deterministic, so the candidates at k are the
    first k of the report's candidates and their rerank scores are already known: quality needs no model
    call. Rerank time is measured (caches bypassed) on `timing_queries` queries per k, once: a second curve of the
    same settings on the same engine reports the first measurement (`report.depth_timings_reused`)."""
    ks = sorted({k for k in ks if 1 <= k <= report.k})
    qrels = {qid: dataset.qrels[qid] for qid in report.candidates}
    sample = [dataset.queries[qid] for qid in list(report.candidates)[:timing_queries]]
    timings: dict[int, float] = {}
    if sample and ks:
        key = (
            report.collection,
            engine.generation(report.collection),
            report.retrieval,
            report.reranker_model,
            tuple(sample),
            tuple(ks),
        )

        def measure() -> dict[int, float]:
            points = rerank_time_by_k(
                engine,
                sample,
                ks,
                collection=report.collection,
                reranker=reranker,
                retrieval=report.retrieval,
                max_query_chars=None,
            )
            return {t.k: t.rerank_ms_p50 for t in points}

        timings, report.depth_timings_reused = _measured_once(engine, key, measure)
    points = []
    for k in ks:
        before: Run = {}
        after: Run = {}
        for qid, rows in report.candidates.items():
            before[qid], after[qid] = fold_documents(rows[:k])
        points.append(
            DepthPoint(
                k=k,
                before=evaluate(qrels, before, k)[0],
                after=evaluate(qrels, after, k)[0],
                rerank_ms_p50=timings.get(k),
            )
        )
    return points

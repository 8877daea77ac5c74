"""Latency figures: stage percentiles over many searches, load runs at a chosen concurrency, and rerank
time as k grows."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed

import numpy as np
from pydantic import BaseModel

from workbench.engine import Engine
from workbench.errors import InputError
from workbench.types import SearchPlan, StageTimings
from workbench.vocab import MAX_K, MAX_QUERY_CHARS

STAGES = ("embed_ms", "search_ms", "rerank_ms", "total_ms")


class StageSummary(BaseModel):
    """p50, p95 and max of one stage, in milliseconds (no p95 from fewer than MIN_P95_SAMPLES searches: the 95th
    percentile of a handful of values is their maximum, not a tail)."""

    stage: str
    count: int
    p50: float
    p95: float | None
    max: float
    mean: float


class LoadRun(BaseModel):
    """What a load run measured: every query's timings, the wall time and the throughput."""

    queries: int
    concurrency: int
    k: int
    top_n: int
    wall_seconds: float
    queries_per_second: float
    timings: list[StageTimings]
    errors: list[str]

    def summary(self) -> list[StageSummary]:
        return summarize(self.timings)


MIN_P95_SAMPLES = 20  # the fewest searches a p95 is quoted from


def summarize(timings: Iterable[StageTimings]) -> list[StageSummary]:
    """p50/p95/max/mean per stage over a set of searches."""
    rows = list(timings)
    if not rows:
        return []
    summary = []
    for stage in STAGES:
        values = np.array([getattr(t, stage) for t in rows], dtype=float)
        summary.append(
            StageSummary(
                stage=stage.removesuffix("_ms"),
                count=len(values),
                p50=float(np.percentile(values, 50)),
                p95=float(np.percentile(values, 95)) if len(values) >= MIN_P95_SAMPLES else None,
                max=float(values.max()),
                mean=float(values.mean()),
            )
        )
    return summary


def load_run(
    engine: Engine,
    queries: Sequence[str],
    plan: SearchPlan,
    *,
    n: int,
    concurrency: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> LoadRun:
    """Run `n` searches (cycling through `queries`) as `plan` says on `concurrency` threads, bypassing the caches."""
    queries = [q for q in queries if q.strip()]
    if not queries:
        raise InputError("A load run needs at least one query.")
    if not 1 <= n <= 10000:
        raise InputError(f"The number of queries must be between 1 and 10000; got {n}.")
    if not 1 <= concurrency <= 64:
        raise InputError(f"Concurrency must be between 1 and 64; got {concurrency}.")
    # Warm the models so that the first measured query does not pay for loading them.
    engine.search(queries[0], plan)
    timings: list[StageTimings] = []
    errors: list[str] = []
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = [pool.submit(engine.search, queries[i % len(queries)], plan, use_cache=False) for i in range(n)]
        for done, future in enumerate(as_completed(futures), start=1):
            try:
                timings.append(future.result().timings)
            except Exception as exc:  # one failed query is reported, the run goes on
                errors.append(str(exc))
            if progress:
                progress(done, n)
    wall = time.perf_counter() - started
    return LoadRun(
        queries=n,
        concurrency=concurrency,
        k=plan.k,
        top_n=plan.top_n,
        wall_seconds=wall,
        queries_per_second=len(timings) / wall if wall else 0.0,
        timings=timings,
        errors=errors,
    )


class DepthTiming(BaseModel):
    """Rerank time at one k over a set of queries (caches bypassed)."""

    k: int
    rerank_ms_p50: float
    rerank_ms_p95: float
    total_ms_p50: float
    candidates: int


def rerank_time_by_k(
    engine: Engine,
    queries: Sequence[str],
    plan: SearchPlan,
    ks: Sequence[int] = (10, 25, 50, 100),
    *,
    progress: Callable[[int, int], None] | None = None,
    max_query_chars: int | None = MAX_QUERY_CHARS,
) -> list[DepthTiming]:
    """How rerank time grows with k: each query at each k with the plan's collection, first stage and reranker
    (its k replaced, top n at most 10, no filters), caches bypassed."""
    queries = [q for q in queries if q.strip()]
    if not queries:
        raise InputError("Measuring rerank time needs at least one query.")
    bad = [k for k in ks if not 1 <= k <= MAX_K]
    if not ks or bad:
        raise InputError(f"k values must be between 1 and {MAX_K}; got {', '.join(map(str, bad)) or 'none'}.")
    base = plan.with_(filters={}, min_score=None)
    engine.search(queries[0], base.with_(k=min(ks), top_n=1), max_query_chars=max_query_chars)  # models loaded
    points = []
    total = len(ks) * len(queries)
    done = 0
    for k in ks:
        rows = []
        at_k = base.with_(k=k, top_n=min(10, k))
        for query in queries:
            rows.append(engine.search(query, at_k, use_cache=False, max_query_chars=max_query_chars))
            done += 1
            if progress:
                progress(done, total)
        rerank = [r.timings.rerank_ms for r in rows]
        points.append(
            DepthTiming(
                k=k,
                rerank_ms_p50=float(np.percentile(rerank, 50)),
                rerank_ms_p95=float(np.percentile(rerank, 95)),
                total_ms_p50=float(np.percentile([r.timings.total_ms for r in rows], 50)),
                candidates=int(np.median([len(r.candidates) for r in rows])),
            )
        )
    return points

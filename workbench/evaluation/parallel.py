"""Searches of a judged query set, run at once where the reranker is a service (which answers many requests in
parallel, or several replicas do) and one after another where it is a local model (whose micro-batcher already
merges what arrives together). Results come back in the queries' order, so figures are the same either way.

Where WORKBENCH_SCORE_EXECUTOR names one (`rerankers/executors.py`: Ray's workers), a local reranker's pairs are
scored there first, a block of queries at a time, and the searches then read every score from the cache: the same
scores, computed elsewhere."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from workbench.engine import Engine, reranks
from workbench.rerankers.base import BaseReranker, by_query
from workbench.rerankers.executors import QueryTexts, score_executor, spreadable
from workbench.rerankers.scores.cache import ScoreCache
from workbench.rerankers.served.remote import RemoteReranker
from workbench.types import SearchPlan, SearchResult

Item = TypeVar("Item")
Answer = TypeVar("Answer")


def concurrency_for(engine: Engine, plan: SearchPlan) -> int:
    """WORKBENCH_RERANK_CONCURRENCY for each replica of a reranker that is a service, 1 for a local model."""
    reranker = engine.reranker_of(plan)
    return engine.settings.rerank_concurrency * len(reranker.urls) if isinstance(reranker, RemoteReranker) else 1


def in_order(
    items: Sequence[Item],
    answer: Callable[[Item], Answer],
    workers: int,
    progress: Callable[[int, int], None] | None = None,
) -> list[Answer]:
    """`answer(item)` of each item, in order: on `workers` threads when more than one; `progress(done, total)`
    after each, from the calling thread."""
    workers = min(workers, max(len(items), 1))
    answers: list[Answer] = []
    if workers == 1:
        for done, item in enumerate(items, start=1):
            answers.append(answer(item))
            if progress:
                progress(done, len(items))
        return answers
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="workbench-eval") as pool:
        futures = [pool.submit(answer, item) for item in items]
        for done, future in enumerate(futures, start=1):
            answers.append(future.result())
            if progress:
                progress(done, len(items))
    return answers


def search_all(
    engine: Engine,
    plan: SearchPlan,
    texts: Sequence[str],
    progress: Callable[[int, int], None] | None = None,
    use_cache: bool = True,
    workers: int | None = None,
) -> list[SearchResult]:
    """Each text searched as `plan` says (the whole text: evaluation scores it all), in order; `progress(done,
    total)` after each search, from the calling thread. `use_cache=False` does the real work of every search (a
    latency budget is checked on searches that ran, never on cached ones). `workers` searches at once (default:
    `concurrency_for` the reranker)."""

    def one(text: str) -> SearchResult:
        return engine.search(text, plan, max_query_chars=None, use_cache=use_cache)

    if use_cache and executed_elsewhere(engine, plan):
        step = executor_block(engine, plan)
        results: list[SearchResult] = []
        for start in range(0, len(texts), step):
            chunk = texts[start : start + step]
            score_elsewhere(engine, plan, chunk)
            told = None if progress is None else (lambda done, _, offset=start: progress(offset + done, len(texts)))
            results += in_order(chunk, one, 1, told)
        return results
    return in_order(texts, one, workers or concurrency_for(engine, plan), progress)


def executed_elsewhere(engine: Engine, plan: SearchPlan) -> bool:
    """Whether `plan`'s pairs are scored by an executor's workers (WORKBENCH_SCORE_EXECUTOR) before its searches:
    a local reranker that scores pairs, whole candidates (no MaxP/SumP windows), and a score cache to hand the
    scores over in."""
    if engine.settings.score_executor.strip().lower() == "local" or engine.settings.cache_max_size <= 0:
        return False
    return plan.long_documents is None and spreadable(engine.reranker_of(plan))


def executor_block(engine: Engine, plan: SearchPlan) -> int:
    """Queries scored together by the executor: up to 64, fewer where the cache could not keep their pairs until
    their searches read them."""
    return max(1, min(64, engine.settings.cache_max_size // max(plan.k, 1)))


def score_elsewhere(engine: Engine, plan: SearchPlan, texts: Sequence[str]) -> None:
    """The first stage of each text, then every candidate pair the cache and the score store lack scored by the
    executor's workers (a query's texts in one call, as its search would ask), kept where the searches read them."""
    reranker = engine.reranker_of(plan)
    executor = score_executor(engine.settings)
    assert isinstance(reranker, BaseReranker) and executor is not None
    pairs: list[tuple[str, str]] = []
    for text in texts:
        found = engine.search(text, plan.with_(reranker=None), max_query_chars=None)
        if not reranks(plan, found):
            continue  # a skip policy keeps this query's first-stage order: nothing to score
        pairs += [(found.query, candidate.text) for candidate in found.candidates]
    keys = [ScoreCache.key(reranker.cache_key, query, text) for query, text in pairs]

    def compute(todo: list[int]) -> list[float]:
        places = by_query([pairs[i] for i in todo])
        work: list[QueryTexts] = [(query, [pairs[todo[j]][1] for j in at]) for query, at in places.items()]
        answers = executor.score_queries(reranker, work, engine.settings)
        scores = [0.0] * len(todo)
        for at, answered in zip(places.values(), answers, strict=True):
            for j, score in zip(at, answered, strict=True):
                scores[j] = score
        for _, group in work:
            reranker.counted(documents=len(group))
        return scores

    reranker.cache.resolve(keys, compute, reranker.store_key)


def search_each(
    engine: Engine,
    plans: Sequence[SearchPlan],
    texts: Sequence[str],
    progress: Callable[[int, int], None] | None = None,
    warm: Callable[[Sequence[str]], None] | None = None,
    block: int = 1,
    *,
    use_cache: bool = True,
    workers: int | None = None,
) -> list[list[SearchResult]]:
    """Each text searched under every plan, a query's plans one after another, so that a pair several plans share
    is scored once and read from the score cache while it is fresh: results[plan][query]. With `warm`, the texts
    go in blocks of `block`, and `warm(block's texts)` runs before their searches (a tuning run scores the union
    of its cells' candidates for many queries in one model call). Queries run at once where a reranker is a
    service, as in `search_all`, or `workers` at once; `progress(done, total)` per query. `use_cache=False` does
    every search's real work (a tuning run weighed as served times each)."""

    def every(text: str) -> list[SearchResult]:
        return [engine.search(text, plan, max_query_chars=None, use_cache=use_cache) for plan in plans]

    workers = workers or max((concurrency_for(engine, plan) for plan in plans), default=1)
    step = max(block, 1) if warm is not None else max(len(texts), 1)
    rows: list[list[SearchResult]] = []
    for start in range(0, len(texts), step):
        chunk = texts[start : start + step]
        if warm is not None:
            warm(chunk)
        told = None if progress is None else (lambda done, _, offset=start: progress(offset + done, len(texts)))
        rows += in_order(chunk, every, workers, told)
    return [[row[index] for row in rows] for index in range(len(plans))]

"""Searches of a judged query set, run at once where the reranker is a service (which answers many requests in
parallel, or several replicas do) and one after another where it is a local model (whose micro-batcher already
merges what arrives together). Results come back in the queries' order, so figures are the same either way."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from workbench.engine import Engine
from workbench.rerankers.remote import RemoteReranker
from workbench.types import SearchPlan, SearchResult


def concurrency_for(engine: Engine, plan: SearchPlan) -> int:
    """WORKBENCH_RERANK_CONCURRENCY for a reranker that is a service, 1 otherwise."""
    return engine.settings.rerank_concurrency if isinstance(engine.reranker_of(plan), RemoteReranker) else 1


def search_all(
    engine: Engine,
    plan: SearchPlan,
    texts: Sequence[str],
    progress: Callable[[int, int], None] | None = None,
    use_cache: bool = True,
) -> list[SearchResult]:
    """Each text searched as `plan` says (the whole text: evaluation scores it all), in order; `progress(done,
    total)` after each search, from the calling thread. `use_cache=False` does the real work of every search (a
    latency budget is checked on searches that ran, never on cached ones)."""
    workers = min(concurrency_for(engine, plan), max(len(texts), 1))

    def one(text: str) -> SearchResult:
        return engine.search(text, plan, max_query_chars=None, use_cache=use_cache)

    if workers == 1:
        results = []
        for done, text in enumerate(texts, start=1):
            results.append(one(text))
            if progress:
                progress(done, len(texts))
        return results
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="workbench-eval") as pool:
        futures = [pool.submit(one, text) for text in texts]
        results = []
        for done, future in enumerate(futures, start=1):
            results.append(future.result())
            if progress:
                progress(done, len(texts))
        return results

"""The engine: query -> embed -> vector search (top k) -> cross-encoder rerank -> top n, timed per stage.

Heavy objects (embedders, rerankers, store clients) are created once and shared. Results are cached by
(collection, query, k, filters, models) so that changing top_n re-slices a stored result and runs no model.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

import numpy as np
from cachetools import TTLCache

from workbench.config import Settings, get_settings
from workbench.embeddings import Embedder, create_embedder
from workbench.errors import CollectionNotFoundError, ConfigError, InputError, QueryTimeoutError
from workbench.fusion import parse_fusion
from workbench.heap import freeze_what_is_loaded
from workbench.ingest import ProgressCallback, ingest_path
from workbench.ingest_status import IngestTracker, forget_ingest
from workbench.inputs import (
    validate_collection_name,
    validate_page,
    validate_query,
    validate_rerank_budget_ms,
)
from workbench.passages import LongDocuments, parse_long_documents
from workbench.redact import public_name
from workbench.rerankers import Reranker, ScoreCache, TokenCache, create_reranker, is_no_reranker, needs_scores
from workbench.rerankers.factory import first_use_words
from workbench.rerankers.local.backends import auditing_now, measure_backends_in_background, measuring_now
from workbench.rerankers.local.batching import reporting_progress
from workbench.rerankers.scores.score_store import usable_score_store
from workbench.rerankers.served.verdicts import served_verdict
from workbench.rerankers.windows import windowed_scale, windowed_scores
from workbench.retrieval import BM25Indexes
from workbench.retrieval.stages import StageParts, first_stage
from workbench.serving import CIRCUIT_OPEN, SAME_SCORES, RerankGuard, run_check_reason, same_scores, sooner
from workbench.stores.registry import StoreRegistry
from workbench.types import (
    CacheStats,
    Candidate,
    Chunk,
    CollectionInfo,
    Hit,
    IngestReport,
    SearchPlan,
    SearchResult,
    StageTimings,
)
from workbench.vocab import DEFAULT_RERANKER_CHOICE, LANGCHAIN_EMBEDDING_PREFIX, MAX_QUERY_CHARS, SERVICE_SCHEMES

log = logging.getLogger("workbench.engine")


class UseDefault:
    """The type of `DEFAULT`: "use the configured value" where None already means "none" (an ingest's chunk
    size). A reranker's "the configured one" is `DEFAULT_RERANKER_CHOICE` ('default'), as a SearchPlan says it."""

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Final = UseDefault()


def refuse_attached(info: CollectionInfo, action: str) -> None:
    """InputError for a write to an attached collection: the workbench reads another tool's collection, never
    writes it."""
    if info.read_only:
        raise InputError(
            f"'{info.name}' was written by {info.written_by or 'another tool'} and is attached read-only: the "
            f"workbench does not {action} it. Ingest into a collection of its own to copy it."
        )


def _dedupe(hits: list[Hit]) -> tuple[list[Hit], int]:
    seen: set[str] = set()
    kept = []
    for hit in hits:
        key = " ".join(hit.text.split()).lower()
        if key in seen:
            continue
        seen.add(key)
        kept.append(hit)
    return kept, len(hits) - len(kept)


def _resliced(cached: SearchResult, plan: SearchPlan) -> SearchResult:
    """A cached result under another top n and score cutoff (no model runs)."""
    return cached.model_copy(
        update={
            "top_n": min(plan.top_n, max(len(cached.candidates), 1)),
            "min_score": plan.min_score,
            "cache": cached.cache.model_copy(update={"result_cached": True}),
        }
    )


def _rerank(
    model: Reranker | None,
    query: str,
    hits: list[Hit],
    use_cache: bool,
    deadline: float | None,
    progress: Callable[[int, int], None] | None,
    strategy: LongDocuments | None = None,
) -> tuple[list[float | None], int, int]:
    """The reranker's score of each hit (None each without a reranker), how many scores came from the cache, and
    how many were asked for (one per hit, or one per window under MaxP and SumP)."""
    if model is None or not hits:
        return [None] * len(hits), 0, 0
    if deadline is not None and time.monotonic() > deadline:
        raise QueryTimeoutError("The search ran past its time limit (WORKBENCH_QUERY_TIMEOUT) before reranking.")
    with reporting_progress(progress):
        if strategy is not None:
            combined, hit_count, asked = windowed_scores(model, query, [h.text for h in hits], strategy, use_cache,
                                                         deadline)  # fmt: skip
            return list(combined), hit_count, asked
        scores, hit_count = model.score(query, [h.text for h in hits], use_cache, deadline)
    return list(scores), hit_count, len(hits)


def first_stage_is_sure(scores: Sequence[float], skip_gap: float | None) -> bool:
    """A skip policy's test: the first stage's top two scores differ by at least `skip_gap` (never without a
    policy, or with fewer than two candidates)."""
    return skip_gap is not None and len(scores) >= 2 and scores[0] - scores[1] >= skip_gap


def reranks(plan: SearchPlan, first_stage: SearchResult) -> bool:
    """Whether a search under `plan` reranks the candidates of `first_stage` (its search without the reranker): a
    skip policy keeps a sure first stage's order."""
    return not first_stage_is_sure([c.vector_score for c in first_stage.candidates[:2]], plan.skip_gap)


def _candidates(hits: list[Hit], scores: list[float | None]) -> list[Candidate]:
    """Hits in first-stage order, each with its rerank score and its rank after reranking (ties keep that order)."""
    order = sorted(range(len(hits)), key=lambda i: (-(scores[i] if scores[i] is not None else 0.0), i))
    rerank_rank = {index: rank for rank, index in enumerate(order, start=1)}
    return [
        Candidate(
            id=h.id,
            text=h.text,
            metadata=h.metadata,
            vector_score=h.score,
            vector_rank=i + 1,
            rerank_score=scores[i],
            rerank_rank=rerank_rank[i],
            sources=h.sources,
        )
        for i, h in enumerate(hits)
    ]


def _timings(clock: list[float]) -> StageTimings:
    """Stage times from the clock's readings: start, embedded, searched, reranked (and now, for the total)."""
    started, embedded, searched, reranked = clock
    return StageTimings(
        embed_ms=(embedded - started) * 1000,
        search_ms=(searched - embedded) * 1000,
        rerank_ms=(reranked - searched) * 1000,
        total_ms=(time.perf_counter() - started) * 1000,
    )


class Engine:
    """Retrieval with reranking over the collections of one store registry."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        registry: StoreRegistry | None = None,
        embedder: Embedder | None = None,
        reranker: Reranker | str | None = DEFAULT_RERANKER_CHOICE,
    ) -> None:
        self.settings = settings or get_settings()
        self.registry = registry or StoreRegistry(self.settings, embedder=self.embedder)
        self.guard = RerankGuard(
            failures=self.settings.rerank_circuit_failures, cooldown_s=self.settings.rerank_circuit_cooldown_s
        )  # searches served under a rerank budget (workbench.serving)
        self.score_cache = ScoreCache(
            self.settings.cache_ttl, self.settings.cache_max_size, store=usable_score_store(self.settings)
        )
        self.token_cache = TokenCache(self.settings.cache_max_size * 5)
        self._embedder_override = embedder
        self._default_reranker = reranker
        self._embedders: dict[str, Embedder] = {}
        self._rerankers: dict[str, Reranker] = {}
        self._infos: dict[str, CollectionInfo] = {}
        self._results: TTLCache[tuple[Any, ...], SearchResult] = TTLCache(maxsize=512, ttl=self.settings.cache_ttl)
        # A query's first stage as it was measured (hits, duplicates removed, embed and search seconds): a preview
        # without the reranker (Explore's) and the reranked search after it run the first stage once, and the
        # reranked result carries the times the first stage really took (never "embed 0 ms" from a cached vector).
        self._staged: TTLCache[tuple[Any, ...], tuple[list[Any], int, float, float]] = TTLCache(
            maxsize=256, ttl=self.settings.cache_ttl
        )
        # A query's vector, shared by every plan that embeds it (the k, fusion and reranker of a tuning grid).
        self._vectors: TTLCache[tuple[str, str], np.ndarray] = TTLCache(maxsize=1024, ttl=self.settings.cache_ttl)
        self._epoch = 0  # grows when every cache is cleared
        self._generations: dict[str, int] = {}  # grows when a collection changes
        self.bm25 = BM25Indexes(self.settings)
        self._lock = threading.RLock()

    # Models -------------------------------------------------------------------------------------------------
    def embedder(self, model_id: str | None = None) -> Embedder:
        """The embedder for a model id (the settings' default when None), created once."""
        if self._embedder_override is not None:
            return self._embedder_override
        model_id = model_id or self.settings.embedding_model
        with self._lock:
            if model_id not in self._embedders:
                configured = self.settings.embedding_model
                if model_id.startswith(SERVICE_SCHEMES) and configured.startswith(SERVICE_SCHEMES):
                    # a collection records a service's public id; the configured URL (a token in it) may be it
                    self._embedders.setdefault(configured, create_embedder(configured, self.settings))
                same = [e for e in self._embedders.values() if e.model_id == model_id]
                self._embedders[model_id] = same[0] if same else create_embedder(model_id, self.settings)
            return self._embedders[model_id]

    def reranker(self, model_id: str | None = DEFAULT_RERANKER_CHOICE) -> Reranker | None:
        """The reranker for a model id, created once; 'default' (`DEFAULT_RERANKER_CHOICE`, as a SearchPlan says
        it) is the engine's own: the one it was made with, else RERANKER_MODEL's; None means none."""
        if model_id == DEFAULT_RERANKER_CHOICE and not isinstance(self._default_reranker, str):
            return self._default_reranker  # the reranker the engine was made with, or None: none
        model_id = self.reranker_id(model_id)
        if model_id is None:
            return None
        with self._lock:
            if model_id not in self._rerankers:
                made = create_reranker(model_id, self.settings, cache=self.score_cache, token_cache=self.token_cache)
                # A service's id leaves its credentials out: a result names the reranker by that id, and asking
                # for it again must find this one (with its token), not build one without.
                self._rerankers[model_id] = self._rerankers.setdefault(made.model_id, made)
            return self._rerankers[model_id]

    def forget_reranker(self, model_id: str | None = DEFAULT_RERANKER_CHOICE) -> None:
        """Drop the reranker made for a model id, so the next use makes it again (`auto` then reads what a parity
        audit kept since); its scores stay in the cache under its own key."""
        resolved = self.reranker_id(model_id)
        with self._lock:
            made = self._rerankers.pop(resolved, None) if resolved is not None else None
            for key in [k for k, v in self._rerankers.items() if v is made]:
                del self._rerankers[key]

    def reranker_id(self, model_id: str | None) -> str | None:
        """The one place 'default' becomes a model id (the engine's own id, else the configured reranker's; None
        when the settings say none or the engine was given a reranker object); any other id as it is; None for no
        reranking. `reranker_id(plan.reranker)` is the model a plan reranks with."""
        if model_id is not None and not isinstance(model_id, str):
            raise InputError(f"reranker must be a model id, a folder, None or 'default'; got {model_id!r}.")
        if model_id == DEFAULT_RERANKER_CHOICE:
            own = self._default_reranker
            if not isinstance(own, str):  # a reranker object (ready) or None (none)
                return None
            if own != DEFAULT_RERANKER_CHOICE:
                model_id = own
            elif not self.settings.reranker_enabled:
                return None
            else:
                model_id = self.settings.reranker_model
        return None if model_id is None or is_no_reranker(model_id) else model_id

    def first_use(self, plan: SearchPlan) -> str | None:
        """What a search with this plan will wait for before its first score, in words (a local model loaded, and
        its backends measured, for the first time); None when its reranker is ready or there is none."""
        model_id = self.reranker_id(plan.reranker)
        if model_id is None or model_id in self._rerankers:
            return None
        return first_use_words(self.settings, model_id)

    def warm_in_background(self) -> None:
        """For a front end that stays up: load the embedder and the default reranker in a thread, so it answers at
        once and the first search does not wait for them; a reranker never measured on this machine answers on
        torch while its backends are measured in the background (`measure_backends_in_background`). What is loaded
        is then kept out of later garbage collections (`freeze_what_is_loaded`)."""
        measure_backends_in_background()

        def warm() -> None:
            try:
                self.embedder()
                self.reranker()
            except Exception as exc:  # the first search says what is wrong, in its own words
                log.warning("warming the models failed: %s", exc)
            freeze_what_is_loaded()  # no full collection walks the loaded models again (workbench.heap)

        threading.Thread(target=warm, name="workbench-warm-up", daemon=True).start()

    @staticmethod
    def backends_measuring() -> list[str]:
        """The rerankers whose backends this process is measuring in the background (they answer on torch)."""
        return measuring_now()

    @staticmethod
    def backends_auditing() -> dict[str, tuple[int, int]]:
        """The rerankers whose faster backends this process is auditing in the background: (checked, of how many)."""
        return auditing_now()

    def reranker_of(self, plan: SearchPlan) -> Reranker | None:
        """The reranker a plan names ('default': the configured one; None: none)."""
        return self.reranker(plan.reranker)

    def circuit_of(self, choice: str | None = DEFAULT_RERANKER_CHOICE) -> str:
        """The name of a reranker's circuit (`self.guard`): its id ('default': the configured one's)."""
        return self.reranker_id(choice) or DEFAULT_RERANKER_CHOICE

    def reranker_to_serve(self, choice: str | None = DEFAULT_RERANKER_CHOICE) -> tuple[Reranker | None, str | None]:
        """The reranker `choice` names, for a request served fail-open (a search, a /rerank), and None with the reason
        when it is skipped: its circuit open, making it failed (a served reranker that cannot be reached is asked at
        start), or it is a served copy the last parity audit found unfaithful to its model (the **served** run
        check)."""
        name = self.circuit_of(choice)
        if self.guard.skipping(name):
            return None, CIRCUIT_OPEN
        audited = served_verdict(self.settings.exports_dir, name)
        if audited is not None and not audited.faithful:  # the served run check: its order is not its model's
            return None, run_check_reason(audited.words())
        try:
            return self.reranker(choice), None
        except InputError:
            raise
        except Exception as exc:
            return None, self.guard.failed(name, exc)

    def reranks_by_default(self) -> bool:
        """Whether a plan's 'default' reranker is one (without making it: a served one is not asked)."""
        if not isinstance(self._default_reranker, str):
            return self._default_reranker is not None
        return self.reranker_id(DEFAULT_RERANKER_CHOICE) is not None

    def _collection_embedder(self, name: str, info: CollectionInfo) -> Embedder:
        embedder = self.embedder(None if self._embedder_override else info.embedding_model)
        recorded = info.embedding_model
        unnamed = (recorded or "").startswith(LANGCHAIN_EMBEDDING_PREFIX) or embedder.model_id.startswith(
            LANGCHAIN_EMBEDDING_PREFIX
        )  # a LangChain object the workbench knows only by its class: the dimension check below is what there is
        if recorded and embedder.model_id != recorded and not unnamed:
            raise ConfigError(
                f"Collection '{name}' was embedded with '{public_name(recorded)}', and this engine's embedder is "
                f"'{public_name(embedder.model_id)}': vectors of different embedders cannot be compared. Query it "
                "with the embedder that built it, or ingest it again with this one."
            )
        if info.dimension and embedder.dimension != info.dimension:
            made_by = info.embedding_model or f"an embedder it does not record ({info.written_by or 'unknown'})"
            raise ConfigError(
                f"Collection '{name}' holds {info.dimension}-dimensional vectors ({made_by}), but the embedder "
                f"'{public_name(embedder.model_id)}' makes {embedder.dimension}-dimensional ones. Declare the embedder "
                f'that made them in workbench.toml: [collections.{name}] embedding_model = "..." (a model id or '
                "folder, or an OpenAI-compatible server's URL)."
            )
        return embedder

    # Search -------------------------------------------------------------------------------------------------
    def plan(self, **fields: Any) -> SearchPlan:
        """A search plan: `fields` as given (SearchPlan's names), the settings' defaults for the rest (the default
        collection and first stage, RERANKER_K_RETRIEVE and RERANKER_K_RETURN, the configured reranker). A field
        given as None takes its default too, except `reranker` (None: no reranking) and `min_score` (none)."""
        meaningful_none = {"reranker", "min_score"}
        given = {name: value for name, value in fields.items() if value is not None or name in meaningful_none}
        k = given.get("k", self.settings.k_retrieve)
        defaults: dict[str, Any] = {
            "collection": self.settings.collection,
            "retrieval": self.settings.retrieval,
            "k": k,
            "reranker": DEFAULT_RERANKER_CHOICE,
        }
        if isinstance(k, int) and not isinstance(k, bool) and k > 0:
            defaults["top_n"] = min(self.settings.k_return, k)
        if given.get("fusion") is not None and "retrieval" not in given:
            del defaults["retrieval"]  # a fusion named alone: the plan takes the first stage it fuses
        return SearchPlan(**{**defaults, **given})

    def search(
        self,
        query: str,
        plan: SearchPlan,
        *,
        max_query_chars: int | None = MAX_QUERY_CHARS,
        use_cache: bool = True,
        deadline: float | None = None,
        progress: Callable[[int, int], None] | None = None,
        rerank_budget_ms: float | None = None,
    ) -> SearchResult:
        """The query answered as `plan` says (`Engine.plan(...)` makes one with the settings' defaults; the
        package's `workbench.search(query, k=..., ...)` is the keyword convenience).

        Top k first-stage candidates (dense, BM25 or both fused), reranked, top_n kept; see `SearchResult`.
        `max_query_chars` is the interactive limit; evaluation passes None to score the whole query. `deadline`
        (a time.monotonic() instant) stops a search its caller gave up on: the reranker stops at its next batch and
        QueryTimeoutError is raised. `use_cache=False` reads no cached result, vector or score (load runs measure
        real work); the scores it computes are kept for the searches after it. `progress(scored, total)` hears the
        rerank advance after each model batch (a local cross-encoder's; not for cached scores). Raises InputError
        for bad inputs (a plan that is not a SearchPlan among them), CollectionNotFoundError (checked before any
        model loads), ModelError, StoreError.

        `rerank_budget_ms` serves the search fail-open (workbench.serving): the reranker gets that long; past it, when
        it fails, or while its circuit is open, the answer is the first stage's order with `rerank_fallback` saying
        why (never an error from the reranker, never part-reranked). The serving paths pass the request's budget or
        WORKBENCH_RERANK_BUDGET_MS (`serving_budget`); evaluation passes none unless asked to measure as served.
        """
        if not isinstance(plan, SearchPlan):
            raise InputError(
                f"Engine.search takes a SearchPlan (Engine.plan(k=..., top_n=..., ...)), not {type(plan).__name__}."
            )
        if rerank_budget_ms is not None:
            rerank_budget_ms = validate_rerank_budget_ms(rerank_budget_ms)
        return self._answer(query, plan, max_query_chars, use_cache, deadline, progress, rerank_budget_ms)

    def _answer(
        self,
        query: str,
        plan: SearchPlan,
        max_query_chars: int | None,
        use_cache: bool,
        deadline: float | None,
        progress: Callable[[int, int], None] | None,
        rerank_budget_ms: float | None = None,
    ) -> SearchResult:
        """validate → cache → first stage → rerank → assemble."""
        query = validate_query(query, max_query_chars)
        name = plan.collection or self.settings.collection
        store = self.registry.get(name)
        info = self._info(name)
        fallback = None
        if rerank_budget_ms is None:
            rerank_model = self.reranker_of(plan)
        else:
            rerank_model, fallback = self.reranker_to_serve(plan.reranker)
        if rerank_model is not None and plan.min_score is not None:
            needs_scores(rerank_model.score_scale, "--min-score")
        key = (name, query, plan.k, json.dumps(plan.filters, sort_keys=True), plan.retrieval, plan.fusion,
               plan.long_documents, rerank_model.model_id if rerank_model else None, plan.skip_gap)  # fmt: skip
        with self._lock:
            cached = self._results.get(key) if use_cache else None
        if cached is not None:
            return _resliced(cached, plan)
        fusion = parse_fusion(plan.fusion) if plan.fusion else None
        parts = StageParts(store, lambda: self.bm25.get(name, store), self.settings, fusion)
        stage = first_stage(plan.retrieval, parts)
        embedder = self._collection_embedder(name, info) if stage.needs_vector else None
        staged_key = (*key[:6], embedder.model_id if embedder else None)
        with self._lock:
            staged = self._staged.get(staged_key) if use_cache else None
        if staged is None:
            # The clock starts once models, clients and indexes are loaded: timings measure a query, not start-up.
            clock = [time.perf_counter()]
            vector = self._query_vector(embedder, query, use_cache) if embedder else None
            clock.append(time.perf_counter())
            depth = plan.k + max(5, plan.k // 5)  # a little more than k, so that removing duplicates still leaves k
            hits, duplicates = _dedupe(stage.candidates(query, depth, plan.filters, vector))
            hits = hits[: plan.k]
            clock.append(time.perf_counter())
            with self._lock:
                self._staged[staged_key] = (hits, duplicates, clock[1] - clock[0], clock[2] - clock[1])
        else:  # measured by the search that ran it, moments ago
            hits, duplicates, embed_s, search_s = staged
            now = time.perf_counter()
            clock = [now - embed_s - search_s, now - search_s, now]
        strategy = parse_long_documents(plan.long_documents) if plan.long_documents else None
        skipped = rerank_model is not None and first_stage_is_sure([h.score for h in hits[:2]], plan.skip_gap)
        if rerank_budget_ms is not None and rerank_model is not None and not skipped and hits:
            model = rerank_model
            served = self.guard.run(
                self.circuit_of(plan.reranker),
                # no progress from the rerank's own thread: a caller's progress callback may only run on its thread
                lambda until: _rerank(model, query, hits, use_cache, sooner(until, deadline), None, strategy),
                rerank_budget_ms,
                check=lambda value: SAME_SCORES if same_scores(value[0]) else None,
            )
            fallback = served.fallback
            scores, hit_count, asked = served.value or ([None] * len(hits), 0, 0)
            if fallback is not None:
                rerank_model = None  # the first stage's order, as it is: nothing reranked it
        else:
            scores, hit_count, asked = _rerank(
                None if skipped else rerank_model, query, hits, use_cache, deadline, progress, strategy
            )
        clock.append(time.perf_counter())
        result = SearchResult(
            query=query,
            collection=name,
            store=info.store,
            k=plan.k,
            top_n=min(plan.top_n, max(len(hits), 1)),
            filters=plan.filters,
            retrieval=plan.retrieval,
            fusion=plan.fusion,
            long_documents=plan.long_documents if rerank_model else None,
            windows_scored=asked if strategy is not None else 0,
            embedding_model=embedder.model_id if embedder else (info.embedding_model or "store's own"),
            reranker_model=rerank_model.model_id if rerank_model else None,
            reranker_backend=rerank_model.backend if rerank_model else None,
            score_scale=windowed_scale(rerank_model, strategy) if rerank_model else None,
            candidates=_candidates(hits, scores),
            timings=_timings(clock),
            cache=CacheStats(score_hits=hit_count, score_misses=asked - hit_count),
            duplicates_removed=duplicates,
            skip_gap=plan.skip_gap if rerank_model else None,
            rerank_skipped=skipped,
            notes=rerank_model.notes(query, [h.text for h in hits]) if rerank_model and not skipped else [],
            rerank_fallback=fallback,
        )
        if use_cache and fallback is None:  # a fallback is this moment's answer: the next search tries the reranker
            with self._lock:
                self._results[key] = result
        return result if plan.min_score is None else result.with_min_score(plan.min_score)

    def _query_vector(self, embedder: Embedder, query: str, use_cache: bool) -> np.ndarray:
        key = (embedder.model_id, query)
        with self._lock:
            vector = self._vectors.get(key) if use_cache else None
        if vector is None:
            vector = embedder.embed_query(query)
            with self._lock:
                self._vectors[key] = vector
        return vector

    def generation(self, collection: str) -> tuple[int, int]:
        """A value that changes whenever the collection's contents change or the engine's caches are cleared: the
        key under which a cache kept outside the engine (Evaluate's measured depth timings) stays valid."""
        with self._lock:
            return self._epoch, self._generations.get(collection, 0)

    def clear_caches(self) -> None:
        """Forget cached results, measured timings and reranker scores held in memory (models stay loaded; the
        score store on disk keeps its scores: `workbench cache clear` empties it)."""
        with self._lock:
            self._results.clear()
            self._staged.clear()
            self._vectors.clear()
            self._epoch += 1
        self.score_cache.clear()

    def _info(self, name: str) -> CollectionInfo:
        """A collection's info, read once: its store, embedding model and dimension do not change under us."""
        with self._lock:
            if name not in self._infos:
                self._infos[name] = self.registry.get(name).info()
            return self._infos[name]

    def _forget_results(self, collection: str) -> None:
        with self._lock:
            self._infos.pop(collection, None)
            for key in [key for key in self._results if key[0] == collection]:
                self._results.pop(key, None)
            for key in [key for key in self._staged if key[0] == collection]:
                self._staged.pop(key, None)
            self._generations[collection] = self._generations.get(collection, 0) + 1

    # Collections --------------------------------------------------------------------------------------------
    def collections(self) -> list[CollectionInfo]:
        """Every collection the registry knows, with store, count, embedding model and dimension."""
        return self.registry.list()

    def collection_info(self, name: str) -> CollectionInfo:
        return self.registry.get(name).info()

    def browse(self, name: str, offset: int = 0, limit: int = 20) -> list[Chunk]:
        """A page of a collection's chunks (offset ≥ 0, 1 ≤ limit ≤ 1000)."""
        offset, limit = validate_page(offset, limit)
        return self.registry.get(name).browse(offset, limit)

    def delete_collection(self, name: str) -> None:
        """Delete a collection (raises CollectionNotFoundError when there is none), and its BM25 index; an attached
        collection (another tool's) is refused."""
        store = self.registry.get(name)
        refuse_attached(store.info(), "delete")
        where = self.registry.config(name).where
        self.registry.delete(name)
        forget_ingest(self.settings.data_dir, where, name)
        self.bm25.drop(name, store)
        self._forget_results(name)

    def ingest(
        self,
        path: str | Path,
        collection: str,
        *,
        chunk_size: int | UseDefault | None = DEFAULT,
        chunk_overlap: int | None = None,
        text_columns: list[str] | None = None,
        progress: ProgressCallback | None = None,
        shown_as: str | None = None,
        replace: bool = False,
        uploaded: bool = False,
        announce: Callable[[str], None] | None = None,
        split_passages: bool = False,
    ) -> IngestReport:
        """Load, chunk, embed and store `path` into `collection` (created with the default embedder).

        `chunk_size` DEFAULT uses the settings for files and keeps BEIR passages whole (`split_passages` chunks them
        too); None keeps all whole.
        `text_columns` picks a CSV's text columns; `shown_as` names `path` in messages (uploads).
        Files that cannot be read are listed in the report's `problems`; the others are ingested. A file with the
        name of a document that came from a different file is kept beside it (a warning says so) unless `replace`;
        `uploaded` files (in a temp folder) are matched by name. `announce(words)` hears, before the first chunk is
        embedded, how many there are to embed and how long that takes at this machine's last rate.
        """
        if collection not in self.settings.collections:
            validate_collection_name(collection)  # before any file is read
        size = self.settings.chunk_size if isinstance(chunk_size, UseDefault) else chunk_size
        overlap = self.settings.chunk_overlap if chunk_overlap is None else chunk_overlap
        try:
            existing = self.registry.get(collection).info()  # read once: the refusal and the embedder both need it
            refuse_attached(existing, "ingest into")
            recorded = existing.embedding_model
        except CollectionNotFoundError:
            recorded = None
        embedder = self.embedder(recorded)
        tracker = IngestTracker(
            self.settings.data_dir, self.registry.config(collection).where, collection, embedder.model_id, progress,
            max_tokens=getattr(embedder, "max_seq_length", None),  # an embedder that cuts texts off says where
        )  # fmt: skip

        def planned(todo: list[Chunk]) -> None:
            words = tracker.planned(todo)
            if announce is not None and todo:
                announce(words)

        def wrote(upserted: list[Chunk], deleted: list[str]) -> None:
            tracker.wrote(upserted, deleted)
            self.bm25.updated(collection, self.registry.get(collection), upserted, deleted)

        finished = False
        try:
            report = ingest_path(
                path,
                collection,
                registry=self.registry,
                embedder=embedder,
                chunk_size=size,
                chunk_overlap=overlap,
                text_columns=text_columns,
                unit_size=self.settings.ingest_unit,
                progress=tracker,
                shown_as=shown_as,
                replace=replace,
                split_passages=split_passages,
                uploaded=uploaded,
                on_write=wrote,
                on_plan=planned,
            )
            finished = True
        finally:
            # a file nothing was read from leaves no status behind; an ingest cut off midway says where it stopped
            tracker.close(finished or tracker.status.total == 0)
        self.bm25.settle(collection, self.registry.get(collection))
        self._forget_results(collection)
        return report


@lru_cache(maxsize=1)
def get_engine() -> Engine:
    """The process-wide engine built from the process-wide settings."""
    return Engine(get_settings())

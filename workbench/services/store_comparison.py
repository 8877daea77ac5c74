"""The same corpus in several stores: do they return the same candidates, how fast, and how close is each
store's approximate (HNSW) search to an exact scan of the same vectors, before and after reranking.

Stores are named by `StoreTarget`s ("chroma", "qdrant:/path", "pgvector:postgresql://..."); the collection has
the same name in each. `copy_collection` fills one store from another without embedding anything again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel

from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import InputError, StoreError
from workbench.evaluation.agreement import Agreement, agreement
from workbench.evaluation.io import Dataset, Run
from workbench.evaluation.metrics import evaluate
from workbench.evaluation.runs import document_runs
from workbench.inputs import validate_query
from workbench.redact import redact_url
from workbench.stores.base import CONTENT_HASH_KEY, ORIGIN_KEY, Collection
from workbench.stores.registry import StoreConfig, StoreRegistry, backend_for
from workbench.types import Chunk, CollectionInfo, Hit, Metadata, SearchPlan
from workbench.vocab import DEFAULT_RERANKER_CHOICE, NDCG_10, STORES, URL_SCHEMES, VECTOR_STORE_KINDS, recall_at, spoken

_PAGE = 1000
EXACT = "exact scan"


class StoreTarget(BaseModel):
    """A store by kind and location: `chroma`, `qdrant:/folder`, `pgvector:postgresql://...`, `chroma:http://...`."""

    kind: str
    location: str | None = None

    @classmethod
    def parse(cls, text: str) -> StoreTarget:
        kind, _, location = text.partition(":")
        if kind not in VECTOR_STORE_KINDS:
            raise InputError(
                f"A store is {spoken(VECTOR_STORE_KINDS)}, optionally with ':location'; got '{redact_url(text)}'."
            )
        return cls(kind=kind, location=location or None)

    def config(self, settings: Settings, collection: str) -> StoreConfig:
        """Where this target's copy of `collection` lives (its location, else the kind's configured one)."""
        location = self.location
        if location is None and self.kind == settings.store and settings.persist_dir and not settings.url_of(self.kind):
            location = str(settings.resolved_persist_dir)  # the configured store's own folder (WORKBENCH_PERSIST_DIR)
        is_url = bool(location) and str(location).startswith(URL_SCHEMES)
        return StoreConfig.at(
            settings,
            self.kind,
            collection,
            url=location if is_url else None,
            persist_dir=None if is_url else location,
        )

    @property
    def label(self) -> str:
        return f"{self.kind}:{redact_url(self.location)}" if self.location else self.kind


def open_target(target: StoreTarget, settings: Settings, collection: str) -> Collection:
    return backend_for(target.config(settings, collection)).get(collection)


def copy_collection(
    source: Collection, target: StoreTarget, settings: Settings, *, progress: Callable[[int, int], None] | None = None
) -> Collection:
    """Every chunk and vector of `source` written into the same-named collection of `target` (created when
    missing). Re-running writes nothing new: chunks already there with the same content hash are skipped."""
    backend = backend_for(target.config(settings, source.name))
    info = source.info()
    destination = backend.create(
        source.name, embedding_model=info.embedding_model or "unknown", dimension=info.dimension or 0
    )
    ids, matrix = source.vectors()
    row = {chunk_id: i for i, chunk_id in enumerate(ids)}
    total, done = info.count, 0
    while True:
        page: list[Chunk] = source.browse(done, _PAGE)
        if not page:
            break
        stored = destination.content_hashes([c.id for c in page])
        todo = [c for c in page if stored.get(c.id, "missing") != c.metadata.get("content_hash")]
        if todo:
            destination.upsert(todo, matrix[[row[c.id] for c in todo]])
        done += len(page)
        if progress:
            progress(done, total)
        if len(page) < _PAGE:
            break
    return destination


def missing_targets(engine: Engine, collection: str, targets: Sequence[StoreTarget]) -> list[StoreTarget]:
    """The targets that do not hold `collection` yet (a first comparison across stores finds them empty)."""
    missing = []
    for target in targets:
        if not backend_for(target.config(engine.settings, collection)).exists(collection):
            missing.append(target)
    return missing


def copy_into(
    engine: Engine,
    collection: str,
    targets: Sequence[StoreTarget],
    *,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """`collection`, as the engine's registry holds it, copied into each target (vectors and all, no
    re-embedding); local stores are let go afterwards so that another process can open them."""
    source = engine.registry.get(collection)
    try:
        for target in targets:
            copy_collection(source, target, engine.settings, progress=progress)
    finally:
        release(engine, collection, targets)


def release(engine: Engine, collection: str, targets: Sequence[StoreTarget]) -> None:
    """Let go of the targets' local stores (local Qdrant keeps a lock on its folder while a client is open) that
    are not where the engine's own registry keeps `collection`."""
    own = engine.registry.config(collection)
    for target in targets:
        config = target.config(engine.settings, collection)
        if (
            STORES[config.kind].embedded
            and not config.url
            and (config.kind, config.persist_dir)
            != (
                own.kind,
                own.persist_dir,
            )
        ):
            backend_for(config).close()


class ExactScan(Collection):
    """A collection's stored vectors searched by brute force: the exact nearest neighbours that its store's
    approximate (HNSW) index stands in for. Read-only; the engine searches it like any store."""

    store: ClassVar[str] = EXACT

    def __init__(self, source: Collection) -> None:
        self.name = source.name
        self.location = f"{source.store} at {source.location}"
        self.timeout = source.timeout
        self._info = source.info()
        self._ids, self._matrix = source.vectors()
        self._chunks = {c.id: c for c in source.all_chunks()}

    def count(self) -> int:
        return len(self._ids)

    def info(self) -> CollectionInfo:
        return self._info.model_copy(update={"store": EXACT, "location": self.location, "count": self.count()})

    def search(
        self, k: int, filters: Metadata | None = None, *, vector: np.ndarray | None = None, text: str | None = None
    ) -> list[Hit]:
        if filters:
            raise InputError("The exact scan compares whole collections: it takes no filters.")
        if not self._ids:
            return []
        scores = self._matrix @ np.asarray(self.require_vector(vector), dtype=np.float32)
        top = np.argsort(-scores, kind="stable")[:k]
        return [
            Hit(id=chunk.id, text=chunk.text, metadata=chunk.metadata, score=float(scores[i]))
            for i in top
            for chunk in [self._chunks[self._ids[i]]]
        ]

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray | None) -> None:
        raise StoreError("The exact scan is read-only.")

    def stored_chunks(
        self, origins: Sequence[str], ids: Sequence[str] = (), key: str = CONTENT_HASH_KEY
    ) -> dict[str, str | None]:
        wanted = set(ids)
        return {
            c.id: c.metadata.get(key)
            for c in self._chunks.values()
            if c.id in wanted or c.metadata.get(ORIGIN_KEY) in origins
        }

    def delete_chunks(self, ids: Sequence[str]) -> None:
        raise StoreError("The exact scan is read-only.")

    def browse(self, offset: int = 0, limit: int = 20) -> list[Chunk]:
        return [self._chunks[i] for i in self._ids[offset : offset + limit]]

    def vectors(self, batch_size: int = 1000) -> tuple[list[str], np.ndarray]:
        return list(self._ids), self._matrix


def comparison_engine(engine: Engine, collections: dict[str, Collection], plan: SearchPlan) -> Engine:
    """An engine over the given collections (by label) that shares `engine`'s models and score cache: the
    collection's own embedder and the plan's reranker, so each store's list comes from `Engine.search`
    (deduplication, filters, timings) and a pair scored for one store is not scored again for another."""
    registry = StoreRegistry(engine.settings)
    for label, collection in collections.items():
        registry.register_collection(label, collection)
    first = next(iter(collections.values()))
    embedder = engine.embedder(first.embedding_model())
    return Engine(engine.settings, registry=registry, embedder=embedder, reranker=engine.reranker_of(plan))


class StoreRun(BaseModel):
    """One store's answer to the query: candidate ids, search time (median of repeats) and recall against exact."""

    store: str
    ids: list[str]
    search_ms_p50: float
    recall_vs_exact: float
    reranked_ids: list[str]


class StoreComparison(BaseModel):
    """The query in every store, and how each pair of stores agrees on the candidates."""

    query: str
    collection: str
    k: int
    top_n: int
    runs: list[StoreRun]
    exact_ids: list[str]
    agreement: dict[str, Agreement]


def compare_stores(
    engine: Engine,
    query: str,
    plan: SearchPlan,
    targets: Sequence[StoreTarget],
    *,
    repeats: int = 5,
) -> StoreComparison:
    """One query against the plan's collection in each target store, each through `Engine.search`: its
    candidates, its search time (median of `repeats` uncached searches), its recall against an exact scan of
    the first store's vectors, and its top n after the plan's reranker. The stores hold the vectors, so each is
    searched densely whatever the plan's first stage, over the whole collection (the exact scan takes no filters;
    nor does the comparison)."""
    query = validate_query(query)
    plan = plan.with_(retrieval="dense", filters={}, min_score=None)
    if plan.collection is None:
        raise InputError("Name the collection to compare across stores.")
    if len(targets) < 1:
        raise InputError("Name at least one store to compare.")
    collection = plan.collection
    missing = missing_targets(engine, collection, targets)
    if missing:
        release(engine, collection, targets)
        labels = ", ".join(t.label for t in missing)
        raise InputError(
            f"'{collection}' is not in {labels} yet: copy it there first (the page offers to; on the command line, "
            f"`workbench compare-stores QUERY --collection {collection} --in ... --copy-from STORE`)."
        )
    try:
        return _compare(engine, query, plan, targets, repeats=repeats)
    finally:
        release(engine, collection, targets)


def _compare(
    engine: Engine, query: str, plan: SearchPlan, targets: Sequence[StoreTarget], *, repeats: int
) -> StoreComparison:
    collection = plan.collection or ""
    stores = {t.label: open_target(t, engine.settings, collection) for t in targets}
    first = next(iter(stores.values()))
    searcher = comparison_engine(engine, {**stores, EXACT: ExactScan(first)}, plan)
    plan = plan.with_(reranker=DEFAULT_RERANKER_CHOICE if plan.reranks else None)  # the searcher's own reranker
    scan = searcher.search(query, plan.with_(collection=EXACT, reranker=None))
    exact = [c.id for c in scan.candidates]
    runs = []
    for label in stores:
        here = plan.with_(collection=label)
        times = [
            searcher.search(query, here.with_(reranker=None), use_cache=False).timings.search_ms
            for _ in range(max(repeats, 1))
        ]
        result = searcher.search(query, here)
        ids = [c.id for c in result.candidates]
        runs.append(
            StoreRun(
                store=label,
                ids=ids,
                search_ms_p50=float(np.median(times)),
                recall_vs_exact=len(set(ids) & set(exact)) / len(exact) if exact else 1.0,
                reranked_ids=[r.id for r in result.reranked],
            )
        )
    pairs = {f"{a.store} vs {b.store}": agreement(a.ids, b.ids) for i, a in enumerate(runs) for b in runs[i + 1 :]}
    return StoreComparison(
        query=query, collection=collection, k=plan.k, top_n=plan.top_n, runs=runs, exact_ids=exact, agreement=pairs
    )


class RecallStudy(BaseModel):
    """ANN against exact search over a judged query set, per store: mean recall@k of the candidates, search
    time, and nDCG@10 of the reranked top 10 from ANN candidates beside the same from exact candidates."""

    collection: str
    k: int
    queries: int
    exact_ndcg_after: float
    exact_ndcg_before: float
    rows: list[dict[str, Any]]


def recall_study(
    engine: Engine,
    dataset: Dataset,
    plan: SearchPlan,
    targets: Sequence[StoreTarget],
    *,
    max_queries: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RecallStudy:
    """Each store's HNSW search against a brute-force scan of the same vectors, over the judged queries, every
    list through `Engine.search` (the reranker scores each pair once, whichever lists share it). The plan names
    the collection, k and the reranker; each store is searched densely over the whole collection and nDCG@10 is
    of the reranked top 10."""
    if plan.collection is None:
        raise InputError("Name the collection to study across stores.")
    collection, k = plan.collection, plan.k
    stores = {t.label: open_target(t, engine.settings, collection) for t in targets}
    searcher = comparison_engine(engine, {EXACT: ExactScan(next(iter(stores.values()))), **stores}, plan)
    plan = plan.with_(
        retrieval="dense", filters={}, min_score=None, top_n=min(10, k),
        reranker=DEFAULT_RERANKER_CHOICE if plan.reranks else None,
    )  # fmt: skip
    items = list(dataset.queries.items())[:max_queries] if max_queries else list(dataset.queries.items())
    runs: dict[str, Run] = {name: {} for name in (EXACT, *stores)}
    runs_before: dict[str, Run] = {name: {} for name in (EXACT, *stores)}
    recall: dict[str, list[float]] = {label: [] for label in stores}
    times: dict[str, list[float]] = {label: [] for label in stores}
    for done, (qid, text) in enumerate(items, start=1):
        exact: list[str] = []
        for name in runs:
            result = searcher.search(text, plan.with_(collection=name), max_query_chars=None)
            runs_before[name][qid], runs[name][qid] = document_runs(result.candidates)
            ids = [c.id for c in result.candidates]
            if name == EXACT:
                exact = ids
            else:
                times[name].append(result.timings.search_ms)
                recall[name].append(len(set(ids) & set(exact)) / len(exact) if exact else 1.0)
        if progress:
            progress(done, len(items))
    qrels = {qid: dataset.qrels[qid] for qid, _ in items}
    rows = [
        {
            "store": label,
            f"{recall_at(k)} vs exact": float(np.mean(recall[label])),
            "search ms p50": float(np.median(times[label])),
            f"{NDCG_10} before": evaluate(qrels, runs_before[label], k)[0][NDCG_10],
            f"{NDCG_10} after": evaluate(qrels, runs[label], k)[0][NDCG_10],
        }
        for label in stores
    ]
    return RecallStudy(
        collection=collection,
        k=k,
        queries=len(items),
        exact_ndcg_before=evaluate(qrels, runs_before[EXACT], k)[0][NDCG_10],
        exact_ndcg_after=evaluate(qrels, runs[EXACT], k)[0][NDCG_10],
        rows=rows,
    )

"""The same corpus in several stores: do they return the same candidates, how fast, and how close is each
store's approximate (HNSW) search to an exact scan of the same vectors, before and after reranking.

Stores are named by `StoreTarget`s ("chroma", "qdrant:/path", "pgvector:postgresql://..."); the collection has
the same name in each. `copy_collection` fills one store from another without embedding anything again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel

from workbench.compare import Agreement, agreement
from workbench.config import Settings
from workbench.engine import DEFAULT, Engine
from workbench.errors import InputError
from workbench.evaluation.io import Dataset
from workbench.evaluation.metrics import evaluate
from workbench.inputs import validate_depths, validate_query
from workbench.redact import redact_url
from workbench.stores.base import Collection
from workbench.stores.registry import StoreConfig, open_backend
from workbench.types import Chunk

_PAGE = 1000


class StoreTarget(BaseModel):
    """A store by kind and location: `chroma`, `qdrant:/folder`, `pgvector:postgresql://...`, `chroma:http://...`."""

    kind: str
    location: str | None = None

    @classmethod
    def parse(cls, text: str) -> StoreTarget:
        kind, _, location = text.partition(":")
        if kind not in {"chroma", "qdrant", "pgvector"}:
            raise InputError(f"A store is chroma, qdrant or pgvector, optionally with ':location'; got '{text}'.")
        return cls(kind=kind, location=location or None)

    def config(self, settings: Settings, collection: str) -> StoreConfig:
        location = self.location
        if location is None:
            location = {"chroma": settings.chroma_url, "qdrant": settings.qdrant_url, "pgvector": settings.pg_url}[
                self.kind
            ] or (None if self.kind == "pgvector" else str(settings.data_dir.joinpath(self.kind)))
        if location is None:
            raise InputError("pgvector needs a URL: pgvector:postgresql://... or WORKBENCH_PG_URL.")
        is_url = location.startswith(("http://", "https://", "postgresql://", "postgres://"))
        return StoreConfig(
            kind=self.kind,
            collection=collection,
            persist_dir=None if is_url else location,
            url=location if is_url else None,
            timeout=settings.store_timeout,
            options={"schema": settings.pg_schema} if self.kind == "pgvector" else {},
        )

    @property
    def label(self) -> str:
        return f"{self.kind}:{redact_url(self.location)}" if self.location else self.kind


def open_target(target: StoreTarget, settings: Settings, collection: str) -> Collection:
    config = target.config(settings, collection)
    return open_backend(
        config.kind, config.persist_dir, config.url, timeout=config.timeout, options=config.options
    ).get(collection)


def copy_collection(
    source: Collection, target: StoreTarget, settings: Settings, *, progress: Callable[[int, int], None] | None = None
) -> Collection:
    """Every chunk and vector of `source` written into the same-named collection of `target` (created when
    missing). Re-running writes nothing new: chunks already there with the same content hash are skipped."""
    config = target.config(settings, source.name)
    backend = open_backend(config.kind, config.persist_dir, config.url, timeout=config.timeout, options=config.options)
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


def _all_chunks(collection: Collection) -> list[Chunk]:
    chunks: list[Chunk] = []
    while True:
        page = collection.browse(len(chunks), _PAGE)
        chunks += page
        if len(page) < _PAGE:
            return chunks


def _exact(vectors: tuple[list[str], np.ndarray], query: np.ndarray, k: int) -> list[str]:
    ids, matrix = vectors
    if not ids:
        return []
    scores = matrix @ np.asarray(query, dtype=np.float32)
    top = np.argsort(-scores, kind="stable")[:k]
    return [ids[i] for i in top]


def compare_stores(
    engine: Engine,
    query: str,
    collection: str,
    targets: Sequence[StoreTarget],
    *,
    k: int = 50,
    top_n: int = 10,
    repeats: int = 5,
    reranker: Any = DEFAULT,
) -> StoreComparison:
    """One query against the same collection in each target store."""
    query = validate_query(query)
    k, top_n = validate_depths(k, top_n)
    if len(targets) < 1:
        raise InputError("Name at least one store to compare.")
    stores = {t.label: open_target(t, engine.settings, collection) for t in targets}
    first = next(iter(stores.values()))
    embedder = engine.embedder(first.embedding_model())
    vector = embedder.embed_query(query)
    exact = _exact(first.vectors(), vector, k)
    model = engine.reranker(reranker)
    runs = []
    for label, store in stores.items():
        times = []
        for _ in range(max(repeats, 1)):
            started = time.perf_counter()
            hits = store.search(k, vector=vector)
            times.append((time.perf_counter() - started) * 1000)
        ids = [h.id for h in hits]
        reranked = ids
        if model is not None and hits:
            scores, _ = model.score(query, [h.text for h in hits])
            reranked = [ids[i] for i in np.argsort(-np.asarray(scores), kind="stable")]
        runs.append(
            StoreRun(
                store=label,
                ids=ids,
                search_ms_p50=float(np.median(times)),
                recall_vs_exact=len(set(ids) & set(exact)) / len(exact) if exact else 1.0,
                reranked_ids=reranked[:top_n],
            )
        )
    pairs = {f"{a.store} vs {b.store}": agreement(a.ids, b.ids) for i, a in enumerate(runs) for b in runs[i + 1 :]}
    return StoreComparison(
        query=query, collection=collection, k=k, top_n=top_n, runs=runs, exact_ids=exact, agreement=pairs
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
    collection: str,
    targets: Sequence[StoreTarget],
    *,
    k: int = 100,
    max_queries: int | None = None,
    reranker: Any = DEFAULT,
    progress: Callable[[int, int], None] | None = None,
) -> RecallStudy:
    """Each store's HNSW search against a brute-force scan of the same vectors, over the judged queries."""
    stores = {t.label: open_target(t, engine.settings, collection) for t in targets}
    first = next(iter(stores.values()))
    vectors = first.vectors()
    embedder = engine.embedder(first.embedding_model())
    model = engine.reranker(reranker)
    items = list(dataset.queries.items())[:max_queries] if max_queries else list(dataset.queries.items())
    chunks = _all_chunks(first)
    texts = {c.id: c.text for c in chunks}
    document = {c.id: str(c.metadata.get("document_id", c.id)) for c in chunks}
    runs: dict[str, dict[str, dict[str, float]]] = {"exact": {}, **{label: {} for label in stores}}
    runs_before: dict[str, dict[str, dict[str, float]]] = {"exact": {}, **{label: {} for label in stores}}
    recall: dict[str, list[float]] = {label: [] for label in stores}
    times: dict[str, list[float]] = {label: [] for label in stores}
    for done, (qid, text) in enumerate(items, start=1):
        query = text[:512]
        vector = embedder.embed_query(query)
        exact = _exact(vectors, vector, k)
        candidates = {"exact": exact}
        for label, store in stores.items():
            started = time.perf_counter()
            hits = store.search(k, vector=vector)
            times[label].append((time.perf_counter() - started) * 1000)
            candidates[label] = [h.id for h in hits]
            recall[label].append(len(set(candidates[label]) & set(exact)) / len(exact) if exact else 1.0)
        for name, ids in candidates.items():
            runs_before[name][qid] = {document[i]: float(len(ids) - r) for r, i in enumerate(ids)}
            if model is not None and ids:
                scores, _ = model.score(query, [texts[i] for i in ids])
                runs[name][qid] = {document[i]: float(s) for i, s in zip(ids, scores, strict=True)}
            else:
                runs[name][qid] = runs_before[name][qid]
        if progress:
            progress(done, len(items))
    qrels = {qid: dataset.qrels[qid] for qid, _ in items}
    rows = []
    for label in stores:
        rows.append(
            {
                "store": label,
                f"recall@{k} vs exact": float(np.mean(recall[label])),
                "search ms p50": float(np.median(times[label])),
                "ndcg@10 before": evaluate(qrels, runs_before[label], k)[0]["ndcg@10"],
                "ndcg@10 after": evaluate(qrels, runs[label], k)[0]["ndcg@10"],
            }
        )
    return RecallStudy(
        collection=collection,
        k=k,
        queries=len(items),
        exact_ndcg_before=evaluate(qrels, runs_before["exact"], k)[0]["ndcg@10"],
        exact_ndcg_after=evaluate(qrels, runs["exact"], k)[0]["ndcg@10"],
        rows=rows,
    )

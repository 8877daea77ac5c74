"""The demo collection: a fictional company's handbook, shipped inside the package (`workbench/demo_data`),
built into the default store on first use, with 50 judged sample queries in two groups: 20 plain questions
and 30 hard ones of the kinds embeddings are known to misrank (negation, thresholds, conditions, two constraints
at once, exact keywords, far phrasings). What a reranker does to either group is measured, never assumed."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from pydantic import BaseModel

from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import CollectionNotFoundError, IngestError
from workbench.evaluation.io import Dataset
from workbench.evaluation.runs import fold_documents, scored_chunks
from workbench.fusion import DEFAULT_LINEAR_WEIGHT
from workbench.ingest import ProgressCallback
from workbench.judgments import attach_judgments, judgment_rows, load_judgments, whose
from workbench.paths import demo_dir
from workbench.types import Candidate, CollectionInfo
from workbench.vocab import DEMO_COLLECTION, DEPTH_SWEEP, LINEAR_FUSIONS, RETRIEVAL_MODES

# The first stages whose top 10 the demo's judgments cover at every offered depth (judged@10 = 1.0, checked by
# tests/evaluation/test_demo_pool.py; `scripts/demo_pool.py` lists what a change leaves ungraded): dense, BM25,
# hybrid by RRF, and each linear fusion at the app's default dense weight.
DEMO_POOLED_FIRST_STAGES: tuple[tuple[str, str | None], ...] = (
    *((mode, None) for mode in RETRIEVAL_MODES),
    *(("hybrid", f"{method} {DEFAULT_LINEAR_WEIGHT}") for method in LINEAR_FUSIONS),
)

PooledRuns = tuple[str, int, Sequence[Candidate], dict[str, float], dict[str, float]]


def demo_pool_runs(
    engine: Engine,
    text: str,
    reranker: str | None,
    stages: Sequence[tuple[str, str | None]] = DEMO_POOLED_FIRST_STAGES,
) -> Iterator[PooledRuns]:
    """The runs an evaluation of the demo builds for one query, for each pooled first stage (of `stages`; all by
    default) at each offered depth: (the plan's key, k, the candidates, the document run before and after reranking).
    A fused first stage is searched at each k, as `eval -k K` searches it (the fusion of each list's top k changes
    with k); dense and BM25 once at the deepest k, whose first k candidates are what a search at k finds."""
    deepest = max(DEPTH_SWEEP)
    for mode, fusion in stages:
        found: Sequence[Candidate] = ()
        for k in DEPTH_SWEEP:
            if mode == "hybrid" or not found:
                plan = engine.plan(collection=DEMO_COLLECTION, retrieval=mode, fusion=fusion,
                                   k=k if mode == "hybrid" else deepest, top_n=10, reranker=reranker)  # fmt: skip
                found = engine.search(text, plan).candidates
            before, after = fold_documents(scored_chunks(found[:k]))
            yield f"{mode} {fusion or ''}".strip(), k, found[:k], before, after


__all__ = [
    "DEMO_COLLECTION",
    "GROUPS",
    "SampleQuery",
    "demo_dataset",
    "demo_dir",
    "demo_needs_building",
    "demo_pool_runs",
    "ensure_demo_collection",
    "others_graded_demo",
    "prepare_demo",
    "sample_queries",
]

# The groups are named for what their queries are, never for what a reranker does to them: on the demo, reranking
# helps the plain questions more than the hard ones (Evaluate's "by query group" table says by how much).
GROUPS = {
    "vector-works": "plain questions",
    "rerank-helps": "hard questions: a negation, a number, a condition or an exact term",
}


class SampleQuery(BaseModel):
    """A demo query, its group (a key of GROUPS) and, for the hard ones, what makes it hard."""

    id: str
    text: str
    group: str
    kind: str | None = None


def sample_queries(group: str | None = None) -> list[SampleQuery]:
    """The demo's judged sample queries in file order, optionally of one group."""
    path = demo_dir() / "queries.jsonl"
    if not path.exists():
        return []
    queries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            meta = record.get("metadata") or {}
            queries.append(
                SampleQuery(
                    id=record["_id"],
                    text=record["text"],
                    group=meta.get("group", "vector-works"),
                    kind=meta.get("kind"),
                )
            )
    return [q for q in queries if group is None or q.group == group]


DEMO_RATER = "demo handbook"  # who the shipped judgments are by, as raters are listed
DEMO_JUDGMENTS = "the demo handbook"  # the demo's judgments as shipped, by name


def ensure_demo_collection(
    engine: Engine, name: str = DEMO_COLLECTION, progress: ProgressCallback | None = None
) -> CollectionInfo:
    """Build the demo collection if it is missing or incomplete, attach its judgments; return its info.
    Offline and idempotent."""
    docs = demo_dir() / "docs"
    if not docs.is_dir():
        raise IngestError(f"The demo corpus is missing: no folder at {docs}. Set WORKBENCH_DEMO_DIR to its folder.")
    try:
        info = engine.collection_info(name)
    except CollectionNotFoundError:
        info = None
    if info is None or info.count == 0:
        engine.ingest(docs, name, progress=progress)
        info = engine.collection_info(name)
    attach_judgments(
        engine.settings,
        name,
        demo_dir() / "qrels" / "test.tsv",
        demo_dir() / "queries.jsonl",
        replace=False,
        rater=DEMO_RATER,
    )
    return info


def demo_dataset(split: str = "test", settings: Settings | None = None) -> Dataset:
    """The demo's judged queries as an evaluation dataset, named as users know it ('the demo handbook').

    With `settings`, the grades of its 50 queries are the judgments store's for the demo collection when it has
    them (the shipped ones, and every rating given since, under the judgment policy); otherwise the shipped files'.
    Queries typed and rated on the demo are evaluated with the collection's own judgments, not here."""
    dataset = Dataset.from_beir(demo_dir(), split)
    name = DEMO_JUDGMENTS
    rows = judgment_rows(settings, DEMO_COLLECTION) if settings is not None and split == "test" else []
    stored = load_judgments(settings, DEMO_COLLECTION, rows=rows) if settings is not None and rows else None
    if stored is not None:
        qrels = {qid: stored.qrels.get(qid, {}) for qid in dataset.queries}
        dataset = Dataset(dataset.name, dataset.queries, qrels, dataset.corpus, dataset.groups)
        dataset.grade_sources = stored.sources
        mine = [row for row in rows if row.query_id in dataset.queries]
        if any(row.rater != DEMO_RATER for row in mine):  # grades given since: the label says whose they are
            name = f"the {whose(mine, DEMO_RATER)}"
    dataset.name = name
    # Groups by the words the app uses, so the CLI, the JSON and the app name them alike.
    dataset.groups = {qid: GROUPS.get(group, group) for qid, group in dataset.groups.items()}
    return dataset


def others_graded_demo(settings: Settings) -> bool:
    """Whether anyone besides the shipped judgments has graded the demo's queries (Evaluate then also offers the
    judgments as shipped)."""
    queries = Dataset.from_beir(demo_dir(), "test").queries
    return any(r.rater != DEMO_RATER and r.query_id in queries for r in judgment_rows(settings, DEMO_COLLECTION))


def _demo_info(engine: Engine) -> CollectionInfo | None:
    try:
        return engine.collection_info(DEMO_COLLECTION)
    except CollectionNotFoundError:
        return None


def demo_needs_building(engine: Engine) -> bool:
    """True when the demo is the default collection and is missing or empty: starting a front end builds it."""
    if engine.settings.collection != DEMO_COLLECTION:
        return False
    info = _demo_info(engine)
    return info is None or info.count == 0


def prepare_demo(engine: Engine, progress: ProgressCallback | None = None) -> CollectionInfo | None:
    """What every front end does before it serves: when the demo is the default collection, build it if it is
    missing (offline, with `progress`); when the demo exists, attach its judgments if they are not yet. Returns
    the demo's info, or None when the demo is neither the default nor present."""
    if engine.settings.collection == DEMO_COLLECTION or _demo_info(engine) is not None:
        return ensure_demo_collection(engine, progress=progress)
    return None

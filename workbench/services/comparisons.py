"""Two configurations over a kept query set (`workbench query-sets compare`, Compare's "Both over a query set"):
one request, readied and run here, so the CLI and the page assemble nothing of their own (the candidates file
attached, the demo collection built, the judgments found)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from workbench.engine import Engine
from workbench.errors import InputError
from workbench.experiments import RunDiff, compare_configurations, open_experiment_store
from workbench.ingest import ProgressCallback
from workbench.judgments import load_judgments
from workbench.services.demo import demo_dataset, ensure_demo_collection
from workbench.services.sources import attach_candidates
from workbench.types import SearchPlan
from workbench.vocab import DEMO_COLLECTION


@dataclass(frozen=True)
class QuerySetComparison:
    """What to compare: the kept query set, configuration A (`first`) and B (`second`); a file of the production
    system's `candidates` (with its `corpus` for a TREC run) that the sides in `on_candidates` rerank instead of
    searching; whose judgments score both (`judgments_of`; None: judgment-free figures only), and whether judged
    figures were asked for (`judged`: then no judgments is an error, not a silent omission)."""

    query_set: str
    first: SearchPlan
    second: SearchPlan
    candidates: str | None = None
    corpus: str | None = None
    on_candidates: tuple[bool, bool] = (True, True)
    tag: str = ""  # sets one caller's candidates collections apart from another's (the app's sessions)
    judgments_of: str | None = None
    judged: bool = False

    def __post_init__(self) -> None:
        if self.judged and not self.judgments_of:
            raise InputError("Judged figures need a collection whose judgments score both configurations.")


def compare_over_query_set(
    engine: Engine,
    request: QuerySetComparison,
    *,
    warn: Callable[[str], None],
    progress: ProgressCallback | None = None,
) -> tuple[RunDiff, SearchPlan]:
    """The comparison the request asks for, B against A over the query set's queries (each of the candidates file's
    problems said through `warn`), and B's plan as it ran (on the candidates file, when it started from it)."""
    query_set = open_experiment_store(engine.settings).query_set(request.query_set)
    first, second = request.first, request.second
    if request.candidates is not None:
        queries = {item.id: item.text for item in query_set.queries}
        found = attach_candidates(engine, request.candidates, queries, corpus=request.corpus, tag=request.tag)
        for problem in found.problems:
            warn(problem)
        on_file = {"collection": found.name, "retrieval": "dense", "filters": {}}  # the file's hits, in its order
        first, second = (
            plan.with_(**on_file) if start else plan
            for plan, start in zip((first, second), request.on_candidates, strict=True)
        )
    if DEMO_COLLECTION in (first.collection, second.collection):
        ensure_demo_collection(engine)
    qrels = None
    if request.judgments_of is not None:
        stored = load_judgments(engine.settings, request.judgments_of)
        demo = request.judgments_of == DEMO_COLLECTION
        qrels = stored.qrels if stored else demo_dataset("test", engine.settings).qrels if demo else None
        if qrels is None and request.judged:
            raise InputError(
                f"Judged figures: '{request.judgments_of}' has no judgments (rate results or import qrels first)."
            )
    return compare_configurations(engine, query_set, first, second, qrels=qrels, progress=progress), second

"""An evaluation is a request, as a search is a plan: what to judge and on what, in one frozen value
(`EvaluationRequest`) that each front end builds with its own adapter (`cli/plans.evaluation_from` for `eval`,
`gate`, `tune` and `long-documents`; the API's experiment routes), and one function that readies it
(`ready_evaluation`), so that no front end assembles the pieces itself:

1. the judged queries, from the first source the request names (`sources.JUDGED_SOURCES`: files, the demo's, a BEIR
   folder, the judgments store's for the collection);
2. the collection: the one named, else the demo's for `demo` and the folder's own name for a BEIR folder;
3. first-stage candidates a production system exported (`candidates`), attached as a read-only collection of their
   own (a TREC run's texts from `corpus`, the dataset's corpus, or the demo collection for the demo's own ids);
4. the demo collection made when it is the one evaluated;
5. a corpus sample (`corpus_sample`): the judged passages of the queries evaluated and that many others, in a
   collection of its own;
6. a kept query set (`query_set`): only its queries.

The request also says how the evaluation is run: its depth grid (`depth_grid`), the rerankers compared side by side
(`rerankers`), and whether it is kept (`keep`). The plan is a `SearchPlan` of its own; `evaluate_dataset`,
`compare_rerankers`, `run_gate`, `tune` and `compare_long_documents` take it from here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import InputError, WorkbenchError, error_message
from workbench.evaluation.io import Dataset
from workbench.evaluation.report import EvaluationReport
from workbench.evaluation.sample import corpus_sample, sample_collection
from workbench.evaluation.service import EvaluationOptions, Listeners, evaluate_dataset
from workbench.experiments import Experiment, keep_report, open_experiment_store
from workbench.experiments.service import Keeping
from workbench.inputs import validate_collection_name, validate_max_queries, validate_serving
from workbench.services.demo import DEMO_COLLECTION, ensure_demo_collection
from workbench.services.sources import attach_candidates, judged_dataset
from workbench.types import SearchPlan
from workbench.vocab import DEPTH_SWEEP


@dataclass(frozen=True)
class EvaluationRequest:
    """What to evaluate: the judged queries (the `demo`'s, a `beir` folder's, `queries` with `qrels`, or the
    judgments stored for `collection`), the collection searched, the candidates or corpus sample it searches
    instead, and which of the judged queries (a kept `query_set`, the first `max_queries`)."""

    demo: bool = False
    beir: str | None = None
    queries: str | None = None
    qrels: str | None = None
    split: str = "test"
    shipped: bool = False  # the demo's judgments as shipped, not with the grades given since
    collection: str | None = None
    candidates: str | None = None
    corpus: str | None = None
    corpus_sample: int | None = None
    query_set: str | None = None
    max_queries: int | None = None
    judgments_of: str | None = None  # whose stored judgments to read, when not the collection evaluated's
    tag: str = ""  # sets one caller's candidates collections apart from another's (the app's sessions)
    depth: tuple[int, ...] | None = None  # the depth curve's k values; None: DEPTH_SWEEP up to the plan's k
    rerankers: tuple[str, ...] = ()  # two or more: compared side by side, each in a plan of its own
    keep: bool = True  # kept as an experiment
    # the verdict as served under this rerank budget too (evaluation/served.py): every search timed, none cached
    rerank_budget_ms: float | None = None
    serve_concurrency: int = 1  # searches served at once while each is timed, under the rerank budget

    def __post_init__(self) -> None:
        validate_max_queries(self.max_queries)
        validate_serving(self.rerank_budget_ms, self.serve_concurrency)
        for value in self.depth or ():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"A depth is a whole number of candidates, at least 1; got {value!r}.")
        if len(self.rerankers) == 1:
            raise InputError("Rerankers are compared two or more at a time: name one more, or evaluate the one alone.")

    def depth_grid(self, k: int) -> list[int]:
        """The depth curve's k values for a plan searching `k` deep: those named, else DEPTH_SWEEP's up to k."""
        return list(self.depth) if self.depth is not None else [d for d in DEPTH_SWEEP if d <= k]


@dataclass(frozen=True)
class ReadyEvaluation:
    """A request readied: its judged queries and the collection to evaluate on (the candidates', the sample's or
    the named one)."""

    request: EvaluationRequest
    dataset: Dataset
    collection: str

    @property
    def candidates(self) -> bool:
        """Whether the first stage is a candidates file's (its collection searched as dense, in the file's order)."""
        return self.request.candidates is not None


def ready_evaluation(
    engine: Engine,
    request: EvaluationRequest,
    *,
    warn: Callable[[str], None] | None = None,
    query_set: bool = True,
) -> ReadyEvaluation:
    """The judged queries and the collection the request names, every piece in place (see the module's
    docstring); `warn` hears what a candidates file could not use. Without `query_set`, a kept query set is left
    to the caller (the gate records it in the experiment it keeps)."""
    say = warn or (lambda _: None)
    settings = engine.settings
    texts_from = request.collection or (DEMO_COLLECTION if request.demo else None)
    dataset, collection = judged_queries_of(settings, request)
    demo = request.demo
    if request.candidates:
        corpus = request.corpus or dataset.corpus
        if corpus is None and texts_from == DEMO_COLLECTION:
            ensure_demo_collection(engine)  # a run of the demo's own ids reads their texts from it
        found = attach_candidates(
            engine, request.candidates, dataset.queries, corpus=corpus, texts_from=None if corpus else texts_from,
            tag=request.tag,
        )  # fmt: skip
        for problem in found.problems:
            say(problem)
        collection, demo = found.name, False
    if demo and collection == DEMO_COLLECTION:
        ensure_demo_collection(engine)
    if request.corpus_sample is not None:
        dataset = corpus_sample(dataset, request.corpus_sample, settings.data_dir, request.max_queries)
        collection = sample_collection(collection, request.corpus_sample)
    if query_set and request.query_set:
        dataset = open_experiment_store(settings).query_set(request.query_set).judged(dataset)
    return ReadyEvaluation(request, dataset, collection)


def judged_queries_of(settings: Settings, request: EvaluationRequest) -> tuple[Dataset, str]:
    """Steps 1 and 2 alone (nothing made or attached): the judged queries the request names, and the collection
    they are evaluated on before any candidates or sample replace it."""
    collection = request.collection or ("candidates" if request.candidates else None)
    if request.demo and not (request.qrels or request.queries):
        collection = collection or DEMO_COLLECTION
    dataset = judged_dataset(
        settings, queries=request.queries, qrels=request.qrels, demo=request.demo,
        beir=request.beir, split=request.split, collection=request.judgments_of or collection,
        shipped=request.shipped,
    )  # fmt: skip
    if not collection and dataset.corpus is not None and request.beir:
        collection = _folder_collection(request.beir)
    if not collection:
        raise InputError("Name the collection to evaluate (--collection, or the Collection field).")
    return dataset, collection


def _folder_collection(folder: str) -> str:
    """A BEIR folder's collection when none is named: the folder's own name (`scifact`)."""
    name = Path(folder).resolve().name
    try:
        return validate_collection_name(name)
    except InputError as exc:
        raise InputError(
            f"Name the collection to evaluate with --collection: the folder's name cannot be one. {exc}"
        ) from exc


@dataclass(frozen=True)
class Evaluated:
    """A readied evaluation run on one plan: its report, and the experiment it was kept as (None when the request
    keeps nothing, or when the store could not keep it: `not_kept` then says why, and the report stands)."""

    report: EvaluationReport
    experiment: Experiment | None
    not_kept: str | None = None


def run_evaluation_request(
    engine: Engine,
    ready: ReadyEvaluation,
    plan: SearchPlan,
    *,
    keeping: Keeping = Keeping(),
    options: EvaluationOptions = EvaluationOptions(),
    listeners: Listeners = Listeners(),
) -> Evaluated:
    """The one way an evaluation runs (`eval` per first stage, POST /experiments and its job): `plan` on the
    readied judged queries, with the request's depth grid, query count and rerank budget, progress as it goes
    (where none listens to the steps after the queries, the ingest's announcer hears them), kept as an experiment
    labelled as `keeping` says when the request keeps it. A store that cannot keep it loses no figure: the report
    comes back with why it was not kept."""
    request = ready.request
    announce = listeners.ingest_announce
    if listeners.phase is None and announce is not None:
        listeners = replace(listeners, phase=lambda words: announce(f"queries done; now {words}…"))
    report = evaluate_dataset(
        engine, ready.dataset, plan, max_queries=request.max_queries, depth=request.depth_grid(plan.k),
        options=replace(
            options, rerank_budget_ms=request.rerank_budget_ms, serve_concurrency=request.serve_concurrency
        ), listeners=listeners,
    )  # fmt: skip
    if not request.keep:
        return Evaluated(report, None)
    try:
        experiment = keep_report(
            engine, report, plan, ready.dataset, source=ready.dataset.name,
            keeping=replace(keeping, query_set=request.query_set),
        )  # fmt: skip
    except WorkbenchError as exc:
        return Evaluated(report, None, not_kept=error_message(exc))
    return Evaluated(report, experiment)

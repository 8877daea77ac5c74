"""Experiments made, kept, run again, compared, exported and imported: what the Evaluate and Experiments pages,
`workbench eval` / `workbench experiments` and the API call."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError

from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation.io import Dataset, Qrels, Run
from workbench.evaluation.parallel import search_all
from workbench.evaluation.report import EvaluationReport
from workbench.evaluation.runs import document_runs
from workbench.evaluation.service import EvaluationOptions, Listeners, evaluate_dataset
from workbench.evaluation.tuning import TuningRun
from workbench.experiments.diff import RunDiff, compare_run_pair
from workbench.experiments.query_sets import QuerySet
from workbench.experiments.record import (
    Experiment,
    Manifest,
    changed_inputs,
    check_checksums,
    checksum,
    judgments_used,
    query_set_used,
)
from workbench.experiments.store import ExperimentStore, open_experiment_store
from workbench.inputs import json_depth, validate_collection_name, validate_model_id
from workbench.redact import is_local_path, public_name
from workbench.rerankers.factory import on_backend
from workbench.types import SearchPlan
from workbench.vocab import DEFAULT_RERANKER_CHOICE, MAX_EXPORT_BYTES, MAX_JSON_DEPTH

EXPORT_FORMAT = "rerank-workbench.experiment"
EXPORT_VERSION = 1
Progress = Callable[[int, int], None]


@dataclasses.dataclass(frozen=True)
class Keeping:
    """How an evaluation is kept: its name, tags and notes, the kept query set it ran (None: the judged queries
    as given), and whether it is kept at all (`save`; not saved, the experiment is made and returned)."""

    name: str = ""
    tags: tuple[str, ...] = ()
    notes: str = ""
    query_set: str | None = None
    save: bool = True
    # an experiment kept before that this one repeats exactly is returned instead of a copy (a button clicked again);
    # off, each run is kept (`experiments rerun` keeps each, to compare with the first)
    link_identical: bool = False


def keep_report(
    engine: Engine,
    report: EvaluationReport,
    plan: SearchPlan,
    dataset: Dataset,
    *,
    source: str,
    keeping: Keeping = Keeping(),
) -> Experiment:
    """An evaluation's report kept as an experiment as `keeping` says (`source`: where its judgments came from): the
    plan as it ran (its reranker named by the model that ran), the queries and judgments it used as they were, the
    runs, and this machine's manifest (the one kept before, when `keeping.link_identical` and this one repeats it)."""
    queries = {o.query_id: o.query for o in report.per_query} or dict(dataset.queries)
    queries = {qid: dataset.queries.get(qid, text) for qid, text in queries.items()}
    collection = plan.collection or engine.settings.collection
    reranker = engine.reranker_of(plan)
    try:
        info = engine.collection_info(collection)
        chunks: int | None = info.count if info.count >= 0 else None
        first_stage: str | None = " · ".join(
            p for p in (f"{info.store} {public_name(info.location)}", info.written_by) if p
        )
    except Exception:  # informative only: a store that cannot say leaves them out
        chunks = first_stage = None
    mapping = engine.settings.collections.get(collection)
    experiment = Experiment(
        name=keeping.name,
        tags=list(keeping.tags),
        notes=keeping.notes,
        plan=plan.with_(collection=collection, reranker=report.reranker_model),
        query_set=query_set_used(keeping.query_set or dataset.name, queries),
        judgments=judgments_used(Dataset(dataset.name, queries, report.qrels or dataset.qrels), source),
        manifest=Manifest.here(
            embedder=report.embedding_model,
            reranker_fingerprint=getattr(reranker, "fingerprint", None) if reranker else None,
            reranker_backend=reranker.backend if reranker else None,
            collection_chunks=chunks,
            source=first_stage,
            source_mapping=checksum(mapping) if mapping else None,
        ),
        report=report.model_dump(mode="json"),
        queries=queries,
        qrels={qid: report.qrels[qid] for qid in queries if qid in report.qrels},
        before_run=report.before_run,
        after_run=report.after_run,
    )
    if not keeping.save:
        return experiment
    store = open_experiment_store(engine.settings)
    return (kept_before(store, experiment) if keeping.link_identical else None) or store.save(experiment)


def kept_before(store: ExperimentStore, experiment: Experiment) -> Experiment | None:
    """The experiment kept before that `experiment` repeats exactly (the same plan, name, queries, judgments,
    reranker files and backend, and the same runs), so an unchanged evaluation run again keeps nothing new; None
    when it is new."""
    for earlier in store.list(configuration=experiment.plan.key, limit=20):
        if (
            earlier.plan == experiment.plan and earlier.name == experiment.name
            and earlier.query_set.checksum == experiment.query_set.checksum
            and earlier.judgments.checksum == experiment.judgments.checksum
            and earlier.manifest.reranker_fingerprint == experiment.manifest.reranker_fingerprint
            and earlier.manifest.reranker_backend == experiment.manifest.reranker_backend
            and earlier.before_run == experiment.before_run and earlier.after_run == experiment.after_run
        ):  # fmt: skip
            return earlier
    return None


def keep_tuning(
    engine: Engine, run: TuningRun, dataset: Dataset, *, source: str, tags: Sequence[str] = ()
) -> Experiment | None:
    """A tuning run's recommended cell kept as an experiment (its top n the one recommended), named after the cell
    and noting the run's sentence: what `workbench gate --candidate-experiment ID` takes as its candidate. None when
    no cell was recommended."""
    if run.recommended is None:
        return None
    plan = run.plans[run.recommended]
    if run.recommended_top_n:
        plan = plan.with_(top_n=min(run.recommended_top_n, plan.k))
    return keep_report(
        engine, run.reports[run.recommended], plan, dataset, source=source,
        keeping=Keeping(name=f"tune: {run.recommended}", tags=("tune", *tags), notes=run.words),
    )  # fmt: skip


def run_experiment(
    engine: Engine,
    dataset: Dataset,
    plan: SearchPlan,
    *,
    source: str,
    keeping: Keeping = Keeping(),
    max_queries: int | None = None,
    options: EvaluationOptions = EvaluationOptions(),
    listeners: Listeners = Listeners(),
) -> Experiment:
    """Evaluate `plan` on the dataset's judged queries (`evaluate_dataset`, as `options` say) and keep it as
    `keeping` says (a kept query set's run: its dataset narrowed by `QuerySet.judged`, its name in `keeping`)."""
    report = evaluate_dataset(engine, dataset, plan, max_queries=max_queries, options=options, listeners=listeners)
    return keep_report(engine, report, plan, dataset, source=source, keeping=keeping)


def run_again(
    engine: Engine, experiment: Experiment, *, backend: str | None = None, progress: Progress | None = None
) -> Experiment:
    """The experiment's exact plan on its exact queries and judgments, kept as a new experiment named after it;
    with `backend`, its local reranker on that backend (the plan's reranker id then names it: 'model@onnx')."""
    plan = experiment.plan
    model = engine.reranker_id(plan.reranker)
    if backend and model:
        plan = plan.with_(reranker=on_backend(model, backend))
    return run_experiment(
        engine, experiment.dataset(), plan, source=experiment.judgments.source,
        keeping=Keeping(name=experiment.name, tags=tuple(experiment.tags), notes=f"run again from {experiment.id}"),
        listeners=Listeners(progress=progress),
    )  # fmt: skip


def reproduced(first: Experiment, second: Experiment) -> tuple[bool, list[str]]:
    """Whether two experiments' figures agree to the last digit, and what differs in their inputs (when the
    figures differ and nothing does, the machine or a library version is the cause: their manifests say)."""
    same = first.report.get("before") == second.report.get("before") and first.report.get("after") == second.report.get(
        "after"
    )
    same = same and [o["after"] for o in first.report["per_query"]] == [o["after"] for o in second.report["per_query"]]
    return same, changed_inputs(first, second)


def diff_experiments(first: Experiment, second: Experiment) -> RunDiff:
    """The second experiment against the first over the queries both ran, both scored on the second's judgments
    (the newer state; a warning says when the two differ)."""
    shared = {qid: text for qid, text in second.queries.items() if qid in first.queries}
    if not shared:
        raise InputError(
            f"Experiments {first.id} and {second.id} ran no query in common: compare experiments of the same query set."
        )
    diff = compare_run_pair(
        first.after_run,
        second.after_run,
        shared,
        top_n=min(first.plan.top_n, second.plan.top_n),
        k=min(first.plan.k, second.plan.k),
        qrels=second.qrels,
        names=(first.title, second.title),
    )
    if first.judgments.checksum != second.judgments.checksum:
        diff.warnings.append(
            f"The two experiments were scored on different judgments ({first.judgments.checksum} and "
            f"{second.judgments.checksum}); both are scored here on the second's."
        )
    backends = (first.manifest.reranker_backend, second.manifest.reranker_backend)
    if all(backends) and backends[0] != backends[1]:
        diff.warnings.append(
            f"The experiments' rerankers ran on different backends ({backends[0]} and {backends[1]}): scores, and so "
            "figures, move with the backend as well as the model."
        )
    if first.plan.collection != second.plan.collection:
        diff.warnings.append(
            f"The experiments searched different collections ('{first.plan.collection}' and "
            f"'{second.plan.collection}')."
        )
    return diff


def compare_configurations(
    engine: Engine,
    query_set: QuerySet,
    first: SearchPlan,
    second: SearchPlan,
    *,
    qrels: Qrels | None = None,
    progress: Progress | None = None,
) -> RunDiff:
    """Two configurations run now over a query set, the second against the first: judgment-free figures always
    (how much the reranked top n changes), judged ones for the queries `qrels` judges."""
    runs: tuple[Run, Run] = ({}, {})
    count = len(query_set.queries)
    for side, plan in enumerate((first, second)):  # a reranker service is asked concurrently (search_all)

        def advanced(done: int, _: int, side: int = side) -> None:
            if progress:
                progress(side * count + done, count * 2)

        results = search_all(engine, plan, [item.text for item in query_set.queries], advanced)
        for item, result in zip(query_set.queries, results, strict=True):
            runs[side][item.id] = document_runs(result.candidates)[1]
    if not any(run.get(item.id) for run in runs for item in query_set.queries):
        raise InputError(
            f"Both configurations found nothing for every one of the {count} queries: there is no ranking to "
            "compare (is the collection, or the candidates file, the one the queries are about?)."
        )
    return compare_run_pair(
        runs[0], runs[1], query_set.texts, top_n=min(first.top_n, second.top_n), k=min(first.k, second.k),
        qrels=qrels, names=(first.key, second.key), weights=query_set.weights,
    )  # fmt: skip


def export_experiment(experiment: Experiment) -> str:
    """One experiment as one JSON file another workbench imports."""
    return json.dumps(
        {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "experiment": experiment.shared().model_dump(mode="json")},
        ensure_ascii=False,
    )


def check_imported(experiment: Experiment) -> None:
    """What an experiment from outside must hold beyond its shape, as one made here would: checksums that match
    its queries and judgments, a plan the API would run (a collection name, a reranker named by model id, never a
    URL or a server path), and a date that has passed."""
    check_checksums(experiment)
    plan = experiment.plan
    if plan.collection is not None:
        validate_collection_name(plan.collection)
    if plan.reranks and plan.reranker != DEFAULT_RERANKER_CHOICE:
        try:
            validate_model_id(plan.reranker)
        except InputError as exc:
            raise InputError(f"Not an experiment this workbench runs: plan.reranker: {exc}") from None
    if experiment.created_at > datetime.now(UTC) + timedelta(days=1):
        raise InputError(f"Not an experiment file: it is dated {experiment.created_at:%Y-%m-%d}, in the future.")


def import_experiment(engine: Engine, raw: bytes | str) -> Experiment:
    """An exported experiment kept here under its own id; importing the same file twice keeps it once, and a
    different experiment with an id already taken is refused."""
    if len(raw) > MAX_EXPORT_BYTES:
        raise InputError(f"An experiment file is at most {MAX_EXPORT_BYTES // 1_000_000} MB; this one is larger.")
    try:
        document: Any = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"Not an experiment file: it is not JSON ({str(exc)[:80]}).") from None
    if json_depth(document) > MAX_JSON_DEPTH:
        raise InputError(f"Not an experiment file: it nests deeper than {MAX_JSON_DEPTH} levels.")
    if not isinstance(document, dict) or document.get("format") != EXPORT_FORMAT:
        raise InputError(f'Not an experiment file: it has no "format": "{EXPORT_FORMAT}".')
    if document.get("version") != EXPORT_VERSION:
        raise InputError(
            f"This workbench reads experiment files of version {EXPORT_VERSION}; got {document.get('version')!r}."
        )
    try:
        experiment = Experiment.model_validate(document.get("experiment"))
        if experiment.plan.reranks and is_local_path(experiment.plan.reranker or ""):
            experiment = experiment.shared()  # an export of an earlier version: the folder by its name
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ())) or "experiment"
        message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
        raise InputError(f"Not an experiment file: {where}: {message[:200]}") from None
    check_imported(experiment)
    store = open_experiment_store(engine.settings)
    try:
        kept = store.get(experiment.id)
    except LookupError:
        return store.save(experiment)
    if kept.model_dump() != experiment.model_dump():
        raise InputError(f"An experiment with the id {experiment.id} is kept here already, and it is another one.")
    return kept

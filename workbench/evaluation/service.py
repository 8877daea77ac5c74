"""The one evaluation service the Evaluate page and `workbench eval` both call.

Every argument is checked before any work starts (a bad depth list or top n > k fails in milliseconds, not
after an hour of reranking); the collection is ingested from the dataset's corpus when it is missing; and
judgments that do not belong to the collection are refused (none of their documents is in it) or flagged
(some are missing), so a run can never quietly report 0.0 for the wrong collection.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

from sklearn.metrics import roc_auc_score

from workbench.engine import Engine
from workbench.errors import CollectionNotFoundError, InputError
from workbench.evaluation.depth import depth_curve, top_n_points
from workbench.evaluation.diagnosis import diagnose
from workbench.evaluation.io import Dataset, Run
from workbench.evaluation.recommend import recommend, with_top_n
from workbench.evaluation.report import EvaluationReport
from workbench.evaluation.runner import compare_runs, run_evaluation
from workbench.evaluation.sanity import RunCheck, cut_check, result_checks
from workbench.evaluation.sequential import SequentialPlan
from workbench.evaluation.served import add_served
from workbench.evaluation.settling import settle_state
from workbench.evaluation.significance import difference
from workbench.evaluation.skip_policy import SkipFigures
from workbench.ingest_status import ingest_statuses
from workbench.inputs import validate_depths, validate_max_queries, whole_number
from workbench.rerankers.served.chat_pointwise import ChatPointwiseReranker
from workbench.rerankers.served.listwise import ListwiseReranker
from workbench.rerankers.served.verdicts import served_verdict
from workbench.types import IngestStatus, SearchPlan, SearchResult
from workbench.vocab import ORDER_SCALE, PRIMARY_METRIC

Progress = Callable[[int, int], None]
_SAMPLE = 500


def check_plan(
    k: Any, top_n: Any, max_queries: Any = None, depth: Sequence[Any] = ()
) -> tuple[int, int, int | None, list[int]]:
    """k, top n (≤ k), max queries (≥ 1 or None) and depth values (each 1..k), checked; InputError otherwise."""
    k, top_n = validate_depths(k, top_n)
    max_queries = validate_max_queries(max_queries)
    ks = sorted({whole_number("depth", d) for d in depth})
    bad = [d for d in ks if not 1 <= d <= k]
    if bad:
        raise InputError(f"Depth values must be between 1 and k ({k}); got {', '.join(map(str, bad))}.")
    return k, top_n, max_queries, ks


def judged_coverage(engine: Engine, dataset: Dataset, collection: str) -> tuple[int, int]:
    """How many of (a sample of) the judged documents the collection holds, and how many were checked.
    A document is there when its first chunk (`<document id>::0`) is. (0, 0) when the store cannot tell: a store
    object, or an attached collection (another tool's ids; a candidates file names what it lacks itself)."""
    judged = sorted({doc for judgments in dataset.qrels.values() for doc, grade in judgments.items() if grade > 0})
    sample = judged[:_SAMPLE]
    if not sample:
        return 0, 0
    store = engine.registry.get(collection)
    if store.info().read_only:
        return 0, 0
    if store.embeds_documents and not store.content_hashes([f"{sample[0]}::0"]) and store.count() < 0:
        return 0, 0
    found = store.content_hashes([f"{doc}::0" for doc in sample])
    return len(found), len(sample)


def _skip_figures(policy: EvaluationReport, always: EvaluationReport, gap: float, reranked: int) -> SkipFigures:
    """A skip policy's report against the same queries always reranked (the plan without its policy)."""
    ids = [o.query_id for o in policy.per_query]
    by_id = {o.query_id: o for o in always.per_query}
    mine = [o.after[PRIMARY_METRIC] for o in policy.per_query]
    theirs = [by_id[q].after[PRIMARY_METRIC] for q in ids]
    return SkipFigures(
        gap=gap, queries=len(ids), reranked=reranked, ndcg_policy=policy.after[PRIMARY_METRIC],
        ndcg_always=always.after[PRIMARY_METRIC], ndcg_first_stage=policy.before[PRIMARY_METRIC],
        vs_always=difference(theirs, mine), rerank_ms_p50_policy=policy.latency_p50.get("rerank"),
        rerank_ms_p50_always=always.latency_p50.get("rerank"),
    )  # fmt: skip


def partial_collection(engine: Engine, collection: str) -> IngestStatus | None:
    """What an ingest into `collection` that has not finished (interrupted, or running in another process) left:
    None when the collection is whole."""
    return ingest_statuses(engine.settings.data_dir).get((engine.registry.config(collection).where, collection))


def prepare_collection(
    engine: Engine,
    dataset: Dataset,
    collection: str,
    *,
    ingest_missing: bool = True,
    ingest_progress: Progress | None = None,
    ingest_announce: Callable[[str], None] | None = None,
) -> list[str]:
    """The collection ready for the dataset's judgments: ingested from the dataset's corpus when it is missing or
    empty (`ingest_announce` hears the ingest's estimate); InputError when none of the judged documents is in it;
    warnings when some are missing or queries have no text."""
    partial = partial_collection(engine, collection)
    try:
        empty = engine.collection_info(collection).count == 0  # an ingest cut off before its first batch
    except CollectionNotFoundError:
        if not ingest_missing or dataset.corpus is None:
            raise
        empty = True
    if empty and ingest_missing and dataset.corpus is not None:
        engine.ingest(dataset.corpus, collection, progress=ingest_progress, announce=ingest_announce)
    found, checked = judged_coverage(engine, dataset, collection)
    warnings: list[str] = [dataset.note] if dataset.note else []
    if partial is not None and not (empty and ingest_missing and dataset.corpus is not None):  # else ingested now
        if not engine.settings.allow_partial:
            raise InputError(
                f"'{collection}' is partial ({partial.words()}): an evaluation of it would be of part of the corpus. "
                "Run the same ingest again to complete it, or evaluate the part knowingly: --allow-partial on the "
                "command line, WORKBENCH_ALLOW_PARTIAL=1 for the app and the API."
            )
        warnings.append(f"Partial collection: '{collection}' is {partial.words()}; these figures are of that part.")
    if checked and not found:
        example = ", ".join(sorted({d for j in dataset.qrels.values() for d in j})[:3])
        raise InputError(
            f"None of the documents judged in {dataset.name} (e.g. {example}) is in the collection '{collection}': "
            "these judgments belong to another collection. Pick the collection they were made for."
        )
    if checked and found < checked:
        warnings.append(
            f"{checked - found} of {checked} judged documents checked are not in '{collection}': their queries "
            "can score lower than they should."
        )
    if dataset.unmatched_judged:
        warnings.append(f"{len(dataset.unmatched_judged)} judged queries have no text and were left out.")
    return warnings


def _check_cut(engine: Engine, plan: SearchPlan, report: EvaluationReport) -> None:
    """The **cut** run check from the diagnosis (it read the candidates' texts): while it fires, the verdict says
    the reranker did not run as intended, as the score checks do (evaluation/sanity.py)."""
    verdict, diagnosis = report.verdict, report.diagnosis
    if verdict is None or diagnosis is None or verdict.not_as_intended:
        return
    reranker = engine.reranker_of(plan)
    check = cut_check([d.relevant_cut_share for d in diagnosis.per_query], getattr(reranker, "max_length", None))
    if check is not None:
        report.verdict = verdict.model_copy(update={"direction": "unknown", "not_as_intended": [check]})


def _served_check(engine: Engine, reranker_id: str | None, queries: int) -> RunCheck | None:
    """The **served** run check: the reranker is a served copy the last parity audit found unfaithful to its
    local reference (None when it is not, or was never audited)."""
    kept = served_verdict(engine.settings.exports_dir, reranker_id) if reranker_id else None
    if kept is None or kept.faithful:
        return None
    return RunCheck(name="served", queries=queries, checked=queries, words=kept.words())


def _check_served(engine: Engine, plan: SearchPlan, report: EvaluationReport) -> None:
    """An evaluation's **served** check: while it fires, no verdict about the model."""
    verdict = report.verdict
    if verdict is None or verdict.not_as_intended:
        return
    check = _served_check(engine, engine.reranker_id(plan.reranker), report.queries)
    if check is not None:
        report.verdict = verdict.model_copy(update={"direction": "unknown", "not_as_intended": [check]})


def search_checks(engine: Engine, result: SearchResult) -> list[RunCheck]:
    """The checks one search fails, as Explore's and Compare's banners say them: its scores constant, tied or
    squashed (`sanity.result_checks`), or its reranker a served copy the parity audit found unfaithful."""
    checks = result_checks(result)
    served = _served_check(engine, result.reranker_model, 1) if result.reranker_model else None
    return checks + ([served] if served is not None else [])


MIN_PAIRS_FOR_AUC = 20  # judged documents of each kind before the scores' separation is worth a word


def scores_without_relevance(report: EvaluationReport) -> str | None:
    """A warning when the reranker's scores do not measurably separate the judged relevant documents it scored
    from the judged others (AUC's 95 % interval, Hanley & McNeil, includes 0.5): a verdict then rests on scores that
    carry no relevance these judgments see (a served model answering noise, a wrong model behind an id). None when
    they do, or when too few judged documents of either kind were scored, or the reranker gives an order only."""
    if not report.reranker_model or report.score_scale == ORDER_SCALE:
        return None
    relevant, other = [], []
    for query, scored in report.after_run.items():
        grades = report.qrels.get(query, {})
        for document, score in scored.items():
            if document in grades:
                (relevant if grades[document] > 0 else other).append(score)
    if len(relevant) < MIN_PAIRS_FOR_AUC or len(other) < MIN_PAIRS_FOR_AUC:
        return None
    auc = float(roc_auc_score([1] * len(relevant) + [0] * len(other), relevant + other))
    q1, q2 = auc / (2 - auc), 2 * auc**2 / (1 + auc)
    n1, n2 = len(relevant), len(other)
    error = math.sqrt(max(auc * (1 - auc) + (n1 - 1) * (q1 - auc**2) + (n2 - 1) * (q2 - auc**2), 0.0) / (n1 * n2))
    low, high = auc - 1.96 * error, auc + 1.96 * error
    if low > 0.5:
        return None
    return (
        f"The reranker's scores do not measurably separate the {n1} judged relevant documents it scored from the "
        f"{n2} other judged ones (AUC {auc:.2f}, 95 % CI {low:.2f} to {high:.2f}): a verdict that it helps or hurts "
        "rests on scores that carry no relevance these judgments can see (a served model answering noise, another "
        "model behind the id?)."
    )


@dataclasses.dataclass(frozen=True)
class Listeners:
    """Who hears an evaluation as it runs: `progress` over the queries, `ingest_progress` and `ingest_announce`
    (its estimate) over an ingest it starts, and `phase(words)` at each step after the queries, so a long run
    never sits silent."""

    progress: Progress | None = None
    ingest_progress: Progress | None = None
    ingest_announce: Callable[[str], None] | None = None
    phase: Callable[[str], None] | None = None

    def say(self, words: str) -> None:
        """Tell `phase` the step now running (nothing when none listens)."""
        if self.phase is not None:
            self.phase(words)


@dataclasses.dataclass(frozen=True)
class EvaluationOptions:
    """What an evaluation does beyond running its plan on its queries: ingest the dataset's corpus when the
    collection is missing (`ingest_missing`), take pair scores from the caches (`use_cache`; off, every search does
    its real work and its time is measured), stop when the verdict is settled (`sequential`), recommend a k and top
    n within `latency_budget_ms`, weigh the run as served under `rerank_budget_ms` (every search then timed, no
    cache, `serve_concurrency` at once), and weigh an `outside_run` (named `outside_name`) against the reranked
    lists."""

    ingest_missing: bool = True
    use_cache: bool = True
    sequential: SequentialPlan | None = None
    latency_budget_ms: float | None = None
    rerank_budget_ms: float | None = None
    serve_concurrency: int = 1  # under a rerank budget, searches served (and timed) at once: budgets bite under load
    outside_run: Run | None = None
    outside_name: str = "outside run"

    @property
    def cached(self) -> bool:
        """Whether pair scores may come from the caches: not when asked not to, nor under a rerank budget (every
        search then does its real work, so its time is what was served)."""
        return self.use_cache and self.rerank_budget_ms is None

    @property
    def serving_workers(self) -> int | None:
        """Searches run at once: the serving concurrency under a rerank budget, else None (the reranker's own:
        `parallel.concurrency_for`)."""
        return self.serve_concurrency if self.rerank_budget_ms is not None else None


def evaluate_dataset(
    engine: Engine,
    dataset: Dataset,
    plan: SearchPlan,
    *,
    max_queries: int | None = None,
    depth: Sequence[int] = (),
    options: EvaluationOptions = EvaluationOptions(),
    listeners: Listeners = Listeners(),
) -> EvaluationReport:
    """Judged queries answered as `plan` says: metrics before and after reranking and significance
    (`run_queries`), then each later step on the report: what grading could still change (`add_judging_state`),
    the signs behind each query's change and the run checks that need the texts (`add_signs`), the depth curve and
    the k and top n to recommend (`add_depth_curve`), the skip policy against always reranking
    (`add_skip_figures`), the outside run (`add_outside_run`) and the run as served under a rerank budget
    (`served.add_served`)."""
    _, _, max_queries, ks = check_plan(plan.k, plan.top_n, max_queries, depth)
    report = run_queries(engine, dataset, plan, max_queries=max_queries, options=options, listeners=listeners)
    add_judging_state(report, listeners)
    add_signs(engine, dataset, plan, report, listeners)
    add_depth_curve(engine, dataset, plan, report, ks, options.latency_budget_ms, listeners)
    add_skip_figures(engine, dataset, plan, report, max_queries, options.cached, listeners)
    add_outside_run(dataset, plan, report, options)
    add_served(report, options.rerank_budget_ms, options.serve_concurrency)
    return report


def run_queries(
    engine: Engine,
    dataset: Dataset,
    plan: SearchPlan,
    *,
    max_queries: int | None,
    options: EvaluationOptions = EvaluationOptions(),
    listeners: Listeners = Listeners(),
) -> EvaluationReport:
    """The collection readied (`prepare_collection`) and the judged queries run (in a seeded order until settled,
    with `options.sequential`): the report, with warnings about anything that makes its figures doubtful (an LLM's
    answers not read as given, nothing in the top n judged, scores that do not separate relevant from not)."""
    reranker = engine.reranker_of(plan)  # a missing model fails now, not after the ingest
    warnings = prepare_collection(
        engine, dataset, plan.collection or engine.settings.collection, ingest_missing=options.ingest_missing,
        ingest_progress=listeners.ingest_progress, ingest_announce=listeners.ingest_announce,
    )  # fmt: skip
    if options.sequential is not None and plan.skip_gap is not None:
        raise InputError(
            "Stopping when settled and a skip policy each change which queries are weighed: choose one of them."
        )
    llm_kinds = (ListwiseReranker, ChatPointwiseReranker)  # an LLM's answers: repaired or undecided, counted
    asked_before = reranker.stats if isinstance(reranker, llm_kinds) else None
    report = run_evaluation(
        engine, dataset, plan, progress=listeners.progress, max_queries=max_queries, use_cache=options.cached,
        sequential=options.sequential, workers=options.serving_workers,
    )  # fmt: skip
    if isinstance(reranker, llm_kinds) and asked_before is not None:  # how often its answers were not read as given
        said = reranker.stats.since(asked_before).warning()  # type: ignore[arg-type]  # the same kind's stats
        warnings += [said] if said else []
    if report.judged_looked_at and report.unjudged_after == report.judged_looked_at:
        warnings.append(
            f"None of the {report.judged_looked_at} documents in the top {plan.top_n} is judged: the metrics say "
            "nothing about this collection."
        )
    blind = scores_without_relevance(report)
    report.warnings = warnings + ([blind] if blind else [])
    return report


def add_judging_state(report: EvaluationReport, listeners: Listeners = Listeners()) -> None:
    """Whether grading the unjudged documents could still change the verdict (`verdict.grading_settles`)."""
    if report.verdict is not None and (report.unjudged_before or report.unjudged_after):
        listeners.say("what grading the unjudged documents could still change")
        state = settle_state(report)
        if state is not None:
            report.verdict.grading_settles = state.settled


def add_signs(
    engine: Engine, dataset: Dataset, plan: SearchPlan, report: EvaluationReport, listeners: Listeners = Listeners()
) -> None:
    """A reranked report's signs behind each query's change (`diagnosis`), then the run checks that read them:
    relevant text cut off by the model's length (**cut**) and a served copy found unfaithful (**served**)."""
    if not report.reranker_model:
        return
    listeners.say(f"the signs behind each query's change ({report.queries} queries)")
    report.diagnosis = diagnose(engine, dataset, plan, {o.query_id: o.delta for o in report.per_query})
    _check_cut(engine, plan, report)
    _check_served(engine, plan, report)


def add_depth_curve(
    engine: Engine,
    dataset: Dataset,
    plan: SearchPlan,
    report: EvaluationReport,
    ks: Sequence[int],
    latency_budget_ms: float | None = None,
    listeners: Listeners = Listeners(),
) -> None:
    """The depth curve at `ks` (each depth timed) and, reranking, the k and top n to recommend (p95 within
    `latency_budget_ms`; top n measured on the lists at the advised k, as `tune` measures its cell)."""
    if not ks:
        return
    listeners.say(f"the depth curve: reranking the first {', '.join(map(str, ks))} candidates, each timed")
    report.depth = depth_curve(engine, report, dataset, plan, ks)
    if report.reranker_model:
        helps = report.verdict is not None and report.verdict.direction == "helps"
        advice = recommend(report.depth, (), latency_budget_ms, reranking_measured=helps)
        if advice is not None:
            advice = with_top_n(advice, top_n_points(report, k=advice.k))
        report.recommendation = advice


def add_skip_figures(
    engine: Engine,
    dataset: Dataset,
    plan: SearchPlan,
    report: EvaluationReport,
    max_queries: int | None,
    use_cache: bool = True,
    listeners: Listeners = Listeners(),
) -> None:
    """Under a skip policy: the same queries always reranked, and the policy's figures against them."""
    if plan.skip_gap is None or not report.reranker_model or report.reranked_queries is None:
        return
    listeners.say("the same queries always reranked, against the skip policy")
    always = run_evaluation(engine, dataset, plan.with_(skip_gap=None), max_queries=max_queries, use_cache=use_cache)
    report.skip = _skip_figures(report, always, plan.skip_gap, report.reranked_queries)


def add_outside_run(dataset: Dataset, plan: SearchPlan, report: EvaluationReport, options: EvaluationOptions) -> None:
    """The outside run (another system's lists for the same queries) weighed against the reranked lists."""
    if options.outside_run is not None:
        report.outside = compare_runs(
            dataset, options.outside_run, report.after_run, plan.k, (options.outside_name, "reranked")
        )

"""The ship gate: a candidate configuration against a baseline (its own first stage, a kept experiment, or another
configuration run now) on judged queries, decided as CI needs it.

- **ship** (exit 0): the candidate is better, p < 0.05 and the 95 % interval above zero, judged@10 at least half,
  and every budget given is kept;
- **no-ship** (exit 1): the candidate is measurably worse (p < 0.05, the interval below zero), or a budget is broken;
- **inconclusive** (exit 3): anything else: no measurable difference, too few judgments to tell, a reranker that
  did not run as intended (its scores constant, tied, in the first stage's order or squashed twice: the reason says),
  or a decision that rests on an LLM judge's grades beyond what the judge can resolve (a judge of the candidate's
  own lineage, or a change within its resolution floor: evaluation/judge_limits.py).

The decision is written as JSON and as a JUnit XML file (one test case per check) that CI systems read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from xml.etree import ElementTree

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation.io import Dataset, Qrels, Run
from workbench.evaluation.judge_limits import JudgeLimits, judge_limits
from workbench.evaluation.report import ServedFigures
from workbench.evaluation.sanity import not_as_intended
from workbench.evaluation.sequential import SequentialPlan, SequentialStop
from workbench.evaluation.service import EvaluationOptions, Listeners
from workbench.experiments.diff import RunDiff, compare_run_pair
from workbench.experiments.query_sets import QuerySet
from workbench.experiments.record import Experiment
from workbench.experiments.service import Keeping, Progress, diff_experiments, run_experiment
from workbench.experiments.store import open_experiment_store
from workbench.inputs import validate_rerank_budget_ms, validate_serving
from workbench.types import SearchPlan
from workbench.vocab import GATE_EXIT_CODES, NO_RERANKER, GateOutcome

RAN_AS_INTENDED = "ran as intended"  # the check a candidate whose reranker did not run as intended fails
JUDGE_RESOLVES = "judge can resolve it"  # the check a decision resting on an LLM judge's limits fails


class Budgets(BaseModel):
    """Limits the candidate must keep, whatever its quality: the 95th percentile of a search's total time over
    the queries that ran a model, and the documents the reranker scores per query (what hosted rerankers bill);
    and the rerank budget it is served under (`rerank_budget_ms`): the candidate is then judged as a fail-open
    service serves it, each query whose reranking took longer at its first-stage order (evaluation/served.py)."""

    model_config = ConfigDict(extra="forbid")  # a misspelt budget is refused, never silently not checked

    max_latency_ms: float | None = Field(None, gt=0)
    max_rerank_pairs: int | None = Field(None, ge=0)
    rerank_budget_ms: float | None = None
    serve_concurrency: int = Field(1, description="with rerank_budget_ms: searches served at once while timed")

    @field_validator("rerank_budget_ms", mode="before")
    @classmethod
    def _rerank_budget(cls, value: object) -> float | None:
        return None if value is None else validate_rerank_budget_ms(value)

    @model_validator(mode="before")
    @classmethod
    def _serving(cls, data: object) -> object:
        """A serving concurrency, checked with the budget it goes with (absent or null: 1)."""
        if isinstance(data, dict) and "serve_concurrency" in data:
            load = validate_serving(data.get("rerank_budget_ms"), data["serve_concurrency"])[1]
            data = {**data, "serve_concurrency": load}
        return data


class Check(BaseModel):
    """One thing the gate checked: its name, whether it passed, and why."""

    name: str
    passed: bool
    detail: str


class GateDecision(BaseModel):
    """What the gate decided, why, and on what figures."""

    outcome: GateOutcome
    exit_code: int
    reason: str
    candidate: str
    baseline: str
    candidate_experiment: str
    baseline_experiment: str | None = None
    checks: list[Check]
    comparison: RunDiff | None = None  # None: decided on people's blind preferences (`preferences`), not grades
    preferences: dict[str, Any] | None = None  # the preference verdict it was decided on (workbench.preferences)
    stopping: str = ""  # with --stop-when-settled: how many queries decided it and by which rule

    def to_junit(self) -> str:
        """The decision as a JUnit XML document: a test suite `workbench gate` with one case per check; a broken
        check is a failure, an inconclusive quality check is skipped."""
        suite = ElementTree.Element("testsuite", name="workbench gate")
        properties = ElementTree.SubElement(suite, "properties")
        for name, value in (("outcome", self.outcome), ("candidate", self.candidate), ("baseline", self.baseline)):
            ElementTree.SubElement(properties, "property", name=name, value=value)
        failures = skipped = 0
        for check in self.checks:
            case = ElementTree.SubElement(suite, "testcase", classname="workbench.gate", name=check.name)
            skippable = ("quality", RAN_AS_INTENDED, JUDGE_RESOLVES)
            if not check.passed and check.name in skippable and self.outcome == "inconclusive":
                ElementTree.SubElement(case, "skipped", message=check.detail)
                skipped += 1
            elif not check.passed:
                ElementTree.SubElement(case, "failure", message=check.detail).text = check.detail
                failures += 1
            ElementTree.SubElement(case, "system-out").text = check.detail
        suite.set("tests", str(len(self.checks)))
        suite.set("failures", str(failures))
        suite.set("skipped", str(skipped))
        suite.set("errors", "0")
        ElementTree.indent(suite)
        return '<?xml version="1.0" encoding="utf-8"?>\n' + ElementTree.tostring(suite, encoding="unicode") + "\n"


def _quality(diff: RunDiff) -> tuple[GateOutcome, Check]:
    direction = diff.direction
    if direction == "helps":
        return "ship", Check(name="quality", passed=True, detail=diff.words())
    if direction == "hurts":
        return "no-ship", Check(name="quality", passed=False, detail=diff.words())
    return "inconclusive", Check(name="quality", passed=False, detail=diff.words())


def _budget(name: str, measured: float, limit: float, what: str, unit: str = "") -> Check:
    """A budget check: `what` (the measured figure in words) within the limit or over it."""
    kept = measured <= limit
    detail = f"{what} {'within' if kept else 'over'} the budget of {limit:g}{unit}"
    return Check(name=name, passed=kept, detail=detail)


def _budget_checks(candidate: Experiment, budgets: Budgets) -> list[Check]:
    checks = []
    if budgets.max_latency_ms is not None:
        p95 = candidate.report.get("latency_p95", {}).get("total")
        if p95 is None:
            checks.append(Check(name="latency", passed=False, detail="No search of the run was timed (all cached)."))
        else:
            checks.append(_budget("latency", p95, budgets.max_latency_ms, f"p95 total {p95:.0f} ms", " ms"))
    if budgets.max_rerank_pairs is not None:
        pairs = candidate.plan.k if candidate.plan.reranks else 0
        checks.append(_budget("cost", pairs, budgets.max_rerank_pairs, f"{pairs} documents reranked per query"))
    return checks


def decide(
    candidate: Experiment,
    comparison: RunDiff,
    baseline: str,
    budgets: Budgets,
    baseline_id: str | None = None,
    judge: JudgeLimits | None = None,
) -> GateDecision:
    """The decision from the comparison (candidate as run b), the budgets and, where the comparison rests on an
    LLM judge's grades, the judge's limits."""
    outcome, quality = _quality(comparison)
    checks = [quality, *_budget_checks(candidate, budgets)]
    broken = [c for c in checks[1:] if not c.passed]
    checks += _served_check(candidate)
    if broken:
        outcome = "no-ship"
    reason = "; ".join(c.detail for c in broken) if broken else quality.detail
    verdict = candidate.verdict
    if verdict is not None and verdict.not_as_intended and not broken:  # a verdict about how it ran, not the model
        ran = Check(name=RAN_AS_INTENDED, passed=False, detail=not_as_intended(verdict.not_as_intended))
        checks.insert(0, ran)
        outcome, reason = "inconclusive", ran.detail
    elif judge is not None and not judge.holds and not broken:
        resolves = Check(name=JUDGE_RESOLVES, passed=False, detail=f"{judge.reason} {judge.words()}")
        checks.insert(0, resolves)
        outcome, reason = "inconclusive", judge.reason
    elif judge is not None:
        checks.append(Check(name=JUDGE_RESOLVES, passed=True, detail=judge.words()))
    return GateDecision(
        outcome=outcome, exit_code=GATE_EXIT_CODES[outcome], reason=reason, candidate=_named(candidate),
        baseline=baseline, candidate_experiment=candidate.id, baseline_experiment=baseline_id, checks=checks,
        comparison=comparison,
    )  # fmt: skip


def _named(run: Experiment) -> str:
    """An experiment's configuration with the backend its reranker ran on: a verdict holds for that backend."""
    backend = run.manifest.reranker_backend
    return f"{run.plan.key} (reranker on {backend})" if backend else run.plan.key


def run_gate(
    engine: Engine,
    dataset: Dataset,
    candidate: SearchPlan,
    *,
    source: str,
    baseline: SearchPlan | str | None = None,
    budgets: Budgets | None = None,
    query_set: QuerySet | None = None,
    max_queries: int | None = None,
    progress: Progress | None = None,
    tags: Sequence[str] = ("gate",),
    sequential: SequentialPlan | None = None,
) -> GateDecision:
    """Run the candidate (kept as an experiment) and decide against the baseline: None for the candidate's own
    first stage, an experiment's id, or another plan (run now, and kept too). With `sequential` the candidate's
    queries run in a seeded order until its verdict against its first stage is settled, and another plan runs on
    the queries it took; the decision says how many decided it."""
    decision, stopping = _gate(engine, dataset, candidate, source, baseline, budgets, query_set, max_queries,
                               progress, tags, sequential)  # fmt: skip
    return decision.model_copy(update={"stopping": stopping})


def _gate(
    engine: Engine,
    dataset: Dataset,
    candidate: SearchPlan,
    source: str,
    baseline: SearchPlan | str | None,
    budgets: Budgets | None,
    query_set: QuerySet | None,
    max_queries: int | None,
    progress: Progress | None,
    tags: Sequence[str],
    sequential: SequentialPlan | None,
) -> tuple[GateDecision, str]:
    budgets = budgets or Budgets()
    if baseline is None and not candidate.reranks:
        raise InputError(
            f"The candidate does not rerank ({NO_RERANKER}): against its own first stage there is nothing to decide. "
            "Name a reranker, or a baseline (an experiment or another configuration)."
        )
    kept = open_experiment_store(engine.settings)
    earlier = kept.get(baseline) if isinstance(baseline, str) else None
    options = EvaluationOptions(
        use_cache=budgets.max_latency_ms is None,  # a latency budget is checked on real work
        sequential=sequential, rerank_budget_ms=budgets.rerank_budget_ms, serve_concurrency=budgets.serve_concurrency,
    )  # fmt: skip
    run = run_experiment(
        engine, query_set.judged(dataset) if query_set else dataset, candidate, source=source,
        keeping=Keeping(tags=tuple(tags), query_set=query_set.name if query_set else None), max_queries=max_queries,
        options=options, listeners=Listeners(progress=progress),
    )  # fmt: skip
    run = as_served(run)  # under a rerank budget, the candidate is weighed as it is served
    stopped = run.report.get("sequential")
    stopping = SequentialStop.model_validate(stopped).words() if isinstance(stopped, dict) else ""
    if stopping:  # the baseline is weighed on the queries that decided it, and nothing else
        taken = Dataset(dataset.name, run.queries, {q: dataset.qrels[q] for q in run.queries}, groups=dataset.groups)
        taken.grade_sources = dataset.grade_sources
        dataset, query_set, max_queries = taken, None, None
    if earlier is not None:
        named = f"experiment {earlier.id} ({earlier.title}): {_named(earlier)}"
        comparison = diff_experiments(earlier, run)
        judge = _judge_limits(dataset, earlier.after_run, run, comparison)
        return decide(run, comparison, named, budgets, earlier.id, judge), stopping
    if isinstance(baseline, SearchPlan):
        other = run_experiment(
            engine, query_set.judged(dataset) if query_set else dataset, baseline, source=source,
            keeping=Keeping(tags=tuple(tags), query_set=query_set.name if query_set else None),
            max_queries=max_queries,
        )  # fmt: skip
        comparison = diff_experiments(other, run)
        judge = _judge_limits(dataset, other.after_run, run, comparison)
        return decide(run, comparison, f"configuration {_named(other)}", budgets, other.id, judge), stopping
    first_stage = f"its first stage ({candidate.retrieval} k={candidate.k}, no reranker)"
    comparison = compare_run_pair(
        run.before_run, run.after_run, run.queries, top_n=candidate.top_n, k=candidate.k, qrels=run.qrels,
        names=("first stage", run.plan.key),
    )  # fmt: skip
    judge = _judge_limits(dataset, run.before_run, run, comparison)
    return decide(run, comparison, first_stage, budgets, judge=judge), stopping


def as_served(run: Experiment) -> Experiment:
    """The candidate as a fail-open service serves it under the rerank budget it ran with: each query whose
    reranking took longer than the budget at its first-stage order (`report.served.over_budget`), the rest
    reranked. A run without a budget is returned as it is. (The kept experiment keeps both runs as they ran.)"""
    served = run.report.get("served")
    if not served:
        return run
    over = set(served.get("over_budget") or ())
    after = {q: dict(run.before_run.get(q, {})) if q in over else ranking for q, ranking in run.after_run.items()}
    return run.model_copy(update={"after_run": after})


def _served_check(candidate: Experiment) -> list[Check]:
    """The rerank budget the candidate was weighed under, in words, when it had one."""
    served = candidate.report.get("served")
    if not served:
        return []
    figures = ServedFigures.model_validate(served)
    return [Check(name="as served", passed=True, detail=" ".join(figures.lines()))]


def _judge_limits(
    dataset: Dataset, baseline_run: Run, candidate: Experiment, comparison: RunDiff
) -> JudgeLimits | None:
    """The LLM judge's limits for the comparison, where some of the grades it counts are the judge's."""
    if dataset.grade_sources is None or comparison.change is None or comparison.direction is None:
        return None
    plan = candidate.plan
    model = str(candidate.report.get("reranker_model") or plan.reranker or plan.key)
    qrels = {q: grades for q, grades in candidate.qrels.items() if q in baseline_run and q in candidate.after_run}

    def direction_without_judge(other: Qrels) -> str:
        again = compare_run_pair(
            baseline_run, candidate.after_run, candidate.queries, top_n=plan.top_n, k=plan.k, qrels=other
        )
        return str(again.direction)

    return judge_limits(
        dataset.grade_sources, qrels, baseline_run, candidate.after_run, plan.k, direction=comparison.direction,
        delta=comparison.change.delta, candidate=model,
        direction_without_judge=direction_without_judge,
    )  # fmt: skip

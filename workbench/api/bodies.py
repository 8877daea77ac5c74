"""The bodies the API's routers take for runs on judged queries (a plan's fields, an experiment to run and keep, a
gate), and the work POST /experiments, POST /gate and their jobs share: one module the routers import, never each
other."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from workbench.api.dependencies import RerankBudget
from workbench.engine import Engine
from workbench.errors import InputError, StoreError
from workbench.evaluation.service import Listeners
from workbench.experiments import QuerySet, open_experiment_store
from workbench.experiments.gate import Budgets, GateDecision, run_gate
from workbench.experiments.record import ExperimentSummary
from workbench.experiments.service import Progress
from workbench.inputs import validate_model_id, validate_serving
from workbench.judgments import load_judgments
from workbench.services import evaluations
from workbench.services.demo import DEMO_COLLECTION
from workbench.types import PlanFields, SearchPlan
from workbench.vocab import DEFAULT_RERANKER_CHOICE, MAX_SERVE_CONCURRENCY, NO_RERANKER


class PlanRequest(PlanFields):  # type: ignore[misc,valid-type]
    """A configuration: a search plan's fields (the server's defaults for those left out)."""

    @field_validator("reranker")
    @classmethod
    def _reranker(cls, value: str | None) -> str | None:
        if value is None or value.strip().lower() in {NO_RERANKER, ""}:
            return None
        if value == DEFAULT_RERANKER_CHOICE:
            return value
        try:
            return validate_model_id(value)
        except InputError as exc:
            raise ValueError(str(exc)) from None

    def plan(self, engine: Engine, over: SearchPlan | None = None) -> SearchPlan:
        """The plan these fields make: the server's defaults for those left out, or, `over` another plan (as
        /search's `against` is over the request's own), that plan's."""
        if over is not None:
            return over.with_(**self.model_dump(exclude_unset=True))
        return engine.plan(**self.model_dump())


Judgments = Literal["demo", "collection"]


class JudgedRequest(BaseModel):
    """Whose judged queries, and which of them: the API's side of `services.evaluations.EvaluationRequest`, which
    `ready` turns into one and readies as every front end does."""

    model_config = ConfigDict(extra="forbid")

    judgments: Judgments | None = Field(
        None, description="'demo' (the demo's), or 'collection' (the judgments store's for the plan's collection); "
        "default: the demo's for the demo collection, else the collection's",
    )  # fmt: skip
    query_set: str | None = Field(None, description="a kept query set's name: only its queries")
    max_queries: int | None = Field(None, ge=1)

    def ready(
        self, engine: Engine, plan: SearchPlan, *, query_set: bool = True, served: tuple[float | None, int] = (None, 1)
    ) -> evaluations.ReadyEvaluation:
        """The evaluation request these fields make for `plan`, readied (`ready_evaluation`; without `query_set`,
        the set is left to the gate, which records it), weighed as served under `served`'s rerank budget and
        concurrency when it names a budget. A collection without judgments is refused naming how to get some."""
        collection = plan.collection or engine.settings.collection
        demo = self.judgments == "demo" or (self.judgments is None and collection == DEMO_COLLECTION)
        if not demo:
            engine.collection_info(collection)  # an unknown collection is a 404 naming the ones there are
            if load_judgments(engine.settings, collection) is None:
                raise InputError(
                    f"'{collection}' has no judgments yet: grade results (POST /judgments) or import qrels "
                    "(`workbench judgments import`) first, or evaluate the demo's with judgments 'demo'."
                )
        request = evaluations.EvaluationRequest(  # no depth curve: an API evaluation measures the plan as it is
            demo=demo,
            collection=collection,
            query_set=self.query_set,
            max_queries=self.max_queries,
            depth=(),
            rerank_budget_ms=served[0],
            serve_concurrency=served[1],
        )
        ready = evaluations.ready_evaluation(engine, request, query_set=query_set)
        if demo:  # the demo's judgments on a collection that may not be there (checked above otherwise): a 404
            engine.collection_info(ready.collection)
        return ready

    def kept_query_set(self, engine: Engine) -> QuerySet | None:
        """The kept query set named, or None."""
        return open_experiment_store(engine.settings).query_set(self.query_set) if self.query_set else None


class ExperimentRequest(JudgedRequest):
    """An evaluation to run now and keep: the configuration, whose judgments, which queries."""

    plan: PlanRequest = Field(default_factory=PlanRequest)
    name: str = ""
    tags: list[str] = Field(default_factory=list)
    notes: str = ""
    rerank_budget_ms: RerankBudget = Field(
        None, description="weigh the run as a fail-open service serves it under this rerank budget too (`as_served`)"
    )
    serve_concurrency: int = Field(
        1, ge=1, le=MAX_SERVE_CONCURRENCY, description="with rerank_budget_ms: searches served at once while timed"
    )

    @model_validator(mode="after")
    def _serving(self) -> ExperimentRequest:
        validate_serving(self.rerank_budget_ms, self.serve_concurrency)
        return self


class GateRequest(JudgedRequest):
    """The candidate, the baseline (its own first stage by default, a kept experiment's id, or another
    configuration), the judgments and the budgets."""

    candidate: PlanRequest = Field(default_factory=PlanRequest)
    baseline_experiment: str | None = Field(None, max_length=64, description="a kept experiment's id")
    baseline: PlanRequest | None = Field(None, description="another configuration, run now (over the candidate's)")
    budgets: Budgets = Field(default_factory=Budgets)


def evaluated(body: ExperimentRequest, engine: Engine, progress: Progress | None = None) -> ExperimentSummary:
    """The evaluation a request asks for, run and kept: what POST /experiments answers and a job's result."""
    plan = body.plan.plan(engine)
    keeping = evaluations.Keeping(name=body.name, tags=tuple(body.tags), notes=body.notes)
    ready = body.ready(engine, plan, served=(body.rerank_budget_ms, body.serve_concurrency))
    done = evaluations.run_evaluation_request(
        engine, ready, plan, keeping=keeping, listeners=Listeners(progress=progress)
    )
    if done.not_kept:
        raise StoreError(f"The evaluation ran but could not be kept as an experiment: {done.not_kept}")
    if done.experiment is None:  # an API evaluation is always kept (the request's `keep` is left as it is)
        raise InputError("The evaluation ran but was not kept.")
    return done.experiment.summary()


def check_gate(body: GateRequest) -> None:
    """InputError for a request naming two baselines (before any work, or any job, starts)."""
    if body.baseline is not None and body.baseline_experiment is not None:
        raise InputError("Name one baseline: baseline_experiment or baseline, not both.")


def gated(body: GateRequest, engine: Engine, progress: Progress | None = None) -> GateDecision:
    """The gate's decision a request asks for: what POST /gate answers and a job's result."""
    candidate = body.candidate.plan(engine)
    dataset = body.ready(engine, candidate, query_set=False).dataset
    baseline: SearchPlan | str | None = body.baseline_experiment
    if body.baseline is not None:
        baseline = body.baseline.plan(engine, over=candidate)
    return run_gate(
        engine, dataset, candidate, source=dataset.name, baseline=baseline, budgets=body.budgets,
        query_set=body.kept_query_set(engine), max_queries=body.max_queries, progress=progress,
    )  # fmt: skip

"""Experiments, query sets and the ship gate over HTTP: list, open, diff, export, import and delete kept
experiments; run an evaluation now (kept as an experiment); POST /gate for a pipeline's ship decision."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Body, Response

from workbench.api.bodies import ExperimentRequest, GateRequest, check_gate, evaluated, gated
from workbench.api.dependencies import Authorised, EngineDep, State, run_bounded
from workbench.experiments import (
    QuerySet,
    RunDiff,
    diff_experiments,
    export_experiment,
    import_experiment,
    open_experiment_store,
)
from workbench.experiments.gate import GateDecision
from workbench.experiments.record import ExperimentSummary, ExperimentView

router = APIRouter(tags=["experiments"], dependencies=Authorised)


@router.get("/experiments", response_model=list[ExperimentSummary])
async def list_experiments(
    state: State, collection: str | None = None, configuration: str | None = None, limit: int = 50
) -> Any:
    """Kept experiments, newest first."""
    store = open_experiment_store(state.settings)
    kept = await run_bounded(state, lambda: store.list(collection=collection, configuration=configuration,
                                                         limit=max(1, min(limit, 500))))  # fmt: skip
    return [e.summary() for e in kept]


@router.get("/experiments/{experiment_id}", response_model=ExperimentView)
async def open_experiment(experiment_id: str, state: State) -> Any:
    """One experiment: its plan, metrics with intervals, verdict, most hurt and helped queries, manifest."""
    return await run_bounded(state, lambda: open_experiment_store(state.settings).get(experiment_id).view())


@router.get("/experiments/{experiment_id}/diff/{other_id}", response_model=RunDiff)
async def diff(experiment_id: str, other_id: str, state: State) -> Any:
    """The second experiment against the first, query by query."""
    store = open_experiment_store(state.settings)
    return await run_bounded(state, lambda: diff_experiments(store.get(experiment_id), store.get(other_id)))


@router.get("/experiments/{experiment_id}/export")
async def export(experiment_id: str, state: State) -> Response:
    """The experiment as one JSON file (POST it to /experiments/import elsewhere)."""
    text = await run_bounded(state, lambda: export_experiment(open_experiment_store(state.settings).get(experiment_id)))
    return Response(
        text, media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="experiment-{experiment_id[:12]}.json"'},
    )  # fmt: skip


@router.post("/experiments/import", response_model=ExperimentSummary)
async def import_file(engine: EngineDep, state: State, document: Annotated[dict[str, Any], Body()]) -> Any:
    """Keep an exported experiment here (the same file twice keeps it once)."""
    return (await run_bounded(state, lambda: import_experiment(engine, json.dumps(document)))).summary()


@router.delete("/experiments/{experiment_id}")
async def delete(experiment_id: str, state: State) -> dict[str, Any]:
    await run_bounded(state, lambda: open_experiment_store(state.settings).delete(experiment_id))
    return {"deleted": experiment_id}


@router.post("/experiments", response_model=ExperimentSummary)
async def evaluate(body: ExperimentRequest, engine: EngineDep, state: State) -> Any:
    """Evaluate a configuration on judged queries now and keep it as an experiment (WORKBENCH_EVALUATION_TIMEOUT;
    POST /jobs/evaluations runs one as a job, with its progress, and no time limit)."""
    return await run_bounded(state, lambda: evaluated(body, engine), evaluation=True)


@router.post("/gate", response_model=GateDecision)
async def gate(body: GateRequest, engine: EngineDep, state: State) -> Any:
    """Ship or not: the candidate against the baseline. `outcome` ship / no-ship / inconclusive and `exit_code`
    0 / 1 / 3, as `workbench gate` exits (POST /jobs/gate runs it as a job)."""
    check_gate(body)
    return await run_bounded(state, lambda: gated(body, engine), evaluation=True)


@router.get("/query-sets", response_model=list[str])
async def query_sets(state: State) -> Any:
    return await run_bounded(state, lambda: open_experiment_store(state.settings).query_set_names())


@router.get("/query-sets/{name}", response_model=QuerySet)
async def query_set(name: str, state: State) -> Any:
    return await run_bounded(state, lambda: open_experiment_store(state.settings).query_set(name))


@router.post("/query-sets", response_model=QuerySet)
async def save_query_set(body: QuerySet, state: State) -> Any:
    """Keep a named query set (replacing one of the same name)."""
    return await run_bounded(state, lambda: open_experiment_store(state.settings).save_query_set(body))

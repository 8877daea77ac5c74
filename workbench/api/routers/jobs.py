"""Long runs as jobs: POST /jobs/evaluations and POST /jobs/gate start an evaluation or a gate and answer 202 at once
with the job's status; GET /jobs/{id} says how far it is (queries done of all, the rate, the time left) and, once
done, holds the kept experiment's summary or the gate's decision (or the one-line error); DELETE /jobs/{id} stops it
after the query it is on. The work is the same function POST /experiments and POST /gate call (services/jobs.py)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Response

from workbench.api.bodies import ExperimentRequest, GateRequest, check_gate, evaluated, gated
from workbench.api.dependencies import Authorised, EngineDep, State, run_bounded
from workbench.services.jobs import JobStatus

router = APIRouter(tags=["jobs"], dependencies=Authorised)
JobId = Annotated[str, Path(pattern=r"^[0-9a-f]{16}$", description="the id POST /jobs/... answered")]


def _accepted(status: JobStatus, response: Response) -> JobStatus:
    response.status_code = 202
    response.headers["Location"] = f"/jobs/{status.id}"
    return status


@router.post("/jobs/evaluations", response_model=JobStatus, status_code=202)
async def start_evaluation(body: ExperimentRequest, engine: EngineDep, state: State, response: Response) -> Any:
    """Start an evaluation as a job (kept as an experiment when done, as POST /experiments keeps one)."""
    status = state.jobs.start("evaluation", lambda progress: evaluated(body, engine, progress))
    return _accepted(status, response)


@router.post("/jobs/gate", response_model=JobStatus, status_code=202)
async def start_gate(body: GateRequest, engine: EngineDep, state: State, response: Response) -> Any:
    """Start a gate as a job: its result is the decision POST /gate answers."""
    check_gate(body)
    status = state.jobs.start("gate", lambda progress: gated(body, engine, progress))
    return _accepted(status, response)


@router.get("/jobs", response_model=list[JobStatus])
async def list_jobs(state: State) -> Any:
    """Every job this server holds, newest first (a finished one for an hour)."""
    return await run_bounded(state, state.jobs.list)


@router.get("/jobs/{job_id}", response_model=JobStatus)
async def job(job_id: JobId, state: State) -> Any:
    """How far a job is, and its result or error once it ended."""
    return await run_bounded(state, lambda: state.jobs.status(job_id))


@router.delete("/jobs/{job_id}", response_model=JobStatus)
async def stop_job(job_id: JobId, state: State) -> Any:
    """Stop a job: one waiting never starts; one running stops after its current query and keeps nothing."""
    return await run_bounded(state, lambda: state.jobs.cancel(job_id))

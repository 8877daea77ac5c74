"""Experiments and the gate over HTTP, through a client generated from the API's own /openapi.json by
openapi-python-client: an experiment kept by the CLI is listed and opened, one run over the API is diffed against
it, the gate answers as `workbench gate` exits, and bad requests are 4xx with words."""

from __future__ import annotations

import importlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from tests.live_servers import ApiServer, api_env, cli_experiment
from workbench.config import Settings
from workbench.experiments import open_experiment_store
from workbench.vocab import BATCH_SCORE_TOLERANCE, GATE_EXIT_CODES

pytestmark = pytest.mark.live_server

TOKEN = "experiments-token-4711"


@pytest.fixture(scope="module")
def kept(served_data: Settings) -> str:
    return cli_experiment(served_data, "--max-queries", "8", "--name", "from the cli", "--tag", "nightly")


@pytest.fixture(scope="module")
def api(served_data: Settings, kept: str) -> Iterator[ApiServer]:
    server = ApiServer(Path(served_data.data_dir), api_env(served_data, WORKBENCH_API_TOKEN=TOKEN))
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def generated(api: ApiServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("generated-client")
    spec = httpx.get(f"{api.url}/openapi.json", headers={"Authorization": f"Bearer {TOKEN}"}).text
    (folder / "openapi.json").write_text(spec)
    made = subprocess.run(
        [str(Path(sys.executable).parent / "openapi-python-client"), "generate", "--path", "openapi.json",
         "--output-path", "experiments_client", "--meta", "none"],
        cwd=folder, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    sys.path.insert(0, str(folder))
    try:
        package = importlib.import_module("experiments_client")
        yield {"client": package.AuthenticatedClient(base_url=api.url, token=TOKEN, timeout=httpx.Timeout(600))}
    finally:
        sys.path.remove(str(folder))
        for name in [m for m in sys.modules if m.split(".")[0] == "experiments_client"]:
            del sys.modules[name]


def _api(name: str) -> ModuleType:
    module = next(
        path.stem
        for path in (Path(importlib.import_module("experiments_client.api.experiments").__file__).parent).glob("*.py")
        if path.stem.startswith(name)
    )
    return importlib.import_module(f"experiments_client.api.experiments.{module}")


def test_an_experiment_the_cli_kept_is_listed_and_opened(generated: dict, kept: str, served_data: Settings) -> None:
    client = generated["client"]
    listed = _api("list_experiments").sync(client=client)
    mine = next(e for e in listed if e.id == kept)
    assert mine.name == "from the cli" and mine.tags == ["nightly"] and mine.queries == 8
    opened = _api("open_experiment").sync(experiment_id=kept, client=client)
    stored = open_experiment_store(served_data).get(kept)
    assert opened.plan.collection == "demo" and opened.after == pytest.approx(stored.figure())
    assert opened.metrics[0].additional_properties["metric"] == "ndcg@10"
    assert opened.verdict_words == stored.verdict.words()
    assert opened.manifest.embedder == stored.manifest.embedder
    assert "/" not in str(opened.plan.reranker)  # the reranker's folder by its name, never where it sits
    # the errors are declared, so the generated client parses them instead of answering None
    models = importlib.import_module("experiments_client.models")
    missing = _api("open_experiment").sync(experiment_id="0123456789ab", client=client)
    assert isinstance(missing, models.ErrorBody) and "No experiment has the id" in missing.message
    package = importlib.import_module("experiments_client")
    stranger = package.AuthenticatedClient(base_url=client._base_url, token="wrong", timeout=httpx.Timeout(60))
    refused = _api("list_experiments").sync(client=stranger)
    assert isinstance(refused, models.ErrorBody) and refused.message


def test_an_evaluation_run_over_the_api_is_kept_and_diffed_against_the_clis(generated: dict, kept: str) -> None:
    client = generated["client"]
    models = importlib.import_module("experiments_client.models")
    body = models.ExperimentRequest(
        plan=models.PlanRequest(retrieval=models.PlanRequestRetrievalType0("hybrid")), max_queries=8, name="hybrid"
    )
    made = _api("evaluate").sync(client=client, body=body)
    assert made.name == "hybrid" and made.configuration.startswith("demo · hybrid k=50")
    diff = _api("diff").sync(experiment_id=kept, other_id=made.id, client=client)
    assert diff.judged_queries == 8 and diff.agreement.queries == 8
    assert diff.name_a == "from the cli" and diff.name_b == "hybrid"


def test_the_cli_and_the_api_give_the_same_figures_for_one_request(
    generated: dict, kept: str, served_data: Settings
) -> None:
    """Issue 55: `workbench eval demo --max-queries 8` and POST /experiments with max_queries 8 are one request run
    by one service (`run_evaluation_request`): every figure and the verdict to the last digit, the first stage's run
    to the last digit, the reranked run in the same order. Its scores, computed in two processes, may differ in the
    seventh digit (torch's sums depend on a batch's padding and threads: the audit's batch-mates drift, ~3e-6 on this
    machine), never by more than the tolerance the parity audit holds every backend to."""
    models = importlib.import_module("experiments_client.models")
    made = _api("evaluate").sync(client=generated["client"], body=models.ExperimentRequest(max_queries=8))
    store = open_experiment_store(served_data)
    cli, api = store.get(kept), store.get(made.id)
    assert api.plan == cli.plan and api.queries == cli.queries and api.qrels == cli.qrels
    figures = ("before", "after", "p_value", "p_value_ttest", "wins", "ties", "losses", "queries", "verdict")
    assert {f: api.report[f] for f in figures} == {f: cli.report[f] for f in figures}
    assert api.before_run == cli.before_run
    assert api.after_run.keys() == cli.after_run.keys()
    for qid, scores in cli.after_run.items():
        theirs = api.after_run[qid]
        assert sorted(theirs, key=lambda d: -theirs[d]) == sorted(scores, key=lambda d: -scores[d])
        assert max(abs(theirs[d] - s) for d, s in scores.items()) <= BATCH_SCORE_TOLERANCE


def test_an_experiment_over_http_is_weighed_as_served_under_a_rerank_budget_and_load(generated: dict) -> None:
    """Issue 72: POST /experiments takes a rerank budget and a serving concurrency, as `eval` does: opened, the
    experiment says its verdict as served. Under a 1 ms budget no real model's rerank fits, so every query is served
    at its first-stage order: nDCG@10 as served is the first stage's, to the last digit."""
    models = importlib.import_module("experiments_client.models")
    client = generated["client"]
    body = models.ExperimentRequest(max_queries=3, rerank_budget_ms=1, serve_concurrency=2)
    made = _api("evaluate").sync(client=client, body=body)
    opened = _api("open_experiment").sync(experiment_id=made.id, client=client).to_dict()
    served = opened["as_served"]
    assert served["budget_ms"] == 1 and served["concurrency"] == 2 and served["queries"] == 3
    assert served["served_reranked"] == 0 and served["as_served"] == served["first_stage"] == opened["before"]


def test_the_gate_over_http_answers_as_the_command_exits(
    generated: dict, served_data: Settings, api: ApiServer
) -> None:
    client = generated["client"]
    models = importlib.import_module("experiments_client.models")
    gate = importlib.import_module("experiments_client.api.experiments.gate_gate_post")
    body = models.GateRequest(
        candidate=models.PlanRequest(retrieval=models.PlanRequestRetrievalType0("bm25")), max_queries=10
    )
    decision = gate.sync(client=client, body=body)
    assert decision.exit_code == GATE_EXIT_CODES[decision.outcome.value]
    kept = open_experiment_store(served_data).get(decision.candidate_experiment)
    assert decision.comparison.b.additional_properties["ndcg@10"] == pytest.approx(kept.figure())
    assert decision.comparison.a.additional_properties["ndcg@10"] == pytest.approx(kept.figure(stage="before"))
    # the same gate again on the now warm server, with a latency budget: its searches are timed, not cached
    timed = httpx.post(
        f"{api.url}/gate", timeout=600, headers={"Authorization": f"Bearer {TOKEN}"},
        json={"candidate": {"retrieval": "bm25"}, "max_queries": 10, "budgets": {"max_latency_ms": 1e9}},
    ).json()  # fmt: skip
    latency = next(c for c in timed["checks"] if c["name"] == "latency")
    assert latency["passed"] and "p95 total" in latency["detail"], timed


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "words"),
    [
        ("POST", "/gate", {"candidate": {"reranker": "/etc/passwd"}}, 422, "a reranker is 'default', 'none'"),
        ("POST", "/gate", {"candidate": {"reranker": "http://169.254.169.254/x"}}, 422, "model id"),
        ("POST", "/gate", {"candidate": {"k": 0}}, 422, "greater than or equal to 1"),
        ("POST", "/gate", {"baseline_experiment": "x", "baseline": {}}, 422, "not both"),
        ("POST", "/gate", {"baseline_experiment": "nope"}, 404, "No experiment has the id"),
        ("POST", "/experiments", {"plan": {"collection": "nope"}}, 404, "Collection 'nope' not found"),
        ("POST", "/experiments", {"query_set": "nope"}, 404, "No query set is named"),
        ("GET", "/experiments/nope", None, 404, "No experiment has the id"),
        ("DELETE", "/experiments/nope", None, 404, "No experiment has the id"),
        ("POST", "/query-sets", {"name": "s", "queries": []}, 422, "has no queries"),
        ("POST", "/query-sets", {"name": "s", "queries": [{"id": "q1", "text": " "}]}, 422, "query is empty"),
        ("POST", "/query-sets", {"name": "s", "queries": [{"id": "q\u0000", "text": "a"}]}, 422, "document id"),
        ("POST", "/query-sets", {"name": "s", "queries": [{"id": "q\u202e1", "text": "a"}]}, 422, "invisible"),
        ("POST", "/query-sets", {"name": "s", "queries": [{"id": "q1", "text": "a", "wieght": 2}]}, 422, "wieght"),
        ("POST", "/query-sets", {"name": "s", "extra": 1, "queries": [{"id": "q1", "text": "a"}]}, 422, "extra"),
        ("POST", "/gate", {"budgets": {"max_latency": 5}}, 422, "max_latency"),
        ("POST", "/gate", {"budgets": {"serve_concurrency": 4}}, 422, "A serving concurrency (4) is the load"),
        ("POST", "/experiments", {"serve_concurrency": 2}, 422, "A serving concurrency (2) is the load"),
        ("POST", "/experiments", {"rerank_budget_ms": 0}, 422, "A rerank budget is a number of milliseconds"),
        ("POST", "/experiments", {"rerank_budget_ms": 50, "serve_concurrency": 65}, 422, "less than or equal to 64"),
        ("POST", "/experiments/import", {"format": "other"}, 422, "Not an experiment file"),
    ],
)
def test_bad_requests_are_4xx_with_words(
    api: ApiServer, method: str, path: str, body: Any, status: int, words: str
) -> None:
    answer = httpx.request(
        method, f"{api.url}{path}", json=body, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120
    )
    assert answer.status_code == status, answer.text
    assert words in answer.json()["message"]
    assert "Traceback" not in answer.text and str(api.data) not in answer.text


def test_export_import_and_delete_over_http(api: ApiServer, kept: str) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    exported = httpx.get(f"{api.url}/experiments/{kept}/export", headers=headers)
    assert exported.status_code == 200 and "attachment" in exported.headers["content-disposition"]
    assert httpx.delete(f"{api.url}/experiments/{kept}", headers=headers).json() == {"deleted": kept}
    assert httpx.get(f"{api.url}/experiments/{kept}", headers=headers).status_code == 404
    back = httpx.post(f"{api.url}/experiments/import", json=exported.json(), headers=headers)
    assert back.status_code == 200 and back.json()["id"] == kept, back.text
    assert httpx.get(f"{api.url}/experiments", headers={}).status_code == 401  # the token guards them too


def _jobs(name: str) -> ModuleType:
    folder = Path(importlib.import_module("experiments_client.api.jobs").__file__).parent
    module = next(path.stem for path in folder.glob("*.py") if path.stem.startswith(name))
    return importlib.import_module(f"experiments_client.api.jobs.{module}")


def _until_ended(client: Any, job_id: str, seen: list[tuple[int, int | None]]) -> Any:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        status = _jobs("job").sync(job_id=job_id, client=client)
        seen.append((status.done, status.total if isinstance(status.total, int) else None))
        if status.state.value in ("done", "failed", "cancelled"):
            return status
        time.sleep(0.1)
    raise TimeoutError(f"job {job_id} did not end")


def test_an_evaluation_runs_as_a_job_with_its_progress_and_its_result(
    generated: dict, served_data: Settings, api: ApiServer
) -> None:
    """POST /jobs/evaluations answers 202 at once; GET /jobs/ID counts the queries done, the rate and the time
    left; the result is the kept experiment's summary, with the figures POST /experiments gives."""
    client = generated["client"]
    models = importlib.import_module("experiments_client.models")
    started = httpx.post(f"{api.url}/jobs/evaluations", json={"max_queries": 12, "name": "as a job"},
                         headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)  # fmt: skip
    assert started.status_code == 202 and started.headers["location"] == f"/jobs/{started.json()['id']}"
    assert started.json()["state"] in ("queued", "running") and started.json()["kind"] == "evaluation"
    seen: list[tuple[int, int | None]] = []
    ended = _until_ended(client, started.json()["id"], seen)
    assert ended.state.value == "done", ended.error
    assert ended.done == ended.total == 12 and ended.rate_per_s > 0 and ended.seconds_left == 0
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)  # progress only goes forward
    result = ended.result.additional_properties
    kept = open_experiment_store(served_data).get(result["id"])
    assert kept.name == "as a job" and result["queries"] == 12
    now = _api("evaluate").sync(client=client, body=models.ExperimentRequest(max_queries=12))
    assert (now.before, now.after, now.verdict) == (result["before"], result["after"], result["verdict"])
    listed = _jobs("list_jobs").sync(client=client)
    assert ended.id in [job.id for job in listed]


def _ended(api: ApiServer, job_id: str) -> dict[str, Any]:
    """A job's status once it is neither waiting nor running (over plain HTTP)."""
    deadline = time.monotonic() + 120
    while (status := httpx.get(f"{api.url}/jobs/{job_id}", headers={"Authorization": f"Bearer {TOKEN}"}).json())[
        "state"
    ] in ("queued", "running"):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    return status


def test_a_job_is_stopped_on_request_and_the_queue_is_bounded(served_data: Settings, api: ApiServer) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    before = len(open_experiment_store(served_data).list())
    running = httpx.post(f"{api.url}/jobs/evaluations", json={"name": "stopped"}, headers=headers).json()
    waiting = [httpx.post(f"{api.url}/jobs/gate", json={"max_queries": 4}, headers=headers) for _ in range(8)]
    refused = httpx.post(f"{api.url}/jobs/evaluations", json={}, headers=headers)
    assert [answer.status_code for answer in waiting] == [202] * 8
    assert refused.status_code == 429 and "jobs are already waiting" in refused.json()["message"]
    for job in [*(answer.json() for answer in waiting), running]:  # the waiting first: none of them ever starts
        stopped = httpx.delete(f"{api.url}/jobs/{job['id']}", headers=headers)
        assert stopped.status_code == 200
    ended = _ended(api, running["id"])
    assert ended["state"] == "cancelled" and ended["result"] is None and "nothing of it was kept" in ended["error"]
    assert all(httpx.get(f"{api.url}/jobs/{a.json()['id']}", headers=headers).json()["state"] == "cancelled"
               for a in waiting)  # fmt: skip
    assert len(open_experiment_store(served_data).list()) == before  # nothing kept of a stopped run


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "words"),
    [
        ("GET", "/jobs/0123456789abcdef", None, 404, "No job with that id"),
        ("DELETE", "/jobs/0123456789abcdef", None, 404, "No job with that id"),
        ("GET", "/jobs/..%2Fetc", None, 404, ""),
        ("GET", "/jobs/XYZ", None, 422, "pattern"),
        ("POST", "/jobs/gate", {"baseline_experiment": "x", "baseline": {}}, 422, "not both"),
        ("POST", "/jobs/evaluations", {"plan": {"k": 0}}, 422, "greater than or equal to 1"),
    ],
)
def test_bad_job_requests_are_4xx_with_words(
    api: ApiServer, method: str, path: str, body: Any, status: int, words: str
) -> None:
    answer = httpx.request(
        method, f"{api.url}{path}", json=body, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
    )
    assert answer.status_code == status, answer.text
    assert words in answer.text and "Traceback" not in answer.text


def test_a_job_that_fails_says_why_in_one_line(api: ApiServer) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    started = httpx.post(f"{api.url}/jobs/evaluations", json={"query_set": "no-such-set"}, headers=headers).json()
    ended = _ended(api, started["id"])
    assert ended["state"] == "failed" and "No query set is named" in ended["error"]
    assert "\n" not in ended["error"] and "Traceback" not in ended["error"] and str(api.data) not in ended["error"]

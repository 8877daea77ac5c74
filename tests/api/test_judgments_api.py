"""Judgments over HTTP (`POST /judgments`, `GET /judgments/{collection}`) and the CLI on the same data: two raters'
grades, their kappa as computed by hand, the current grade by policy, and bad requests refused with a message."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.live_servers import ApiServer, api_env
from workbench.config import Settings
from workbench.paths import demo_dir

pytestmark = pytest.mark.live_server

# Six (query, document) pairs both raters grade. By hand: 4 of 6 agree; each rater gives 0, 1 and 2 twice, so
# chance agreement is 1/3 and unweighted kappa (2/3 - 1/3) / (1 - 1/3) = 0.5. Quadratic weights (i - j)^2 / 4:
# the two disagreements (1 vs 2) weigh 1/4 each, observed 2/6 * 1/4 = 1/12, expected 1/9 * 12/4 = 1/3,
# kappa 1 - (1/12) / (1/3) = 0.75.
ANN = [0, 1, 2, 2, 0, 1]
BOB = [0, 2, 2, 1, 0, 1]


@pytest.fixture(scope="module")
def server(served_data: Settings):
    api = ApiServer(Path(served_data.data_dir), api_env(served_data))
    try:
        api.wait_ready()
        yield api
    finally:
        assert "Traceback" not in api.stop()


def _pairs() -> list[tuple[str, str]]:
    lines = (demo_dir() / "qrels" / "test.tsv").read_text().splitlines()[1:]
    return [(q, d) for q, d, _ in (line.split("\t") for line in lines)][:6]


def test_two_raters_over_http_give_the_kappa_computed_by_hand(server: ApiServer, served_data: Settings) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        for rater, grades in (("ann", ANN), ("bob", BOB)):
            for (qid, doc), grade in zip(_pairs(), grades, strict=True):
                body = {"collection": "demo", "document_id": doc, "grade": grade, "query_id": qid, "rater": rater}
                answer = client.post("/judgments", json=body)
                assert answer.status_code == 200, answer.text
        assert answer.json()["current_grade"] == BOB[-1] and answer.json()["ratings_of_pair"] == 3  # import too
        typed = client.post(
            "/judgments", json={"collection": "demo", "document_id": _pairs()[0][1], "grade": 3, "query": "parking"}
        ).json()
        assert typed["query_id"].startswith("typed-") and typed["rater"] == "me"

        view = client.get("/judgments/demo").json()
        assert view["policy"] == "latest" and {"ann", "bob", "me", "demo handbook"} <= set(view["raters"])
        assert view["queries"][typed["query_id"]] == "parking" and view["qrels"][typed["query_id"]] == {
            _pairs()[0][1]: 3
        }
        (qid, doc) = _pairs()[1]
        assert view["qrels"][qid][doc] == BOB[1]  # bob rated last
        assert client.get("/judgments/demo", params={"policy": "rater:ann"}).json()["qrels"][qid][doc] == ANN[1]
        pair = next(p for p in view["agreement"]["pairs"] if (p["rater_a"], p["rater_b"]) == ("ann", "bob"))
        assert pair["overlap"] == 6 and pair["agreed"] == 4 and pair["kappa"] == pytest.approx(0.75)
        assert {(d["query_id"], d["doc_id"]) for d in view["agreement"]["disagreements"]} >= {
            _pairs()[1],
            _pairs()[3],
        }

    command = [str(Path(sys.executable).parent / "workbench"), "judgments", "agreement", "demo", "--json"]
    env = api_env(served_data)
    for weights, expected in (("quadratic", 0.75), ("none", 0.5), ("linear", 0.625)):
        done = subprocess.run([*command, "--weights", weights], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        pairs = json.loads(done.stdout)["pairs"]
        assert next(p for p in pairs if p["rater_a"] == "ann" and p["rater_b"] == "bob")["kappa"] == pytest.approx(
            expected
        )


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"grade": 7}, 422, "grade must be one of 0 not relevant"),
        ({"document_id": "no-such-doc"}, 422, "'demo' holds no document 'no-such-doc'"),
        ({"collection": "nope-nope"}, 404, "nope-nope"),
        ({"rater": "ann\u001b[2J"}, 422, "rater must be"),
        ({"query_id": "h1"}, 422, "either query"),
        ({"query": "\u200b"}, 422, "The query is empty"),
        ({"extra": 1}, 422, "extra"),
    ],
)
def test_bad_judgments_are_refused_with_a_message(server: ApiServer, body: dict, status: int, message: str) -> None:
    doc = _pairs()[0][1]
    request = {"collection": "demo", "document_id": doc, "grade": 1, "query": "vacation", **body}
    answer = httpx.post(f"{server.url}/judgments", json=request, timeout=60)
    assert answer.status_code == status and message in answer.text, answer.text
    assert "Traceback" not in answer.text and "/tmp" not in answer.text


def test_reading_judgments_names_the_problem(server: ApiServer) -> None:
    assert "no judgments yet" in httpx.get(f"{server.url}/judgments/other-collection", timeout=30).text
    bad = httpx.get(f"{server.url}/judgments/demo", params={"policy": "loudest"}, timeout=30)
    assert bad.status_code == 422 and "latest, majority or rater:NAME" in bad.text


def test_a_retried_post_with_an_idempotency_key_stores_one_row(server: ApiServer) -> None:
    """The same keyed grade sent three times (the body's field, then the Idempotency-Key header): one more row,
    two answers marked replayed; the key reused for another grade is a 422 that names it."""
    doc = _pairs()[2][1]
    body = {"collection": "demo", "document_id": doc, "grade": 1, "query": "retry over a flaky link", "rater": "cy"}
    with httpx.Client(base_url=server.url, timeout=60) as client:
        before = client.get("/judgments/demo").json()["given"]
        first = client.post("/judgments", json={**body, "idempotency_key": "k-0001"})
        again = client.post("/judgments", json={**body, "idempotency_key": "k-0001"})
        header = client.post("/judgments", json=body, headers={"Idempotency-Key": "k-0001"})
        after = client.get("/judgments/demo").json()["given"]
        reused = client.post("/judgments", json={**body, "grade": 3, "idempotency_key": "k-0001"})
        fresh = client.post("/judgments", json={**body, "grade": 3}, headers={"Idempotency-Key": "k-0002"})
        empty = client.post("/judgments", json={**body, "idempotency_key": ""})  # refused, as MCP refuses it
        long_rater = client.post("/judgments", json={**body, "rater": "r" * 100})
        final = client.get("/judgments/demo").json()["given"]
    assert [r.status_code for r in (first, again, header)] == [200, 200, 200], header.text
    assert [r.json()["replayed"] for r in (first, again, header)] == [False, True, True]
    assert after == before + 1
    assert reused.status_code == 422 and "k-0001" in reused.json()["message"]
    assert fresh.status_code == 200 and fresh.json()["ratings_of_pair"] == 2 and not fresh.json()["replayed"]
    assert empty.status_code == 422 and "idempotency" in empty.text.lower() and final == after + 1
    assert long_rater.status_code == 422 and "64" in long_rater.text and "128" not in long_rater.text


def test_a_blind_preference_session_over_http(server: ApiServer) -> None:
    """POST /preferences on the demo's judged queries, the next pair blind, choices (a retry with the same
    Idempotency-Key counted once), an undo, the verdict; an unknown session and a bad choice refused in one line."""
    with httpx.Client(base_url=server.url, timeout=120) as client:
        body = {"a": {"collection": "demo", "k": 20, "top_n": 5, "reranker": None},
                "b": {"collection": "demo", "k": 20, "top_n": 5}, "judged_of": "demo", "seed": 9}  # fmt: skip
        started = client.post("/preferences", json=body)
        assert started.status_code == 200, started.text
        session = started.json()
        assert len(session["queries"]) >= 50 and "/" not in str(session["second"]["reranker"])  # no server path
        pair = client.get(f"/preferences/{session['id']}/next", params={"rater": "ann"}).json()
        assert set(pair["left"][0]) == {"title", "text"} and pair["position"] >= 1
        choice = {"query_id": pair["query_id"], "choice": "left", "rater": "ann"}
        headers = {"Idempotency-Key": "first-choice"}
        assert client.post(f"/preferences/{session['id']}/choices", json=choice, headers=headers).json() == {
            "recorded": True
        }
        assert client.post(f"/preferences/{session['id']}/choices", json=choice, headers=headers).json() == {
            "recorded": False
        }
        verdict = client.get(f"/preferences/{session['id']}/verdict").json()
        assert verdict["verdict"]["pooled"]["a"] + verdict["verdict"]["pooled"]["b"] == 1
        assert verdict["outcome"] == "inconclusive" and verdict["words"]
        assert client.post(f"/preferences/{session['id']}/undo", json={"rater": "ann"}).json() == {"recorded": True}
        again = client.post(f"/preferences/{session['id']}/undo", json={"rater": "ann"})
        assert again.status_code == 422 and "Nothing of ann's to undo" in again.text
        bad = client.post(f"/preferences/{session['id']}/choices", json={**choice, "choice": "up"})
        assert bad.status_code == 422 and "Traceback" not in bad.text
        missing = client.get("/preferences/0123456789ab/verdict")
        assert missing.status_code == 404 and "No preference session" in missing.text
        hostile = client.get("/preferences/..%2F..%2Fetc/verdict")
        assert hostile.status_code in (404, 422) and "Traceback" not in hostile.text

"""The LLM judge against a local OpenAI-compatible server that grades from a fixed rubric (no model can be reached
from here): the queue of a real evaluation filled through `workbench judgments llm`, each grade and token count
checked against what the server answered, its agreement with a person computed by hand, a person overriding it,
and the key never in any output, a refused key and a server that is down included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import cli_here, free_port, tiny_env
from tests.rerank_apis import Behaviour, RerankApis, rubric_grade
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import ConfigError
from workbench.judgments import judgment_rows, load_judgments, rate, rater_agreement, typed_query_id
from workbench.judgments.llm import JudgePair, grade_pairs, read_answer
from workbench.paths import demo_dir

pytestmark = pytest.mark.live_server

KEY = "sk-judge-secret-4f9a2c7e1b"
COLLECTION = "handbook"
PASSAGE = "Submit expense claims within 30 days; the deadline is strict."


@pytest.fixture(scope="module")
def handbook(tmp_path_factory: pytest.TempPathFactory, tiny_models: dict[str, Path]) -> dict[str, str]:
    """The demo's documents in a collection of their own with the tiny models, and a few grades by a person."""
    env = tiny_env(tmp_path_factory.mktemp("judge-data"), tiny_models)
    engine = Engine(_settings(env))
    engine.ingest(demo_dir() / "docs", COLLECTION)
    queries = {q["_id"]: q["text"] for q in map(json.loads, (demo_dir() / "queries.jsonl").read_text().splitlines())}
    lines = (demo_dir() / "qrels" / "test.tsv").read_text().splitlines()[1:]
    for line in [row for row in lines if row.split("\t")[0] in {"q1", "q2", "q3"}][:6]:
        qid, doc, grade = line.split("\t")
        rate(engine.settings, COLLECTION, doc, int(grade), query=queries[qid], rater="ann")
    return env


def _settings(env: dict[str, str]) -> Settings:
    return Settings(
        data_dir=env["WORKBENCH_DATA_DIR"], embedding_model=env["WORKBENCH_EMBEDDING_MODEL"],
        reranker_model=env["RERANKER_MODEL"], offline=True, judge_model=env.get("WORKBENCH_JUDGE_MODEL"),
        judge_url=env.get("WORKBENCH_JUDGE_URL"), judge_api_key=env.get("OPENAI_API_KEY"),
    )  # fmt: skip


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).parent / "workbench"), "judgments", "llm", COLLECTION, *args]
    return subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, timeout=300)


def _judge_env(env: dict[str, str], base: str, key: str = KEY) -> dict[str, str]:
    return {
        **env, "WORKBENCH_JUDGE_MODEL": "rubric-1", "WORKBENCH_JUDGE_URL": f"{base}/openai/v1", "OPENAI_API_KEY": key,
    }  # fmt: skip


def _asked(body: dict) -> tuple[str, str]:
    query, passage = body["messages"][-1]["content"].split("\nPassage: ")
    return query.removeprefix("Query: "), passage


def test_the_judge_fills_the_queue_through_the_cli_and_its_agreement_is_shown(handbook: dict[str, str]) -> None:
    with RerankApis(Behaviour(key=KEY)) as server:
        done = _cli(_judge_env(handbook, server.base), "--limit", "8", "--check", "6", "--json")
        assert done.returncode == 0, done.stderr
        run = json.loads(done.stdout)
        asked = [_asked(r["body"]) for r in server.behaviour.requests]
        answered = [r["body"] for r in server.behaviour.requests]

    assert KEY not in done.stdout + done.stderr
    assert run["rater"] == "llm:rubric-1" and run["endpoint"].endswith("/openai/v1")
    graded = run["grades"]
    assert len(graded) == 14 and sum(g["graded_by_people"] for g in graded) == 6
    assert len(asked) == 14 and all(b["model"] == "rubric-1" and b["temperature"] == 0 for b in answered)
    # each grade is the rubric's for the query and passage the judge was sent, and the passages are the documents'
    assert Counter((g["query"], g["grade"]) for g in graded) == Counter((q, rubric_grade(q, p)) for q, p in asked)
    assert all(g["reason"].endswith("of the query's words") for g in graded)
    corpus = " ".join(" ".join(f.read_text().split()) for f in (demo_dir() / "docs").glob("*.md"))
    assert all(" ".join(p.split())[:60] in corpus for _, p in asked)
    # the server reports prompt tokens as the words of the messages and completion tokens as the answer's words
    assert run["input_tokens"] == sum(len(m["content"].split()) for b in answered for m in b["messages"])
    assert run["output_tokens"] > 0 and all(g["input_tokens"] > 0 for g in graded)

    settings = _settings(handbook)
    rows = [r for r in judgment_rows(settings, COLLECTION) if r.rater == "llm:rubric-1"]
    assert len(rows) == 14 and {r.source for r in rows} == {"llm"} and all(r.reason for r in rows)
    # its agreement with ann over the 6 pairs both graded, by hand: quadratic-weighted Cohen's kappa from the grades
    ann = {(r.query_id, r.doc_id): r.grade for r in judgment_rows(settings, COLLECTION) if r.rater == "ann"}
    llm = {(r.query_id, r.doc_id): r.grade for r in rows}
    shared = sorted(ann)
    a, b = [ann[p] for p in shared], [llm[p] for p in shared]
    pair = next(p for p in run["agreement"] if {p["rater_a"], p["rater_b"]} == {"ann", "llm:rubric-1"})
    assert pair["overlap"] == 6 and pair["agreed"] == sum(x == y for x, y in zip(a, b, strict=True))
    assert pair["kappa"] == pytest.approx(_quadratic_kappa(a, b)) if pair["kappa"] is not None else len(set(a + b)) < 2

    # the same run in words: each grade with its reason, the tokens, the agreement with ann
    with RerankApis(Behaviour(key=KEY)) as server:
        words = _cli(_judge_env(handbook, server.base), "--limit", "2", "--check", "6")
    assert words.returncode == 0, words.stderr
    assert "llm:rubric-1 graded" in words.stdout and "tokens" in words.stdout and "with ann: agreed on" in words.stdout
    assert KEY not in words.stdout + words.stderr


def _quadratic_kappa(a: list[int], b: list[int]) -> float:
    """Cohen's kappa with weights (i - j)^2, written out: 1 - sum(w * observed) / sum(w * expected)."""
    n, grades = len(a), range(4)
    observed = sum((x - y) ** 2 for x, y in zip(a, b, strict=True)) / n
    expected = sum((i - j) ** 2 * a.count(i) * b.count(j) for i in grades for j in grades) / n**2
    return 1 - observed / expected


SPARSE = "handbook-sparse"


@pytest.fixture(scope="module")
def sparse(handbook: dict[str, str]) -> dict[str, str]:
    """The demo's documents again, with two grades by a person for each of 20 queries: most of each top 10 is
    unjudged, so the verdict is open until the queue is graded."""
    engine = Engine(_settings(handbook))
    engine.ingest(demo_dir() / "docs", SPARSE)
    queries = {q["_id"]: q["text"] for q in map(json.loads, (demo_dir() / "queries.jsonl").read_text().splitlines())}
    taken: Counter[str] = Counter()
    for line in (demo_dir() / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, doc, grade = line.split("\t")
        if qid in queries and len(taken) <= 20 and taken[qid] < 2 and (qid in taken or len(taken) < 20):
            rate(engine.settings, SPARSE, doc, int(grade), query=queries[qid], rater="cy")
            taken[qid] += 1
    return handbook


def _sparse_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).parent / "workbench"), "judgments", "llm", SPARSE, *args]
    return subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, timeout=300)


def test_the_judge_grades_to_the_decision_within_a_token_budget(handbook: dict[str, str], sparse: dict) -> None:
    """With --token-budget the judge grades rounds of the heaviest pairs and stops when the verdict is settled, the
    limit is reached or the budget is spent; it says which, and where the verdict stands."""
    with RerankApis(Behaviour(key=KEY)) as server:
        few = _cli(_judge_env(handbook, server.base), "--check", "0", "--token-budget", "100000")
        asked_few = len(server.behaviour.requests)
    # Three judged queries: no grade can make a change measurable, so the verdict is settled before any is asked.
    assert few.returncode == 0, few.stderr
    assert asked_few == 0 and "stopped: settled" in few.stdout and "Settled: no grade of the remaining" in few.stdout
    with RerankApis(Behaviour(key=KEY)) as server:
        tight = _sparse_cli(
            _judge_env(sparse, server.base), "--limit", "30", "--check", "0", "--token-budget", "1", "--json"
        )
        sent = len(server.behaviour.requests)
    assert tight.returncode == 0, tight.stderr
    run = json.loads(tight.stdout)
    # the first round goes out whole (nothing measured a pair's tokens yet); its tokens pass the budget: stop
    assert len(run["grades"]) == sent == 10 and run["stopped"] == "budget spent"
    assert run["settle"].startswith(("About ", "Settled: "))
    with RerankApis(Behaviour(key=KEY)) as server:
        roomy = _sparse_cli(
            _judge_env(sparse, server.base), "--limit", "15", "--check", "0", "--token-budget", "1000000"
        )
        sent = len(server.behaviour.requests)
    assert roomy.returncode == 0, roomy.stderr
    stopped = next(line for line in roomy.stdout.splitlines() if line.startswith("stopped: "))
    assert stopped in {"stopped: settled", "stopped: limit reached", "stopped: queue empty"}
    assert sent <= 15 and (sent == 15) == (stopped == "stopped: limit reached")
    assert any(line.startswith(("About ", "Settled: ")) for line in roomy.stdout.splitlines())
    with RerankApis(Behaviour(key=KEY)) as server:
        refused = _cli(_judge_env(handbook, server.base), "--token-budget", "0")
    assert refused.returncode == 2
    assert "The budget (--token-budget) is a whole number of tokens above 0" in refused.stderr


def test_a_person_overrides_the_judge_in_one_rating(handbook: dict[str, str]) -> None:
    with RerankApis(Behaviour(key=KEY)) as server:
        settings = _settings(_judge_env(handbook, server.base))
        run = grade_pairs(
            settings, COLLECTION,
            [JudgePair(query_id="x", query="expense claims deadline", doc_id="expenses-policy.md#2", passage=PASSAGE)],
        )  # fmt: skip
    judged = load_judgments(settings, COLLECTION)
    assert judged is not None
    qid, grades = judged.for_query("expense claims deadline") or ("", {})
    assert run.grades[0].grade == rubric_grade("expense claims deadline", PASSAGE) == grades["expenses-policy.md#2"]
    rate(settings, COLLECTION, "expenses-policy.md#2", 0, query="expense claims deadline", rater="bob")
    assert load_judgments(settings, COLLECTION).qrels[qid]["expenses-policy.md#2"] == 0  # the person's grade counts
    assert rater_agreement(judgment_rows(settings, COLLECTION)).pairs  # both still in the history


def test_every_pair_given_is_asked_none_dropped_without_a_word(handbook: dict[str, str]) -> None:
    """grade_pairs cut what it was given at 500 pairs without a word (the demo judge's figures read "155 without
    a grade" for 655 pairs asked): every pair given is asked and graded."""
    from workbench.vocab import MAX_JUDGE_PAIRS

    pairs = [
        JudgePair(query_id=f"q{i}", query=f"expense claims deadline number {i}", doc_id="expenses-policy.md#2",
                  passage=PASSAGE)
        for i in range(MAX_JUDGE_PAIRS + 3)
    ]  # fmt: skip
    with RerankApis(Behaviour(key=KEY)) as server:
        run = grade_pairs(_settings(_judge_env(handbook, server.base)), COLLECTION, pairs)
    assert len(run.grades) == len(pairs) and run.stored == len(pairs) and run.failed == 0


@pytest.mark.parametrize(
    ("answer", "grade"),
    [
        ('{"grade": 2, "reason": "answers it"}', 2),
        ('Sure! ```json\n{"grade": "3", "reason": "exact"}\n```', 3),
        ("Grade: 1 - it mentions leave only in passing", 1),
        ('{"grade":0,"reason":"a {brace} and a control\x19character"}', 0),  # a small model's, held to the schema
    ],
)
def test_answers_in_the_shapes_models_write_are_read(answer: str, grade: int) -> None:
    assert read_answer(answer)[0] == grade
    if "brace" in answer:  # the whole reason, its control character shown as a space
        assert read_answer(answer)[1] == "a {brace} and a control character"


@pytest.mark.parametrize("answer", ["I would rather not say.", '{"grade": 7}', '{"grade": "high"}', ""])
def test_an_answer_without_a_grade_on_the_scale_is_refused(answer: str) -> None:
    with pytest.raises(ValueError, match="no grade from 0 to 3"):
        read_answer(answer)


def test_a_refused_key_a_server_that_is_down_and_no_judge_set_are_said_plainly(handbook: dict[str, str]) -> None:
    wrong = "sk-wrong-key-0b1c2d3e4f5a"
    argv = ["judgments", "llm", COLLECTION, "--limit", "2", "--check", "0"]  # run here, as a shell with the env would
    with RerankApis(Behaviour(key=KEY)) as server:
        code, out, said = cli_here(argv, _judge_env(handbook, server.base, key=wrong))
    assert code != 0 and "refused the key (401)" in said and "OPENAI_API_KEY" in said
    assert wrong not in out + said and "Traceback" not in said

    code, out, said = cli_here(argv, _judge_env(handbook, f"http://127.0.0.1:{free_port()}"))
    assert code != 0 and "did not answer" in said and "WORKBENCH_JUDGE_URL" in said
    assert KEY not in out + said and "Traceback" not in said

    code, _, said = cli_here(argv[:5], handbook)
    assert code != 0 and "WORKBENCH_JUDGE_MODEL" in said and "Traceback" not in said
    with pytest.raises(ConfigError, match="no key is set"):
        grade_pairs(_settings({**handbook, "WORKBENCH_JUDGE_MODEL": "gpt-4o-mini"}), COLLECTION, [])


def test_an_unreadable_answer_is_reported_and_not_stored(handbook: dict[str, str]) -> None:
    with RerankApis(Behaviour(key=KEY)) as server:
        settings = _settings(_judge_env(handbook, server.base))
        run = grade_pairs(
            settings, COLLECTION,
            [JudgePair(query_id="g", query="garble this", doc_id="leave-policy.md#1", passage="Annual leave.")],
        )  # fmt: skip
    assert run.grades[0].grade is None and "no grade from 0 to 3" in run.grades[0].error and run.failed == 1
    assert not [r for r in judgment_rows(settings, COLLECTION) if r.query_id == typed_query_id("garble this")]


def test_answers_with_no_choice_or_odd_usage_fail_their_pair_only(handbook: dict[str, str]) -> None:
    """An endpoint answering one pair with `choices: []` and another with usage figures that are not numbers: those
    pairs are reported by name, nothing of theirs is stored, and the run's other grade is kept."""
    with RerankApis(Behaviour(key=KEY)) as server:
        settings = _settings(_judge_env(handbook, server.base))
        run = grade_pairs(
            settings, COLLECTION,
            [
                JudgePair(query_id=qid, query=query, doc_id="leave-policy.md#1", passage="Annual leave.")
                for qid, query in [("e", "no choices here"), ("o", "odd usage of leave"), ("a", "annual leave")]
            ],
        )  # fmt: skip
    empty, odd, good = run.grades
    for failed in (empty, odd):
        assert failed.grade is None and "not an OpenAI chat completion" in failed.error and KEY not in failed.error
    assert good.grade == rubric_grade("annual leave", "Annual leave.") and run.failed == 2 and run.stored == 1
    stored = {r.query_id for r in judgment_rows(settings, COLLECTION)}
    assert typed_query_id("annual leave") in stored
    assert not {typed_query_id("no choices here"), typed_query_id("odd usage of leave")} & stored

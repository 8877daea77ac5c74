"""A judge that knows its limits: its decision agreement and resolution floor against hand computations, the
same-lineage refusal and its override on a constructed set of grades in the real judgments store, and the whole
path a user takes: a person grades, the LLM judge (a local OpenAI-compatible server grading by a fixed rubric)
grades through `workbench judgments llm`, then `workbench eval` and `workbench gate` state the judge's limits, each
figure equal to pytrec_eval's on the kept runs and a t-interval written out here."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from tests.conftest import tiny_env
from tests.rerank_apis import Behaviour, RerankApis
from workbench.config import Settings
from workbench.engine import Engine
from workbench.evaluation.judge_limits import decide, decision_agreement, resolution_floor
from workbench.evaluation.verdict import measured_verdict, with_judge_limits
from workbench.experiments.store import open_experiment_store
from workbench.judgments import judgment_rows, load_judgments, rate
from workbench.lineage import model_lineage
from workbench.paths import demo_dir
from workbench.vocab import GATE_EXIT_CODES

T_975_3 = 3.182446305284263  # Student's t, 97.5th percentile, 3 degrees of freedom (a printed table's value)


def test_the_floor_and_the_decision_against_hand_computations() -> None:
    judge, people = [0.1, 0.2, 0.0, 0.3], [0.1, 0.1, 0.1, 0.1]
    # errors 0, .1, -.1, .2: mean .05, sd sqrt(.05 / 3), the interval's far end .05 + t(3) * sd / 2
    assert resolution_floor(judge, people) == pytest.approx(0.05 + T_975_3 * math.sqrt(0.05 / 3) / 2)
    assert resolution_floor(people, people) == 0.0
    assert resolution_floor([0.1], [0.0]) is None  # one query: no spread to measure
    assert decide([0.1, 0.1, 0.1]) == "helps" and decide([-0.2, -0.21, -0.19, -0.2]) == "hurts"
    assert decide([0.3, -0.1, 0.0, 0.05]) == "none"  # mean .0625, its interval crosses zero
    steady = [0.2, 0.21, 0.19, 0.2, 0.22]
    assert decision_agreement(steady, steady) == 1.0
    assert decision_agreement([-x for x in steady], steady) == 0.0  # the judge says hurts where people say helps
    # a mixed case against a loop written out: the same resamples, each decided by hand
    judge = [0.05, -0.02, 0.1, 0.0, 0.08, -0.05, 0.12]
    people = [0.04, 0.01, 0.02, -0.03, 0.1, 0.0, 0.02]
    picks = np.random.default_rng(0).integers(0, len(judge), size=(2000, len(judge)))

    def by_hand(values: list[float]) -> str:
        n = len(values)
        mean = sum(values) / n
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
        half = sd / math.sqrt(n) * 2.446911848791681  # t(6) at 97.5 %
        return "helps" if mean - half > 0 else "hurts" if mean + half < 0 else "none"

    same = sum(by_hand([judge[i] for i in row]) == by_hand([people[i] for i in row]) for row in picks)
    assert decision_agreement(judge, people) == pytest.approx(same / 2000)


def test_lineages_by_name_and_by_a_folders_config(tmp_path: Path) -> None:
    assert model_lineage("Qwen/Qwen3-Reranker-0.6B") == model_lineage("qwen2.5-72b-instruct") == "Qwen"
    assert model_lineage("mixedbread-ai/mxbai-rerank-base-v2") == "Qwen"  # a Qwen2 underneath
    assert model_lineage("BAAI/bge-reranker-v2-gemma") == model_lineage("gemma-3-27b-it") == "Gemma / Gemini"
    assert model_lineage("gpt-4o-mini") == "GPT (OpenAI)" and model_lineage("meta-llama/Llama-3.1-8B") == "Llama"
    assert model_lineage("cross-encoder/ms-marco-MiniLM-L6-v2") == "BERT-style encoder"
    assert model_lineage("my-reranker") is None and model_lineage(None) is None
    folder = tmp_path / "my-reranker"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "qwen3"}), encoding="utf-8")
    assert model_lineage(str(folder)) == "Qwen"  # the folder's name says nothing; its config does


def _graded(tmp_path: Path, *, judge_agrees: bool, allow: bool = False) -> tuple[Settings, list[str]]:
    """Six queries with documents d1-d4. A person graded d2-d4 (0) of all six and d1 of q1-q3; the judge graded d1
    and d4 of all six: as the person did where it agrees, else d1 0 and d4 3 on q1-q3."""
    settings = Settings(data_dir=tmp_path, allow_same_lineage_judge=allow)
    texts = [f"question number {i}" for i in range(1, 7)]
    for i, text in enumerate(texts, 1):
        for doc in ("d2", "d3", "d4"):
            rate(settings, "graded", doc, 0, query=text, rater="ann")
        if i <= 3:
            rate(settings, "graded", "d1", 3, query=text, rater="ann")
        agrees = judge_agrees or i > 3
        for doc, grade in (("d1", 3 if agrees else 0), ("d4", 0 if agrees else 3)):
            rate(settings, "graded", doc, grade, query=text, rater="llm:qwen2.5-72b-instruct", source="llm")
    return settings, texts


def _verdict(settings: Settings, candidate: str):  # type: ignore[no-untyped-def]
    judgments = load_judgments(settings, "graded")
    assert judgments is not None and judgments.sources is not None
    before = {q: {"d4": 4.0, "d3": 3.0, "d2": 2.0, "d1": 1.0} for q in judgments.qrels}  # d1 last
    after = {q: {"d1": 4.0, "d2": 3.0, "d3": 2.0, "d4": 1.0} for q in judgments.qrels}  # d1 first
    said = measured_verdict(judgments.qrels, before, after, 10).verdict
    return said, with_judge_limits(said, judgments.sources, judgments.qrels, before, after, 10, candidate)


def test_a_same_lineage_helps_is_refused_unless_allowed(tmp_path: Path) -> None:
    settings, _ = _graded(tmp_path / "refused", judge_agrees=True)
    plain, judged = _verdict(settings, "Qwen/Qwen3-Reranker-0.6B")
    assert plain.direction == "helps" and judged.direction == "unknown"
    limits = judged.judge
    # the three d1 grades of q4-q6 are the judge's alone; without them only q1-q3 have a relevant document, and
    # three queries cannot reach p < 0.05 (the randomization test's smallest p is 2/8)
    assert limits.judge_grades_counted == 3 and limits.direction_without_judge == "none" and limits.rests_on_judge
    assert limits.same_lineage and limits.judge_lineage == limits.candidate_lineage == "Qwen"
    assert judged.words().startswith("Inconclusive under LLM judgments") and "own lineage" in judged.words()
    # the judge agrees with the person on every shared pair: floor 0, every resample decided alike
    assert limits.shared_queries == 3 and limits.resolution_floor == 0.0 and limits.decision_agreement == 1.0

    other = _verdict(settings, "cross-encoder/ms-marco-MiniLM-L6-v2")[1]
    assert other.direction == "helps" and other.judge.holds and not other.judge.same_lineage
    assert "qwen2.5-72b-instruct" in other.words() and "BERT-style encoder" in other.words()

    settings, _ = _graded(tmp_path / "allowed", judge_agrees=True, allow=True)
    allowed = _verdict(settings, "Qwen/Qwen3-Reranker-0.6B")[1]
    assert allowed.direction == "helps" and "allowed by the user" in allowed.words()


def test_a_change_within_the_judges_floor_is_inconclusive(tmp_path: Path) -> None:
    settings, _ = _graded(tmp_path, judge_agrees=False)
    plain, judged = _verdict(settings, "cross-encoder/ms-marco-MiniLM-L6-v2")
    assert plain.direction == "helps" and judged.direction == "unknown"
    limits = judged.judge
    # on q1-q3 the person's change is +(1 - 1/log2(5)) and the judge's -(1 - 1/log2(5)): a constant error of twice
    # that, so the floor is exactly that error and no resample is decided alike
    gain = 1 - 1 / math.log2(5)
    assert limits.resolution_floor == pytest.approx(2 * gain) and limits.decision_agreement == 0.0
    assert limits.decision_people == "helps" and limits.decision_judge == "hurts"
    assert abs(judged.delta) < limits.resolution_floor and "within its resolution floor" in judged.words()


# The path a user takes, through the CLI.

COLLECTION = "handbook"


@pytest.fixture(scope="module")
def judged_handbook(tmp_path_factory: pytest.TempPathFactory, tiny_models: dict[str, Path]) -> dict[str, str]:
    """The demo's documents with the tiny models; a person's grades of eight queries (six pairs each), then the
    LLM judge's grades of the evaluation's judging queue and of pairs the person graded."""
    env = tiny_env(tmp_path_factory.mktemp("judge-limits"), tiny_models)
    settings = Settings(
        data_dir=env["WORKBENCH_DATA_DIR"], embedding_model=env["WORKBENCH_EMBEDDING_MODEL"],
        reranker_model=env["RERANKER_MODEL"], offline=True,
    )  # fmt: skip
    Engine(settings).ingest(demo_dir() / "docs", COLLECTION)
    queries = {q["_id"]: q["text"] for q in map(json.loads, (demo_dir() / "queries.jsonl").read_text().splitlines())}
    rows: dict[str, list[tuple[str, int]]] = {}
    for line in (demo_dir() / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, doc, grade = line.split("\t")
        rows.setdefault(qid, []).append((doc, int(grade)))
    for qid in list(rows)[:8]:
        for doc, grade in rows[qid][:6]:
            rate(settings, COLLECTION, doc, grade, query=queries[qid], rater="ann")
    with RerankApis(Behaviour(key="sk-local")) as server:
        judge = {"WORKBENCH_JUDGE_MODEL": "qwen2.5-7b-instruct", "WORKBENCH_JUDGE_URL": f"{server.base}/openai/v1",
                 "OPENAI_API_KEY": "sk-local"}  # fmt: skip
        done = _cli(env | judge, "judgments", "llm", COLLECTION, "-k", "10", "--limit", "60", "--check", "40")
        assert done.returncode == 0, done.stderr
    return env


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).parent / "workbench"), *args]
    return subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, timeout=300)


def _ndcg_changes(qrels: dict, before: dict, after: dict, queries: list[str]) -> list[float]:
    """nDCG@10 after minus before by pytrec_eval, with each run's order made explicit (rank scores, ties by id
    never arise), 0 where the query has nothing relevant."""

    def ranked(run: dict) -> dict:
        return {q: {d: float(len(docs) - i) for i, d in enumerate(sorted(docs, key=lambda d: -docs[d]))}
                for q, docs in run.items()}  # fmt: skip

    scorer = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in queries}, {"ndcg_cut.10"})
    b = scorer.evaluate({q: ranked(before)[q] for q in queries})
    a = scorer.evaluate({q: ranked(after)[q] for q in queries})
    return [a[q]["ndcg_cut_10"] - b[q]["ndcg_cut_10"] if q in a else 0.0 for q in queries]


def test_eval_and_gate_state_the_judges_limits_as_computed_independently(judged_handbook: dict[str, str]) -> None:
    env = judged_handbook
    evaluated = _cli(env, "eval", "--collection", COLLECTION, "-k", "10", "-n", "5", "--depth", "none", "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    report = json.loads(evaluated.stdout)
    gate = _cli(env, "gate", "--collection", COLLECTION, "-k", "10", "-n", "5", "--json")
    decision = json.loads(gate.stdout)
    assert gate.returncode == decision["exit_code"] == GATE_EXIT_CODES[decision["outcome"]], gate.stderr

    settings = Settings(data_dir=env["WORKBENCH_DATA_DIR"])
    rows = judgment_rows(settings, COLLECTION)
    kept = open_experiment_store(settings).get(decision["candidate_experiment"])
    people = {}
    judge = {}
    for row in rows:  # oldest first: the latest grade of each pair by each side
        side = judge if row.source == "llm" else people
        side.setdefault(row.query_id, {})[row.doc_id] = row.grade
    judge_alone = sum(1 for q in kept.qrels for d in judge.get(q, {}) if d not in people.get(q, {}))
    both = {q: sorted(set(people.get(q, {})) & set(judge.get(q, {}))) for q in kept.qrels}
    shared_people = {q: {d: people[q][d] for d in docs} for q, docs in both.items() if docs}
    shared_judge = {q: {d: judge[q][d] for d in docs} for q, docs in both.items() if docs}
    shared = [q for q in shared_people if max(shared_people[q].values()) > 0 or max(shared_judge[q].values()) > 0]
    assert judge_alone > 0 and len(shared) >= 2  # the judge graded the queue and pairs ann graded
    errors = np.subtract(
        _ndcg_changes(shared_judge, kept.before_run, kept.after_run, shared),
        _ndcg_changes(shared_people, kept.before_run, kept.after_run, shared),
    )
    t = {2: 4.302652729911275, 3: 3.182446305284263, 4: 2.776445105197793, 5: 2.570581835636314,
         6: 2.446911848791681, 7: 2.364624251010299}[len(shared) - 1]  # fmt: skip
    far_end = abs(errors.mean()) + t * errors.std(ddof=1) / math.sqrt(len(shared))

    limits = report["verdict"]["judge"]
    assert limits["judge_models"] == ["qwen2.5-7b-instruct"] and limits["judge_lineage"] == "Qwen"
    assert limits["candidate"] == "tiny-reranker" and limits["candidate_lineage"] == "BERT-style encoder"
    assert limits["judge_grades_counted"] == judge_alone and limits["shared_queries"] == len(shared)
    assert limits["resolution_floor"] == pytest.approx(far_end, abs=1e-9)
    # the gate against the first stage states the same limits and decides by them
    resolves = next(c for c in decision["checks"] if c["name"] == "judge can resolve it")
    assert f"±{far_end:.4f}" in resolves["detail"]
    if limits["holds"]:
        assert resolves["passed"]
    else:
        assert not resolves["passed"] and decision["outcome"] == "inconclusive"
        assert report["verdict"]["direction"] == "unknown"
        assert decision["reason"] == limits["reason"]

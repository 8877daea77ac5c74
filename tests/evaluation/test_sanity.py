"""Issue 54, item 2: before any verdict, did the reranker run as intended? Five planted failures, each a reranker
kind built in the test around the real QA cross-encoder (its scores made constant, saturated and rounded to bf16,
replaced by the first stage's order, put through the sigmoid twice, or ranked in separate blocks of 5 as a listwise
query split across calls), are each flagged on the demo, and the
verdict then never says "helps" or "hurts"; the shared rerankers, run as they should run, raise none."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from workbench.engine import Engine
from workbench.evaluation import run_evaluation
from workbench.evaluation.sanity import CUT_FIRES, run_checks
from workbench.evaluation.sequential import MIN_QUERIES, SequentialPlan
from workbench.evaluation.service import EvaluationOptions, evaluate_dataset
from workbench.experiments.gate import RAN_AS_INTENDED, run_gate
from workbench.rerankers import factory
from workbench.rerankers.base import BaseReranker
from workbench.services.demo import demo_dataset
from workbench.types import SearchPlan

pytestmark = pytest.mark.slow


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _bf16(value: float) -> float:
    return float(torch.tensor(value, dtype=torch.float32).to(torch.bfloat16).to(torch.float32))


# name -> (score scale, what becomes of the model's logits for one query's texts)
PLANTED: dict[str, tuple[str, Callable[[list[float]], list[float]]]] = {
    "constant": ("probability", lambda logits: [0.5] * len(logits)),
    "bf16-saturated": ("probability", lambda logits: [_bf16(_sigmoid(x + 8.0)) for x in logits]),
    "first-stage-order": ("logit", lambda logits: [float(len(logits) - i) for i in range(len(logits))]),
    "double-sigmoid": ("probability", lambda logits: [_sigmoid(_sigmoid(x)) for x in logits]),
    "listwise-split": ("order", lambda logits: _ranked_in_blocks(logits, 5)),
}
EXPECTED = {"constant": "constant", "bf16-saturated": "tied", "first-stage-order": "identity",
            "double-sigmoid": "squashed", "listwise-split": "split"}  # fmt: skip


def _ranked_in_blocks(logits: list[float], block: int) -> list[float]:
    """A listwise query split across calls: each block of `block` first-stage candidates ranked on its own (by the
    model's logits), the blocks kept in first-stage order, answered as an order (minus the rank)."""
    ranks = [0.0] * len(logits)
    for start in range(0, len(logits), block):
        inside = sorted(range(start, min(start + block, len(logits))), key=lambda i: -logits[i])
        for place, i in enumerate(inside, start=start + 1):
            ranks[i] = -float(place)
    return ranks


class Planted(BaseReranker):
    """The real cross-encoder with its scores changed as a faulty deployment changes them."""

    def __init__(self, model_id: str, inner: BaseReranker, cache) -> None:  # type: ignore[no-untyped-def]
        super().__init__(model_id, cache)
        self.inner = inner
        self.fault = model_id.removeprefix("planted:")
        self.score_scale, self.change = PLANTED[self.fault]  # type: ignore[assignment]
        self.backend = f"planted {self.fault}"

    def predict(self, query: str, texts: list[str], deadline: float | None = None) -> list[float]:
        """The fault applied to the real model's logits, each pair's logit read from the inner reranker's score
        cache once it was scored (the planted tests and the session's demo engine share it: the same pairs are
        not scored again for every fault)."""
        self.counted(documents=len(texts))
        return self.change(self.inner.score(query, texts, deadline=deadline)[0])

    def score(
        self, query: str, texts: list[str], use_cache: bool = True, deadline: float | None = None
    ) -> tuple[list[float], int]:
        """No score cache: a planted score may depend on a text's place in the list (the first stage's order)."""
        return self.predict(query, texts, deadline), 0


@pytest.fixture
def planted_engine(demo_engine: Engine, real_reranker_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Engine:
    inner = demo_engine.reranker(str(real_reranker_dir))

    def build(model_id, settings, cache, tokens, progress):  # type: ignore[no-untyped-def]
        return Planted(model_id, inner, cache)

    kind = factory.RerankerKind("planted", lambda model_id: model_id.startswith("planted:"), build)
    monkeypatch.setattr(factory, "KINDS", (kind, *factory.KINDS))
    return demo_engine


@pytest.mark.parametrize("fault", sorted(PLANTED))
@pytest.mark.parametrize("retrieval", ["dense", "bm25"])
def test_each_planted_failure_is_named_and_no_verdict_is_given(
    planted_engine: Engine, fault: str, retrieval: str
) -> None:
    plan = SearchPlan(collection="demo", retrieval=retrieval, k=20, top_n=10, reranker=f"planted:{fault}")
    report = run_evaluation(planted_engine, demo_dataset("test"), plan, max_queries=20)
    verdict = report.verdict
    assert verdict is not None and verdict.direction == "unknown"
    assert EXPECTED[fault] in [check.name for check in verdict.not_as_intended], verdict.not_as_intended
    words = verdict.words()
    assert words.startswith("The reranker did not run as intended") and "helps" not in words and "hurts" not in words
    assert "did not run as intended" in report.to_markdown()
    assert report.summary()["verdict"]["not_as_intended"]


def test_a_reranker_that_ties_everything_changes_no_figure(planted_engine: Engine) -> None:
    """The issue's own case: a constant-score reranker was reported as "hurts" (ties broken by document id)."""
    plan = SearchPlan(collection="demo", retrieval="dense", k=10, top_n=10, reranker="planted:constant")
    report = run_evaluation(planted_engine, demo_dataset("test"), plan, max_queries=8)
    assert report.after == report.before  # every metric, to the last digit
    assert all(o.before == o.after for o in report.per_query)


@pytest.mark.parametrize("retrieval", ["dense", "bm25", "hybrid"])
@pytest.mark.parametrize("reranker", ["minilm-l6-qa-reranker", "minilm-l6-scifact-reranker"])
def test_the_shared_rerankers_run_as_they_should_raise_no_alarm(
    demo_engine: Engine, shared_dir: Path, retrieval: str, reranker: str
) -> None:
    plan = SearchPlan(
        collection="demo", retrieval=retrieval, k=50, top_n=10, reranker=str(shared_dir / "models" / reranker)
    )
    report = run_evaluation(demo_engine, demo_dataset("test"), plan)
    assert report.verdict is not None and report.verdict.not_as_intended == []
    assert run_checks(report.candidates, 10, report.score_scale) == []


def test_the_gate_is_inconclusive_with_the_reason_while_a_check_fires(planted_engine: Engine) -> None:
    plan = SearchPlan(collection="demo", retrieval="bm25", k=20, top_n=10, reranker="planted:double-sigmoid")
    decision = run_gate(planted_engine, demo_dataset("test"), plan, source="demo", max_queries=10)
    assert decision.outcome == "inconclusive" and decision.exit_code == 3
    assert decision.reason.startswith("The reranker did not run as intended")
    assert decision.checks[0].name == RAN_AS_INTENDED and "<skipped" in decision.to_junit()


def test_stopping_when_settled_stops_at_the_first_look_that_finds_a_fault(planted_engine: Engine) -> None:
    """The stopping rule never says an interval settled "helps" or "hurts" while the run checks fire: it stops
    at the first look from MIN_QUERIES (10), naming the fault, and the report's verdict says the same."""
    plan = SearchPlan(collection="demo", retrieval="dense", k=20, top_n=10, reranker="planted:first-stage-order")
    report = run_evaluation(planted_engine, demo_dataset("test"), plan, sequential=SequentialPlan(seed=3))
    stop = report.sequential
    assert stop is not None and stop.settled == "not as intended" and stop.queries_used == report.queries == MIN_QUERIES
    assert "moved nothing" in stop.fault and "did not run as intended" in stop.words()
    assert "helps" not in stop.words() and "hurts" not in stop.words()
    assert report.verdict is not None and report.verdict.direction == "unknown"
    assert [c.name for c in report.verdict.not_as_intended] == ["identity"]


def test_a_reranker_that_never_reads_the_answers_is_named_and_gets_no_verdict(
    demo_engine: Engine, real_reranker_dir: Path
) -> None:
    """The fifth planted failure: passages past the window. The shared cross-encoder cut at 24 tokens reads the
    query and a few words of each passage; at its own 256 the demo's passages fit and nothing fires."""
    from transformers import AutoTokenizer

    plan = SearchPlan(collection="demo", retrieval="dense", k=20, top_n=10, reranker=str(real_reranker_dir))
    short = Engine(demo_engine.settings.model_copy(update={"reranker_max_length": 24}))
    report = evaluate_dataset(
        short, demo_dataset("test"), plan, max_queries=20, options=EvaluationOptions(ingest_missing=False)
    )
    assert report.verdict is not None and report.verdict.direction == "unknown"
    assert [check.name for check in report.verdict.not_as_intended] == ["cut"]
    assert report.verdict.words().startswith("The reranker did not run as intended: a relevant passage lost")
    assert report.recommendation is None or "measurably better" not in report.recommendation.words()
    # one query's figure by hand: the tokenizer's own longest-first cut of each relevant candidate at 24 tokens
    tokenizer = AutoTokenizer.from_pretrained(str(real_reranker_dir))
    dataset = demo_dataset("test")
    first = report.diagnosis.per_query[0]
    result = short.search(first.query, plan)
    relevant = {d for d, g in dataset.qrels[first.query_id].items() if g > 0}
    shares = []
    for chunk in result.candidates:
        if str(chunk.metadata.get("document_id", chunk.id)) in relevant:
            whole = len(tokenizer(chunk.text, add_special_tokens=False)["input_ids"])
            kept = tokenizer(first.query, chunk.text, truncation="longest_first", max_length=24)["token_type_ids"]
            shares.append(1 - (sum(kept) - 1) / whole)  # the second segment's tokens, less its [SEP]
    assert first.relevant_cut_share == pytest.approx(max(shares))

    full = evaluate_dataset(
        demo_engine, demo_dataset("test"), plan, max_queries=20, options=EvaluationOptions(ingest_missing=False)
    )
    assert full.verdict is not None and full.verdict.not_as_intended == []
    assert max(d.relevant_cut_share or 0.0 for d in full.diagnosis.per_query) < CUT_FIRES


def test_doctor_names_the_run_check_that_fires_and_exits_3(
    planted_engine: Engine, demo_cli: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    """`workbench doctor --checks demo` on any reranker kind: a constant one is named, a clean one passes."""
    from workbench.cli import main

    argv = ["doctor", "--checks", "demo", "-k", "10", "--max-queries", "20"]
    assert main([*argv, "--reranker", "planted:constant"]) == 3
    said = capsys.readouterr().out
    assert "run check 'constant' fired on 20 of 20 queries" in said and "did not run as intended" in said
    assert main([*argv, "--reranker", "planted:first-stage-order", "--json"]) == 3
    assert [check["name"] for check in json.loads(capsys.readouterr().out)["checks"]] == ["identity"]
    assert main(argv) == 0  # the shared QA cross-encoder, as configured
    assert "none of the run checks fired (constant, tied, identity, split, squashed, cut, served)" in (
        capsys.readouterr().out
    )
    assert main([*argv, "--parity", "demo"]) == 2
    assert "one of --parity and --checks" in capsys.readouterr().err


def test_scores_that_carry_no_relevance_are_said_beside_the_verdict(
    tiny_models: dict[str, Path], tmp_path: Path, demo_engine: Engine
) -> None:
    """Issue 68, item 5: a reranker whose scores are noise (a random tiny cross-encoder, as a served model answering
    seeded random scores would be) gets a verdict with a line saying its scores do not separate the judged relevant
    documents from the others; the real QA cross-encoder's do, and gets no such line."""
    from workbench.config import Settings
    from workbench.evaluation.service import evaluate_dataset
    from workbench.services.demo import demo_dataset, ensure_demo_collection

    noise = Engine(Settings(data_dir=tmp_path, embedding_model=str(tiny_models["embedder"]), offline=True,
                            reranker_model=str(tiny_models["reranker"]), reranker_backend="torch"))  # fmt: skip
    ensure_demo_collection(noise)
    dataset = demo_dataset("test")
    report = evaluate_dataset(noise, dataset, noise.plan(collection="demo", retrieval="bm25", k=20), depth=())
    said = [w for w in report.warnings if "do not measurably separate" in w]
    assert len(said) == 1 and "AUC 0." in said[0], report.warnings
    real = evaluate_dataset(demo_engine, dataset, demo_engine.plan(collection="demo", retrieval="bm25", k=20), depth=())
    assert not [w for w in real.warnings if "do not measurably separate" in w]

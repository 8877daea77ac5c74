"""The demo's judgments are complete at every depth the workbench offers: for each first stage (and each fusion at
its default weight) and both shipped
rerankers, the top 10 before and after reranking at k = 10, 20, 50 and 100 is judged, so judged@10 is exactly 1.0.
Judged@10 is computed by ir-measures on the runs the evaluation builds (one search at k = 100 per query serves
every depth: the candidates at k are its first k, with the same scores)."""

from __future__ import annotations

from pathlib import Path

import ir_measures
import pytest
from ir_measures import Judged

from workbench.config import Settings
from workbench.engine import Engine
from workbench.services.demo import DEMO_POOLED_FIRST_STAGES, demo_dataset, demo_pool_runs
from workbench.vocab import DEPTH_SWEEP

RERANKERS = ("minilm-l6-qa-reranker", "minilm-l6-scifact-reranker")


@pytest.fixture(scope="module")
def pool_engine(demo_engine: Engine, shared_dir: Path) -> Engine:
    """The demo collection of the session's demo engine, with both shipped rerankers on their reference backend."""
    settings = Settings(
        data_dir=demo_engine.settings.data_dir, models_dir=str(shared_dir / "models"), reranker_backend="torch",
        offline=True, score_store=True,
    )  # fmt: skip
    return Engine(settings)


def test_the_pool_holds_every_first_stage_the_workbench_offers() -> None:
    """Six pooled first stages: dense, BM25 and hybrid under each of its fusions at their default weights."""
    assert len(DEMO_POOLED_FIRST_STAGES) == 6 and len(set(DEMO_POOLED_FIRST_STAGES)) == 6
    assert {mode for mode, _ in DEMO_POOLED_FIRST_STAGES} == {"dense", "bm25", "hybrid"}


# one test per reranker and first stage (a minute of scoring at most each): the engine's score store keeps each
# pair scored once for the module, so a later stage scores only the pairs an earlier one did not reach; the first
# stage, dense, scores every pair it finds, so its queries are taken in two halves (judged@10 is 1.0 over the 50
# queries exactly when it is 1.0 over each half: a mean of per-query fractions, none above 1)
QUERY_HALVES = {"queries-1-to-25": slice(0, 25), "queries-26-to-50": slice(25, None)}
POOL_CHECKS = [
    pytest.param(model, stage, queries, id="-".join([model, *filter(None, stage), *([half] if half else [])]))
    for model in RERANKERS
    for stage in DEMO_POOLED_FIRST_STAGES
    for half, queries in (QUERY_HALVES.items() if stage == ("dense", None) else [("", slice(None))])
]  # fmt: skip


@pytest.mark.parametrize(("model", "stage", "queries"), POOL_CHECKS)
def test_judged_at_10_is_exactly_one_at_every_depth(
    pool_engine: Engine, model: str, stage: tuple, queries: slice
) -> None:
    dataset = demo_dataset()
    asked = list(dataset.queries.items())[queries]
    assert len(asked) == (len(dataset.queries) if queries == slice(None) else len(dataset.queries) // 2)
    runs: dict[tuple[str, int, str], dict[str, dict[str, float]]] = {}
    for qid, text in asked:
        for name, k, _, before, after in demo_pool_runs(pool_engine, text, model, stages=[stage]):
            runs.setdefault((name, k, "before"), {})[qid] = before
            runs.setdefault((name, k, "after"), {})[qid] = after
    qrels = {qid: dataset.qrels[qid] for qid, _ in asked if qid in dataset.qrels}  # the asked queries' only
    judged = {where: ir_measures.calc_aggregate([Judged @ 10], qrels, run)[Judged @ 10] for where, run in runs.items()}
    # issue 52: hybrid by a named fusion at k = 20 read judged@10 0.992 (the pool predated the named fusions)
    assert len(judged) == len(DEPTH_SWEEP) * 2
    assert {where: value for where, value in judged.items() if value != 1.0} == {}


@pytest.mark.parametrize("retrieval", ["dense", "bm25", "hybrid"])
def test_eval_demo_as_a_user_runs_it_is_fully_judged(
    demo_cli: Engine, retrieval: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 69, item 10, through the CLI as the issue ran it: `workbench eval demo -k 20 --retrieval hybrid` (the
    defaults otherwise, torch) read judged@10 0.992 before reranking and after while the pool test passed."""
    import json

    from workbench.cli import main

    monkeypatch.setenv("RERANKER_BACKEND", "torch")
    assert main(["eval", "demo", "-k", "20", "--retrieval", retrieval, "--depth", "none", "--no-save", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["before"]["judged@10"], summary["after"]["judged@10"]) == (1.0, 1.0), retrieval

"""The verdict as served: `eval --rerank-budget-ms` scores a query whose reranking took longer than the budget at
its first-stage order, as a fail-open service serves it, and its nDCG@10 as served equals pytrec_eval on that run
made by hand (those queries in first-stage order, the rest reranked)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from tests.conftest import tiny_env
from tests.rerank_apis import Behaviour, RerankApis
from workbench.cli import main
from workbench.config import Settings
from workbench.engine import Engine
from workbench.evaluation import Dataset

SLOW = "slowly"
TOPICS = ["herons", "oaks", "rivers", "glaciers", "pensions", "leave"]


def _beir_folder(folder: Path) -> Path:
    """30 passages on six topics, 12 judged queries: every third says SLOW (its reranking takes a second)."""
    (folder / "qrels").mkdir(parents=True)
    docs = {f"d{i}": f"Passage {i} about {TOPICS[i % 6]} and {TOPICS[(i * 7) % 6]} near place {i}." for i in range(30)}
    queries = {f"q{j}": f"{TOPICS[j % 6]} {TOPICS[(j + 1) % 6]}{f' {SLOW}' if j % 3 == 0 else ''}" for j in range(12)}
    qrels = [(f"q{j}", f"d{(j * 5 + m) % 30}", 1 + m % 2) for j in range(12) for m in range(3)]
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "text": t}) + "\n" for d, t in docs.items()))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items()))
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in qrels)
    )
    return folder


def _ranked(ids: list[str]) -> dict[str, float]:
    return {doc: float(len(ids) - rank) for rank, doc in enumerate(ids)}  # no ties: pytrec_eval keeps the order


@pytest.mark.live_server
def test_eval_under_a_rerank_budget_scores_the_slow_queries_at_their_first_stage_order(
    tmp_path: Path, tiny_models: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _beir_folder(tmp_path / "slowset")
    with RerankApis(Behaviour(key="k", hang_on=SLOW, hang_seconds=1.0)) as server:
        reranker = f"{server.base}/service"
        for name, value in {**tiny_env(tmp_path / "data", tiny_models), "RERANKER_MODEL": reranker}.items():
            monkeypatch.setenv(name, value)
        arguments = ["eval", str(folder), "-k", "10", "-n", "10", "--depth", "none", "--no-save", "--json"]
        assert main([*arguments, "--rerank-budget-ms", "500"]) == 0
        summary = json.loads(capsys.readouterr().out)
        served = summary["as_served"]

        # by hand: the same searches without the reranker and with it, folded into runs
        engine = Engine(Settings(**{"data_dir": tmp_path / "data", "embedding_model": str(tiny_models["embedder"]),
                                    "reranker_model": reranker, "offline": True}))  # fmt: skip
        dataset = Dataset.from_beir(folder)
        hand: dict[str, dict[str, float]] = {}
        for qid, text in dataset.queries.items():
            plan = engine.plan(collection="slowset", k=10, top_n=10, reranker=None if SLOW in text else "default")
            result = engine.search(text, plan)
            hand[qid] = _ranked([str(c.metadata.get("document_id", c.id)) for c in result.reranked])
        expected = pytrec_eval.RelevanceEvaluator(dataset.qrels, {"ndcg_cut.10"}).evaluate(hand)
        as_served = float(np.mean([expected[q]["ndcg_cut_10"] for q in dataset.qrels]))
        # the gate decides on the candidate as served: its change over the first stage is the run made by hand's
        assert main(["gate", str(folder), "-k", "10", "-n", "10", "--rerank-budget-ms", "500", "--json"]) in (0, 1, 3)
        decision = json.loads(capsys.readouterr().out)

        # tune weighs each cell as served, two searches at once: each cell's nDCG@10 as served is its run by hand's
        tuned_args = ["tune", str(folder), "--first-stage", "dense", "-k", "5", "-k", "10", "-n", "10",
                      "--timing-queries", "2", "--no-save", "--json", "--rerank-budget-ms", "500"]  # fmt: skip
        assert main([*tuned_args, "--serve-concurrency", "2"]) == 0
        tuned = json.loads(capsys.readouterr().out)
        by_k = {}
        for k in (5, 10):
            runs = {}
            for qid, text in dataset.queries.items():
                plan = engine.plan(collection="slowset", k=k, top_n=min(k, 10),
                                   reranker=None if SLOW in text else "default")  # fmt: skip
                ids = [str(c.metadata.get("document_id", c.id)) for c in engine.search(text, plan).reranked]
                runs[qid] = _ranked(ids)
            graded = pytrec_eval.RelevanceEvaluator(dataset.qrels, {"ndcg_cut.10"}).evaluate(runs)
            by_k[k] = float(np.mean([graded[q]["ndcg_cut_10"] for q in dataset.qrels]))
        assert main(["tune", str(folder), "--serve-concurrency", "2"]) == 2  # a load goes with a budget
        refused = capsys.readouterr().err
    slow = sorted(q for q, t in dataset.queries.items() if SLOW in t)
    first_stage = served["first_stage"]
    assert decision["comparison"]["b"]["ndcg@10"] == pytest.approx(as_served, abs=1e-9)
    assert decision["comparison"]["change"]["delta"] == pytest.approx(as_served - first_stage, abs=1e-9)
    said = next(c["detail"] for c in decision["checks"] if c["name"] == "as served")
    assert said.startswith("As served under a rerank budget of 500 ms") and "8 of 12 queries served reranked" in said
    assert sorted(served["over_budget"]) == slow and served["served_reranked"] == 12 - len(slow)
    assert served["as_served"] == pytest.approx(as_served, abs=1e-9)
    assert len({round(served[name], 6) for name in ("as_served", "first_stage", "always_reranked")}) == 3
    assert served["first_stage"] == pytest.approx(summary["before"]["ndcg@10"], abs=1e-12)
    assert served["always_reranked"] == pytest.approx(summary["after"]["ndcg@10"], abs=1e-12)
    assert served["vs_first_stage"]["delta"] == pytest.approx(as_served - served["first_stage"], abs=1e-9)
    assert served["share_reranked"] == pytest.approx(8 / 12)
    assert served["p95_ms"] < 1000  # a slow query counts the budget it was given up after, not the second it took
    assert served["words"].startswith("As served under a rerank budget of 500 ms: nDCG@10 ")

    assert tuned["rerank_budget_ms"] == 500 and tuned["serve_concurrency"] == 2
    for cell in tuned["cells"]:
        assert cell["served"]["as_served"] == pytest.approx(by_k[cell["k"]], abs=1e-9), cell["label"]
        assert cell["served"]["served_reranked"] == 8 and cell["served"]["concurrency"] == 2
        assert cell["reranking_change"] == cell["served"]["vs_first_stage"]  # the cell's verdict is as served
    best = max(tuned["cells"], key=lambda c: c["served"]["as_served"])
    assert tuned["best"] == best["label"] and "nDCG@10 as served" in tuned["words"]
    assert refused.startswith("error: A serving concurrency (2) is the load a rerank budget is measured under")

    for bad in ("0", "-3", "nan", "inf", "1e12", "soon"):
        for command in (arguments, ["gate", str(folder)]):
            with pytest.raises(SystemExit):
                main([*command, "--rerank-budget-ms", bad])
            assert "A rerank budget is a number of milliseconds from 1 to 600,000" in capsys.readouterr().err

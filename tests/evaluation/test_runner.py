"""The evaluation runner end to end on Cranfield with the tiny models, and the eval command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.engine import Engine
from workbench.evaluation import Dataset, compare_runs, depth_curve, evaluate, read_trec_run, run_evaluation


@pytest.fixture
def cran_engine(tiny_engine: Engine, cranfield_dir: Path) -> Engine:
    tiny_engine.ingest(cranfield_dir, "cran")
    return tiny_engine


def test_report_before_after_and_reuse(cran_engine: Engine, cranfield_dir: Path) -> None:
    dataset = Dataset.from_beir(cranfield_dir)
    seen = []
    plan = cran_engine.plan(collection="cran", k=20, top_n=5)
    report = run_evaluation(
        cran_engine,
        dataset,
        plan,
        max_queries=12,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert seen[-1] == (12, 12) and report.queries == 12
    assert set(report.before) == {
        "ndcg@10",
        "mrr@10",
        "recall@20",
        "map@100",
        "p@10",
        "judged@10",
        "ndcg@10 judged-only",
    }
    assert report.before["recall@20"] == report.after["recall@20"]  # the same k candidates, reordered
    assert report.wins + report.ties + report.losses == 12
    assert 0 < report.p_value <= 1 and 0 < report.p_value_ttest <= 1
    assert report.judged_looked_at == 12 * 5
    assert len(report.after_run) == 12 and all(len(docs) == 20 for docs in report.after_run.values())
    # the TREC runs re-evaluate to the same figures
    qrels = {q: dataset.qrels[q] for q in report.after_run}
    assert evaluate(qrels, report.after_run, 20)[0] == pytest.approx(report.after)

    model_calls = cran_engine.reranker().model_calls
    again = run_evaluation(cran_engine, dataset, plan, max_queries=12)
    assert again.after == report.after
    assert again.score_cache_hits == 12 * 20
    assert cran_engine.reranker().model_calls == model_calls  # every score from the cache: no model ran

    points = depth_curve(cran_engine, report, dataset, plan, (5, 10, 20), timing_queries=2)
    assert [p.k for p in points] == [5, 10, 20]
    assert points[-1].after["ndcg@10"] == pytest.approx(report.after["ndcg@10"])
    assert all(p.rerank_ms_p50 and p.rerank_ms_p95 and 0 < p.rerank_ms_p50 <= p.rerank_ms_p95 for p in points)
    assert not report.depth_timings_reused
    # the ceiling at k = 5, by hand: the share of each judged query's relevant documents in the first stage's top 5
    relevant = {q: {d for d, g in report.qrels[q].items() if g > 0} for q in report.qrels}
    shares = []
    for qid, docs in relevant.items():
        if docs:
            first_five = list(dict.fromkeys(doc for doc, _, _ in report.candidates[qid]))[:5]
            shares.append(len(docs & set(first_five)) / len(docs))
    assert points[0].recall_ceiling == pytest.approx(sum(shares) / len(shares))
    low, high = points[1].after_ci
    assert low <= points[1].after["ndcg@10"] <= high

    # A second Evaluate run of the same settings does no work twice: no model call, the first run's timings
    reranker = cran_engine.reranker()
    calls = reranker.model_calls
    second = run_evaluation(cran_engine, dataset, plan, max_queries=12)
    second_points = depth_curve(cran_engine, second, dataset, plan, (5, 10, 20), timing_queries=2)
    assert reranker.model_calls == calls and second.after == report.after
    assert second.depth_timings_reused and [p.rerank_ms_p50 for p in second_points] == [p.rerank_ms_p50 for p in points]
    cran_engine.ingest(cranfield_dir, "cran")  # the collection changed (nothing new here): measured again
    third = run_evaluation(cran_engine, dataset, plan, max_queries=12)
    depth_curve(cran_engine, third, dataset, plan, (5, 10, 20), timing_queries=2)
    assert not third.depth_timings_reused
    cran_engine.clear_caches()  # so do cleared caches
    fourth = run_evaluation(cran_engine, dataset, plan, max_queries=12)
    depth_curve(cran_engine, fourth, dataset, plan, (5, 10, 20), timing_queries=2)
    assert not fourth.depth_timings_reused


def test_without_a_reranker_before_equals_after(cran_engine: Engine, cranfield_dir: Path) -> None:
    report = run_evaluation(
        cran_engine,
        Dataset.from_beir(cranfield_dir),
        cran_engine.plan(collection="cran", k=10, top_n=10, reranker=None),
        max_queries=8,
    )
    assert report.before == report.after and report.p_value == 1.0 and report.ties == 8


def test_outside_run_comparison(cran_engine: Engine, cranfield_dir: Path) -> None:
    dataset = Dataset.from_beir(cranfield_dir)
    report = run_evaluation(cran_engine, dataset, cran_engine.plan(collection="cran", k=10, top_n=10), max_queries=6)
    same = compare_runs(dataset, report.after_run, report.after_run, 10)
    assert same.a == same.b and same.p_value == 1.0 and same.queries == 6


def test_eval_command(
    monkeypatch: pytest.MonkeyPatch,
    tiny_models: dict[str, Path],
    tmp_path: Path,
    cranfield_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("WORKBENCH_EMBEDDING_MODEL", str(tiny_models["embedder"]))
    monkeypatch.setenv("RERANKER_MODEL", str(tiny_models["reranker"]))
    store, runs = tmp_path / "store", tmp_path / "runs"
    argv = [
        "eval",
        str(cranfield_dir),
        "--collection",
        "cran",
        "-k",
        "15",
        "-n",
        "5",
        "--max-queries",
        "5",
        "--json",
        "--save-runs",
        str(runs),
        "--persist-dir",
        str(store),
    ]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "does not exist yet: ingesting" in captured.err
    data = json.loads(captured.out)
    assert {"before", "after", "queries", "p_value"} <= data.keys()
    assert set(data["before"]) == {
        "ndcg@10",
        "mrr@10",
        "recall@15",
        "map@100",
        "p@10",
        "judged@10",
        "ndcg@10 judged-only",
    }
    assert data["verdict"]["direction"] in {"helps", "hurts", "none", "unknown"}
    assert data["queries"] == 5
    after = read_trec_run(runs / "cran.after.trec")
    assert len(after) == 5 and (runs / "cran.before.trec").exists() and (runs / "cran.report.md").exists()

    outside = runs / "cran.before.trec"
    assert main([*argv[:-2], "--run", str(outside), "--persist-dir", str(store)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["outside_run"]["a"]["ndcg@10"] == pytest.approx(data["before"]["ndcg@10"])


def test_eval_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["eval", str(tmp_path), "--collection", "x1x"]) == 2
    assert "not a BEIR folder" in capsys.readouterr().err


def test_an_identical_evaluation_in_a_new_process_reuses_the_depth_timings_and_says_so(
    cran_engine: Engine, cranfield_dir: Path
) -> None:
    """Issue 69, item 11: run again with every pair cached, an evaluation re-timed the reranker for its depth
    curve (14-64 s); a new engine on the same data folder now takes the kept timings, and the report says so."""
    dataset = Dataset.from_beir(cranfield_dir)
    plan = cran_engine.plan(collection="cran", k=20, top_n=10)
    first = run_evaluation(cran_engine, dataset, plan, max_queries=6)
    measured = depth_curve(cran_engine, first, dataset, plan, (5, 10, 20), timing_queries=2)
    assert not first.depth_timings_reused
    fresh = Engine(cran_engine.settings)  # what another process of the same user sees
    again = run_evaluation(fresh, dataset, plan, max_queries=6)
    calls = fresh.reranker().model_calls
    reused = depth_curve(fresh, again, dataset, plan, (5, 10, 20), timing_queries=2)
    assert again.depth_timings_reused and fresh.reranker().model_calls == calls  # no model ran to time it
    assert [p.rerank_ms_p50 for p in reused] == [p.rerank_ms_p50 for p in measured]
    again.depth = reused
    assert "measured by an earlier run" in again.to_markdown()
    other = depth_curve(fresh, again, dataset, plan, (5, 10), timing_queries=2)  # other depths: measured
    assert len(other) == 2

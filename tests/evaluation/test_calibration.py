"""Scores against relevance, calibration and cutoffs: every figure recomputed here by hand (Mann-Whitney for the
AUC, the ECE's sum over bins, precision and recall by counting) on a real evaluation of the demo, and the cutoff's
min_score through the engine keeps exactly the documents the table counts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.live_servers import api_env
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation import evaluate_dataset
from workbench.evaluation.calibration import (
    calibrate,
    expected_calibration_error,
    load_calibration,
    save_calibration,
    scored_pairs,
)
from workbench.services.demo import DEMO_COLLECTION, demo_dataset, ensure_demo_collection


@pytest.fixture(scope="module")
def demo_setup(tmp_path_factory: pytest.TempPathFactory, tiny_models: dict[str, Path]):  # type: ignore[no-untyped-def]
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("calibration"),
        embedding_model=str(tiny_models["embedder"]),
        reranker_model=str(tiny_models["reranker"]),
        offline=True,
    )
    engine = Engine(settings)
    ensure_demo_collection(engine)
    dataset = demo_dataset()
    report = evaluate_dataset(engine, dataset, engine.plan(collection=DEMO_COLLECTION, k=30, top_n=10))
    return engine, dataset, report


def _auc_by_hand(scores: list[float], labels: list[int]) -> float:
    positives = [s for s, y in zip(scores, labels, strict=True) if y]
    negatives = [s for s, y in zip(scores, labels, strict=True) if not y]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def test_every_figure_matches_a_hand_computation(demo_setup) -> None:  # type: ignore[no-untyped-def]
    _, dataset, report = demo_setup
    result = calibrate(report, dataset.qrels, target_precision=0.5)
    # The pairs: every candidate document of every query, relevant when graded 1 or more.
    pairs = [
        (qid, doc, score, report.before_run[qid][doc], int(dataset.qrels[qid].get(doc, 0) >= 1))
        for qid, run in report.after_run.items()
        for doc, score in run.items()
    ]
    assert result.pairs == len(pairs) and result.queries == 50
    assert result.relevant_pairs == sum(p[4] for p in pairs)
    labels = [p[4] for p in pairs]
    auc = {s.stage: s.auc for s in result.separation}
    assert auc["reranker"] == pytest.approx(_auc_by_hand([p[2] for p in pairs], labels))
    assert auc["first stage"] == pytest.approx(_auc_by_hand([p[3] for p in pairs], labels))
    for stage in result.separation:
        assert sum(sum(c) for c in stage.counts.values()) == len(pairs)

    # The uncalibrated reading is σ(logit); its ECE summed here bin by bin.
    probabilities = [1 / (1 + np.exp(-p[2])) for p in pairs]
    ece = 0.0
    for b in range(10):
        members = [i for i, q in enumerate(probabilities) if min(int(q * 10), 9) == b]
        if members:
            mean_p = sum(probabilities[i] for i in members) / len(members)
            share = sum(labels[i] for i in members) / len(members)
            ece += len(members) / len(pairs) * abs(mean_p - share)
    assert result.check("uncalibrated").ece == pytest.approx(ece)
    assert {c.method for c in result.checks} == {"uncalibrated", "logistic", "isotonic"}
    assert result.chosen.method == min(result.checks[1:], key=lambda c: c.ece).method

    # Cutoffs counted by hand: precision over kept pairs, recall over every relevant document judged.
    all_relevant = sum(1 for judged in dataset.qrels.values() for grade in judged.values() if grade >= 1)
    assert result.relevant_judged == all_relevant
    for row in result.cutoffs + ([result.target] if result.target else []):
        kept = [p for p in pairs if p[2] >= row.threshold]
        hits = sum(p[4] for p in kept)
        assert row.precision == pytest.approx(hits / len(kept))
        assert row.recall == pytest.approx(hits / all_relevant)
        assert row.kept_per_query == pytest.approx(len(kept) / 50)
    if result.target:  # the most kept that reaches the target: no lower threshold does
        assert result.target.kept_per_query * 50 >= 5  # never a precision over a handful of pairs
        lower = sorted({p[2] for p in pairs if p[2] < result.target.threshold})
        for t in lower:
            kept = [p for p in pairs if p[2] >= t]
            assert sum(p[4] for p in kept) / len(kept) < 0.5
    for row in result.top_n_cutoffs:
        kept = []
        for qid in report.after_run:
            mine = sorted((p for p in pairs if p[0] == qid), key=lambda p: -p[2])
            kept += mine[: row.top_n]
        assert row.precision == pytest.approx(sum(p[4] for p in kept) / len(kept))


def test_the_cutoff_through_the_engine_keeps_what_the_table_counts(demo_setup) -> None:  # type: ignore[no-untyped-def]
    engine, dataset, report = demo_setup
    result = calibrate(report, dataset.qrels)
    row = result.cutoffs[len(result.cutoffs) // 2]
    kept = 0
    for text in dataset.queries.values():
        searched = engine.search(
            text, engine.plan(collection=DEMO_COLLECTION, k=30, top_n=30, min_score=row.threshold), max_query_chars=None
        )
        kept += len(searched.reranked)
        assert len(searched.reranked) + searched.below_min_score == len(searched.candidates)
    assert kept == pytest.approx(row.kept_per_query * len(dataset.queries))


def test_the_calibration_is_kept_and_read_back(demo_setup, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    engine, dataset, report = demo_setup
    chosen = calibrate(report, dataset.qrels).chosen
    settings = engine.settings.model_copy(update={"data_dir": tmp_path})
    save_calibration(settings, chosen)
    back = load_calibration(settings, DEMO_COLLECTION, report.reranker_model)
    assert back == chosen and "50 queries" in back.fitted_on
    scores = np.linspace(-10, 10, 21)
    values = [back.probability(float(s)) for s in scores]
    assert all(0.0 <= v <= 1.0 for v in values)
    # Monotone in the score (the tiny test model may rank relevance backwards: then it falls).
    assert values in (sorted(values), sorted(values, reverse=True))
    assert load_calibration(settings, "other", report.reranker_model) is None
    assert load_calibration(settings, DEMO_COLLECTION, None) is None


def test_calibration_refuses_what_it_cannot_calibrate(demo_setup) -> None:  # type: ignore[no-untyped-def]
    _, dataset, report = demo_setup
    with pytest.raises(InputError, match="target precision"):
        calibrate(report, dataset.qrels, target_precision=1.5)
    nothing_relevant = {qid: {} for qid in dataset.qrels}
    with pytest.raises(InputError, match="relevant and not relevant"):
        calibrate(report, nothing_relevant)
    unranked = report.model_copy(update={"reranker_model": None})
    with pytest.raises(InputError, match="needs a reranker"):
        calibrate(unranked, dataset.qrels)
    qids, *_ = scored_pairs(report, dataset.qrels)
    assert len(set(qids)) == 50


def test_ece_of_a_small_example() -> None:
    # Bin 0: 0.05, 0.15 -> bins 0 and 1; bin 9: 0.95 and 0.85 -> bins 9 and 8.
    p = np.array([0.05, 0.05, 0.95, 0.95])
    y = np.array([0, 1, 1, 1])
    # Bin 0: mean 0.05, share 0.5 -> |0.45| * 2/4; bin 9: mean 0.95, share 1 -> 0.05 * 2/4.
    assert expected_calibration_error(p, y) == pytest.approx(0.45 * 0.5 + 0.05 * 0.5)


def test_eval_calibrate_json_reports_auc_ece_and_cutoffs(demo_setup) -> None:  # type: ignore[no-untyped-def]
    engine, _, _ = demo_setup
    command = [str(Path(sys.executable).parent / "workbench"), "eval", "demo", "-k", "30", "--calibrate", "--json"]
    done = subprocess.run(
        [*command, "--target-precision", "0.5"],
        env=api_env(engine.settings),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    verdict = summary["verdict"]
    assert {"direction", "delta", "ci_low", "ci_high", "p_value", "judged_at_k"} <= verdict.keys()
    if verdict["p_value"] >= 0.05:
        assert verdict["direction"] == "none"
    assert verdict["judged_at_k"] == pytest.approx(min(summary["before"]["judged@10"], summary["after"]["judged@10"]))
    data = summary["calibration"]
    assert set(data["auc"]) == {"reranker", "first stage"}
    assert set(data["ece_held_out"]) == {"uncalibrated", "logistic", "isotonic"}
    assert data["cutoffs"] and data["target_precision"] == 0.5
    assert "calibration kept in" in done.stderr
    assert load_calibration(engine.settings, DEMO_COLLECTION, engine.settings.reranker_model) is not None
    bad = subprocess.run(
        [*command, "--no-rerank"], env=api_env(engine.settings), capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 2 and "--calibrate calibrates one reranker" in bad.stderr

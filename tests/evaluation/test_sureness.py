"""How sure a verdict can be, each figure against an independent computation: the minimum detectable effect by the
textbook formula, the nDCG bounds against pytrec_eval on hand-built judgments, and a sparse benchmark's verdict
given on what its judgments can support."""

from __future__ import annotations

import math
import statistics

import pytest
import pytrec_eval
from scipy import stats

from workbench.evaluation.metrics import ndcg_bounds
from workbench.evaluation.significance import sensitivity
from workbench.evaluation.verdict import Bounds, verdict


def test_the_minimum_detectable_effect_and_queries_needed_equal_the_formula() -> None:
    before = [0.50, 0.40, 0.30, 0.20, 0.60, 0.55]
    after = [0.62, 0.41, 0.36, 0.10, 0.71, 0.58]
    diffs = [b - a for a, b in zip(before, after, strict=True)]
    sd, n, delta = statistics.stdev(diffs), len(diffs), statistics.fmean(diffs)
    expected_mde = (stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.8, n - 1)) * sd / math.sqrt(n)
    expected_n = math.ceil(((1.959963985 + 0.841621234) * sd / delta) ** 2)
    found = sensitivity(before, after)
    assert found.sd_of_differences == pytest.approx(sd)
    assert found.minimum_detectable_effect == pytest.approx(expected_mde)
    assert found.queries_needed == expected_n
    assert sensitivity([0.5], [0.6]).minimum_detectable_effect is None  # one query detects nothing
    assert sensitivity([0.5, 0.4], [0.5, 0.4]).queries_needed is None  # no change: no number of queries finds one


QRELS = {"q1": {"a": 2, "b": 0}, "q2": {"c": 1}}
RUN = {"q1": {"x": 0.9, "a": 0.8, "b": 0.7}, "q2": {"c": 0.9, "y": 0.8}}


def _ndcg10(qrels: dict, run: dict) -> float:
    measured = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    return sum(measured[q]["ndcg_cut_10"] for q in qrels) / len(qrels)


def test_the_bounds_equal_pytrec_eval_with_the_unjudged_counted_each_way() -> None:
    low, high = ndcg_bounds(QRELS, RUN)
    assert low == pytest.approx(_ndcg10(QRELS, RUN))
    # by hand: x (unjudged in q1) and y (in q2) counted relevant at the top grade the judgments use (2)
    optimistic = {"q1": {"a": 2, "b": 0, "x": 2}, "q2": {"c": 1, "y": 2}}
    assert high == pytest.approx(_ndcg10(optimistic, RUN))
    assert low < high


def test_a_sparse_benchmark_gets_a_verdict_on_the_judged_only_figures() -> None:
    before, after = [0.1, 0.2, 0.1, 0.2, 0.15, 0.1] * 4, [0.2, 0.3, 0.2, 0.3, 0.25, 0.2] * 4
    judged_only = ([0.4, 0.5, 0.45, 0.4, 0.5, 0.42] * 4, [0.6, 0.7, 0.66, 0.61, 0.72, 0.6] * 4)
    v = verdict(before, after, 0.09, 0.12, judged_only=judged_only)
    assert v.direction == "helps" and v.basis == "judged-only"
    assert v.words().startswith("Reranking helps on the judged documents: ndcg@10 judged-only +0.")
    assert "judged@10 9% before, 12% after" in v.words() and "cannot be told from noise" in v.words()
    # judged-only figures that say nothing, bounds that do not overlap: the bounds decide
    flat = ([0.5] * 24, [0.5] * 24)
    bounds = Bounds(before_low=0.1, before_high=0.3, after_low=0.35, after_high=0.6)
    v = verdict(before, after, 0.09, 0.12, judged_only=flat, bounds=bounds)
    assert v.direction == "helps" and v.basis == "bounds" and "whatever the unjudged documents are" in v.words()
    # neither decides, though the standard figure would count: too few judgments to tell
    overlapping = Bounds(before_low=0.1, before_high=0.5, after_low=0.2, after_high=0.6)
    v = verdict(before, after, 0.09, 0.12, judged_only=flat, bounds=overlapping)
    assert v.direction == "unknown" and v.basis == "all"
    # with enough judgments, neither is consulted
    v = verdict(before, after, 0.9, 0.95, judged_only=flat, bounds=overlapping)
    assert v.direction == "helps" and v.basis == "all" and v.words().startswith("Reranking helps: ndcg@10 +0.1000")


def test_a_sparse_benchmark_where_reranking_hurts_says_so_on_the_judged_only_figures() -> None:
    before, after = [0.3] * 20, [0.3] * 20
    judged_only = ([0.7, 0.75, 0.72, 0.8] * 5, [0.4, 0.5, 0.45, 0.5] * 5)
    v = verdict(before, after, 0.1, 0.1, judged_only=judged_only)
    assert v.direction == "hurts" and v.basis == "judged-only"

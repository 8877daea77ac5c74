"""Issue 56, item 2: evaluate to the decision. The stopping rule on simulated paired changes (no effect: a false
"helps" or "hurts" at most at the stated 5 %; a real effect: it stops early and says "helps"), one look against a
hand computation, and `workbench eval --stop-when-settled` on the demo: its figures are those of a plain evaluation
of the queries it took, in the seeded order."""

from __future__ import annotations

import json
import math
import random
import statistics

import numpy as np
import pytest
from scipy import stats

from workbench.cli import main
from workbench.engine import Engine
from workbench.evaluation import Dataset, run_evaluation
from workbench.evaluation.sequential import SequentialPlan, look, run_until_settled, seeded_order
from workbench.experiments.store import open_experiment_store
from workbench.services.demo import DEMO_COLLECTION, demo_dataset


def _draws(rng: np.random.Generator, n: int, low: float, high: float) -> list[float]:
    """Paired changes as rerankers make them: most queries unchanged, the rest spread between low and high."""
    moved = rng.random(n) < 0.4
    return list(np.where(moved, rng.uniform(low, high, n), 0.0))


def _settle(deltas: list[float], plan: SequentialPlan):  # type: ignore[no-untyped-def]
    return run_until_settled(lambda n: deltas[:n], len(deltas), plan)


def test_under_no_effect_a_false_verdict_is_rare_and_under_an_effect_it_stops_early() -> None:
    rng = np.random.default_rng(7)
    plan = SequentialPlan()
    null = [_settle(_draws(rng, 300, -0.5, 0.5), plan) for _ in range(1000)]
    wrong = sum(stop.settled in ("helps", "hurts") for stop in null)
    assert wrong / 1000 <= plan.alpha  # valid under every one of the 30 looks, not only the last
    effect = [_settle(_draws(rng, 300, -0.3, 0.7), plan) for _ in range(200)]
    assert sum(stop.settled == "helps" for stop in effect) >= 190
    assert statistics.median(stop.queries_used for stop in effect) < 150  # stops early where the effect is plain
    assert all(stop.queries_used % plan.block == 0 or stop.queries_used == 300 for stop in effect)


def test_on_sparse_judgments_a_look_settles_only_where_the_judged_only_changes_agree() -> None:
    """SciFact's case: the changes treating unjudged passages as not relevant say "helps" early, while the
    judged-only changes (what a verdict on sparse judgments rests on) show nothing: the run may not stop on "helps"
    there, since the whole set's verdict could not say it."""
    rng = np.random.default_rng(3)
    plan = SequentialPlan()
    raw = _draws(rng, 200, -0.1, 0.6)  # plainly positive
    flat = _draws(rng, 200, -0.5, 0.5)  # nothing to tell
    dense = run_until_settled(lambda n: raw[:n], 200, plan, judged_only_of_first=lambda n: None)
    assert dense.settled == "helps" and dense.queries_used < 100 and not dense.sparse
    sparse = run_until_settled(lambda n: raw[:n], 200, plan, judged_only_of_first=lambda n: flat[:n])
    assert sparse.settled is None and sparse.queries_used == 200  # never settled: the two never agreed
    agreeing = run_until_settled(lambda n: raw[:n], 200, plan, judged_only_of_first=lambda n: raw[:n])
    assert agreeing.settled == "helps" and agreeing.sparse and "judged-only" in agreeing.words()


def test_fewer_looks_at_equal_parts_of_the_set() -> None:
    plan = SequentialPlan(looks=4)
    assert plan.over(1109).block == 278 and plan.over(50).block == 20  # never under MIN_QUERIES
    assert SequentialPlan().over(1109).block == 10  # without looks, a look every 10 queries
    rng = np.random.default_rng(11)
    deltas = _draws(rng, 400, -0.3, 0.7)
    stop = run_until_settled(lambda n: deltas[:n], 400, plan)
    assert stop.looks_planned == 4 and stop.queries_used in (100, 200, 300, 400)
    assert "a look every 100 queries" in stop.rule and "up to 4 looks" in stop.rule


def test_one_look_against_a_hand_computation() -> None:
    deltas = [0.1, 0.0, 0.25, -0.05, 0.0, 0.3, 0.15, 0.0, 0.2, 0.05] * 2 + [0.1] * 5
    plan = SequentialPlan(block=5)
    planned = 10  # a run of 50 queries looked at every 5
    settled, (low, high) = look(deltas, planned, plan)
    n = len(deltas)
    mean = sum(deltas) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in deltas) / (n - 1))
    half = stats.t.ppf(1 - 0.05 / planned / 2, n - 1) * sd / math.sqrt(n)
    assert (low, high) == pytest.approx((mean - half, mean + half), abs=1e-12)
    assert settled == "helps" and low > 0
    assert look(deltas[:15], planned, plan)[0] is None  # under MIN_QUERIES: no stop, whatever the interval
    assert look([0.001, -0.001] * 15, planned, plan)[0] == "within tolerance"


def test_the_seeded_order_is_fixed_by_its_seed() -> None:
    items = [(f"q{i}", f"text {i}") for i in range(40)]
    assert seeded_order(items, 3) == seeded_order(items, 3) != seeded_order(items, 4)
    expected = list(items)
    random.Random(3).shuffle(expected)
    assert seeded_order(items, 3) == expected and sorted(seeded_order(items, 3)) == sorted(items)


def test_eval_stop_when_settled_on_the_demo(demo_cli: Engine, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["eval", "demo", "-k", "20", "--depth", "none", "--no-save", "--json", "--stop-when-settled",
            "--tolerance", "0.2", "--seed", "5"]  # fmt: skip
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    stop = summary["sequential"]
    # a change inside ±0.2 settles early on the demo's 50 queries
    assert stop["settled"] == "within tolerance" and stop["queries_used"] < stop["queries_available"] == 50
    assert "Bonferroni alpha spending" in stop["rule"] and stop["words"].startswith("Stopped after")
    # the figures are a plain evaluation's of the queries it took, in the seeded order
    dataset = demo_dataset()
    taken = seeded_order(list(dataset.queries.items()), 5)[: stop["queries_used"]]
    subset = Dataset(name=dataset.name, queries=dict(taken), qrels={q: dataset.qrels[q] for q, _ in taken})
    plain = run_evaluation(demo_cli, subset, demo_cli.plan(collection=DEMO_COLLECTION, k=20, top_n=10))
    assert summary["queries"] == plain.queries == stop["queries_used"]
    assert summary["after"] == plain.after and summary["before"] == plain.before
    with pytest.raises(SystemExit) as refused:  # argparse's own exit for an option it cannot take
        main([*argv, "--tolerance", "0"])
    assert refused.value.code == 2 and "The tolerance is a number above 0 and below 1" in capsys.readouterr().err
    assert main([*argv, "--skip-gap", "0.1"]) == 2
    assert "choose one of them" in capsys.readouterr().err


def test_the_gate_stops_when_settled_and_weighs_the_baseline_on_the_same_queries(
    demo_cli: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["gate", "demo", "-k", "20", "--json", "--stop-when-settled", "--tolerance", "0.2", "--seed", "5",
            "--baseline-k", "10"]  # fmt: skip
    code = main(argv)
    decision = json.loads(capsys.readouterr().out)
    assert code == decision["exit_code"]
    assert decision["stopping"].startswith("Stopped after") and "Bonferroni alpha spending" in decision["stopping"]
    kept = open_experiment_store(demo_cli.settings)
    candidate = kept.get(decision["candidate_experiment"])
    baseline = kept.get(decision["baseline_experiment"])
    used = int(decision["stopping"].split()[2])  # "Stopped after N of 50 queries ..."
    taken = seeded_order(list(demo_dataset().queries.items()), 5)[:used]
    assert list(candidate.queries) == [q for q, _ in taken] and baseline.queries == candidate.queries
    assert used < 50 and decision["comparison"]["judged_queries"] <= used

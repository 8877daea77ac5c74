"""Issue 56, item 2: evaluate to the decision. The stopping rule on simulated paired changes (no effect: a false
"helps" or "hurts" at most at the stated 5 %; a real effect: it stops early and says "helps"), one look against a
hand computation, and `workbench eval --stop-when-settled` on the demo: its figures are those of a plain evaluation
of the queries it took, in the seeded order."""

from __future__ import annotations

import itertools
import json
import math
import random
import statistics

import numpy as np
import pytest

from workbench.cli import main
from workbench.engine import Engine
from workbench.evaluation import Dataset, run_evaluation
from workbench.evaluation.sequential import (
    MIN_QUERIES,
    SequentialPlan,
    confidence_sequence,
    run_until_settled,
    seeded_order,
    settles,
)
from workbench.experiments.store import open_experiment_store
from workbench.services.demo import DEMO_COLLECTION, demo_dataset


def _draws(rng: np.random.Generator, n: int, low: float, high: float) -> list[float]:
    """Paired changes as rerankers make them: most queries unchanged, the rest spread between low and high."""
    moved = rng.random(n) < 0.4
    return list(np.where(moved, rng.uniform(low, high, n), 0.0))


def _settle(deltas: list[float], plan: SequentialPlan):  # type: ignore[no-untyped-def]
    return run_until_settled(lambda n: deltas[:n], len(deltas), plan)


def test_under_no_effect_a_false_verdict_is_rare_and_under_an_effect_it_stops_early() -> None:
    """Issue 70, item 2: looking after every query, 2,000 query sets whose mean change is exactly 0 (each change
    drawn with its negative) give a wrong "helps" or "hurts" in at most 5 %; a plain effect settles early."""
    rng = np.random.default_rng(7)
    plan = SequentialPlan()
    wrong = 0
    for _ in range(2000):
        half = np.asarray(_draws(rng, 50, 0.0, 0.5))
        population = list(rng.permutation(np.concatenate([half, -half])))
        wrong += _settle(population, plan).settled in ("helps", "hurts")
    assert wrong / 2000 <= plan.alpha  # valid at every one of the 100 looks, not only the last
    effect = [_settle(_draws(rng, 300, -0.3, 0.7), plan) for _ in range(200)]
    assert sum(stop.settled == "helps" for stop in effect) >= 190
    assert statistics.median(stop.queries_used for stop in effect) < 150  # stops early where the effect is plain
    assert all(stop.looks_planned == 300 - MIN_QUERIES + 1 for stop in effect)  # a look after every query


def test_the_sequence_covers_the_sets_mean_at_every_query_and_closes_on_it() -> None:
    rng = np.random.default_rng(5)
    missed = 0
    for _ in range(500):
        population = np.clip(rng.normal(0.05, 0.3, 120), -1, 1)
        order = list(rng.permutation(population))
        sequence = confidence_sequence(order, len(order), 0.05)
        missed += any(not low - 1e-12 <= population.mean() <= high + 1e-12 for low, high in sequence)
        widths = [high - low for low, high in sequence]
        assert all(a >= b - 1e-12 for a, b in itertools.pairwise(widths))  # never wider than before
        assert widths[-1] < 1e-6  # the whole set taken: the mean is known
    assert missed / 500 <= 0.05


def test_one_interval_against_a_hand_computation() -> None:
    """The sequence's intervals, written out from the formula (module docstring) by hand in plain Python over the
    same 2,001 candidate means, on a set of 40 where 25 changes close to 0.3 are drawn: the bets' bound, not only
    what the draws alone bound, decides it."""
    deltas, population, alpha = [0.3, 0.25, 0.35, 0.3, 0.28] * 5, 40, 0.05
    z = [(d + 1) / 2 for d in deltas]
    grid = [i / 2000 for i in range(2001)]
    log_plus, log_minus = [0.0] * 2001, [0.0] * 2001
    alive = [True] * 2001
    bounds = []
    for t, value in enumerate(z, start=1):
        before = sum(z[: t - 1])
        means_after = [(0.5 + sum(z[:i])) / (i + 1) for i in range(1, t)]
        variance = (0.25 + sum((z[i - 1] - means_after[i - 1]) ** 2 for i in range(1, t))) / t
        bet = math.sqrt(2 * math.log(2 / alpha) / (variance * t * math.log(1 + t)))
        for j, m in enumerate(grid):
            m_t = (population * m - before) / (population - t + 1)
            if not -1e-12 <= m_t <= 1 + 1e-12:
                alive[j] = False
            m_t = min(max(m_t, 1e-12), 1 - 1e-12)
            log_plus[j] += math.log(1 + min(bet, 0.75 / m_t) * (value - m_t))
            log_minus[j] += math.log(1 - min(bet, 0.75 / (1 - m_t)) * (value - m_t))
            capital = (math.exp(log_plus[j]) + math.exp(log_minus[j])) / 2
            if capital >= 1 / alpha:
                alive[j] = False
        kept = [m for m, ok in zip(grid, alive, strict=True) if ok]
        drawn = sum(z[:t])
        low = max(drawn / population, min(kept) - 1 / 2000)
        high = min((drawn + population - t) / population, max(kept) + 1 / 2000)
        if bounds:
            low, high = max(low, (bounds[-1][0] + 1) / 2), min(high, (bounds[-1][1] + 1) / 2)
        bounds.append((2 * low - 1, 2 * high - 1))
    flat = [bound for pair in confidence_sequence(deltas, population, alpha) for bound in pair]
    assert flat == pytest.approx([bound for pair in bounds for bound in pair], abs=1e-9)
    drawn_only = (2 * sum((d + 1) / 2 for d in deltas) / population - 1, 1.0)
    assert bounds[-1][0] > drawn_only[0] + 0.01 and bounds[-1][0] > 0  # the bets' bound is the one that binds
    assert bounds[-1][1] < 0.6  # and above: the rest of the set could not all be 1


def test_looks_keep_their_meaning_exactly() -> None:
    """`--looks 4` on 50 queries said "up to 3 looks" under the old rule: N looks are N looks, at equal parts."""
    assert SequentialPlan(looks=4).positions(50) == [13, 25, 38, 50]
    assert SequentialPlan(looks=4).positions(1109) == [278, 555, 832, 1109]
    assert SequentialPlan().positions(30) == list(range(MIN_QUERIES, 31))
    rng = np.random.default_rng(11)
    deltas = _draws(rng, 400, -0.3, 0.7)
    stop = run_until_settled(lambda n: deltas[:n], 400, SequentialPlan(looks=4))
    assert stop.looks_planned == 4 and stop.queries_used in (100, 200, 300, 400)
    assert "Bonferroni alpha spending over 4 looks" in stop.rule  # valid at its 4 looks, narrower there
    wrong = 0
    for _ in range(1000):
        draws = _draws(rng, 400, -0.5, 0.5)
        wrong += _settle(draws, SequentialPlan(looks=4)).settled in ("helps", "hurts")
    assert wrong / 1000 <= 0.05


def test_a_settled_interval_needs_min_queries() -> None:
    plan = SequentialPlan()
    assert settles((0.1, 0.3), MIN_QUERIES - 1, plan) is None
    assert settles((0.1, 0.3), MIN_QUERIES, plan) == "helps"
    assert settles((-0.3, -0.01), MIN_QUERIES, plan) == "hurts"
    assert settles((-0.001, 0.001), MIN_QUERIES, plan) == "within tolerance"
    assert settles((0.0001, 0.0001), MIN_QUERIES, plan) == "within tolerance"  # the exact mean, too small to matter


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
    assert "Waudby-Smith" in stop["rule"] and stop["words"].startswith("Stopped after")
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
    assert decision["stopping"].startswith("Stopped after") and "Waudby-Smith" in decision["stopping"]
    kept = open_experiment_store(demo_cli.settings)
    candidate = kept.get(decision["candidate_experiment"])
    baseline = kept.get(decision["baseline_experiment"])
    used = int(decision["stopping"].split()[2])  # "Stopped after N of 50 queries ..."
    taken = seeded_order(list(demo_dataset().queries.items()), 5)[:used]
    assert list(candidate.queries) == [q for q, _ in taken] and baseline.queries == candidate.queries
    assert used < 50 and decision["comparison"]["judged_queries"] <= used

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from workbench.evaluation import paired_t_test, randomization_test, wins_ties_losses


def test_identical_systems() -> None:
    a = [0.1, 0.5, 0.9]
    assert randomization_test(a, a) == 1.0 and paired_t_test(a, a) == 1.0
    assert wins_ties_losses(a, a) == (0, 3, 0)


def test_a_consistent_gain_is_significant() -> None:
    rng = np.random.default_rng(1)
    a = rng.uniform(0.2, 0.6, size=40)
    b = a + rng.uniform(0.05, 0.15, size=40)
    assert randomization_test(a, b) < 0.001
    assert paired_t_test(a, b) == pytest.approx(stats.ttest_rel(b, a).pvalue)
    assert wins_ties_losses(a, b) == (40, 0, 0)


def test_noise_is_not_significant() -> None:
    rng = np.random.default_rng(2)
    a = rng.uniform(0, 1, size=50)
    b = a + rng.normal(0, 0.05, size=50) * np.where(np.arange(50) % 2, 1, -1)
    assert randomization_test(a, b) > 0.05


def test_randomization_matches_exact_enumeration_on_a_tiny_case() -> None:
    # Differences (1, 2, 3): of the 8 sign patterns, 2 reach |mean| >= 2 (all +, all -) -> exact p = 0.25.
    p = randomization_test([0, 0, 0], [1, 2, 3], trials=200000, seed=3)
    assert p == pytest.approx(0.25, abs=0.005)

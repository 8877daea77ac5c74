"""Click models against hand computations on tiny logs, and their recovery of the demo's grades from clicks drawn
from a known position-based model."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

from workbench.clicks.impressions import Impression
from workbench.clicks.models import coec, examination, grade_of, pbm, simulate_clicks
from workbench.services.demo import demo_dataset

LOG = [
    Impression("q", ("a", "b", "c"), frozenset({"a"})),
    Impression("q", ("b", "a", "c"), frozenset({"a", "c"})),
    Impression("q", ("c", "b", "a"), frozenset()),
]


def test_coec_by_hand() -> None:
    # Position CTRs: 1st: a clicked, b not, c not = 1/3; 2nd: b, a(clicked), b = 1/3; 3rd: c, c(clicked), a = 1/3.
    # a: 2 clicks, shown at 1, 2, 3: expected 1/3 * 3 = 1 -> 2.0; b: 0 -> 0.0; c: 1 click over 1 -> 1.0.
    fit = coec(LOG)
    assert fit.positions == pytest.approx([1 / 3, 1 / 3, 1 / 3])
    by_doc = {p.doc_id: p for p in fit.pairs}
    assert {d: p.estimate for d, p in by_doc.items()} == pytest.approx({"a": 2.0, "b": 0.0, "c": 1.0})
    assert (by_doc["a"].impressions, by_doc["a"].clicks) == (3, 2)


def test_one_em_step_of_the_position_based_model_by_hand() -> None:
    # From alpha = gamma = 0.5, an unclicked row's posteriors are 0.5 * 0.5 / (1 - 0.25) = 1/3 for both; a click
    # counts 1. a: clicked, clicked, unclicked -> (1 + 1 + 1/3) / 3 = 7/9; b: three unclicked -> 1/3;
    # c: unclicked, clicked, unclicked -> (1/3 + 1 + 1/3) / 3 = 5/9. Position 1: a clicked, b, c unclicked ->
    # (1 + 1/3 + 1/3) / 3 = 5/9; position 2: b, a clicked, b -> 5/9; position 3: c, c clicked, a -> 5/9.
    fit = pbm(LOG, iterations=1)
    assert {p.doc_id: p.estimate for p in fit.pairs} == pytest.approx({"a": 7 / 9, "b": 1 / 3, "c": 5 / 9})
    assert fit.positions == pytest.approx([5 / 9] * 3) and fit.iterations == 1


def test_em_converges_and_keeps_the_likelihood_rising() -> None:
    def likelihood(fit_alpha: dict[str, float], gamma: list[float]) -> float:
        total = 0.0
        for impression in LOG:
            for p, doc in enumerate(impression.shown):
                chance = fit_alpha[doc] * gamma[p]
                total += np.log(chance if doc in impression.clicked else 1 - chance)
        return total

    steps = [pbm(LOG, iterations=n) for n in (1, 5, 50)]
    values = [likelihood({p.doc_id: p.estimate for p in f.pairs}, f.positions) for f in steps]
    assert values == sorted(values)  # EM never lowers the likelihood


def test_grades_from_cut_points() -> None:
    assert [grade_of(x, (0.5, 1.0, 2.0)) for x in (0.0, 0.5, 0.99, 1.0, 3.0)] == [0, 1, 1, 2, 3]


def test_clicks_drawn_from_a_known_model_recover_the_demo_grades() -> None:
    """50 judged queries, 60 impressions each of 10 of its judged documents in a random order; clicks from a PBM
    with examination 1/p and attractiveness 0.05, 0.25, 0.55 by grade 0, 1, 2. Both models must order the grades
    on average, and their estimates must rank pairs like the grades (Kendall's tau-b with the many ties of
    grade 0: bound 0.25)."""
    dataset = demo_dataset()
    rng = np.random.default_rng(1)
    grades = {dataset.queries[q]: docs for q, docs in dataset.qrels.items()}
    lists = {text: [list(rng.permutation(sorted(docs)))[:10] for _ in range(60)] for text, docs in grades.items()}
    impressions = simulate_clicks(lists, grades, examination(10), {0: 0.05, 1: 0.25, 2: 0.55}, seed=7)
    assert len(impressions) == 50 * 60
    for fit in (coec(impressions), pbm(impressions)):
        pairs = [(p.estimate, grades[p.query][p.doc_id]) for p in fit.pairs]
        means = [np.mean([e for e, g in pairs if g == grade]) for grade in (0, 1, 2)]
        assert means == sorted(means) and means[0] < means[2] / 3, fit.model
        assert kendalltau([e for e, _ in pairs], [g for _, g in pairs]).statistic > 0.25, fit.model

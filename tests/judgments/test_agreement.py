"""Fleiss' and Cohen's kappa against hand calculations, and disagreements listed from each rater's latest grade."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from workbench.judgments import JudgmentRow, fleiss_kappa, rater_agreement


def _row(doc: str, grade: int, rater: str, minute: int = 0) -> JudgmentRow:
    at = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=minute)
    return JudgmentRow(collection="c1x", query_id="q", doc_id=doc, grade=grade, rater=rater, source="person",
                       created_at=at)  # fmt: skip


def test_fleiss_kappa_by_hand() -> None:
    # 3 raters, 4 items, 2 grades: [3,0] [0,3] [2,1] [1,2]. Per item agreement 1, 1, 1/3, 1/3: mean 2/3.
    # Each grade has half the votes: chance 1/2. Kappa (2/3 - 1/2) / (1 - 1/2) = 1/3.
    assert fleiss_kappa(np.array([[3, 0], [0, 3], [2, 1], [1, 2]])) == pytest.approx(1 / 3)
    assert fleiss_kappa(np.array([[3, 0], [3, 0]])) is None  # one grade only: undefined, not 1 or 0


def test_three_raters_get_fleiss_over_the_pairs_all_graded_and_their_disagreements() -> None:
    grades = {"ann": [1, 0, 1, 0], "bob": [1, 0, 1, 1], "cy": [1, 0, 0, 0]}  # the table of the test above
    rows = [_row(f"d{i}", g, rater, 1) for rater, values in grades.items() for i, g in enumerate(values)]
    rows += [_row("d9", 1, "ann")]  # only ann graded d9: not in Fleiss' items
    rows.insert(0, _row("d0", 0, "cy", 0))  # cy's earlier grade of d0, replaced by her later 1
    agreement = rater_agreement(rows, weights=None)
    assert agreement.fleiss_kappa == pytest.approx(1 / 3) and agreement.fleiss_items == 4
    ann_bob = next(p for p in agreement.pairs if (p.rater_a, p.rater_b) == ("ann", "bob"))
    # ann and bob: 3 of 4 agree; ann gives 1 twice, bob three times: chance (2*3 + 2*1) / 16 = 1/2; (3/4-1/2)/(1/2)
    assert ann_bob.overlap == 4 and ann_bob.agreed == 3 and ann_bob.kappa == pytest.approx(0.5)
    assert [(d.doc_id, d.grades) for d in agreement.disagreements] == [
        ("d2", {"ann": 1, "bob": 1, "cy": 0}),
        ("d3", {"ann": 0, "bob": 1, "cy": 0}),
    ]
    assert "Fleiss' kappa over the 4 pairs all raters graded: 0.333" in agreement.to_markdown()

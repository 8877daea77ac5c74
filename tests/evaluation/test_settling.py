"""Judging to the decision, on a constructed case where one unjudged pair decides the verdict and another cannot:
the reaches against a hand computation, the queue order, "about N grades", and "settled" once the deciding pair
is graded."""

from __future__ import annotations

import itertools
import math

import pytest

from workbench.evaluation.settling import Judging, judging_settled, pair_reaches
from workbench.evaluation.verdict import verdict

FILLERS = [f"f{i}" for i in range(9)]


def _run(order: list[str]) -> dict[str, float]:
    return {doc: float(len(order) - rank) for rank, doc in enumerate(order)}


def _case(u_grade: int | None = None, v_grade: int | None = None) -> Judging:
    """Eight queries. q1-q6 and q7: a relevant document (grade 1) second before reranking and first after: nDCG@10
    0.6309 -> 1. q7 also has the unjudged u first before reranking and 11th after (out of the top 10). q8: the
    unjudged v first and its relevant document second in both lists (no change)."""
    qrels: dict[str, dict[str, int]] = {}
    before: dict[str, dict[str, float]] = {}
    after: dict[str, dict[str, float]] = {}
    for n in range(1, 7):
        q = f"q{n}"
        qrels[q] = {f"r{n}": 1, "n": 0, **dict.fromkeys(FILLERS, 0)}
        before[q] = _run(["n", f"r{n}", *FILLERS])
        after[q] = _run([f"r{n}", "n", *FILLERS])
    qrels["q7"] = {"r7": 1, **dict.fromkeys(FILLERS, 0), **({"u": u_grade} if u_grade is not None else {})}
    before["q7"] = _run(["u", "r7", *FILLERS])
    after["q7"] = _run(["r7", *FILLERS, "u"])
    qrels["q8"] = {"r8": 1, **dict.fromkeys(FILLERS, 0), **({"v": v_grade} if v_grade is not None else {})}
    before["q8"] = after["q8"] = _run(["v", "r8", *FILLERS])
    low = 1 / math.log2(3)
    values_before = [low] * 8
    values_after = [1.0] * 7 + [low]
    if u_grade:  # u relevant: q7 before 1.0, after 1 / (1 + 0.6309)
        values_before[6], values_after[6] = 1.0, 1 / (1 + low)
    if v_grade:  # v relevant at the top of both lists: q8 is 1.0 before and after
        values_before[7] = values_after[7] = 1.0
    said = verdict(values_before, values_after, 1.0, 1.0)
    return Judging(
        qrels=qrels, before_run=before, after_run=after, query_ids=[f"q{n}" for n in range(1, 9)], k=11, verdict=said
    )


def _exact_sign_flip_p(differences: list[float]) -> float:
    observed = abs(sum(differences))
    flips = [
        abs(sum(s * d for s, d in zip(signs, differences, strict=True)))
        for signs in itertools.product((1, -1), repeat=len(differences))
    ]
    return sum(1 for f in flips if f >= observed - 1e-12) / len(flips)


def test_one_grade_decides_and_another_cannot() -> None:
    judging = _case()
    assert judging.verdict.direction == "helps"  # u and v unjudged, counted not relevant: 7 of 8 queries gain
    reaches = pair_reaches(judging)
    # u: after-discount 0 (11th), before-discount 1 (first): |0 - 1| × top grade 1 / ideal DCG of q7's judged (r7
    # alone: 1) / 8 queries = 1/8, on the lowering side. v: the same place in both lists: reach 0, no side.
    assert [(p.query_id, p.doc_id, p.side) for p in reaches] == [("q7", "u", -1), ("q8", "v", 0)]
    assert reaches[0].reach == pytest.approx(1 / 8) and reaches[1].reach == 0
    # Found relevant, u turns q7 into a loss: 0.6309 -> 1 becomes 1 -> 0.6131. Six gains, a loss and a tie are
    # no longer measurable (an exact sign-flip test, by hand: p above 0.05).
    gain, loss = 1 - 1 / math.log2(3), 1 / (1 + 1 / math.log2(3)) - 1
    assert _exact_sign_flip_p([gain] * 6 + [loss, 0.0]) > 0.05
    state = judging_settled(judging)
    assert not state.settled and (state.lowest, state.highest) == ("none", "helps") and state.remaining == 2
    assert state.grades_to_settle == 1
    assert state.words().startswith("About 1 grade settles this (of 2 unjudged pairs in the top 10s)")
    assert "could make the verdict none" in state.words()
    # Grading v, whatever its grade, settles nothing: u still decides.
    for grade in (0, 1):
        assert not judging_settled(_case(v_grade=grade)).settled
    # Grading u not relevant settles it: no grade of v can change "helps".
    settled = judging_settled(_case(u_grade=0))
    assert settled.settled and settled.direction == "helps" and settled.remaining == 1
    assert settled.words().startswith("Settled: no grade of the remaining 1 unjudged pair in the top 10s can change")
    # Grading u relevant settles it the other way.
    other = judging_settled(_case(u_grade=1))
    assert other.settled and other.direction == "none"

"""The preference verdict against independent computations: scipy's binomtest for the share, its exact interval and
the sign test; Fleiss' kappa by hand; the queries a decision needs by summing binomial probabilities over the
rejection region binomtest itself draws; the graded agreement by nDCG@10 worked by hand."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from scipy import stats

from workbench.preferences import ChoiceRow, ShownLists, decisive_needed, fleiss_kappa, preference_verdict

START = datetime(2026, 11, 30, tzinfo=UTC)


def _row(query: str, rater: str, choice: str, a_side: str = "left", minute: int = 0) -> ChoiceRow:
    return ChoiceRow(
        session_id="s1", query_id=query, rater=rater, choice=choice, a_side=a_side,  # type: ignore[arg-type]
        created_at=START + timedelta(minutes=minute), request_key=f"{query}-{rater}-{minute}-{choice}",
    )  # fmt: skip


def _lists(ids: list[str], identical: set[str] = frozenset()) -> dict[str, ShownLists]:  # type: ignore[assignment]
    return {q: ShownLists(query_id=q, a=["d1", "d2"], b=["d1", "d2"] if q in identical else ["d2", "d1"]) for q in ids}


def test_one_rater_share_interval_and_sign_test_equal_scipys_binomtest() -> None:
    queries = [f"q{i}" for i in range(20)]
    rows = []
    # B on 11 (shown left on some, right on others), A on 3, same on 4, skip on 1, one query not reached
    for i in range(11):
        a_side = "left" if i % 2 else "right"
        rows.append(_row(f"q{i}", "ann", "right" if a_side == "left" else "left", a_side, i))
    for i in range(11, 14):
        rows.append(_row(f"q{i}", "ann", "left", "left", i))
    rows += [_row(f"q{i}", "ann", "same", "left", i) for i in range(14, 18)]
    rows.append(_row("q18", "ann", "skip", "left", 18))
    verdict = preference_verdict("s1", queries, {}, rows, _lists(queries))
    pooled = verdict.pooled
    test = stats.binomtest(11, 14, 0.5)
    ci = test.proportion_ci(0.95, method="exact")
    assert (pooled.b, pooled.a, pooled.ties) == (11, 3, 4)
    assert pooled.share_b == pytest.approx(11 / 14)
    assert (pooled.ci_low, pooled.ci_high) == (pytest.approx(ci.low), pytest.approx(ci.high))
    assert pooled.p_value == pytest.approx(test.pvalue)
    assert verdict.undecided == 2  # the skip and the query not reached
    assert verdict.raters[0].model_dump() == {**pooled.model_dump(), "rater": "ann"}
    assert pooled.outcome == ("ship" if test.pvalue < 0.05 and ci.low > 0.5 else "inconclusive")


def test_identical_lists_are_ties_never_asked_and_a_choice_on_them_does_not_count() -> None:
    queries = ["q1", "q2", "q3"]
    rows = [_row("q1", "ann", "left"), _row("q2", "ann", "right", minute=1), _row("q3", "ann", "left", minute=2)]
    verdict = preference_verdict("s1", queries, {}, rows, _lists(queries, identical={"q3"}))
    assert verdict.identical == 1
    assert (verdict.pooled.a, verdict.pooled.b, verdict.pooled.ties) == (1, 1, 1)


def test_undo_takes_back_exactly_the_last_choice_and_a_later_choice_replaces_an_earlier() -> None:
    rows = [
        _row("q1", "ann", "left", minute=0),
        _row("q2", "ann", "left", minute=1),
        _row("", "ann", "undo", minute=2),  # takes back q2
        _row("q1", "ann", "right", minute=3),  # a second browser on q1: it replaces the first
        _row("q3", "bob", "left", minute=4),
    ]
    verdict = preference_verdict("s1", ["q1", "q2", "q3"], {}, rows, _lists(["q1", "q2", "q3"]))
    ann = next(r for r in verdict.raters if r.rater == "ann")
    assert (ann.a, ann.b, ann.queries) == (0, 1, 1)
    assert verdict.undecided == 1  # q2


def test_two_raters_pooled_by_majority_fleiss_kappa_by_hand_and_disagreements_named() -> None:
    queries = ["q1", "q2", "q3", "q4", "q5"]
    picks = {  # (ann, bob, cy) as preferred configurations, A always shown left
        "q1": ("b", "b", "b"),
        "q2": ("b", "a", "b"),
        "q3": ("a", "a", "tie"),
        "q4": ("tie", "tie", "tie"),
        "q5": ("b", "a", "tie"),
    }
    choice_of = {"a": "left", "b": "right", "tie": "same"}
    rows = [
        _row(q, rater, choice_of[p], "left", minute)
        for minute, (q, trio) in enumerate(picks.items())
        for rater, p in zip(("ann", "bob", "cy"), trio, strict=True)
    ]
    verdict = preference_verdict("s1", queries, {q: q.upper() for q in queries}, rows, _lists(queries))
    # pooled by majority: q1 b, q2 b, q3 a, q4 tie, q5 three-way split -> tie
    assert (verdict.pooled.b, verdict.pooled.a, verdict.pooled.ties) == (2, 1, 2)
    # Fleiss by hand: n=3 raters, N=5 items, categories (a, b, tie)
    table = [[0, 3, 0], [1, 2, 0], [2, 0, 1], [0, 0, 3], [1, 1, 1]]
    p_i = [sum(c * (c - 1) for c in row) / (3 * 2) for row in table]
    p_bar = sum(p_i) / 5
    p_j = [sum(row[j] for row in table) / 15 for j in range(3)]
    p_e = sum(p * p for p in p_j)
    assert verdict.fleiss_kappa == pytest.approx((p_bar - p_e) / (1 - p_e))
    assert verdict.kappa_queries == 5
    assert {d.query_id for d in verdict.disagreements} == {"q2", "q3", "q5"}
    assert verdict.disagreements[0].query == "Q2"


def test_fleiss_kappa_is_undefined_where_it_has_no_meaning() -> None:
    assert fleiss_kappa([[3, 0, 0]]) is None  # one item
    assert fleiss_kappa([[2, 0, 0], [2, 0, 0]]) is None  # every rating in one category
    assert fleiss_kappa([[2, 0, 0], [1, 1, 1]]) is None  # raters per item differ


@pytest.mark.parametrize("share", [0.8, 0.65, 0.3])
def test_queries_needed_is_the_first_n_where_the_exact_sign_test_has_80_percent_power(share: float) -> None:
    def power(n: int) -> float:  # over the rejection region binomtest itself draws
        return sum(stats.binom.pmf(x, n, share) for x in range(n + 1) if stats.binomtest(x, n, 0.5).pvalue < 0.05)

    needed = decisive_needed(share)
    assert needed is not None
    assert power(needed) >= 0.8
    assert all(power(n) < 0.8 for n in range(max(1, needed - 15), needed))
    assert decisive_needed(0.5) is None


def test_the_queries_needed_in_all_scale_by_the_share_of_decisive_queries() -> None:
    queries = [f"q{i}" for i in range(10)]
    rows = [_row(f"q{i}", "ann", "right" if i < 4 else "left" if i < 6 else "same", minute=i) for i in range(10)]
    pooled = preference_verdict("s1", queries, {}, rows, _lists(queries)).pooled
    assert pooled.queries_needed == math.ceil(decisive_needed(4 / 6) * 10 / 6)


def test_the_preferred_list_is_checked_against_ndcg_at_10_worked_by_hand() -> None:
    lists = {
        "q1": ShownLists(query_id="q1", a=["x", "r"], b=["r", "x"]),  # B puts the relevant one first
        "q2": ShownLists(query_id="q2", a=["r", "x"], b=["x", "r"]),  # A does
        "q3": ShownLists(query_id="q3", a=["x", "y"], b=["y", "x"]),  # nothing relevant: nDCG equal, not counted
    }
    qrels = {"q1": {"r": 1}, "q2": {"r": 1}, "q3": {"r": 1}}
    rows = [_row("q1", "ann", "right"), _row("q2", "ann", "right", minute=1), _row("q3", "ann", "left", minute=2)]
    verdict = preference_verdict("s1", list(lists), {}, rows, lists, qrels)
    # q1: B chosen and B's nDCG (1.0) > A's (1/log2(3)): agrees; q2: B chosen, A higher: disagrees
    assert verdict.graded is not None
    assert (verdict.graded.queries, verdict.graded.agree) == (2, 1)
    assert 1 / math.log2(3) < 1.0

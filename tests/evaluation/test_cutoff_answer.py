"""One cutoff answer: the min-score rule and the top-n rule compared at the target precision, the one that keeps
more of what is relevant recommended; and Explore's "nothing here scores as relevant"."""

from __future__ import annotations

from workbench.evaluation.calibration import Calibration, nothing_relevant
from workbench.evaluation.cutoffs import CutoffRow, cutoff_answer
from workbench.types import Candidate, SearchResult, StageTimings


def _row(precision: float, recall: float, threshold: float | None = None, top_n: int | None = None) -> CutoffRow:
    return CutoffRow(threshold=threshold, top_n=top_n, precision=precision, recall=recall, f1=0.0, kept_per_query=1)


def test_the_top_n_rule_wins_when_it_keeps_more_at_the_target() -> None:
    threshold = _row(0.80, 0.317, threshold=2.717)
    top_ns = [_row(0.90, 0.357, top_n=1), _row(0.70, 0.60, top_n=3)]  # top 3 misses the target
    answer = cutoff_answer(0.8, threshold, top_ns)
    assert answer.rule == "top_n" and answer.chosen is top_ns[0] and answer.other is threshold
    assert answer.words == (
        "To reach precision 0.80, keep each query's top 1 (precision 0.900, recall 0.357): it keeps more of what is "
        "relevant than cut at min_score 2.717 (recall 0.317)."
    )


def test_the_threshold_wins_when_it_keeps_more_and_neither_is_said() -> None:
    answer = cutoff_answer(0.8, _row(0.82, 0.5, threshold=1.0), [_row(0.85, 0.3, top_n=1)])
    assert answer.rule == "min_score" and answer.words.startswith("To reach precision 0.80, cut at min_score 1.000")
    assert cutoff_answer(0.99, None, [_row(0.5, 0.5, top_n=1)]).rule is None


def _result(scores: list[float]) -> SearchResult:
    candidates = [
        Candidate(
            id=f"d{i}",
            text="t",
            metadata={},
            vector_score=1.0,
            vector_rank=i + 1,
            rerank_score=score,
            rerank_rank=i + 1,
        )
        for i, score in enumerate(scores)
    ]
    return SearchResult(
        query="q", collection="c", store="s", k=len(scores), top_n=len(scores), retrieval="dense",
        embedding_model="e", reranker_model="r", candidates=candidates, timings=StageTimings(),
    )  # fmt: skip


def test_explore_says_nothing_scores_as_relevant_only_when_every_score_is_under_the_kept_cutoff() -> None:
    calibration = Calibration(
        reranker_model="r", collection="c", method="logistic", coef=1.0, fitted_on="x", ece_held_out=0.1,
        created="now", cutoff=2.5, cutoff_precision=0.8,
    )  # fmt: skip
    said = nothing_relevant(_result([2.1, 1.0, -3.0]), calibration)
    assert said is not None and said.startswith("Nothing here scores as relevant") and "2.500" in said
    assert nothing_relevant(_result([2.6, 1.0]), calibration) is None
    assert nothing_relevant(_result([1.0]), calibration.model_copy(update={"cutoff": None})) is None

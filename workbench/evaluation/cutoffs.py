"""Where to cut a reranked list for RAG: precision, recall (of every judged relevant document), F1 and documents
kept per query when keeping the pairs at or above a score, or each query's top n; and the lowest threshold that
reaches a target precision."""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, computed_field


class CutoffRow(BaseModel):
    """What keeping the documents at or above `threshold` (or the top `top_n`) gives, over all queries."""

    threshold: float | None = None
    top_n: int | None = None
    probability: float | None = None  # the calibrated p(relevant) at the threshold
    precision: float
    recall: float
    f1: float
    kept_per_query: float


def _row(kept: np.ndarray, relevant: np.ndarray, all_relevant: int, queries: int) -> CutoffRow:
    n_kept = int(kept.sum())
    hits = int(relevant[kept].sum())
    precision = hits / n_kept if n_kept else 0.0
    recall = hits / all_relevant if all_relevant else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return CutoffRow(precision=precision, recall=recall, f1=f1, kept_per_query=n_kept / queries)


def threshold_row(
    threshold: float, scores: np.ndarray, relevant: np.ndarray, all_relevant: int, queries: int
) -> CutoffRow:
    """Keep every pair scoring at least `threshold`: micro precision, recall of all judged relevant documents, F1
    and documents kept per query."""
    return _row(scores >= threshold, relevant, all_relevant, queries).model_copy(update={"threshold": threshold})


def threshold_for_precision(
    target: float, scores: np.ndarray, relevant: np.ndarray, all_relevant: int, queries: int
) -> CutoffRow | None:
    """The lowest threshold (the most kept) whose precision is at least `target`, keeping at least
    `min_kept(queries)` pairs (a precision over one or two pairs says nothing); None when none reaches it."""
    thresholds = np.unique(scores)  # ascending
    # Pairs kept and relevant pairs kept at each threshold, from one sort (not one pass over the pairs each).
    order = np.argsort(scores, kind="stable")
    first = np.searchsorted(scores[order], thresholds, side="left")  # where each threshold's kept pairs start
    kept = len(scores) - first
    hits = np.cumsum(relevant[order][::-1])[::-1][first]
    reaching = np.nonzero((kept >= min_kept(queries)) & (hits / kept >= target))[0]  # kept >= 1: a score
    if not len(reaching):
        return None
    return threshold_row(float(thresholds[reaching[0]]), scores, relevant, all_relevant, queries)


def min_kept(queries: int) -> int:
    """The fewest pairs a suggested cutoff may keep: 5, or one for every 10 queries when there are more."""
    return max(5, queries // 10)


def top_n_row(n: int, qids: list[str], scores: np.ndarray, relevant: np.ndarray, all_relevant: int) -> CutoffRow:
    """Keep each query's n best-scored documents."""
    kept = np.zeros(len(scores), dtype=bool)
    by_query: dict[str, list[int]] = {}
    for i, qid in enumerate(qids):
        by_query.setdefault(qid, []).append(i)
    for members in by_query.values():
        ranked = sorted(members, key=lambda i: -scores[i])[:n]
        kept[ranked] = True
    return _row(kept, relevant, all_relevant, len(by_query)).model_copy(update={"top_n": n})


class CutoffAnswer(BaseModel):
    """Which rule reaches the target precision keeping more of what is relevant: a score threshold (`min_score`)
    or each query's top n; None when neither reaches it."""

    target_precision: float
    rule: str | None  # "min_score" or "top_n"
    chosen: CutoffRow | None
    other: CutoffRow | None  # the best of the other rule that reaches the target, if any

    @computed_field  # type: ignore[prop-decorator]
    @property
    def words(self) -> str:
        """The rule to use, in a sentence."""
        if self.chosen is None:
            return f"Neither a score threshold nor a top n reaches precision {self.target_precision:.2f} here."
        said = f"To reach precision {self.target_precision:.2f}, {_rule(self.chosen)} (precision "
        said += f"{self.chosen.precision:.3f}, recall {self.chosen.recall:.3f})"
        if self.other is not None:
            said += f": it keeps more of what is relevant than {_rule(self.other)} (recall {self.other.recall:.3f})"
        return said + "."


def _rule(row: CutoffRow) -> str:
    if row.top_n is not None:
        return f"keep each query's top {row.top_n}"
    return f"cut at min_score {row.threshold:.3f}"


def cutoff_answer(target_precision: float, threshold: CutoffRow | None, top_ns: list[CutoffRow]) -> CutoffAnswer:
    """The better of the threshold that reaches the target precision and the top n that does (the one with the
    higher recall; a tie goes to the top n, the simpler rule)."""
    reaching = [row for row in top_ns if row.precision >= target_precision]
    top_n = max(reaching, key=lambda row: (row.recall, -(row.top_n or 0)), default=None)
    candidates = [row for row in (top_n, threshold) if row is not None]
    if not candidates:
        return CutoffAnswer(target_precision=target_precision, rule=None, chosen=None, other=None)
    chosen = max(candidates, key=lambda row: (row.recall, row.top_n is not None))
    other = next((row for row in candidates if row is not chosen), None)
    return CutoffAnswer(
        target_precision=target_precision, rule="top_n" if chosen.top_n is not None else "min_score", chosen=chosen,
        other=other,
    )  # fmt: skip

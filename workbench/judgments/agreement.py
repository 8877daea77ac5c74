"""How far raters agree where they rated the same (query, document) pairs: Cohen's kappa for each pair of raters
(weighted, since grades are ordered: a 2 against a 3 is a smaller disagreement than a 0 against a 3), Fleiss'
kappa over the pairs every rater graded when there are three or more, and the disagreements to settle.

The LLM judge is a rater like any other (`llm:<model>`), so its agreement with each person is in the same table.
Each rater's latest grade of a pair is theirs.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import combinations
from typing import Literal

import numpy as np
from pydantic import BaseModel
from sklearn.metrics import cohen_kappa_score

from workbench.judgments.store import JudgmentRow

Weights = Literal["linear", "quadratic"] | None


class PairAgreement(BaseModel):
    """Two raters over the pairs both graded."""

    rater_a: str
    rater_b: str
    overlap: int
    agreed: int
    kappa: float | None  # None when it is undefined (fewer than 2 shared pairs, or one grade only on both sides)


class Disagreement(BaseModel):
    """A (query, document) pair the raters graded differently."""

    query_id: str
    doc_id: str
    grades: dict[str, int]


class Agreement(BaseModel):
    """Agreement among a collection's raters."""

    raters: list[str]
    weights: str
    pairs: list[PairAgreement]
    fleiss_kappa: float | None = None  # over the pairs every rater graded, with three raters or more
    fleiss_items: int = 0
    disagreements: list[Disagreement]

    def to_markdown(self) -> str:
        """A table of each pair of raters, then Fleiss' kappa and the number of disagreements."""
        lines = ["| rater | rater | pairs both graded | agreed | Cohen's kappa |", "|---|---|---:|---:|---:|"]
        for p in self.pairs:
            kappa = "—" if p.kappa is None else f"{p.kappa:.3f}"
            lines.append(f"| {p.rater_a} | {p.rater_b} | {p.overlap} | {p.agreed} | {kappa} |")
        if self.fleiss_kappa is not None:
            lines.append(
                f"\nFleiss' kappa over the {self.fleiss_items} pairs all raters graded: {self.fleiss_kappa:.3f}"
            )
        lines.append(f"\n{len(self.disagreements)} pairs graded differently. Cohen's kappa weights: {self.weights}.")
        return "\n".join(lines)


def fleiss_kappa(table: np.ndarray) -> float | None:
    """Fleiss' kappa of an items x categories table of counts (every item rated by the same number of raters)."""
    counts = np.asarray(table, dtype=float)
    raters = counts.sum(axis=1)
    if counts.shape[0] < 2 or raters.min() < 2 or raters.min() != raters.max():
        return None
    n = raters[0]
    shares = counts.sum(axis=0) / counts.sum()
    observed = ((counts * (counts - 1)).sum(axis=1) / (n * (n - 1))).mean()
    expected = float((shares**2).sum())
    return None if expected == 1 else float((observed - expected) / (1 - expected))


def _latest(rows: Iterable[JudgmentRow]) -> dict[str, dict[tuple[str, str], int]]:
    by_rater: dict[str, dict[tuple[str, str], int]] = {}
    for row in rows:  # oldest first: a later grade replaces an earlier one
        by_rater.setdefault(row.rater, {})[(row.query_id, row.doc_id)] = row.grade
    return by_rater


def rater_agreement(rows: Iterable[JudgmentRow], weights: Weights = "quadratic") -> Agreement:
    """Cohen's kappa (weighted as asked) for every two raters with shared pairs, Fleiss' kappa over the pairs all
    of three or more raters graded, and every shared pair graded differently."""
    by_rater = _latest(rows)
    raters = sorted(by_rater)
    pairs: list[PairAgreement] = []
    for a, b in combinations(raters, 2):
        shared = sorted(set(by_rater[a]) & set(by_rater[b]))
        if not shared:
            continue
        left = [by_rater[a][p] for p in shared]
        right = [by_rater[b][p] for p in shared]
        kappa = None
        if len(shared) >= 2 and len(set(left) | set(right)) > 1:
            value = float(cohen_kappa_score(left, right, weights=weights))
            kappa = None if np.isnan(value) else value
        agreed = sum(x == y for x, y in zip(left, right, strict=True))
        pairs.append(PairAgreement(rater_a=a, rater_b=b, overlap=len(shared), agreed=agreed, kappa=kappa))
    fleiss, items = None, 0
    if len(raters) >= 3:
        common = sorted(set.intersection(*(set(by_rater[r]) for r in raters)))
        grades = sorted({g for r in raters for g in by_rater[r].values()})
        table = np.array([[sum(by_rater[r][p] == g for r in raters) for g in grades] for p in common])
        items = len(common)
        fleiss = fleiss_kappa(table) if items else None
    everyone: dict[tuple[str, str], dict[str, int]] = {}
    for rater in raters:
        for pair, grade in by_rater[rater].items():
            everyone.setdefault(pair, {})[rater] = grade
    disagreements = [
        Disagreement(query_id=q, doc_id=d, grades=grades)
        for (q, d), grades in sorted(everyone.items())
        if len(grades) > 1 and len(set(grades.values())) > 1
    ]
    return Agreement(
        raters=raters, weights=weights or "none", pairs=pairs, fleiss_kappa=fleiss, fleiss_items=items,
        disagreements=disagreements,
    )  # fmt: skip

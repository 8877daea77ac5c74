"""Scores against relevance: how well a reranker's scores separate relevant from not relevant documents (ROC AUC,
histograms per grade and their overlap), a calibration of score -> probability of relevance checked on held-out
queries (reliability diagram, expected calibration error), and the cutoff a RAG app should cut at.

The pairs are an evaluation's candidates folded to documents (each document's best chunk): every (query,
document) the first stage retrieved, with the reranker's score and the first stage's. A document is relevant when
its grade is 1 or more; a candidate nobody judged counts as not relevant, as it does in the metrics (the report
says how many pairs were judged). Calibrations are fitted with scikit-learn (logistic on the score, or isotonic)
and checked by query-grouped cross-validation: each pair's calibrated probability comes from a model fitted on
the other queries, so the error reported is the error on queries the calibration has not seen.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss, roc_auc_score
from sklearn.model_selection import GroupKFold

from workbench.config import Settings
from workbench.errors import InputError
from workbench.evaluation.cutoffs import (
    CutoffAnswer,
    CutoffRow,
    cutoff_answer,
    threshold_for_precision,
    threshold_row,
    top_n_row,
)
from workbench.evaluation.io import Qrels
from workbench.evaluation.report import EvaluationReport
from workbench.rerankers import needs_scores, to_probability
from workbench.types import SearchResult
from workbench.vocab import CALIBRATION_BINS, CALIBRATION_FOLDS, CALIBRATION_METHODS, DEFAULT_TARGET_PRECISION

UNCALIBRATED = "uncalibrated"
_HISTOGRAM_BINS = 20


class Calibration(BaseModel):
    """A fitted score -> p(relevant) map for one reranker on one collection, with what it was fitted on."""

    reranker_model: str
    collection: str
    method: str  # logistic or isotonic
    coef: float = 0.0
    intercept: float = 0.0
    x: list[float] = Field(default_factory=list)  # isotonic: the step function's knots
    y: list[float] = Field(default_factory=list)
    fitted_on: str
    ece_held_out: float
    created: str
    cutoff: float | None = None  # the min_score that reached the target precision when it was fitted
    cutoff_precision: float | None = None

    def probability(self, score: float) -> float:
        """p(relevant) for a score of this reranker."""
        if self.method == "isotonic":
            return float(np.interp(score, self.x, self.y))
        return float(1.0 / (1.0 + np.exp(-(self.coef * score + self.intercept))))


class ScoreSeparation(BaseModel):
    """One stage's scores against relevance: ROC AUC, overlap of the relevant and not-relevant histograms (the
    shared area of the two normalised histograms, 0 = apart, 1 = the same), and counts per grade per bin."""

    stage: str
    auc: float
    overlap: float
    edges: list[float]
    counts: dict[str, list[int]]  # grade label -> count per bin


class ReliabilityBin(BaseModel):
    lower: float
    upper: float
    count: int
    mean_predicted: float | None
    fraction_relevant: float | None


class CalibrationCheck(BaseModel):
    """One way of reading scores as probabilities, checked on held-out queries."""

    method: str
    ece: float
    brier: float
    bins: list[ReliabilityBin]


class CalibrationReport(BaseModel):
    """Everything `calibrate` measured; `summary()` is what `workbench eval --calibrate --json` prints."""

    collection: str
    reranker_model: str
    score_scale: str
    queries: int
    pairs: int
    relevant_pairs: int
    judged_pairs: int
    relevant_judged: int = Field(description="relevant documents judged for these queries, retrieved or not")
    separation: list[ScoreSeparation]
    checks: list[CalibrationCheck]
    chosen: Calibration
    cutoffs: list[CutoffRow]
    top_n_cutoffs: list[CutoffRow]
    target_precision: float
    target: CutoffRow | None
    folds: int
    answer: CutoffAnswer | None = None

    def check(self, method: str) -> CalibrationCheck:
        return next(c for c in self.checks if c.method == method)

    def summary(self) -> dict[str, object]:
        """AUC per stage, ECE per method on held-out queries, the chosen calibration, the cutoff table."""
        return {
            "collection": self.collection,
            "reranker": self.reranker_model,
            "queries": self.queries,
            "pairs": self.pairs,
            "relevant_pairs": self.relevant_pairs,
            "judged_pairs": self.judged_pairs,
            "auc": {s.stage: s.auc for s in self.separation},
            "overlap": {s.stage: s.overlap for s in self.separation},
            "ece_held_out": {c.method: c.ece for c in self.checks},
            "brier_held_out": {c.method: c.brier for c in self.checks},
            "calibration": self.chosen.model_dump(mode="json"),
            "target_precision": self.target_precision,
            "cutoff_for_target": self.target.model_dump(mode="json") if self.target else None,
            "cutoffs": [row.model_dump(mode="json") for row in self.cutoffs],
            "top_n_cutoffs": [row.model_dump(mode="json") for row in self.top_n_cutoffs],
            "cutoff_answer": {**self.answer.model_dump(mode="json"), "words": self.answer.words}
            if self.answer
            else None,
        }

    def to_markdown(self) -> str:
        """The figures as Markdown: separation, calibration error before and after, the cutoff table."""
        lines = [
            f"## Scores against relevance: {self.reranker_model} on {self.collection}",
            "",
            f"{self.pairs:,} (query, document) pairs from {self.queries} queries; {self.relevant_pairs:,} relevant; "
            f"{self.judged_pairs:,} judged (unjudged candidates count as not relevant).",
            "",
            "| stage | ROC AUC | histogram overlap |",
            "| --- | --- | --- |",
        ]
        lines += [f"| {s.stage} | {s.auc:.3f} | {s.overlap:.3f} |" for s in self.separation]
        lines += [
            "",
            f"Calibration on held-out queries ({self.folds}-fold, grouped by query):",
            "",
            "| reading | ECE | Brier |",
            "| --- | --- | --- |",
        ]
        lines += [f"| {c.method} | {c.ece:.3f} | {c.brier:.3f} |" for c in self.checks]
        lines += ["", f"Chosen: {self.chosen.method} ({self.chosen.fitted_on}).", ""]
        if self.target:
            lines.append(
                f"Cutoff for precision ≥ {self.target_precision:.2f}: min_score {self.target.threshold:.3f} keeps "
                f"{self.target.kept_per_query:.1f} documents a query (precision {self.target.precision:.3f}, "
                f"recall {self.target.recall:.3f})."
            )
        else:
            lines.append(f"No score threshold reaches precision {self.target_precision:.2f} on these judgments.")
        if self.answer is not None:
            lines += ["", f"**Cutoff**: {self.answer.words}"]
        lines += [
            "",
            "| min_score | p(relevant) | precision | recall | F1 | kept per query |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        lines += [
            f"| {r.threshold:.3f} | {r.probability:.2f} | {r.precision:.3f} | {r.recall:.3f} | {r.f1:.3f} | "
            f"{r.kept_per_query:.1f} |"
            for r in self.cutoffs
        ]
        return "\n".join(lines)


# Pairs ----------------------------------------------------------------------------------------------------------
def scored_pairs(
    report: EvaluationReport, qrels: Qrels
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, list[int | None]]:
    """The report's candidates as documents: (query ids, reranker scores, first-stage scores, relevant 0/1,
    grades with None for unjudged)."""
    qids: list[str] = []
    after: list[float] = []
    before: list[float] = []
    grades: list[int | None] = []
    for qid, run in report.after_run.items():
        judged = qrels.get(qid, {})
        for doc, score in run.items():
            qids.append(qid)
            after.append(score)
            before.append(report.before_run[qid][doc])
            grades.append(judged.get(doc))
    relevant = np.array([1 if (g or 0) >= 1 else 0 for g in grades], dtype=int)
    return qids, np.array(after, dtype=float), np.array(before, dtype=float), relevant, grades


# Separation -----------------------------------------------------------------------------------------------------
def overlap_coefficient(relevant_scores: np.ndarray, other_scores: np.ndarray, edges: np.ndarray) -> float:
    """The shared area of the two histograms, each normalised to sum 1, over the same bins."""
    a, _ = np.histogram(relevant_scores, bins=edges)
    b, _ = np.histogram(other_scores, bins=edges)
    return float(np.minimum(a / max(a.sum(), 1), b / max(b.sum(), 1)).sum())


def separation(stage: str, scores: np.ndarray, relevant: np.ndarray, grades: list[int | None]) -> ScoreSeparation:
    """ROC AUC, histogram overlap and per-grade histograms of one stage's scores."""
    low, high = float(scores.min()), float(scores.max())
    edges = np.linspace(low, high if high > low else low + 1.0, _HISTOGRAM_BINS + 1)
    labels = [_grade_label(g) for g in grades]
    counts = {
        label: np.histogram(scores[[i for i, x in enumerate(labels) if x == label]], bins=edges)[0].tolist()
        for label in sorted(set(labels))
    }
    return ScoreSeparation(
        stage=stage,
        auc=float(roc_auc_score(relevant, scores)),
        overlap=overlap_coefficient(scores[relevant == 1], scores[relevant == 0], edges),
        edges=edges.tolist(),
        counts=counts,
    )


def _grade_label(grade: int | None) -> str:
    return "unjudged" if grade is None else f"grade {grade}"


# Calibration ----------------------------------------------------------------------------------------------------
def reliability(probabilities: np.ndarray, relevant: np.ndarray, bins: int = CALIBRATION_BINS) -> list[ReliabilityBin]:
    """Equal-width bins over 0..1 (the last includes 1): count, mean predicted probability, share relevant."""
    index = np.minimum((probabilities * bins).astype(int), bins - 1)
    rows = []
    for b in range(bins):
        members = index == b
        n = int(members.sum())
        rows.append(
            ReliabilityBin(
                lower=b / bins,
                upper=(b + 1) / bins,
                count=n,
                mean_predicted=float(probabilities[members].mean()) if n else None,
                fraction_relevant=float(relevant[members].mean()) if n else None,
            )
        )
    return rows


def expected_calibration_error(probabilities: np.ndarray, relevant: np.ndarray, bins: int = CALIBRATION_BINS) -> float:
    """Σ over bins of (pairs in the bin / all pairs) × |mean predicted − share relevant|."""
    total = len(probabilities)
    return float(
        sum(
            row.count / total * abs(row.mean_predicted - row.fraction_relevant)  # type: ignore[operator]
            for row in reliability(probabilities, relevant, bins)
            if row.count
        )
    )


def _fit(method: str, scores: np.ndarray, relevant: np.ndarray) -> tuple[float, float, list[float], list[float]]:
    """(coef, intercept) for logistic, (x, y) knots for isotonic."""
    if relevant.min() == relevant.max():  # one class only: the rate is all there is to learn
        rate = float(relevant.mean())
        return 0.0, float(np.log(max(rate, 1e-6) / max(1 - rate, 1e-6))), [float(scores.min())], [rate]
    if method == "logistic":
        model = LogisticRegression(C=1e6, max_iter=1000).fit(scores.reshape(-1, 1), relevant)
        return float(model.coef_[0][0]), float(model.intercept_[0]), [], []
    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(scores, relevant)
    return 0.0, 0.0, iso.X_thresholds_.tolist(), iso.y_thresholds_.tolist()


def _predict(method: str, fitted: tuple[float, float, list[float], list[float]], scores: np.ndarray) -> np.ndarray:
    coef, intercept, x, y = fitted
    if method == "isotonic" and len(x) > 0:
        return np.interp(scores, x, y)
    return 1.0 / (1.0 + np.exp(-(coef * scores + intercept)))


def held_out_probabilities(
    method: str, scores: np.ndarray, relevant: np.ndarray, groups: list[str], folds: int
) -> np.ndarray:
    """Each pair's p(relevant) from a calibration fitted on the other folds' queries."""
    out = np.zeros(len(scores))
    for train, test in GroupKFold(n_splits=folds).split(scores, relevant, groups):
        out[test] = _predict(method, _fit(method, scores[train], relevant[train]), scores[test])
    return out


# The whole ------------------------------------------------------------------------------------------------------
def calibrate(
    report: EvaluationReport,
    qrels: Qrels,
    *,
    target_precision: float = DEFAULT_TARGET_PRECISION,
    folds: int = CALIBRATION_FOLDS,
) -> CalibrationReport:
    """Separation, held-out calibration and cutoffs for the reranker of `report` (see the module docstring)."""
    if not report.reranker_model:
        raise InputError("Calibration needs a reranker's scores: this evaluation ran without one.")
    needs_scores(report.score_scale, "Calibration", zero_one=True)
    if not 0 < target_precision <= 1:
        raise InputError(f"The target precision must be above 0 and at most 1; got {target_precision}.")
    qids, scores, first_stage, relevant, grades = scored_pairs(report, qrels)
    queries = len(set(qids))
    if relevant.sum() == 0 or relevant.sum() == len(relevant):
        raise InputError(
            "Calibration needs relevant and not relevant documents among the candidates; these judgments give "
            f"{int(relevant.sum())} relevant of {len(relevant)}."
        )
    folds = min(folds, queries)
    if folds < 2:
        raise InputError("Calibration is checked on held-out queries: it needs at least 2 judged queries.")
    scale = report.score_scale or "logit"
    checks = []
    raw = np.array([to_probability(s, scale) for s in scores])
    checks.append(_check(UNCALIBRATED, raw, relevant))
    for method in CALIBRATION_METHODS:
        checks.append(_check(method, held_out_probabilities(method, scores, relevant, qids, folds), relevant))
    best = min(checks[1:], key=lambda c: c.ece)
    coef, intercept, x, y = _fit(best.method, scores, relevant)
    judged = sum(g is not None for g in grades)
    chosen = Calibration(
        reranker_model=report.reranker_model,
        collection=report.collection,
        method=best.method,
        coef=coef,
        intercept=intercept,
        x=x,
        y=y,
        fitted_on=(
            f"{report.dataset}: {queries} queries, {len(scores):,} pairs at k = {report.k}, "
            f"{int(relevant.sum())} relevant; held-out ECE {best.ece:.3f}"
        ),
        ece_held_out=best.ece,
        created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    )
    all_relevant = sum(1 for qid in set(qids) for grade in qrels.get(qid, {}).values() if grade >= 1)
    grid = sorted({float(np.quantile(scores, q)) for q in np.linspace(0.5, 0.98, 13)})
    cutoffs = [threshold_row(t, scores, relevant, all_relevant, queries) for t in grid]
    for row in cutoffs:
        row.probability = chosen.probability(row.threshold or 0.0)
    target = threshold_for_precision(target_precision, scores, relevant, all_relevant, queries)
    if target is not None:
        target.probability = chosen.probability(target.threshold or 0.0)
    depths = [n for n in (1, 3, 5, 10, 20, 50) if n <= report.k]
    top_n_cutoffs = [top_n_row(n, qids, scores, relevant, all_relevant) for n in depths]
    if target is not None:
        chosen.cutoff, chosen.cutoff_precision = target.threshold, target_precision
    return CalibrationReport(
        collection=report.collection,
        reranker_model=report.reranker_model,
        score_scale=scale,
        queries=queries,
        pairs=len(scores),
        relevant_pairs=int(relevant.sum()),
        judged_pairs=judged,
        relevant_judged=all_relevant,
        separation=[
            separation("reranker", scores, relevant, grades),
            separation("first stage", first_stage, relevant, grades),
        ],
        checks=checks,
        chosen=chosen,
        cutoffs=cutoffs,
        top_n_cutoffs=top_n_cutoffs,
        target_precision=target_precision,
        target=target,
        folds=folds,
        answer=cutoff_answer(target_precision, target, top_n_cutoffs),
    )


def nothing_relevant(result: SearchResult, calibration: Calibration | None) -> str | None:
    """When every reranked score is under the cutoff kept with the calibration, the words that say so (None
    otherwise): nothing in this list scores as relevant at the precision the cutoff was chosen for."""
    if calibration is None or calibration.cutoff is None or not result.reranker_model or not result.candidates:
        return None
    scores = [c.rerank_score for c in result.candidates[: result.top_n] if c.rerank_score is not None]
    if not scores or max(scores) >= calibration.cutoff:
        return None
    return (
        f"Nothing here scores as relevant: every reranked score is under min_score {calibration.cutoff:.3f}, the "
        f"cutoff kept for precision {calibration.cutoff_precision or 0:.2f} (the best: {max(scores):.3f})."
    )


def _check(method: str, probabilities: np.ndarray, relevant: np.ndarray) -> CalibrationCheck:
    return CalibrationCheck(
        method=method,
        ece=expected_calibration_error(probabilities, relevant),
        brier=float(brier_score_loss(relevant, probabilities)),
        bins=reliability(probabilities, relevant),
    )


# Where calibrations are kept --------------------------------------------------------------------------------------
def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")[:80] or "_"


def calibration_path(settings: Settings, collection: str, reranker_model: str) -> Path:
    return Path(settings.data_dir) / "calibrations" / f"{_slug(collection)}--{_slug(reranker_model)}.json"


def save_calibration(settings: Settings, calibration: Calibration) -> Path:
    """Keep the calibration in the data folder, where the app's cards find it."""
    path = calibration_path(settings, calibration.collection, calibration.reranker_model)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(calibration.model_dump_json(indent=2), encoding="utf-8")
    return path


def load_calibration(settings: Settings, collection: str, reranker_model: str | None) -> Calibration | None:
    """The calibration kept for this reranker on this collection, or None (also when the file is unreadable)."""
    if not reranker_model:
        return None
    path = calibration_path(settings, collection, reranker_model)
    try:
        calibration = Calibration.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None
    if calibration.collection != collection or calibration.reranker_model != reranker_model:
        return None
    return calibration

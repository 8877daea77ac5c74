"""Judgments from clicks: a click log fitted by a click model (COEC or the position-based model), each pair's
estimate turned into a grade and kept in the judgments store as the rater `clicks:<model>` (source "clicks"), with
its agreement with people's grades on the pairs both graded shown first.

Click grades are machine grades (like the LLM judge's): where a person graded a pair, the person's grade counts.
The query of a click is matched to a judged query by its text (case and spacing ignored), as a typed query is.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
from pydantic import BaseModel
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score

from workbench.clicks.impressions import Impression, session_count
from workbench.clicks.logs import ClickLog, read_click_log
from workbench.clicks.models import CLICK_MODEL_TITLES, ClickFit, fit_click_model, grade_of
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.inputs import validate_collection_name
from workbench.judgments.service import judgment_rows, normal_query, typed_query_id
from workbench.judgments.store import JudgmentRow, current_grades, now, open_judgment_store
from workbench.vocab import CLICK_GRADE_CUTS, CLICK_MODELS, DEFAULT_MIN_IMPRESSIONS, MACHINE_SOURCES


class ClickAgreement(BaseModel):
    """Click grades against people's on the pairs both graded: Cohen's kappa (quadratic weights) of the grades,
    Kendall's tau-b of the click model's estimate against the people's grade."""

    shared_pairs: int
    agreed: int
    kappa: float | None
    kendall_tau: float | None

    def words(self) -> str:
        if not self.shared_pairs:
            return "no pair graded by people has enough impressions to compare: agreement unknown"
        kappa = "—" if self.kappa is None else f"{self.kappa:.3f}"
        tau = "—" if self.kendall_tau is None else f"{self.kendall_tau:.3f}"
        return (
            f"on {self.shared_pairs:,} pairs people graded too: Cohen's kappa {kappa} (quadratic), Kendall's tau "
            f"{tau}, same grade on {self.agreed:,}"
        )


class ClickImport(BaseModel):
    """What a click log gave: what was read and skipped, the pairs the model graded, and their agreement."""

    collection: str
    source: str
    format: str
    model: str
    rater: str
    provenance: str
    rows: int
    impressions: int
    sessions: int
    queries: int
    pairs: int
    graded: int
    min_impressions: int
    cuts: list[float]
    grades: dict[int, int]
    skipped: dict[str, int]
    unknown_ids: int
    agreement: ClickAgreement
    saved: bool

    def summary(self) -> str:
        """What the import read, graded and skipped, and the agreement with people, in a few lines."""
        lines = [
            f"Read {self.rows:,} rows of {self.source} ({self.format}): {self.sessions:,} sessions, "
            f"{self.impressions:,} impressions, {self.queries:,} queries, {self.pairs:,} (query, document) pairs.",
            f"{self.provenance}: {self.graded:,} pairs graded (shown at least {self.min_impressions} times; grade "
            f"cut-points {', '.join(f'{c:g}' for c in self.cuts)}): "
            + ", ".join(f"{count:,} × {grade}" for grade, count in sorted(self.grades.items())),
            f"Agreement with people {self.agreement.words()}.",
        ]
        if self.unknown_ids:
            lines.append(f"Skipped {self.unknown_ids:,} shown ids that are not documents of '{self.collection}'.")
        lines += [f"Skipped {count:,} {reason}." for reason, count in self.skipped.items()]
        lines.append(
            f"Kept as the rater '{self.rater}' in '{self.collection}'; a person's grade of a pair outranks it."
            if self.saved
            else "Not kept (--dry-run)."
        )
        return "\n".join(lines)


def click_agreement(
    estimates: dict[tuple[str, str], float], grades: dict[tuple[str, str], int], people: dict[str, dict[str, int]]
) -> ClickAgreement:
    """Agreement of click grades (and the estimates behind them) with people's current grades, on shared pairs."""
    shared = sorted(pair for pair in grades if pair[1] in people.get(pair[0], {}))
    if not shared:
        return ClickAgreement(shared_pairs=0, agreed=0, kappa=None, kendall_tau=None)
    clicks = [grades[p] for p in shared]
    theirs = [people[p[0]][p[1]] for p in shared]
    kappa = tau = None
    if len(shared) >= 2 and len(set(clicks) | set(theirs)) > 1:
        value = float(cohen_kappa_score(clicks, theirs, weights="quadratic"))
        kappa = None if np.isnan(value) else value
    if len(shared) >= 2:
        value = float(kendalltau([estimates[p] for p in shared], theirs).statistic)
        tau = None if np.isnan(value) else value
    agreed = sum(a == b for a, b in zip(clicks, theirs, strict=True))
    return ClickAgreement(shared_pairs=len(shared), agreed=agreed, kappa=kappa, kendall_tau=tau)


def _document_ids(engine: Engine, collection: str) -> set[str]:
    store = engine.registry.get(collection)
    return {str(c.metadata.get("document_id", c.id)) for c in store.all_chunks()}


def _query_ids(texts: set[str], judged: dict[str, str]) -> dict[str, str]:
    by_text = {normal_query(t): q for q, t in judged.items()}
    return {text: by_text.get(normal_query(text)) or typed_query_id(text) for text in texts}


def import_clicks(
    engine: Engine,
    collection: str,
    log: str | Path,
    *,
    events: str | Path | None = None,
    model: str = "coec",
    min_impressions: int = DEFAULT_MIN_IMPRESSIONS,
    cuts: tuple[float, ...] | None = None,
    save: bool = True,
) -> ClickImport:
    """Fit a click model to the log's impressions of the collection's documents and keep each pair shown at least
    `min_impressions` times as a grade by `clicks:<model>` (unless `save` is False), after measuring its agreement
    with people's grades. Shown ids that are not the collection's documents are dropped and counted."""
    collection = validate_collection_name(collection)
    if model not in CLICK_MODELS:
        raise InputError(f"The click model is one of {', '.join(CLICK_MODELS)}; got {str(model)[:40]!r}.")
    if isinstance(min_impressions, bool) or not isinstance(min_impressions, int) or not 1 <= min_impressions <= 10_000:
        raise InputError(f"min_impressions is a whole number from 1 to 10,000; got {min_impressions!r}.")
    cuts = tuple(float(c) for c in (cuts if cuts is not None else CLICK_GRADE_CUTS[model]))
    if len(cuts) != 3 or list(cuts) != sorted(cuts) or not all(np.isfinite(cuts)) or cuts[0] <= 0:
        raise InputError("The grade cut-points are three ascending positive numbers (for grades 1, 2 and 3).")
    engine.collection_info(collection)  # CollectionNotFoundError naming those there are, before the log is read
    read = read_click_log(log, events)
    known = _document_ids(engine, collection)
    impressions, unknown = _known(_one_spelling(read.impressions), known)
    if not impressions:
        raise InputError(
            f"None of the ids {read.source} shows is a document of '{collection}': is it the log of another collection?"
        )
    fit = fit_click_model(model, impressions)
    return _keep(engine, collection, read, fit, impressions, unknown, min_impressions, cuts, save)


def _one_spelling(impressions: list[Impression]) -> list[Impression]:
    """The impressions with each query spelled as it first appears: a query typed with other case or spacing is
    the same query (as a judged query is matched), so its pairs are counted together, never graded twice."""
    first: dict[str, str] = {}
    return [replace(i, query=first.setdefault(normal_query(i.query), i.query)) for i in impressions]


def _known(impressions: list[Impression], known: set[str]) -> tuple[list[Impression], int]:
    """The impressions with only the collection's documents shown (and clicked), and how many shown ids were left
    out."""
    kept, unknown = [], 0
    for impression in impressions:
        shown = tuple(d for d in impression.shown if d in known)
        unknown += len(impression.shown) - len(shown)
        if shown:
            kept.append(replace(impression, shown=shown, clicked=impression.clicked & set(shown)))
    return kept, unknown


def _keep(
    engine: Engine,
    collection: str,
    read: ClickLog,
    fit: ClickFit,
    impressions: list[Impression],
    unknown: int,
    min_impressions: int,
    cuts: tuple[float, ...],
    save: bool,
) -> ClickImport:
    rows = judgment_rows(engine.settings, collection)  # read first: it moves the collection's attached files in
    store = open_judgment_store(engine.settings)
    judged = store.queries(collection)
    ids = _query_ids({p.query for p in fit.pairs}, judged)
    kept = [p for p in fit.pairs if p.impressions >= min_impressions]
    estimates = {(ids[p.query], p.doc_id): p.estimate for p in kept}
    grades = {pair: grade_of(value, cuts) for pair, value in estimates.items()}
    people = current_grades([r for r in rows if r.source not in MACHINE_SOURCES])
    agreement = click_agreement(estimates, grades, people)
    sessions = session_count(impressions)
    rater = f"clicks:{fit.model}"
    provenance = f"clicks: {CLICK_MODEL_TITLES[fit.model]}, {sessions:,} sessions of {read.source}"
    if save and grades:
        at = now()
        new_rows = [
            JudgmentRow(
                collection=collection,
                query_id=q,
                doc_id=d,
                grade=grade,
                rater=rater,
                source="clicks",
                reason=f"{provenance}: estimate {estimates[(q, d)]:.3f}",
                created_at=at,
            )
            for (q, d), grade in grades.items()
        ]
        texts = {ids[p.query]: p.query for p in kept}
        store.add(new_rows, {q: t for q, t in texts.items() if q not in judged}, collection)
    return ClickImport(
        collection=collection, source=read.source, format=read.format, model=fit.model, rater=rater,
        provenance=provenance, rows=read.rows, impressions=len(impressions), sessions=sessions,
        queries=len({i.query for i in impressions}), pairs=len(fit.pairs), graded=len(grades),
        min_impressions=min_impressions, cuts=list(cuts), grades=dict(Counter(grades.values())),
        skipped=read.skipped, unknown_ids=unknown, agreement=agreement, saved=save and bool(grades),
    )  # fmt: skip

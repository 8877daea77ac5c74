"""The "Scores against relevance" view on Evaluate: how well the reranker's scores separate relevant documents
(histograms per grade, ROC AUC), whether they read as probabilities (reliability diagram, expected calibration
error on held-out queries), and where to cut a RAG list (precision, recall and F1 against min_score)."""

from __future__ import annotations

import itertools

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from workbench.app.state import engine_resource, error_text
from workbench.app.widgets import text_md
from workbench.evaluation.calibration import CalibrationReport, ScoreSeparation, calibrate, save_calibration
from workbench.evaluation.io import Qrels
from workbench.evaluation.report import EvaluationReport
from workbench.spreadsheet import csv_text
from workbench.vocab import DEFAULT_TARGET_PRECISION

_GRADE_COLOURS = {"unjudged": "#9e9e9e", "grade 0": "#616161", "grade 1": "#f59e0b", "grade 2": "#16a34a"}


def score_histograms(stage: ScoreSeparation) -> go.Figure:
    """One stage's scores, one overlaid histogram per grade."""
    edges = stage.edges
    centres = [(a + b) / 2 for a, b in itertools.pairwise(edges)]
    figure = go.Figure()
    for label, counts in stage.counts.items():
        figure.add_bar(x=centres, y=counts, name=label, opacity=0.7, marker_color=_GRADE_COLOURS.get(label))
    figure.update_layout(
        barmode="overlay",
        title=f"{stage.stage} scores by grade (ROC AUC {stage.auc:.3f}, overlap {stage.overlap:.2f})",
        xaxis_title="score",
        yaxis_title="documents",
        yaxis_type="log",
        yaxis_dtick=1,  # a label at each power of ten only (the minor ones read "5, 2, 100, 5, 2, 10")
        height=320,
        margin={"t": 50, "b": 40},
    )
    return figure


def reliability_diagram(report: CalibrationReport) -> go.Figure:
    """Mean predicted probability against the share relevant, per bin, for each reading; the diagonal is perfect."""
    figure = go.Figure()
    figure.add_scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect", line={"dash": "dot", "color": "#9e9e9e"})
    for check in report.checks:
        bins = [b for b in check.bins if b.count]
        figure.add_scatter(
            x=[b.mean_predicted for b in bins],
            y=[b.fraction_relevant for b in bins],
            mode="lines+markers",
            name=f"{check.method} (ECE {check.ece:.3f})",
            text=[f"{b.count} pairs" for b in bins],
        )
    figure.update_layout(
        title="Reliability on held-out queries",
        xaxis_title="predicted p(relevant)",
        yaxis_title="share relevant",
        xaxis_range=[0, 1],
        yaxis_range=[0, 1],
        height=360,
        margin={"t": 50, "b": 40},
    )
    return figure


def cutoff_curve(report: CalibrationReport) -> go.Figure:
    """Precision, recall and F1 against min_score, with documents kept per query on the second axis."""
    rows = report.cutoffs
    x = [r.threshold for r in rows]
    figure = go.Figure()
    for name in ("precision", "recall", "f1"):
        figure.add_scatter(x=x, y=[getattr(r, name) for r in rows], mode="lines+markers", name=name)
    figure.add_scatter(
        x=x, y=[r.kept_per_query for r in rows], mode="lines", name="kept per query", yaxis="y2", line={"dash": "dot"}
    )
    if report.target is not None:
        figure.add_vline(
            x=report.target.threshold,
            line_dash="dash",
            annotation_text=f"precision ≥ {report.target_precision:.2f}",
        )
    figure.update_layout(
        title="Cutting the reranked list at a score",
        xaxis_title="min_score",
        yaxis={"title": "precision / recall / F1", "range": [0, 1]},
        yaxis2={
            "title": "kept per query",
            "overlaying": "y",
            "side": "right",
            "rangemode": "nonnegative",
            "showgrid": False,
        },  # never a tick at "-0.33 kept per query"
        height=360,
        margin={"t": 50, "b": 40},
    )
    return figure


def _download(frame: pd.DataFrame, label: str, name: str, key: str) -> None:
    st.download_button(label, csv_text(frame), name, "text/csv", key=key)


def draw(report: EvaluationReport, qrels: Qrels) -> None:
    """The view, for an evaluation that reranked."""
    st.markdown("#### Scores against relevance, calibration and cutoff")
    target = st.number_input(
        "Target precision for the cutoff",
        min_value=0.05,
        max_value=1.0,
        value=DEFAULT_TARGET_PRECISION,
        step=0.05,
        key="calibration-target",
    )
    try:
        result = calibrate(report, qrels, target_precision=float(target))
    except Exception as exc:  # shown, never raised: the rest of the report stays on screen
        st.info(f"No calibration for this run: {error_text(exc)}")
        return
    st.caption(
        f"{result.pairs:,} (query, document) pairs from {result.queries} queries, {result.relevant_pairs} relevant; "
        f"{result.judged_pairs} judged (an unjudged candidate counts as not relevant, as in the metrics). "
        f"Calibrations are checked on held-out queries ({result.folds}-fold, grouped by query)."
    )
    columns = st.columns(len(result.separation))
    for column, stage in zip(columns, result.separation, strict=True):
        column.plotly_chart(score_histograms(stage), width="stretch", key=f"histogram-{stage.stage}")
    separation = pd.DataFrame([{"stage": s.stage, "roc_auc": s.auc, "overlap": s.overlap} for s in result.separation])
    st.dataframe(separation.style.format(precision=3), hide_index=True)
    _download(separation, "Separation (CSV)", "separation.csv", "csv-separation")

    left, right = st.columns(2)
    left.plotly_chart(reliability_diagram(result), width="stretch", key="reliability")
    checks = pd.DataFrame([{"reading": c.method, "ece": c.ece, "brier": c.brier} for c in result.checks])
    with right:
        st.dataframe(checks.style.format(precision=4), hide_index=True)
        _download(checks, "Calibration error (CSV)", "calibration_error.csv", "csv-calibration")
        bins = pd.DataFrame([{"reading": c.method, **b.model_dump()} for c in result.checks for b in c.bins])
        _download(bins, "Reliability bins (CSV)", "reliability_bins.csv", "csv-bins")
        st.markdown(f"Best on held-out queries: **{result.chosen.method}** (ECE {result.chosen.ece_held_out:.3f}).")
        if st.button("Use this calibration on the cards", key="keep-calibration"):
            try:
                save_calibration(engine_resource().settings, result.chosen)
                st.success("Calibration kept: Explore's and Compare's cards show p(relevant) for this reranker here.")
            except OSError as exc:
                st.error(f"The calibration could not be kept: {exc.strerror}.")

    st.plotly_chart(cutoff_curve(result), width="stretch", key="cutoff-curve")
    if result.target is not None:
        t = result.target
        st.markdown(
            f"To reach precision **{result.target_precision:.2f}**, cut at **min_score {t.threshold:.3f}** "
            f"(p(relevant) ≈ {t.probability:.2f}): {t.kept_per_query:.1f} documents kept per query, recall "
            f"{t.recall:.3f}. Use it as `--min-score`, `min_score` in `/search` or the MCP `search` tool."
        )
    else:
        st.markdown(f"No score threshold reaches precision {result.target_precision:.2f} on these judgments.")
    if result.answer is not None:
        st.markdown(f"**Cutoff** {text_md(result.answer.words)}")
    cutoffs = pd.DataFrame([r.model_dump(exclude={"top_n"}) for r in result.cutoffs])
    top_n = pd.DataFrame([r.model_dump(exclude={"threshold", "probability"}) for r in result.top_n_cutoffs])
    by_score, by_depth = st.columns(2)
    with by_score:
        st.dataframe(cutoffs.style.format(precision=3), hide_index=True)
        _download(cutoffs, "Cutoffs by score (CSV)", "cutoffs_by_score.csv", "csv-cutoffs")
    with by_depth:
        st.dataframe(top_n.style.format(precision=3), hide_index=True)
        _download(top_n, "Cutoffs by top n (CSV)", "cutoffs_by_top_n.csv", "csv-top-n")

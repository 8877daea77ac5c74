"""Plotly figures of an evaluation, shared by the app's Evaluate page and the HTML report (so they live below the
front ends): per-query deltas, the depth curve, and stage latency."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from workbench.evaluation.report import EvaluationReport
from workbench.vocab import PRIMARY_METRIC

STAGE_COLORS = {"embed": "#60a5fa", "search": "#34d399", "rerank": "#f59e0b", "total": "#6366f1"}
MARGINS = {"l": 10, "r": 10, "t": 40, "b": 10}


def line_against_k(
    ks: Sequence[int], values: Sequence[float | None], name: str, color: str, dash: str | None = None, **more: object
) -> go.Scatter:
    """One line of a chart against k (lines and markers), in `color`, dotted or dashed as `dash` says; `more` are
    the trace's other properties (its axis, error bars)."""
    line = {"color": color, **({"dash": dash} if dash else {})}
    return go.Scatter(x=list(ks), y=list(values), name=name, mode="lines+markers", line=line, **more)


def delta_bars(query_ids: Sequence[str], deltas: Sequence[float], metric: str) -> go.Figure:
    """Per-query change of a metric after reranking, sorted, green where reranking helped."""
    pairs = sorted(zip(query_ids, deltas, strict=True), key=lambda p: p[1])
    fig = go.Figure(
        go.Bar(
            x=list(range(len(pairs))),
            y=[d for _, d in pairs],
            marker_color=["#16a34a" if d > 0 else "#dc2626" if d < 0 else "#9ca3af" for _, d in pairs],
            customdata=[q for q, _ in pairs],
            hovertemplate="query %{customdata}<br>Δ %{y:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"Per-query change in {metric} after reranking (sorted)",
        xaxis_title="queries",
        yaxis_title=f"Δ {metric}",
        height=340,
        margin=MARGINS,
    )
    fig.update_xaxes(showticklabels=False)
    return fig


def quality_by_depth(
    ks: Sequence[int],
    before: Sequence[float],
    after: Sequence[float],
    rerank_ms: Sequence[float | None],
    metric: str,
    after_ci: Sequence[tuple[float, float] | None] = (),
) -> go.Figure:
    """The depth curve: metric before and after reranking (with its 95 % interval as error bars, as the HTML
    report draws it), and rerank time, against k. The quality axis starts at 0, so a difference inside the noise
    does not fill the chart."""
    fig = go.Figure()
    bars = None
    if after_ci and all(ci is not None for ci in after_ci):
        bars = {
            "type": "data", "symmetric": False, "color": "#4f46e5", "thickness": 1.2,
            "array": [ci[1] - a for ci, a in zip(after_ci, after, strict=True)],  # type: ignore[index]
            "arrayminus": [a - ci[0] for ci, a in zip(after_ci, after, strict=True)],  # type: ignore[index]
        }  # fmt: skip
    reranked = f"{metric} reranked (95 % interval)" if bars else f"{metric} reranked"
    fig.add_trace(line_against_k(ks, before, f"{metric} vector", "#6b7280"))
    fig.add_trace(line_against_k(ks, after, reranked, "#4f46e5", error_y=bars))
    fig.add_trace(line_against_k(ks, rerank_ms, "rerank ms (p50)", STAGE_COLORS["rerank"], "dot", yaxis="y2"))
    fig.update_layout(
        title="Quality and rerank time as k grows",
        xaxis_title="k",
        yaxis_title=metric,
        yaxis={"range": [0, 1.05]},
        # its own round ticks from 0 (aligned to the quality axis they read 151, 755, 1,360 ms)
        yaxis2={
            "title": "rerank ms",
            "overlaying": "y",
            "side": "right",
            "tickmode": "auto",
            "nticks": 6,
            "rangemode": "tozero",
            "showgrid": False,
            "tickformat": ",.0f",
        },
        height=360,
        margin=MARGINS,
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


def report_depth_curve(report: EvaluationReport) -> go.Figure:
    """An evaluation's depth curve: the primary metric before and after reranking and rerank time, against k."""
    return quality_by_depth(
        [p.k for p in report.depth],
        [p.before[PRIMARY_METRIC] for p in report.depth],
        [p.after[PRIMARY_METRIC] for p in report.depth],
        [p.rerank_ms_p50 for p in report.depth],
        PRIMARY_METRIC,
        [p.after_ci for p in report.depth],
    )

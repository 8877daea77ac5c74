"""Plotly figures for the workbench; plain functions of engine data."""

from __future__ import annotations

import html
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from workbench.app.widgets import label_of
from workbench.evaluation.figures import MARGINS, STAGE_COLORS, line_against_k
from workbench.evaluation.rerankers import RerankerComparison
from workbench.types import Candidate, SearchResult, StageTimings
from workbench.vocab import NDCG_10

MOVE_COLORS = {"up": "#16a34a", "down": "#dc2626", "new": "#2563eb", "same": "#6b7280", "dropped": "#9ca3af"}


def _short(text: str, width: int = 48) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _plain(text: str, width: int) -> str:
    """Document text for a Plotly label: shortened, and HTML-escaped (Plotly renders <a>, <b>, <br> tags)."""
    return html.escape(_short(text, width))


def _kind(c: Candidate, n: int) -> str:
    if c.rerank_rank > n:
        return "dropped"
    if c.vector_rank > n:
        return "new"
    return "up" if c.vector_rank > c.rerank_rank else "down" if c.vector_rank < c.rerank_rank else "same"


KIND_LABELS = {
    "up": "moved up",
    "down": "moved down",
    "same": "kept its rank",
    "new": "new in the top n",
    "dropped": "dropped from the top n",
}


def mini_slopegraph(result: SearchResult, relevant: set[str]) -> go.Figure:
    """The slopegraph in small, for Explore's strip: each top-n document's rank before (left) and after (right)
    reranking, documents judged relevant as thick green lines with stars, the rest thin and grey; ranks beyond
    the top n sit just below it. No labels: the full slopegraph below names every line."""
    n = result.top_n
    shown = [c for c in result.candidates if c.vector_rank <= n or c.rerank_rank <= n]
    fig = go.Figure()
    for c in sorted(shown, key=lambda c: str(c.metadata.get("document_id", c.id)) in relevant):  # relevant on top
        star = str(c.metadata.get("document_id", c.id)) in relevant
        fig.add_trace(
            go.Scatter(
                x=[0, 1],
                y=[min(c.vector_rank, n + 1), min(c.rerank_rank, n + 1)],
                mode="lines+markers",
                line={"color": MOVE_COLORS["up"] if star else "#cbd5e1", "width": 4 if star else 1.5},
                marker={"size": 9 if star else 4, "symbol": "star" if star else "circle"},
                hovertemplate=f"{_plain(label_of(c.metadata, c.text), 50)}<br>#{c.vector_rank} → #{c.rerank_rank}"
                + ("<br>judged relevant" if star else "")
                + "<extra></extra>",
                showlegend=False,
            )
        )
    fig.update_yaxes(autorange="reversed", visible=False)
    fig.update_xaxes(
        tickmode="array", tickvals=[0, 1], ticktext=["before", "after"], range=[-0.15, 1.15], fixedrange=True
    )
    fig.update_layout(height=150, margin={"l": 4, "r": 4, "t": 4, "b": 24}, plot_bgcolor="rgba(0,0,0,0)")
    return fig


def slopegraph(result: SearchResult, relevant: set[str] | None = None) -> go.Figure:
    """Each document's rank in first-stage order (left, labelled) linked to its rank after reranking (right,
    labelled). Documents that came in from beyond the top n start below it, named; documents pushed out end
    below it, each named with the rank it fell to. Documents judged relevant (their document ids in `relevant`)
    stand out: a thicker line, a star marker and a ★ before their labels. A legend explains the colours."""
    relevant = relevant or set()
    n = result.top_n
    shown = [c for c in result.candidates if c.vector_rank <= n or c.rerank_rank <= n]
    newcomers = sorted((c for c in shown if c.vector_rank > n), key=lambda c: c.vector_rank)
    dropped = sorted((c for c in shown if c.rerank_rank > n), key=lambda c: c.rerank_rank)
    below_left = {c.id: n + 1 + i * 0.7 for i, c in enumerate(newcomers)}
    below_right = {c.id: n + 1 + i * 0.7 for i, c in enumerate(dropped)}
    fig = go.Figure()
    for c in sorted(shown, key=lambda c: c.rerank_rank):
        judged_relevant = str(c.metadata.get("document_id", c.id)) in relevant
        _slope(fig, c, n, below_left.get(c.id, c.vector_rank), below_right.get(c.id, c.rerank_rank), judged_relevant)
    _slope_legend(fig, bool(relevant))
    ticks = list(range(1, n + 1))
    depth = max([n + 1, *below_left.values(), *below_right.values()])
    fig.update_yaxes(
        autorange="reversed",
        tickvals=[*ticks, n + 1],
        ticktext=[*map(str, ticks), f"below {n}"],
        title="rank",
        range=[depth + 0.5, 0.5],
    )
    first = result.first_stage.heading
    fig.update_xaxes(tickvals=[0, 1], ticktext=[first, "reranked"], range=[-0.75, 1.75])
    fig.update_layout(
        height=max(360, 34 * (depth + 2)),
        margin={"l": 40, "r": 10, "t": 40, "b": 30},
        title="Rank before → after reranking",
        plot_bgcolor="#ffffff",
        legend={"orientation": "h", "y": -0.08},
    )
    return fig


def _slope(fig: go.Figure, c: Candidate, n: int, left: float, right: float, judged_relevant: bool) -> None:
    """One document's line from its first-stage rank to its reranked rank, labelled at both ends."""
    kind = _kind(c, n)
    label = _plain(label_of(c.metadata, c.text), 60)
    fig.add_trace(
        go.Scatter(
            x=[0, 1],
            y=[left, right],
            mode="lines+markers",
            line={
                "color": MOVE_COLORS[kind],
                "width": 5 if judged_relevant else 3 if kind in {"new", "dropped"} else 2,
            },
            marker={"size": 14 if judged_relevant else 9, "symbol": "star" if judged_relevant else "circle"},
            hovertemplate=(
                f"<b>{label}</b><br>first stage #{c.vector_rank} → reranked #{c.rerank_rank}<br>"
                f"{KIND_LABELS[kind]}<extra></extra>"
            ),
            showlegend=False,
        )
    )
    short = ("★ " if judged_relevant else "") + _plain(label_of(c.metadata, c.text), 30)
    font = {"size": 11, "color": MOVE_COLORS[kind]}
    left_text = f"#{c.vector_rank} {short}" if c.vector_rank > n else short
    fig.add_annotation(x=-0.03, y=left, text=left_text, showarrow=False, xanchor="right", font=font)
    right_text = f"→ #{c.rerank_rank} {short}" if kind == "dropped" else short
    fig.add_annotation(x=1.03, y=right, text=right_text, showarrow=False, xanchor="left", font=font)


def _slope_legend(fig: go.Figure, with_relevant: bool) -> None:
    """A legend entry per kind of move, and one for the judged-relevant star when any is shown."""
    for kind, name in KIND_LABELS.items():
        fig.add_trace(
            go.Scatter(
                x=[None], y=[None], mode="lines+markers", name=name, line={"color": MOVE_COLORS[kind], "width": 3},
                marker={"size": 9},
            )
        )  # fmt: skip
    if with_relevant:
        fig.add_trace(
            go.Scatter(
                x=[None], y=[None], mode="markers", name="★ judged relevant",
                marker={"size": 14, "symbol": "star", "color": "#111827"},
            )
        )  # fmt: skip


def stage_bar(timings: StageTimings, cached: bool = False) -> go.Figure:
    """One query's stage timings as a stacked horizontal bar; a cached view says the times are from its
    first run."""
    fig = go.Figure()
    for stage in ("embed", "search", "rerank"):
        value = getattr(timings, f"{stage}_ms")
        if stage == "rerank" and round(value) == 0:
            continue  # no reranker ran (none chosen, or the skip policy): no "rerank 0 ms" segment in the legend
        fig.add_trace(
            go.Bar(
                y=["first run" if cached else "this query"],
                x=[value],
                name=f"{stage} {value:.0f} ms",
                orientation="h",
                marker_color=STAGE_COLORS[stage],
            )
        )
    fig.update_layout(
        barmode="stack",
        height=150,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        title=(
            f"Stage timings of the first run (this view came from the cache: no stage ran now) · total "
            f"{timings.total_ms:.0f} ms"
            if cached
            else f"Stage timings · total {timings.total_ms:.0f} ms"
        ),
        xaxis_title="ms",
        legend={"orientation": "h", "y": -0.5},
    )
    return fig


def stage_distribution(frame: pd.DataFrame, title: str) -> go.Figure:
    """Box plots (with every point) of each stage's milliseconds; `frame` has embed_ms … total_ms columns."""
    fig = go.Figure()
    for stage in ("embed", "search", "rerank", "total"):
        column = f"{stage}_ms"
        if column in frame:
            fig.add_trace(
                go.Box(
                    y=frame[column],
                    name=stage,
                    boxpoints="all",
                    jitter=0.4,
                    pointpos=0,
                    marker_color=STAGE_COLORS[stage],
                )
            )
    fig.update_layout(title=title, yaxis_title="ms", height=360, showlegend=False, margin=MARGINS)
    return fig


def depth_chart(ks: Sequence[int], rerank_p50: Sequence[float], rerank_p95: Sequence[float]) -> go.Figure:
    """Rerank time against k."""
    fig = go.Figure()
    fig.add_trace(line_against_k(ks, rerank_p50, "rerank p50", STAGE_COLORS["rerank"]))
    fig.add_trace(line_against_k(ks, rerank_p95, "rerank p95", STAGE_COLORS["rerank"], "dot"))
    fig.update_layout(
        title="Rerank time as k grows",
        xaxis_title="k (candidates reranked)",
        yaxis_title="ms",
        height=340,
        margin=MARGINS,
    )
    return fig


def quality_against_latency(comparison: RerankerComparison, budget_ms: float | None = None) -> go.Figure:
    """Each reranker's nDCG@10 (with the paired 95 % interval of its gain over the first stage) against its rerank
    time per query (p95), its cost in the hover, the Pareto front joined and marked, the first stage's quality and
    the latency budget as lines: up and to the left is better."""
    rows = [r for r in comparison.rows if r.latency_ms_p95 is not None]
    fig = go.Figure()
    fig.add_hline(
        y=comparison.first_stage[NDCG_10], line={"color": "#9ca3af", "dash": "dash"}, annotation_text="first stage"
    )
    if budget_ms is not None:
        fig.add_vline(x=budget_ms, line={"color": "#dc2626", "dash": "dash"}, annotation_text="latency budget")
    front = sorted((r.latency_ms_p95 or 0.0, r.metrics[NDCG_10]) for r in rows if r.pareto)
    if len(front) > 1:
        fig.add_trace(
            go.Scatter(
                x=[p[0] for p in front], y=[p[1] for p in front], mode="lines", name="Pareto front",
                line={"color": "#4f46e5", "dash": "dot"},
            )
        )  # fmt: skip
    gains = [r.vs_first_stage[NDCG_10] for r in rows]
    costs = [
        f"${r.cost_per_1000_queries:.2f}" if r.cost_per_1000_queries is not None
        else f"{r.compute_seconds_per_1000_queries or 0:.0f} s of rerank time"
        for r in rows
    ]  # fmt: skip
    fig.add_trace(
        go.Scatter(
            x=[r.latency_ms_p95 for r in rows],
            y=[r.metrics[NDCG_10] for r in rows],
            error_y={
                "type": "data", "symmetric": False, "color": "#6b7280",
                "array": [g.ci_high - g.delta for g in gains], "arrayminus": [g.delta - g.ci_low for g in gains],
            },
            mode="markers+text",
            text=[_plain(f"{r.name} ({r.backend})" if r.backend else r.name, 40) for r in rows],
            customdata=[[_plain(c, 40)] for c in costs],
            textposition="top center",
            marker={
                "size": 13,
                "color": ["#4f46e5" if r.pareto else "#9ca3af" for r in rows],
                "symbol": ["star" if r.pareto else "circle" for r in rows],
            },
            name="rerankers (star: on the front; bars: 95 % interval of the gain)",
            hovertemplate=(
                "%{text}<br>%{y:.4f} at %{x:.0f} ms p95<br>per 1,000 queries: %{customdata[0]}<extra></extra>"
            ),
        )
    )  # fmt: skip
    fig.update_layout(
        title=f"{NDCG_10} against rerank time per query",
        xaxis_title="rerank ms per query (p95)",
        yaxis_title=NDCG_10,
        height=380,
        margin=MARGINS,
        legend={"orientation": "h", "y": -0.25},
    )
    return fig

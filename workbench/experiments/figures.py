"""Plotly figures of kept experiments: a configuration's trend over time, with each run's name and notes."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from workbench.experiments.record import Experiment
from workbench.redact import plain_text


def trend_figure(experiments: Sequence[Experiment], metric: str, title: str) -> go.Figure:
    """A metric after reranking (and the first stage's) for each experiment, oldest first; hovering a point shows
    its id, name and notes."""
    ordered = sorted(experiments, key=lambda e: e.created_at)
    times = [e.created_at for e in ordered]
    labels = [
        f"{e.id}{' · ' + plain_text(e.name) if e.name else ''}{'<br>' + plain_text(e.notes)[:120] if e.notes else ''}"
        for e in ordered
    ]
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=times, y=[e.figure(metric, "before") for e in ordered], name=f"{metric} first stage",
            mode="lines+markers", line={"color": "#6b7280", "dash": "dot"}, customdata=labels,
            hovertemplate="%{customdata}<br>%{y:.4f}<extra>first stage</extra>",
        )
    )  # fmt: skip
    fig.add_trace(
        go.Scatter(
            x=times, y=[e.figure(metric) for e in ordered], name=f"{metric} reranked", mode="lines+markers+text",
            line={"color": "#4f46e5"}, customdata=labels, text=[e.name[:24] for e in ordered],
            textposition="top center", hovertemplate="%{customdata}<br>%{y:.4f}<extra>reranked</extra>",
        )
    )  # fmt: skip
    fig.update_layout(
        title=title,
        xaxis_title="run at",
        yaxis_title=metric,
        height=360,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        legend={"orientation": "h", "y": -0.25},
    )
    return fig

"""Plotly figures of kept experiments: a configuration's trend over time, with each run's name and notes."""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import timedelta

import plotly.graph_objects as go

from workbench.experiments.record import Experiment
from workbench.redact import plain_text

_LEAST_SPAN = timedelta(hours=6)  # the narrowest time axis a trend draws


def trend_figure(experiments: Sequence[Experiment], metric: str, title: str) -> go.Figure:
    """A metric after reranking (and the first stage's) for each experiment, oldest first; hovering a point shows
    its id, name and notes."""
    ordered = sorted(experiments, key=lambda e: e.created_at)
    times = [e.created_at for e in ordered]
    labels = [  # Plotly renders tags in hover text: names and notes are escaped, only our <br> is markup
        f"{e.id}{' · ' + _text(e.name) if e.name else ''}{'<br>' + _text(e.notes[:120]) if e.notes else ''}"
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
            line={"color": "#4f46e5"}, customdata=labels, text=[_text(e.name[:24]) for e in ordered],
            textposition="top center", cliponaxis=False,
            hovertemplate="%{customdata}<br>%{y:.4f}<extra>reranked</extra>",
        )
    )  # fmt: skip
    fig.update_layout(
        title=title,
        xaxis_title="run at",
        yaxis_title=metric,
        height=360,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},  # room above the top point for its name
        legend={"orientation": "h", "y": -0.25},
    )
    fig.update_xaxes(tickformat="%Y-%m-%d<br>%H:%M")
    if times[-1] - times[0] < _LEAST_SPAN:  # one run, or runs minutes apart: hours around them, not milliseconds
        middle = times[0] + (times[-1] - times[0]) / 2
        fig.update_xaxes(range=[middle - _LEAST_SPAN / 2, middle + _LEAST_SPAN / 2])
    return fig


def _text(value: str) -> str:
    return html.escape(plain_text(value))

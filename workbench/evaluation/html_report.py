"""The verdict report to share: one self-contained HTML file (Plotly charts with plotly.js inside, no request to
anywhere) beside the Markdown, with the configuration, the verdict, every metric with its interval and judged@10,
the depth curve, per-query deltas, the most helped and hurt queries with their two lists, and stage latency.

`report_html(report)` renders it; `save_report(report, folder)` writes the TREC runs, the JSON, the Markdown and
the HTML (what `workbench eval --save-runs` writes).
"""

from __future__ import annotations

import datetime as dt
import html
from pathlib import Path

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from workbench.evaluation.figures import delta_bars, report_depth_curve, stage_latency
from workbench.evaluation.report import EvaluationReport
from workbench.evaluation.verdict import COLOURS
from workbench.vocab import PRIMARY_METRIC as PRIMARY

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1100px; color: #111827; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0; } td, th { border: 1px solid #e5e7eb; padding: .3rem .6rem; }
th { background: #f9fafb; text-align: left; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.verdict { padding: .8rem 1rem; border-radius: .5rem; border-left: .4rem solid; background: #f9fafb; }
.green { border-color: #16a34a; } .red { border-color: #dc2626; } .gray { border-color: #9ca3af; }
.orange { border-color: #f59e0b; } .muted { color: #6b7280; font-size: .9rem; }
.lists { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; } ol { margin: .2rem 0; }
.g2 { color: #15803d; } .g1 { color: #b45309; } .g0 { color: #6b7280; } .gu { color: #9ca3af; font-style: italic; }
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _figure(figure: go.Figure, name: str) -> str:
    return figure.to_html(full_html=False, include_plotlyjs=False, div_id=name, config={"displaylogo": False})


def _grade(grade: int | None) -> str:
    return '<span class="gu">unjudged</span>' if grade is None else f'<span class="g{min(grade, 2)}">{grade}</span>'


def _lists(report: EvaluationReport, query_id: str) -> str:
    before, after = report.top_lists(query_id)
    columns = []
    for title, documents in (("before reranking", before), ("after reranking", after)):
        items = "".join(f"<li>{_e(doc)} · {_grade(grade)}</li>" for doc, grade in documents)
        columns.append(f"<div><b>{title}</b><ol>{items}</ol></div>")
    return f'<div class="lists">{"".join(columns)}</div>'


def report_html(report: EvaluationReport) -> str:
    """The whole report as one HTML document that needs nothing from the network."""
    parts = [*_head(report), *_metrics(report)]
    if report.depth:
        parts += ["<h2>Depth</h2>", _figure(report_depth_curve(report), "depth-curve")]
    if report.latency_p50:
        parts += ["<h2>Stage latency</h2>", _figure(stage_latency(report.latency_p50, report.latency_p95), "latency")]
    parts += [*_extremes(report), *_groups(report)]
    body = "\n".join(parts)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline' "
        "'unsafe-eval'; style-src 'unsafe-inline'; img-src data:; font-src data:\">"
        f"<title>{_e(report.dataset)}: reranking verdict</title><style>{_CSS}</style>"
        f"<script>{get_plotlyjs()}</script></head><body>\n{body}\n</body></html>\n"
    )


def _head(report: EvaluationReport) -> list[str]:
    """The title, the configuration, the verdict and the warnings."""
    parts = [
        f"<h1>Should we ship this reranker? {_e(report.dataset)} on '{_e(report.collection)}'</h1>",
        '<table class="config">',
        *(
            f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>"
            for k, v in (
                ("reranker", report.reranker_model or "none"),
                ("embedder", report.embedding_model),
                ("first stage", report.retrieval),
                ("candidates k / top n", f"{report.k} / {report.top_n}"),
                ("judged queries", report.queries),
                ("written", dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")),
            )
        ),
        "</table>",
    ]
    if report.verdict is not None:
        v = report.verdict
        parts.append(f'<p class="verdict {COLOURS[v.direction]}"><b>Verdict.</b> {_e(v.words())}</p>')
    if report.recommendation is not None:
        parts.append(f"<p><b>Recommendation.</b> {_e(report.recommendation.words)}</p>")
    if report.diagnosis is not None:
        parts.append(f'<p class="muted"><b>Signs.</b> {_e(report.diagnosis.words())}</p>')
    return parts + [f'<p class="muted">Warning: {_e(w)}</p>' for w in report.warnings]


def _metrics(report: EvaluationReport) -> list[str]:
    """Every metric with its change, interval and p-value, and the per-query change."""
    rows = []
    for r in report.metric_rows():
        interval = (
            f"{r['ci low']:+.4f} to {r['ci high']:+.4f}</td><td class='n'>{r['p']:.4f}"
            if r["p"] is not None
            else "</td><td>"
        )
        rows.append(
            f"<tr><td>{_e(r['metric'])}</td><td class='n'>{r['before rerank']:.4f}</td>"
            f"<td class='n'>{r['after rerank']:.4f}</td><td class='n'>{r['change']:+.4f}</td>"
            f"<td class='n'>{interval}</td></tr>"
        )
    return [
        "<h2>Metrics</h2>",
        "<table><tr><th>metric</th><th>before</th><th>after</th><th>change</th><th>95 % CI (paired bootstrap)</th>"
        "<th>p (randomization)</th></tr>",
        *rows,
        "</table>",
        f'<p class="muted">{PRIMARY}: {report.wins} queries helped, {report.ties} tied, {report.losses} hurt. '
        f"judged@10 is the share of the top 10 that has a judgment; unjudged documents count as not relevant.</p>",
        "<h2>Per-query change</h2>",
        _figure(
            delta_bars([o.query_id for o in report.per_query], [o.delta for o in report.per_query], PRIMARY),
            "delta-bars",
        ),
    ]


def _extremes(report: EvaluationReport) -> list[str]:
    """The queries most hurt and most helped, each with its two lists."""
    parts = []
    for heading, outcomes in (("Most hurt by reranking", report.most_hurt()), ("Most helped", report.most_helped())):
        parts.append(f"<h2>{heading}</h2>")
        if not outcomes:
            parts.append("<p>None.</p>")
        for o in outcomes:
            parts.append(
                f"<h3>{_e(o.query_id)}: {_e(o.query)} <span class='muted'>{PRIMARY} {o.before[PRIMARY]:.3f} → "
                f"{o.after[PRIMARY]:.3f}</span></h3>{_lists(report, o.query_id)}"
            )
            if report.signs(o.query_id):
                parts.append(f"<p class='muted'>Signs: {_e(report.signs(o.query_id))}</p>")
    return parts


def _groups(report: EvaluationReport) -> list[str]:
    """The figures per query group, when the queries have groups."""
    if not report.groups:
        return []
    header = "<table><tr><th>group</th><th>queries</th><th>before</th><th>after</th><th>helped / tied / hurt</th>"
    return [
        "<h2>By query group</h2>",
        header + "<th>p</th></tr>",
        *(
            f"<tr><td>{_e(g.group)}</td><td class='n'>{g.queries}</td><td class='n'>{g.before[PRIMARY]:.4f}</td>"
            f"<td class='n'>{g.after[PRIMARY]:.4f}</td><td>{g.wins} / {g.ties} / {g.losses}</td>"
            f"<td class='n'>{g.p_value:.4f}</td></tr>"
            for g in report.groups
        ),
        "</table>",
    ]


def save_report(report: EvaluationReport, folder: str | Path) -> list[Path]:
    """The report's files (TREC runs, Markdown, JSON) and the HTML report, into `folder`."""
    written = report.write(folder)
    target = Path(folder) / f"{report.collection}.report.html"
    target.write_text(report_html(report), encoding="utf-8")
    return [*written, target]

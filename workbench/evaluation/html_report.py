"""The verdict report to share: one self-contained HTML file (static SVG charts, no script, no request to anywhere)
beside the Markdown. Its first screen holds the verdict and the recommendation; then the configuration, every
metric with its interval and judged@10, the per-query change, the depth curve, stage latency, and the most helped
and hurt queries with their two lists, each document by title and snippet. It reads at a laptop's width and prints.

`report_html(report)` renders it; `save_report(report, folder)` writes the TREC runs, the JSON, the Markdown and
the HTML (what `workbench eval --save-runs` writes).
"""

from __future__ import annotations

import datetime as dt
import html
from pathlib import Path

from workbench.evaluation.report import EvaluationReport
from workbench.evaluation.svg_charts import Series, bar_chart, grouped_bars, line_chart
from workbench.evaluation.verdict import COLOURS
from workbench.vocab import PRIMARY_METRIC as PRIMARY

STAGE_COLOURS = {"embed": "#60a5fa", "search": "#34d399", "rerank": "#f59e0b", "total": "#6366f1"}
_CSS = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1000px; padding: 0 1rem; color: #111827; }
figure { margin: 1rem 0; } .doc { font-size: .92rem; } .doc small { color: #6b7280; }
@media print { body { margin: 0; max-width: none; } h2 { break-after: avoid; } figure, .lists { break-inside: avoid; } }
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


def _figure(svg: str) -> str:
    return f"<figure>{svg}</figure>"


def _grade(grade: int | None) -> str:
    return '<span class="gu">unjudged</span>' if grade is None else f'<span class="g{min(grade, 2)}">{grade}</span>'


def _document(report: EvaluationReport, doc: str) -> str:
    label = report.documents.get(doc)
    if label is None or not (label.title or label.snippet):
        return f'<span class="doc">{_e(doc)}</span>'
    title = f"<b>{_e(label.title)}</b> " if label.title else ""
    return f'<span class="doc">{title}<small>({_e(doc)})</small><br>{_e(label.snippet)}</span>'


def _lists(report: EvaluationReport, query_id: str) -> str:
    before, after = report.top_lists(query_id)
    columns = []
    for title, documents in (("before reranking", before), ("after reranking", after)):
        items = "".join(f"<li>{_document(report, doc)} · {_grade(grade)}</li>" for doc, grade in documents)
        columns.append(f"<div><b>{title}</b><ol>{items}</ol></div>")
    return f'<div class="lists">{"".join(columns)}</div>'


def report_html(report: EvaluationReport) -> str:
    """The whole report as one HTML document that needs nothing from the network and runs no script."""
    parts = [*_head(report), *_metrics(report), *_charts(report), *_extremes(report), *_groups(report)]
    body = "\n".join(parts)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        'img-src data:">'
        f"<title>{_e(report.dataset)}: reranking verdict</title><style>{_CSS}</style></head><body>\n{body}\n"
        "</body></html>\n"
    )


def _charts(report: EvaluationReport) -> list[str]:
    """The per-query change, the depth curve (quality with its interval, and rerank time) and stage latency."""
    deltas = sorted(o.delta for o in report.per_query)
    parts = [
        "<h2>Per-query change</h2>",
        _figure(bar_chart(
            deltas, ["#16a34a" if d > 0 else "#dc2626" if d < 0 else "#9ca3af" for d in deltas],
            title=f"Change in {PRIMARY} after reranking, one bar per query (sorted)", x_title="queries",
            y_title=f"Δ {PRIMARY}",
        )),
    ]  # fmt: skip
    if report.depth:
        ks = [p.k for p in report.depth]
        quality = [
            Series("first stage", "#6b7280", [p.before[PRIMARY] for p in report.depth]),
            Series("reranked (95 % CI)", "#4f46e5", [p.after[PRIMARY] for p in report.depth],
                   [p.after_ci for p in report.depth]),
        ]  # fmt: skip
        parts += ["<h2>Depth</h2>", _figure(line_chart(ks, quality, title=f"{PRIMARY} as k grows", x_title="k",
                                                       y_title=PRIMARY))]  # fmt: skip
        times = [
            Series("p50", STAGE_COLOURS["rerank"], [p.rerank_ms_p50 for p in report.depth]),
            Series("p95", "#b45309", [p.rerank_ms_p95 for p in report.depth], dashed=True),
        ]
        if any(p.rerank_ms_p50 is not None for p in report.depth):
            parts.append(_figure(line_chart(ks, times, title="Rerank time per query as k grows", x_title="k",
                                            y_title="ms")))  # fmt: skip
    if report.latency_p50:
        stages = [s for s in ("embed", "search", "rerank", "total") if s in report.latency_p50]
        groups = [("p50", "#6366f1", [report.latency_p50[s] for s in stages]),
                  ("p95", "#d1d5db", [report.latency_p95.get(s, 0.0) for s in stages])]  # fmt: skip
        chart = grouped_bars(stages, groups, title="Milliseconds per query, by stage", y_title="ms")
        parts += ["<h2>Stage latency</h2>", _figure(chart)]
    return parts


def _head(report: EvaluationReport) -> list[str]:
    """The title, the verdict and the recommendation (the first screen), the signs, the warnings, then the
    configuration."""
    parts = [f"<h1>Should we ship this reranker? {_e(report.dataset)} on '{_e(report.collection)}'</h1>"]
    if report.verdict is not None:
        v = report.verdict
        parts.append(f'<p class="verdict {COLOURS[v.direction]}"><b>Verdict.</b> {_e(v.words())}</p>')
    if report.recommendation is not None:
        parts.append(f"<p><b>Recommendation.</b> {_e(report.recommendation.words)}</p>")
    if report.diagnosis is not None:
        parts.append(f'<p class="muted"><b>Signs.</b> {_e(report.diagnosis.words())}</p>')
    parts += [f'<p class="muted">Warning: {_e(w)}</p>' for w in report.warnings]
    return [
        *parts,
        '<table class="config">',
        *(
            f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>"
            for k, v in (
                ("reranker", report.reranker_model or "none"),
                ("reranker backend", report.reranker_backend or "—"),
                ("embedder", report.embedding_model),
                ("first stage", report.first_stage),
                ("candidates k / top n", f"{report.k} / {report.top_n}"),
                ("judged queries", report.queries),
                ("written", dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")),
            )
        ),
        "</table>",
    ]


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
    target = Path(folder) / f"{report.file_stem}.report.html"
    target.write_text(report_html(report), encoding="utf-8")
    return [*written, target]

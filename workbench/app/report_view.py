"""An evaluation's report drawn: the headline and verdict, groups, an outside run, the charts, the queries most
hurt and helped (one click from Explore) and the downloads. Evaluate draws the report it has just run; Experiments
draws a kept one the same way."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from workbench.app.state import engine_resource, explore_with, for_report, page, shown_errors
from workbench.app.widgets import counted, reranked_row, text_md, vector_row
from workbench.clicks.interleaving import OnlineTestSize, online_test_size
from workbench.evaluation import PRIMARY, trec_run_text
from workbench.evaluation.figures import delta_bars, report_depth_curve
from workbench.evaluation.html_report import report_html
from workbench.evaluation.report import EvaluationReport
from workbench.services.demo import GROUPS
from workbench.spreadsheet import csv_text
from workbench.types import SearchPlan
from workbench.vocab import JUDGED_10, MAX_K


def headline(report: EvaluationReport) -> None:
    """What was run; the metrics before and after, the p-value, wins and losses, unjudged; the verdict."""
    st.subheader(
        f"{report.dataset} on '{report.collection}': {counted(report.queries, 'query', 'queries')}, k={report.k}, "
        f"top {report.top_n}"
    )
    st.caption(
        f"embedder `{report.embedding_model}` · reranker `{report.reranker_model or 'none'}`"
        f"{f' on `{report.reranker_backend}`' if report.reranker_backend else ''} · {report.first_stage} "
        f"candidates · {report.seconds:.1f} s · {report.score_cache_hits} scores from the cache"
    )
    if report.preference is not None:
        st.markdown("**Blind preference**  \n" + "  \n".join(text_md(line) for line in report.preference.lines()))
    for warning in report.warnings:
        st.warning(warning, icon=":material/warning:")
    st.dataframe(pd.DataFrame(report.metric_rows()).style.format(precision=4), hide_index=True, width="stretch")
    for note in report.interval_notes():
        st.caption(text_md(note))
    m = st.columns(4)
    measured = report.verdict is not None and report.verdict.direction in {"helps", "hurts"}
    m[0].metric(
        f"{PRIMARY} after",
        f"{report.after[PRIMARY]:.4f}",
        f"{report.after[PRIMARY] - report.before[PRIMARY]:+.4f}",
        delta_color="normal" if measured else "off",  # a colour and an arrow only for a change the verdict counts
        delta_arrow="auto" if measured else "off",
        help=f"judged@10: {report.before.get(JUDGED_10, 0):.0%} before, {report.after.get(JUDGED_10, 0):.0%} after",
    )
    m[1].metric("p-value (randomization)", f"{report.p_value:.4f}", help=f"paired t-test: {report.p_value_ttest:.4f}")
    m[2].metric("helped / tied / hurt", f"{report.wins} / {report.ties} / {report.losses}")
    m[3].metric(
        f"unjudged in top {report.top_n}",
        f"{report.unjudged_after} of {report.judged_looked_at}",
        help=f"before reranking: {report.unjudged_before}",
    )
    if report.verdict is not None:
        v = report.verdict
        label = {"helps": "helps", "hurts": "hurts", "none": "no measurable difference", "unknown": "too few judgments"}
        st.markdown(f"**Verdict** :{v.colour}-badge[{label[v.direction]}] {text_md(v.words())}")
        st.markdown(
            f"**Online test** {text_md(_online_test(report).words())}",
            help="Team-draft interleaving of the first stage's top n and the reranked top n, simulated on these "
            "judgments with position-based clicks: the impressions an interleaved test in production needs to see a "
            "preference with 80 % power (two-sided sign test, α = 0.05). `workbench serve` runs that test: /search "
            "with interleave, /clicks, then `workbench interleaving analyse`.",
        )
        if report.recommendation is not None:
            st.markdown(f"**Recommendation** {text_md(report.recommendation.words)}")
        if report.diagnosis is not None:
            st.caption(text_md(report.diagnosis.words()))
    else:
        st.caption("No reranker in this run: the figures are the first stage's.")


def served(report: EvaluationReport) -> None:
    """The verdict as a fail-open service serves it under the run's rerank budget (evaluation/served.py), when the
    run had one: nDCG@10 as served beside the first stage and always reranked, the share served reranked, and the
    end-to-end times; the queries served unreranked listed."""
    figures = report.served
    if figures is None:
        return
    load = f", {figures.concurrency} searches at once" if figures.concurrency > 1 else ""
    st.markdown(f"#### As served under a rerank budget of {figures.budget_ms:g} ms{load}")
    m = st.columns(4)
    first, always = figures.vs_first_stage, figures.vs_always_reranked
    m[0].metric(f"{PRIMARY} as served", f"{figures.as_served:.4f}", f"{first.delta:+.4f} vs first stage",
                delta_color="off", delta_arrow="off", help=f"first stage {figures.first_stage:.4f}")  # fmt: skip
    m[1].metric("against always reranked", f"{always.delta:+.4f}", help=f"always {figures.always_reranked:.4f}")
    m[2].metric("served reranked", f"{figures.served_reranked} of {figures.queries}", f"{figures.share_reranked:.0%}",
                delta_color="off", delta_arrow="off")  # fmt: skip
    m[3].metric("end to end p50 / p95", f"{figures.p50_ms:.0f} / {figures.p95_ms:.0f} ms")
    st.caption(text_md(" ".join(figures.lines())))
    if figures.over_budget:
        shown = ", ".join(figures.over_budget[:10]) + (" …" if len(figures.over_budget) > 10 else "")
        st.caption(text_md(f"Served at their first-stage order (rerank over the budget): {shown}"))


def _online_test(report: EvaluationReport) -> OnlineTestSize:
    """The sizing of the report's online test, simulated once per report (every widget reruns the page)."""
    return for_report("online-test", report, None, lambda: online_test_size(report))


def kept_as(experiment_id: str) -> None:
    """Where the evaluation was kept, one click (or one shared link) from the Experiments page."""
    c1, c2 = st.columns([4, 1])
    c1.caption(
        f"Kept as experiment `{experiment_id}`: it stays on the Experiments page (link: `?experiment={experiment_id}`)"
        ", to compare with later runs, run again, or share."
    )
    if c2.button("Open in Experiments", key=f"open-experiment-{experiment_id}"):
        st.query_params["experiment"] = experiment_id
        st.switch_page(page("experiments"), query_params={"experiment": experiment_id})


def groups(report: EvaluationReport) -> None:
    """The figures per query group, when the judged queries have groups."""
    if report.groups:
        st.markdown("#### By query group")
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "group": GROUPS.get(g.group, g.group),
                        "queries": g.queries,
                        f"{PRIMARY} before": g.before[PRIMARY],
                        f"{PRIMARY} after": g.after[PRIMARY],
                        "mrr@10 before": g.before["mrr@10"],
                        "mrr@10 after": g.after["mrr@10"],
                        "helped / tied / hurt": f"{g.wins} / {g.ties} / {g.losses}",
                        "p": g.p_value,
                    }
                    for g in report.groups
                ]
            ).style.format(precision=4),
            hide_index=True,
            width="stretch",
        )


def outside(report: EvaluationReport) -> None:
    """An outside TREC run against the reranked run, when one was given."""
    if report.outside is not None:
        o = report.outside
        st.markdown(
            f"**Outside run** `{text_md(o.name_a)}`: {PRIMARY} {o.a[PRIMARY]:.4f} vs reranked {o.b[PRIMARY]:.4f} over "
            f"{o.queries} queries, p = {o.p_value:.4f}"
        )


def query_by_query(report: EvaluationReport, plan: SearchPlan | None, key: str) -> None:
    """Every query's nDCG@10 before and after, worst first, with the change's sign in words and colour; a row
    picked opens the query's two lists (first stage and reranked, with grades and movements) here, above the
    charts. `plan` is the plan the report ran (None: a report of runs alone, which has no lists to open)."""
    st.markdown(f"#### Query by query, worst first ({PRIMARY})")
    only = st.toggle("Only the queries that changed", value=True, key=f"{key}-only-changed")
    rows = report.per_query_rows(changed_only=only)
    if not rows:
        st.caption("No query's nDCG@10 changed." if only else "No per-query figures.")
        return
    columns = ["change", "delta", f"before {PRIMARY}", f"after {PRIMARY}", "query_id", "query"]
    frame = pd.DataFrame(rows)[columns].rename(columns={"delta": "Δ", "query_id": "query id"})
    styled = frame.style.map(_change_colour, subset=["change"]).format(
        {"Δ": "{:+.3f}", f"before {PRIMARY}": "{:.3f}", f"after {PRIMARY}": "{:.3f}"}
    )
    picked = st.dataframe(
        styled, hide_index=True, width="stretch", height=min(36 * (len(frame) + 1) + 3, 260),
        on_select="rerun", selection_mode="single-row", key=f"{key}-queries",
    )  # fmt: skip
    st.caption(
        "Pick a row to open its two lists below, with grades and movements."
        if plan is not None
        else "These are runs alone: there are no lists to open."
    )
    chosen = picked.selection.rows if picked is not None else []
    if chosen and plan is not None:
        row = rows[chosen[0]]
        _two_lists(report, plan, row["query_id"], row["query"])


def _change_colour(word: str) -> str:
    colour = {"▼ worse": "#fde2e1", "▲ better": "#dff3e4"}.get(word)
    return f"background-color: {colour}" if colour else ""


def _two_lists(report: EvaluationReport, plan: SearchPlan, query_id: str, query: str) -> None:
    """One query's first-stage top n beside its reranked top n, with the report's grades."""
    grades = report.qrels.get(query_id, {})
    with shown_errors(), st.spinner("Searching the query again (its results are cached)…"):
        result = engine_resource().search(query, plan)
        st.markdown(f"##### `{text_md(query_id)}` {text_md(query)}")
        left, right = st.columns(2)
        with left:
            st.markdown(f"**First stage** · top {result.top_n} of {len(result.candidates)}")
            for candidate in result.candidates[: result.top_n]:
                vector_row(candidate, result.top_n, grades, result.retrieval, fusion=result.fusion, compact=True)
        with right:
            st.markdown(f"**Reranked** · top {result.top_n}" if result.reranker_model else "**No reranker**")
            for hit in result.reranked:
                reranked_row(hit, grades, result.score_scale, compact=True)


def charts(report: EvaluationReport) -> None:
    """The per-query change, and the depth curve when one was asked for."""
    outcomes = report.ranked_outcomes()
    st.plotly_chart(
        delta_bars([o.query_id for o in outcomes], [o.delta for o in outcomes], PRIMARY),
        width="stretch",
        key="delta-bars",
    )
    if report.depth:
        st.plotly_chart(report_depth_curve(report), width="stretch", key="depth-curve")
        if report.depth_timings_reused:
            st.caption("The rerank times are the first measurement of these settings: nothing was measured again.")


def most_hurt_and_helped(report: EvaluationReport) -> None:
    """The queries reranking hurt and helped most, each one click from Explore."""
    plan = SearchPlan(collection=report.collection, retrieval=report.retrieval, fusion=report.fusion,
                      k=min(report.k, MAX_K), top_n=min(report.top_n, report.k, MAX_K), reranker=None)  # fmt: skip

    hurt, helped = st.columns(2)
    for column, title, rows in (
        (hurt, "Most hurt by reranking", report.most_hurt()),
        (helped, "Most helped by reranking", report.most_helped()),
    ):
        with column:
            st.markdown(f"#### {title}")
            if not rows:
                st.caption("None.")
            for o in rows:
                c1, c2 = st.columns([4, 1])
                scores = f"{o.before[PRIMARY]:.3f} → **{o.after[PRIMARY]:.3f}**"
                c1.markdown(f"`{text_md(o.query_id)}` {text_md(o.query[:120])}  \n{scores}")
                if report.signs(o.query_id):
                    c1.caption(f"Signs: {text_md(report.signs(o.query_id))}")
                if c2.button(
                    "Explore", key=f"explore-{title}-{o.query_id}", on_click=explore_with, args=(o.query, plan)
                ):
                    st.switch_page(page("explore"))


def downloads(report: EvaluationReport) -> None:
    """The runs, the report and the per-query figures to download."""
    per_query = pd.DataFrame(report.per_query_rows())
    d = st.columns(5)
    d[0].download_button(
        "Run before (TREC)", trec_run_text(report.before_run, "vector"), f"{report.file_stem}.before.trec"
    )
    d[1].download_button(
        "Run after (TREC)", trec_run_text(report.after_run, "reranked"), f"{report.file_stem}.after.trec"
    )
    d[2].download_button("Report (Markdown)", report.to_markdown(), f"{report.file_stem}.report.md", "text/markdown")
    d[3].download_button("Per query (CSV)", csv_text(per_query), f"{report.file_stem}.per_query.csv", "text/csv")
    d[4].download_button(
        "Verdict report (HTML)",
        lambda: report_html(report),  # made when asked for: it carries plotly.js, a few MB
        f"{report.file_stem}.report.html",
        "text/html",
        on_click="ignore",
        help="One self-contained file to share: the verdict, metrics with intervals, charts, most helped and hurt "
        "queries with their lists. It opens offline.",
    )

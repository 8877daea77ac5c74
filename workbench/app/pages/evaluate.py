"""Evaluate: judgments in, metrics before and after reranking out, with significance, groups and a depth curve.

The page calls the same service as `workbench eval` (`evaluate_dataset`), which checks every argument
before any work and refuses judgments that do not belong to the collection.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from workbench.app import calibration_view, queue_view, rerankers_view
from workbench.app.state import STATE, Controls, controls, engine_resource, error_text, page, set_value
from workbench.app.uploads import beir_folders, save_upload, server_path
from workbench.app.widgets import file_picker, sidebar_note, text_md
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation import PRIMARY, Dataset, evaluate_dataset, read_trec_run, trec_run_text
from workbench.evaluation.figures import delta_bars, report_depth_curve
from workbench.evaluation.html_report import report_html
from workbench.evaluation.report import EvaluationReport
from workbench.evaluation.rerankers import compare_rerankers
from workbench.evaluation.sources import judged_dataset
from workbench.inputs import parse_int_list
from workbench.judgments import load_judgments, pooled_reports
from workbench.rerankers import discover_rerankers
from workbench.services.demo import DEMO_COLLECTION, GROUPS, demo_dir
from workbench.vocab import DEFAULT_K, DEFAULT_TOP_N, JUDGED_10, MAX_K

DEMO = "The demo handbook's judgments (50 queries)"
ATTACHED = "Judgments of the collection in the sidebar (rated and imported)"
FOLDER = "A BEIR folder on this machine"
UPLOAD = "Upload queries and qrels"


def run() -> None:
    """The Evaluate page, drawn under the sidebar that `main.run` draws: an outline of its sections."""
    engine = engine_resource()
    c = controls()
    st.title("Evaluate")
    sidebar_note(
        ("reranker", "first stage"),
        own="the judgments, the collection, k, top n and max queries (judged queries run without filters)",
    )
    st.caption(
        "Run judged queries through the engine and see what the reranker does: by how much, on which queries, "
        "and whether the difference is real. It may help, do nothing or hurt; the figures say which."
    )
    presets = _presets(engine, c)
    asked = _form(engine, c, presets)
    if asked.submitted:
        _evaluate(engine, c, presets, asked)
    report = _report_or_stop()
    _headline(report)
    with st.expander("Judging queue: grade what the metrics cannot see", expanded=report.unjudged_after > 0):
        pool = [r for r in STATE.eval_pool if r.collection == report.collection and r.dataset == report.dataset]
        queue_view.draw(engine, pool or [report], c.rater)
    if STATE.reranker_comparison is not None:
        rerankers_view.draw(STATE.reranker_comparison)
    _groups(report)
    _outside(report)
    _charts(report)
    _most_hurt_and_helped(report)
    _downloads(report)
    if report.reranker_model and STATE.eval_qrels is not None:
        st.divider()
        calibration_view.draw(report, STATE.eval_qrels)


@dataclass
class _EvalForm:
    """What the evaluation form asked for."""

    source: str
    folder_text: str
    split: str
    queries_file: Any
    qrels_file: Any
    outside_file: Any
    collection: str
    k: int
    top_n: int
    max_queries: int
    depth_ks: str
    compared: list[str]
    submitted: bool


def _presets(engine: Engine, c: Controls) -> dict[str, Path | None]:
    """Where judgments can come from: the demo's, the sidebar collection's (when it has some), the BEIR folders
    found in the allowed folders, a folder typed in, an upload."""
    presets: dict[str, Path | None] = {DEMO: demo_dir()}
    if c.collection and load_judgments(engine.settings, c.collection) is not None:
        presets[ATTACHED] = None
    for folder in beir_folders(engine.settings):
        if folder != demo_dir().resolve():
            presets[f"BEIR: {folder.name}"] = folder
    presets[FOLDER] = None
    presets[UPLOAD] = None
    return presets


def _form(engine: Engine, c: Controls, presets: dict[str, Path | None]) -> _EvalForm:
    """The judgments, the collection, the depths and the rerankers to evaluate."""
    choices = discover_rerankers(engine.settings)
    by_id = {m.id: m for m in choices}
    source = st.radio("Judgments", list(presets), key="eval-source")
    default_collection = {
        DEMO: DEMO_COLLECTION,
        ATTACHED: c.collection or "",
    }.get(source, (presets[source].name if presets.get(source) else c.collection or ""))
    with st.form("eval-form"):
        folder_text = split = ""
        queries_file = qrels_file = None
        if source == FOLDER:
            folder_text = st.text_input(
                "BEIR folder (corpus.jsonl, queries.jsonl, qrels/test.tsv), inside the allowed folders",
                key="eval-folder",
            )
        if source not in {UPLOAD, ATTACHED, DEMO}:
            split = st.text_input("qrels split", "test", key="eval-split")
        if source == UPLOAD:
            queries_file = file_picker(
                st, "Queries (BEIR queries.jsonl or id<TAB>text)", ["jsonl", "tsv", "txt"], "eval-queries"
            )
            qrels_file = file_picker(st, "Qrels (BEIR TSV or TREC qrels)", ["tsv", "txt", "qrels"], "eval-qrels")
        outside_file = file_picker(
            st, "Optional: an outside TREC run to compare", ["trec", "txt", "run"], "eval-outside"
        )
        c1, c2, c3, c4 = st.columns(4)
        collection = c1.text_input(
            "Collection (ingested from a BEIR corpus when missing)",
            value=default_collection,
            key=f"eval-collection-{source}",
        )
        k = c2.number_input("k (candidates)", 1, MAX_K, value=DEFAULT_K, key="eval-k")
        top_n = c3.number_input("top n", 1, MAX_K, value=DEFAULT_TOP_N, key="eval-top-n")
        max_queries = c4.number_input("max queries (0 = all)", 0, 100000, value=0, key="eval-max")
        depth_ks = st.text_input("Depth curve k values (empty = none)", "10, 20, 50", key="eval-depth")
        compared = st.multiselect(
            "Rerankers side by side (optional: two or more, on the same candidates)",
            [m.id for m in choices],
            format_func=lambda i: by_id[i].short_name,
            key="eval-rerankers",
            help="Local cross-encoders, their int8 variant, and the services and hosted rerankers configured with "
            "RERANKER_SERVICE_URL or WORKBENCH_RERANKERS.",
        )
        submitted = st.form_submit_button("Run evaluation", type="primary")
    return _EvalForm(
        source, folder_text, split, queries_file, qrels_file, outside_file, collection, int(k), int(top_n),
        int(max_queries), depth_ks, compared, submitted,
    )  # fmt: skip


def _dataset(engine: Engine, c: Controls, presets: dict[str, Path | None], asked: _EvalForm, tmp: Path) -> Dataset:
    """The judged queries the form names (uploads saved under `tmp`)."""
    uploaded = asked.source == UPLOAD
    if uploaded and (asked.queries_file is None or asked.qrels_file is None):
        raise InputError("Upload both a queries file and a qrels file.")
    beir = None
    if asked.source not in {UPLOAD, ATTACHED, DEMO}:
        beir = presets[asked.source] or server_path(asked.folder_text, engine.settings, "BEIR folder")
    return judged_dataset(
        engine.settings,
        queries=save_upload(asked.queries_file, tmp) if uploaded else None,
        qrels=save_upload(asked.qrels_file, tmp) if uploaded else None,
        demo=asked.source == DEMO,
        beir=beir,
        split=asked.split.strip() or "test",
        collection=c.collection if asked.source == ATTACHED else None,
    )


def _evaluate(engine: Engine, c: Controls, presets: dict[str, Path | None], asked: _EvalForm) -> None:
    """Run the evaluation the form asked for (and the rerankers side by side). A failure is kept to be shown, and
    no earlier report stays on screen."""
    STATE.eval_report, STATE.eval_error, STATE.reranker_comparison = None, None, None
    STATE.eval_qrels = None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            dataset = _dataset(engine, c, presets, asked, Path(tmp))
            outside_file = asked.outside_file
            outside = read_trec_run(save_upload(outside_file, Path(tmp))) if outside_file is not None else None
        wanted = parse_int_list(asked.depth_ks, "Depth curve k values") if asked.depth_ks.strip() else []
        depth = [d for d in wanted if d <= asked.k]
        if len(depth) < len(wanted):
            left_out = ", ".join(str(d) for d in wanted if d > asked.k)
            st.info(f"Depth values above k ({asked.k}) were left out: {left_out}.")
        ingest_bar = st.empty()
        bar = st.progress(0.0, text="running queries")
        collection = asked.collection.strip() or dataset.name
        # the sidebar's first stage and reranker over the whole judged set: no metadata filters
        plan = c.plan(engine).with_(collection=collection, k=asked.k, top_n=asked.top_n, filters={})
        STATE.eval_report = evaluate_dataset(
            engine,
            dataset,
            plan,
            max_queries=asked.max_queries or None,
            depth=depth,
            outside_run=outside,
            outside_name=asked.outside_file.name if asked.outside_file is not None else "outside run",
            progress=lambda d, t: bar.progress(d / t, text=f"{d}/{t} queries"),
            ingest_progress=lambda d, t: ingest_bar.progress(d / max(t, 1), text=f"ingesting {d}/{t}"),
        )
        STATE.eval_qrels = dataset.qrels
        STATE.eval_pool = pooled_reports(STATE.eval_pool, STATE.eval_report)
        if len(asked.compared) > 1:
            side = st.progress(0.0, text="rerankers side by side")
            STATE.reranker_comparison = compare_rerankers(
                engine,
                dataset,
                plan,  # its collection, first stage, k and top n; each reranker in turn
                asked.compared,
                max_queries=asked.max_queries or None,
                prices=STATE.prices,
                progress=lambda d, t: side.progress(d / t, text=f"rerankers: {d}/{t} searches"),
            )
        elif asked.compared:
            st.info("Pick two or more rerankers to see them side by side.")
    except Exception as exc:  # shown, never raised: the page keeps working
        STATE.eval_error = error_text(exc)


def _report_or_stop() -> EvaluationReport:
    """The last report, under the last error if any; the page stops when there is no report yet."""
    if STATE.eval_error:
        st.error(STATE.eval_error, icon=":material/error:")
    report: EvaluationReport | None = STATE.eval_report
    if report is None:
        if not STATE.eval_error:
            st.info(
                "Pick judgments and press Run evaluation. The demo's judgments are ready to run; a BEIR corpus is "
                "ingested into the collection if it is missing."
            )
        st.stop()
    return report


def _headline(report: EvaluationReport) -> None:
    """What was run; the metrics before and after, the p-value, wins and losses, unjudged; the verdict."""
    st.subheader(
        f"{report.dataset} on '{report.collection}': {report.queries} queries, k={report.k}, top {report.top_n}"
    )
    st.caption(
        f"embedder `{report.embedding_model}` · reranker `{report.reranker_model or 'none'}` · {report.retrieval} "
        f"candidates · {report.seconds:.1f} s · {report.score_cache_hits} scores from the cache"
    )
    for warning in report.warnings:
        st.warning(warning, icon=":material/warning:")
    st.dataframe(pd.DataFrame(report.metric_rows()).style.format(precision=4), hide_index=True, width="stretch")
    m = st.columns(4)
    measured = report.verdict is not None and report.verdict.direction in {"helps", "hurts"}
    m[0].metric(
        f"{PRIMARY} after",
        f"{report.after[PRIMARY]:.4f}",
        f"{report.after[PRIMARY] - report.before[PRIMARY]:+.4f}",
        delta_color="normal" if measured else "off",  # a colour only for a change the verdict counts
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
    else:
        st.caption("No reranker in this run: the figures are the first stage's.")


def _groups(report: EvaluationReport) -> None:
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


def _outside(report: EvaluationReport) -> None:
    """An outside TREC run against the reranked run, when one was given."""
    if report.outside is not None:
        o = report.outside
        st.markdown(
            f"**Outside run** `{text_md(o.name_a)}`: {PRIMARY} {o.a[PRIMARY]:.4f} vs reranked {o.b[PRIMARY]:.4f} over "
            f"{o.queries} queries, p = {o.p_value:.4f}"
        )


def _charts(report: EvaluationReport) -> None:
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


def _most_hurt_and_helped(report: EvaluationReport) -> None:
    """The queries reranking hurt and helped most, each one click from Explore."""

    def open_in_explore(query: str) -> None:
        set_value("query", query)
        set_value("collection", report.collection)
        set_value("k", min(report.k, MAX_K))
        set_value("retrieval", report.retrieval)
        STATE.top_n_wanted = min(report.top_n, report.k)

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
                if c2.button("Explore", key=f"explore-{title}-{o.query_id}", on_click=open_in_explore, args=(o.query,)):
                    st.switch_page(page("explore"))


def _downloads(report: EvaluationReport) -> None:
    """The runs, the report and the per-query figures to download."""
    per_query = pd.DataFrame(report.per_query_rows())
    d = st.columns(5)
    d[0].download_button(
        "Run before (TREC)", trec_run_text(report.before_run, "vector"), f"{report.collection}.before.trec"
    )
    d[1].download_button(
        "Run after (TREC)", trec_run_text(report.after_run, "reranked"), f"{report.collection}.after.trec"
    )
    d[2].download_button("Report (Markdown)", report.to_markdown(), f"{report.collection}.report.md", "text/markdown")
    d[3].download_button(
        "Per query (CSV)", per_query.to_csv(index=False), f"{report.collection}.per_query.csv", "text/csv"
    )
    d[4].download_button(
        "Verdict report (HTML)",
        lambda: report_html(report),  # made when asked for: it carries plotly.js, a few MB
        f"{report.collection}.report.html",
        "text/html",
        on_click="ignore",
        help="One self-contained file to share: the verdict, metrics with intervals, charts, most helped and hurt "
        "queries with their lists. It opens offline.",
    )


if __name__ == "__main__":  # Streamlit runs a page file as __main__; importing the module draws nothing
    run()

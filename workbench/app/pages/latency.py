"""Latency: stage timings of this session's searches, a load run, rerank time against k, and the parity audit of the
reranker's backends (held to fp32 torch, with speed against the machine's ceiling)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from workbench.app.charts import depth_chart, stage_distribution
from workbench.app.markdown import text_md
from workbench.app.progress import transient_progress
from workbench.app.state import STATE, Controls, controls, engine_resource, shown_errors
from workbench.app.widgets import counted, file_picker, sidebar_note
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation.latency import MIN_P95_SAMPLES, STAGES, load_run, rerank_time_by_k, summarize
from workbench.evaluation.parity import audit_parity
from workbench.experiments import open_experiment_store
from workbench.inputs import parse_int_list
from workbench.models import resolve_model
from workbench.rerankers.factory import runs_here, split_backend
from workbench.rerankers.local.backends import kept_audit
from workbench.services.demo import DEMO_COLLECTION, sample_queries
from workbench.services.evaluations import EvaluationRequest, judged_queries_of
from workbench.spreadsheet import csv_text
from workbench.types import StageTimings


def run() -> None:
    """The Latency page, drawn under the sidebar that `main.run` draws: an outline of its sections."""
    engine = engine_resource()
    c = controls()
    st.title("Latency")
    sidebar_note(
        "latency",
        own="the queries and concurrency of a load run; the k values of the rerank-time measurement (which runs "
        "without filters)",
    )
    _session_searches()
    queries = _load_run_queries(engine)
    _load_run(engine, c, queries)
    _rerank_time(engine, c, queries)
    _backends(engine, c)


def _session_searches() -> None:
    """This session's searches: per-stage figures of those that ran a model, and every search."""
    st.subheader("This session's searches")
    history = pd.DataFrame([h.row() for h in STATE.history])
    if history.empty:
        st.info(
            "No searches yet in this session: run some on Explore to see their stage timings here. "
            "(A load run, below, reports its figures in its own section.)"
        )
    else:
        measured = history[~history["cached"]]
        repeats = len(history) - len(measured)
        st.caption(
            f"{counted(len(history), 'search', 'searches')}; {counted(repeats, 'was', 'were')} answered from a cache "
            "(a repeat: no model ran), listed but left out of the figures. Changing top n re-slices a search and is "
            f"not counted again. p95 is shown from {MIN_P95_SAMPLES} measured searches on."
        )
        if measured.empty:
            st.info("Every search so far came from a cache: there are no model runs to measure yet.")
        else:
            summary = pd.DataFrame(
                [
                    s.model_dump()
                    for s in summarize(StageTimings(**row) for row in measured[list(STAGES)].to_dict("records"))
                ]
            )
            st.dataframe(summary.style.format(precision=1), hide_index=True, width="stretch")
            st.plotly_chart(
                stage_distribution(measured, f"Per-stage ms over {len(measured)} measured searches"),
                width="stretch",
                key="session-box",
            )
        st.dataframe(history.style.format(precision=1), hide_index=True, width="stretch")
        st.download_button("Every search (CSV)", csv_text(history), "session_searches.csv", "text/csv")


def _load_run_queries(engine: Engine) -> list[str]:
    """The load run's queries: the samples, a kept query set, or an uploaded list (one per line)."""
    st.divider()
    st.subheader("Load run")
    st.caption(
        "N searches at a chosen concurrency, caches bypassed so every query pays for its model calls, with every "
        "sidebar control."
    )
    source = st.radio(
        "Queries", ["Sample queries", "A kept query set", "Upload a list (one per line)"], horizontal=True,
        key="load-source",
    )  # fmt: skip
    queries = [q.text for q in sample_queries()]
    if source == "A kept query set":
        queries = []
        with shown_errors():
            store = open_experiment_store(engine.settings)
            names = store.query_set_names()
            if not names:
                st.caption("No query sets yet: keep one on the Experiments page.")
            else:
                queries = [q.text for q in store.query_set(st.selectbox("Query set", names, key="load-set")).queries]
    elif source != "Sample queries":
        upload = file_picker(st, "Query list (.txt, UTF-8)", ["txt"], "load-upload")
        queries = []
        if upload is not None:
            try:
                queries = [q.strip() for q in upload.getvalue().decode("utf-8-sig").splitlines() if q.strip()]
            except UnicodeDecodeError:
                st.error("The query list is not UTF-8 text: save it as UTF-8 and upload it again.")
    return queries


def _load_run(engine: Engine, c: Controls, queries: list[str]) -> None:
    """N searches with the sidebar's plan at a chosen concurrency, caches bypassed, and their figures."""
    c1, c2 = st.columns(2)
    n = c1.number_input("Queries to run", 1, 2000, value=20, key="load-n")
    concurrency = c2.number_input("Concurrency (threads)", 1, 16, value=2, key="load-concurrency")

    if st.button("Start load run", type="primary", disabled=not queries or c.collection is None):
        with transient_progress("starting") as bar, shown_errors():
            if c.filter_error:
                raise InputError(c.filter_error)
            STATE.load_run = load_run(
                engine,
                queries,
                c.plan(engine),
                n=int(n),
                concurrency=int(concurrency),
                progress=lambda done, total: bar.progress(done / total, text=f"{done}/{total} queries"),
            )
    run = STATE.load_run
    if run is not None:
        st.markdown(
            f"**{counted(len(run.timings), 'query', 'queries')}** at concurrency {run.concurrency}, k={run.k} → "
            f"top {run.top_n}: "
            f"{run.wall_seconds:.1f} s wall, **{run.queries_per_second:.2f} queries/s**"
        )
        if run.errors:
            st.error(f"{counted(len(run.errors), 'query', 'queries')} failed; first: {run.errors[0]}")
        table = pd.DataFrame([s.model_dump() for s in run.summary()])
        st.dataframe(table.style.format(precision=1), hide_index=True, width="stretch")
        frame = pd.DataFrame([t.model_dump() for t in run.timings])
        d1, d2 = st.columns(2)
        d1.download_button("Load run summary (CSV)", csv_text(table), "load_run.csv", "text/csv")
        d2.download_button("Load run, every query (CSV)", csv_text(frame), "load_run_queries.csv", "text/csv")
        st.plotly_chart(stage_distribution(frame, "Load run: per-stage ms"), width="stretch", key="load-box")


def _rerank_time(engine: Engine, c: Controls, queries: list[str]) -> None:
    """Rerank time as k grows, measured on a few of the queries."""
    st.divider()
    st.subheader("Rerank time against k")
    ks_text = st.text_input("k values", "10, 25, 50, 100", key="depth-ks")
    depth_queries = st.number_input("Queries per k", 1, 20, value=3, key="depth-queries")
    if st.button("Measure", disabled=c.collection is None):
        with shown_errors(), transient_progress("measuring") as bar:
            ks = parse_int_list(ks_text, "k values")
            STATE.depth_points = rerank_time_by_k(
                engine,
                (queries or [q.text for q in sample_queries()])[: int(depth_queries)],
                c.plan(engine),
                ks,
                progress=lambda done, total: bar.progress(done / total),
            )
    points = STATE.depth_points
    if points:
        st.plotly_chart(
            depth_chart([p.k for p in points], [p.rerank_ms_p50 for p in points], [p.rerank_ms_p95 for p in points]),
            width="stretch",
            key="depth-chart",
        )
        depth = pd.DataFrame([p.model_dump() for p in points])
        st.dataframe(depth, hide_index=True, width="stretch")
        st.download_button("Rerank time by k (CSV)", csv_text(depth), "rerank_by_k.csv", "text/csv")


def _backends(engine: Engine, c: Controls) -> None:
    """The parity audit: the configured reranker on every backend here, held to fp32 torch on this collection's
    judged queries, with each backend's speed against the machine's ceiling; `auto` follows its verdicts."""
    st.divider()
    st.subheader("Backends: held to fp32 torch")
    model = engine.settings.reranker_model
    kept = None
    if runs_here(model):
        with shown_errors():
            folder = resolve_model(split_backend(model)[0], engine.settings, setting="RERANKER_MODEL")
            kept = kept_audit(folder, exports_root=engine.settings.exports_dir)
    if kept is None:
        st.caption(
            f"No parity audit of {text_md(model)} on this machine yet: `auto` runs fp32 torch, the reference. The "
            "audit scores the same candidates on every backend and lets `auto` take the fastest faithful one."
        )
    else:
        verdicts = ", ".join(f"{b} {'faithful' if ok else 'not faithful'}" for b, ok in kept.faithful.items())
        st.caption(text_md(f"Kept audit ({kept.queries} queries, {kept.measured_at:%Y-%m-%d}): {verdicts}."))
    audit_queries = st.number_input("Queries to audit on", 1, 500, value=50, key="parity-queries")
    if st.button("Run the parity audit", disabled=c.collection is None, key="parity-run"):
        with shown_errors():
            request = EvaluationRequest(demo=c.collection == DEMO_COLLECTION, collection=c.collection)
            dataset, _ = judged_queries_of(engine.settings, request)
            with st.spinner("Scoring the same candidates on every backend…"):
                STATE.parity = audit_parity(
                    engine, dataset, c.plan(engine).with_(reranker=model, filters={}), max_queries=int(audit_queries)
                )
    audit = STATE.parity
    if audit is not None:
        for line in audit.lines()[-2:]:
            st.markdown(text_md(line))
        st.dataframe(pd.DataFrame(audit.table()), hide_index=True, width="stretch")
        if audit.peak is not None:
            st.caption(
                f"This machine's peak per core: fp32 {audit.peak.fp32_gflops_per_core:.0f} GFLOP/s, int8 "
                f"{audit.peak.int8_gops_per_core:.0f} GOP/s ({audit.peak.how})."
            )


if __name__ == "__main__":  # Streamlit runs a page file as __main__; importing the module draws nothing
    run()

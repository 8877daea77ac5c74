"""Latency: stage timings of this session's queries, a load run, and rerank time against k."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ui.charts import depth_chart, stage_distribution
from ui.state import page_setup, shown_errors
from workbench.demo import sample_queries
from workbench.latency import STAGES, load_run, rerank_time_by_k, summarize
from workbench.types import StageTimings

engine, controls = page_setup()

st.title("Latency")

st.subheader("This session's queries")
history = pd.DataFrame(st.session_state.get("history", []))
if history.empty:
    st.info("No queries yet in this session: run some on Explore, or start a load run below.")
else:
    summary = pd.DataFrame(
        [s.model_dump() for s in summarize(StageTimings(**row) for row in history[list(STAGES)].to_dict("records"))]
    )
    st.dataframe(summary.style.format(precision=1), hide_index=True, width="stretch")
    st.plotly_chart(
        stage_distribution(history, f"Per-stage ms over {len(history)} queries"),
        width="stretch",
        key="session-box",
    )
    st.dataframe(history, hide_index=True, width="stretch")
    st.download_button("Session timings (CSV)", history.to_csv(index=False), "session_timings.csv", "text/csv")

st.divider()
st.subheader("Load run")
st.caption(
    "N searches at a chosen concurrency, caches bypassed so every query pays for its model calls. Uses the "
    "sidebar's collection, k, top n and filters."
)
source = st.radio("Queries", ["Sample queries", "Upload a list (one per line)"], horizontal=True, key="load-source")
queries = sample_queries()
if source != "Sample queries":
    upload = st.file_uploader("Query list (.txt)", type=["txt"], key="load-upload")
    queries = [] if upload is None else [q.strip() for q in upload.getvalue().decode("utf-8").splitlines()]
    queries = [q for q in queries if q]
c1, c2 = st.columns(2)
n = c1.number_input("Queries to run", 1, 2000, value=20, key="load-n")
concurrency = c2.number_input("Concurrency (threads)", 1, 16, value=2, key="load-concurrency")

if st.button("Start load run", type="primary", disabled=not queries or controls.collection is None):
    bar = st.progress(0.0, text="starting")
    with shown_errors():
        run = load_run(
            engine,
            queries,
            n=int(n),
            concurrency=int(concurrency),
            k=controls.k,
            top_n=controls.top_n,
            collection=controls.collection,
            filters=controls.filters,
            reranker=controls.reranker,
            progress=lambda done, total: bar.progress(done / total, text=f"{done}/{total} queries"),
        )
        st.session_state["load_run"] = run
if "load_run" in st.session_state:
    run = st.session_state["load_run"]
    st.markdown(
        f"**{len(run.timings)} queries** at concurrency {run.concurrency}, k={run.k} → top {run.top_n}: "
        f"{run.wall_seconds:.1f} s wall, **{run.queries_per_second:.2f} queries/s**"
    )
    if run.errors:
        st.error(f"{len(run.errors)} queries failed; first: {run.errors[0]}")
    table = pd.DataFrame([s.model_dump() for s in run.summary()])
    st.dataframe(table.style.format(precision=1), hide_index=True, width="stretch")
    st.download_button("Load run summary (CSV)", table.to_csv(index=False), "load_run.csv", "text/csv")
    frame = pd.DataFrame([t.model_dump() for t in run.timings])
    st.plotly_chart(stage_distribution(frame, "Load run: per-stage ms"), width="stretch", key="load-box")

st.divider()
st.subheader("Rerank time against k")
ks_text = st.text_input("k values", "10, 25, 50, 100", key="depth-ks")
depth_queries = st.number_input("Queries per k", 1, 20, value=3, key="depth-queries")
if st.button("Measure", disabled=controls.collection is None):
    with shown_errors():
        ks = sorted({int(x) for x in ks_text.replace(",", " ").split()})
        bar = st.progress(0.0)
        points = rerank_time_by_k(
            engine,
            (queries or sample_queries())[: int(depth_queries)],
            ks,
            collection=controls.collection,
            progress=lambda done, total: bar.progress(done / total),
        )
        st.session_state["depth_points"] = points
if "depth_points" in st.session_state:
    points = st.session_state["depth_points"]
    st.plotly_chart(
        depth_chart([p.k for p in points], [p.rerank_ms_p50 for p in points], [p.rerank_ms_p95 for p in points]),
        width="stretch",
        key="depth-chart",
    )
    depth = pd.DataFrame([p.model_dump() for p in points])
    st.dataframe(depth, hide_index=True, width="stretch")
    st.download_button("Rerank time by k (CSV)", depth.to_csv(index=False), "rerank_by_k.csv", "text/csv")

"""Evaluate: judgments in, metrics before and after reranking out, with significance and a depth curve."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from ui.charts import delta_bars, quality_by_depth
from ui.state import page_setup, shown_errors
from workbench.errors import CollectionNotFoundError
from workbench.evaluation import Dataset, compare_runs, depth_curve, markdown_report, run_evaluation
from workbench.evaluation.io import read_trec_run, trec_run_text
from workbench.evaluation.runner import PRIMARY

engine, controls = page_setup()
st.title("Evaluate")
st.caption(
    "Run judged queries through the engine and see whether the reranker helps, by how much, on which "
    "queries, and whether the difference is real."
)

shared = Path(__file__).resolve().parents[2] / "shared" / "data"
source = st.radio(
    "Judgments", ["A BEIR folder on this machine", "Upload queries and qrels"], horizontal=True, key="eval-source"
)
with st.form("eval-form"):
    if source == "A BEIR folder on this machine":
        folder = st.text_input(
            "BEIR folder (corpus.jsonl, queries.jsonl, qrels/test.tsv)",
            value=str(shared / "scifact") if (shared / "scifact").exists() else "",
            key="eval-folder",
        )
        split = st.text_input("qrels split", "test", key="eval-split")
    else:
        queries_file = st.file_uploader(
            "Queries (BEIR queries.jsonl or id<TAB>text)", type=["jsonl", "tsv", "txt"], key="eval-queries"
        )
        qrels_file = st.file_uploader("Qrels (BEIR TSV or TREC qrels)", type=["tsv", "txt", "qrels"], key="eval-qrels")
    outside_file = st.file_uploader(
        "Optional: an outside TREC run to compare", type=["trec", "txt", "run"], key="eval-outside"
    )
    c1, c2, c3, c4 = st.columns(4)
    collection = c1.text_input(
        "Collection (ingested from a BEIR corpus when missing)", key="eval-collection", value=controls.collection or ""
    )
    k = c2.number_input("k (candidates)", 1, 200, value=100, key="eval-k")
    top_n = c3.number_input("top n", 1, 200, value=10, key="eval-top-n")
    max_queries = c4.number_input("max queries (0 = all)", 0, 100000, value=0, key="eval-max")
    depth_ks = st.text_input("Depth curve k values (empty = none)", "10, 20, 50, 100", key="eval-depth")
    submitted = st.form_submit_button("Run evaluation", type="primary")

if submitted:
    with shown_errors():
        if source == "A BEIR folder on this machine":
            dataset = Dataset.from_beir(Path(folder.strip()).expanduser(), split.strip() or "test")
        else:
            if queries_file is None or qrels_file is None:
                raise ValueError("upload both a queries file and a qrels file")
            with tempfile.TemporaryDirectory() as tmp:
                q_path, r_path = Path(tmp) / queries_file.name, Path(tmp) / qrels_file.name
                q_path.write_bytes(queries_file.getvalue())
                r_path.write_bytes(qrels_file.getvalue())
                dataset = Dataset.from_files(q_path, r_path)
        name = collection.strip() or dataset.name
        try:
            engine.collection_info(name)
        except CollectionNotFoundError:
            if dataset.corpus is None:
                raise
            ingest_bar = st.progress(0.0, text=f"ingesting {dataset.corpus} into '{name}'")
            engine.ingest(
                dataset.corpus, name, progress=lambda d, t: ingest_bar.progress(d / max(t, 1), text=f"ingest {d}/{t}")
            )
        bar = st.progress(0.0, text="running queries")
        report = run_evaluation(
            engine,
            dataset,
            name,
            k=int(k),
            top_n=int(top_n),
            reranker=controls.reranker,
            max_queries=int(max_queries) or None,
            progress=lambda d, t: bar.progress(d / t, text=f"{d}/{t} queries"),
        )
        ks = sorted({int(x) for x in depth_ks.replace(",", " ").split()}) if depth_ks.strip() else []
        if ks:
            report.depth = depth_curve(engine, report, dataset, ks, reranker=controls.reranker)
        st.session_state["eval_report"] = report
        st.session_state["eval_outside"] = None
        if outside_file is not None:
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "outside.trec"
                path.write_bytes(outside_file.getvalue())
                st.session_state["eval_outside"] = compare_runs(
                    dataset, read_trec_run(path), report.after_run, int(k), (outside_file.name, "reranked")
                )

report = st.session_state.get("eval_report")
if report is None:
    st.info(
        "Choose judgments and press Run evaluation. A BEIR corpus is ingested into the collection if it is "
        "missing; a second run with the same settings comes from the caches."
    )
    st.stop()

st.subheader(f"{report.dataset} on '{report.collection}': {report.queries} queries, k={report.k}, top {report.top_n}")
st.caption(
    f"embedder `{report.embedding_model}` · reranker `{report.reranker_model or 'none'}` · "
    f"{report.seconds:.1f} s · {report.score_cache_hits} scores from the cache"
)
table = pd.DataFrame(
    [
        {
            "metric": m,
            "before rerank": report.before[m],
            "after rerank": report.after[m],
            "change": report.after[m] - report.before[m],
        }
        for m in report.before
    ]
)
st.dataframe(table.style.format(precision=4), hide_index=True, width="stretch")
m = st.columns(4)
m[0].metric(
    f"{PRIMARY} after", f"{report.after[PRIMARY]:.4f}", f"{report.after[PRIMARY] - report.before[PRIMARY]:+.4f}"
)
m[1].metric("p-value (randomization)", f"{report.p_value:.4f}", help=f"paired t-test: {report.p_value_ttest:.4f}")
m[2].metric("helped / tied / hurt", f"{report.wins} / {report.ties} / {report.losses}")
m[3].metric(
    f"unjudged in top {report.top_n}",
    f"{report.unjudged_after} of {report.judged_looked_at}",
    help=f"before reranking: {report.unjudged_before}",
)
verdict = "significant at 0.05" if report.p_value < 0.05 else "not significant at 0.05"
st.markdown(f"The change in {PRIMARY} is **{verdict}** (p = {report.p_value:.4f}).")

outside = st.session_state.get("eval_outside")
if outside is not None:
    st.markdown(
        f"**Outside run** `{outside.name_a}`: {PRIMARY} {outside.a[PRIMARY]:.4f} vs reranked "
        f"{outside.b[PRIMARY]:.4f} over {outside.queries} queries, p = {outside.p_value:.4f}"
    )

outcomes = report.ranked_outcomes()
st.plotly_chart(
    delta_bars([o.query_id for o in outcomes], [o.delta for o in outcomes], PRIMARY), width="stretch", key="delta-bars"
)
if report.depth:
    st.plotly_chart(
        quality_by_depth(
            [p.k for p in report.depth],
            [p.before[PRIMARY] for p in report.depth],
            [p.after[PRIMARY] for p in report.depth],
            [p.rerank_ms_p50 for p in report.depth],
            PRIMARY,
        ),
        width="stretch",
        key="depth-curve",
    )


def open_in_explore(query: str) -> None:
    st.session_state.update(
        query=query, collection=report.collection, k=min(report.k, 200), top_n=min(report.top_n, report.k)
    )
    st.switch_page("pages/explore.py")


hurt, helped = st.columns(2)
hurt_rows = [o for o in outcomes if o.delta < 0][:5]
helped_rows = [o for o in reversed(outcomes) if o.delta > 0][:5]
for column, title, rows in (
    (hurt, "Most hurt by reranking", hurt_rows),
    (helped, "Most helped by reranking", helped_rows),
):
    with column:
        st.markdown(f"#### {title}")
        if not rows:
            st.caption("None.")
        for o in rows:
            c1, c2 = st.columns([4, 1])
            c1.markdown(f"`{o.query_id}` {o.query[:120]}  \n{o.before[PRIMARY]:.3f} → **{o.after[PRIMARY]:.3f}**")
            if c2.button("Explore", key=f"explore-{title}-{o.query_id}"):
                open_in_explore(o.query)

per_query = pd.DataFrame(
    [
        {
            "query_id": o.query_id,
            "query": o.query,
            **{f"before {k}": v for k, v in o.before.items()},
            **{f"after {k}": v for k, v in o.after.items()},
            "delta": o.delta,
        }
        for o in outcomes
    ]
)
d = st.columns(4)
d[0].download_button(
    "Run before (TREC)", trec_run_text(report.before_run, "vector"), f"{report.collection}.before.trec"
)
d[1].download_button("Run after (TREC)", trec_run_text(report.after_run, "reranked"), f"{report.collection}.after.trec")
d[2].download_button("Report (Markdown)", markdown_report(report), f"{report.collection}.report.md", "text/markdown")
d[3].download_button("Per query (CSV)", per_query.to_csv(index=False), f"{report.collection}.per_query.csv", "text/csv")

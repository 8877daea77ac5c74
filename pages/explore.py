"""Explore: one query, the vector list beside the reranked list, movements, slopegraph and timings."""

from __future__ import annotations

import streamlit as st

from ui.charts import slopegraph, stage_bar
from ui.results import downloads, reranked_row, vector_row
from ui.state import page_setup, remember, shown_errors
from workbench.demo import DEMO_COLLECTION, sample_queries

engine, controls = page_setup()

st.title("Explore")
st.caption(
    "Vector search beside cross-encoder reranking. Change top n freely: the result is reranked once and "
    "re-sliced, no model runs."
)


def _use_sample() -> None:
    picked = st.session_state.get("sample_pick")
    if picked:
        st.session_state["query"] = picked


if controls.collection == DEMO_COLLECTION:
    with st.expander("Sample queries", expanded=not st.session_state.get("query")):
        st.pills(
            "Sample queries", sample_queries(), key="sample_pick", on_change=_use_sample, label_visibility="collapsed"
        )
query = st.text_input("Query", key="query", placeholder="Ask the collection something…", max_chars=None)

if controls.collection is None:
    st.stop()
if not query:
    st.info("Type a query and press Enter, or pick a sample query.")
    st.stop()

result = None
with shown_errors():
    result = engine.search(
        query, controls.k, controls.top_n, controls.filters, collection=controls.collection, reranker=controls.reranker
    )
if result is None:
    st.stop()
remember(result)
st.session_state["last_result"] = result

moved_up = sum(r.movement in {"up", "new"} for r in result.reranked)
cols = st.columns(5)
cols[0].metric("candidates", len(result.candidates), help=f"k = {result.k}")
cols[1].metric("moved up or new", moved_up)
cols[2].metric("dropped from top n", len(result.dropped))
cols[3].metric("rerank ms", f"{result.timings.rerank_ms:.0f}")
cols[4].metric("total ms", f"{result.timings.total_ms:.0f}")
if result.cache.result_cached:
    st.success("Re-sliced from the cached result: no model ran for this view.", icon=":material/cached:")
elif result.cache.score_hits:
    st.info(f"{result.cache.score_hits} of {len(result.candidates)} scores came from the score cache.")
if result.duplicates_removed:
    st.caption(f"{result.duplicates_removed} duplicate passages removed from the candidates.")
if not result.candidates:
    st.warning("Nothing matched: try another query or loosen the filters.")
    st.stop()

st.plotly_chart(stage_bar(result.timings), width="stretch", key="stage-bar")

left, right = st.columns(2)
with left:
    st.subheader(f"Vector search · top {result.top_n} of {len(result.candidates)}")
    for candidate in result.candidates[: result.top_n]:
        vector_row(candidate, result.top_n)
with right:
    st.subheader(f"Reranked · top {result.top_n}")
    if result.reranker_model is None:
        st.caption("Reranking is off: the order is the vector order.")
    for row in result.reranked:
        reranked_row(row)

st.plotly_chart(slopegraph(result), width="stretch", key="slopegraph")
downloads(result, "explore")

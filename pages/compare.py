"""Compare: one query through two configurations side by side, with overlap and rank correlation."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ui.results import downloads, reranked_row
from ui.state import collections, page_setup, remember, shown_errors
from workbench.compare import agreement
from workbench.engine import DEFAULT
from workbench.inputs import MAX_K

engine, controls = page_setup()

st.title("Compare")
st.caption(
    "The same query through two configurations: reranker on or off, two depths, two rerankers, or two "
    "collections (and so two embedders)."
)

names = [c.name for c in collections(engine)]
if not names:
    st.info("No collections yet: create one on the Collections page.")
    st.stop()


def config_form(side: str, default_rerank: bool, default_k: int) -> dict:
    st.markdown(f"#### Configuration {side}")
    index = names.index(controls.collection) if controls.collection in names else 0
    collection = st.selectbox("Collection", names, index=index, key=f"cmp-{side}-collection")
    k = st.number_input("k", 1, MAX_K, value=default_k, key=f"cmp-{side}-k")
    rerank = st.toggle("Rerank", value=default_rerank and engine.settings.reranker_enabled, key=f"cmp-{side}-rerank")
    model = st.text_input(
        "Reranker model (id or folder; empty = configured)", key=f"cmp-{side}-model", disabled=not rerank
    )
    reranker = (model.strip() or DEFAULT) if rerank else None
    return {"collection": collection, "k": int(k), "reranker": reranker}


left, right = st.columns(2)
with left:
    a = config_form("A", default_rerank=False, default_k=controls.k)
with right:
    b = config_form("B", default_rerank=True, default_k=controls.k)
top_n = st.slider("top n compared", 1, min(a["k"], b["k"]), value=min(controls.top_n, a["k"], b["k"]), key="cmp-top-n")
query = st.text_input("Query", key="cmp-query", value=st.session_state.get("query", ""))
if not query:
    st.info("Type a query to compare the two configurations.")
    st.stop()

results = {}
for side, config in (("A", a), ("B", b)):
    with shown_errors():
        results[side] = engine.search(
            query, config["k"], top_n, controls.filters, collection=config["collection"], reranker=config["reranker"]
        )
        remember(results[side])
if len(results) < 2:
    st.stop()

ids_a = [r.id for r in results["A"].reranked]
ids_b = [r.id for r in results["B"].reranked]
agree = agreement(ids_a, ids_b)
m = st.columns(5)
m[0].metric(f"overlap@{agree.n}", f"{agree.overlap_at_n:.2f}", help=f"{agree.overlap} shared documents")
m[1].metric("Jaccard", f"{agree.jaccard:.2f}")
m[2].metric("Kendall τ (shared)", "—" if agree.kendall_tau is None else f"{agree.kendall_tau:.2f}")
m[3].metric("RBO (p=0.9)", f"{agree.rbo:.2f}")
m[4].metric("total ms A / B", f"{results['A'].timings.total_ms:.0f} / {results['B'].timings.total_ms:.0f}")

summary = pd.DataFrame([{"metric": k, "value": v} for k, v in agree.model_dump().items()])
st.download_button("Agreement (CSV)", summary.to_csv(index=False), "agreement.csv", "text/csv")

left, right = st.columns(2)
for column, side in ((left, "A"), (right, "B")):
    result = results[side]
    with column:
        st.subheader(f"{side}: {result.collection} · k={result.k} · {result.reranker_model or 'no reranker'}")
        shared = set(ids_a) & set(ids_b)
        for row in result.reranked:
            reranked_row(row)
            if row.id not in shared:
                st.caption(f"only in {side}")
        downloads(result, f"compare-{side}")

"""Rerank Workbench: the Streamlit app. Navigation, the shared sidebar and the first-run demo build."""

from __future__ import annotations

import streamlit as st

from ui.state import engine_resource, shown_errors
from workbench.demo import DEMO_COLLECTION, ensure_demo_collection

st.set_page_config(page_title="Rerank Workbench", page_icon=":material/manage_search:", layout="wide")

engine = engine_resource()

if not st.session_state.get("demo_checked"):
    with shown_errors():
        names = {c.name for c in engine.collections()}
        if DEMO_COLLECTION not in names and engine.settings.collection == DEMO_COLLECTION:
            with st.status("First start: building the demo collection (offline)…", expanded=True) as status:
                bar = st.progress(0.0, text="Embedding the demo handbook")
                info = ensure_demo_collection(
                    engine, progress=lambda done, total: bar.progress(done / max(total, 1), text=f"{done}/{total}")
                )
                status.update(label=f"Demo collection ready: {info.count} passages", state="complete")
        st.session_state["demo_checked"] = True

pages = [
    st.Page("pages/explore.py", title="Explore", icon=":material/manage_search:", default=True),
    st.Page("pages/compare.py", title="Compare", icon=":material/compare_arrows:"),
    st.Page("pages/latency.py", title="Latency", icon=":material/timer:"),
    st.Page("pages/evaluate.py", title="Evaluate", icon=":material/fact_check:"),
    st.Page("pages/collections.py", title="Collections", icon=":material/folder_open:"),
]
st.navigation(pages).run()

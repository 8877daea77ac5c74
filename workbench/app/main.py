"""Rerank Workbench, the Streamlit entry script: page setup, the password gate, the first-run demo build,
navigation and the shared sidebar (drawn here, once, for every page)."""

from __future__ import annotations

import hmac
import time

import streamlit as st

from workbench.app import STATIC_DIR, VIEWS_DIR
from workbench.app.state import (
    STATE,
    Controls,
    bind,
    engine_resource,
    log,
    publish_controls,
    publish_pages,
    set_value,
    shown_errors,
    widget_key,
)
from workbench.demo import DEMO_COLLECTION, ensure_demo_collection
from workbench.engine import Engine
from workbench.errors import WorkbenchError
from workbench.inputs import parse_filters
from workbench.models import resolve_model, short_model_name
from workbench.rerankers import discover_rerankers
from workbench.types import CollectionInfo
from workbench.vocab import MAX_K

st.set_page_config(page_title="Rerank Workbench", page_icon=str(STATIC_DIR / "favicon.png"), layout="wide")


def password_gate(engine: Engine) -> None:
    """When WORKBENCH_APP_PASSWORD is set, nothing else is drawn until it is typed."""
    secret = engine.settings.app_password
    if secret is None or STATE.authenticated:
        return
    st.title("Rerank Workbench")
    with st.form("login"):
        typed = st.text_input("Password", type="password")
        if st.form_submit_button("Enter", type="primary"):
            if hmac.compare_digest(typed.encode("utf-8"), secret.get_secret_value().encode("utf-8")):
                STATE.authenticated = True
                st.rerun()
            time.sleep(1.0)  # slows guessing
            st.error("That is not the password.")
    st.stop()


def ensure_demo(engine: Engine) -> None:
    """On the first visit of a session, build the demo collection if it is missing (offline, with progress)."""
    if STATE.demo_checked:
        return
    with shown_errors():
        names = {c.name for c in engine.collections()}
        if DEMO_COLLECTION not in names and engine.settings.collection == DEMO_COLLECTION:
            log.info("Building the demo collection (first start, offline)…")
            with st.status("First start: building the demo collection (offline)…", expanded=True) as status:
                bar = st.progress(0.0, text="Embedding the demo handbook")
                info = ensure_demo_collection(
                    engine, progress=lambda done, total: bar.progress(done / max(total, 1), text=f"{done}/{total}")
                )
                status.update(label=f"Demo collection ready: {info.count} passages", state="complete")
            log.info("Demo collection ready: %s passages", info.count)
        elif DEMO_COLLECTION in names:
            ensure_demo_collection(engine)  # attaches the demo's judgments if they are not yet
    STATE.demo_checked = True


def _collection_caption(info: CollectionInfo) -> str:
    embedder = short_model_name(info.embedding_model)
    return f"**{info.store}** · {info.count:,} chunks · {info.dimension or '?'}-d · embedder `{embedder}`"


def sidebar(engine: Engine) -> Controls:
    """The controls every page shares: collection, reranker, retrieval, k, top n, filters."""
    settings = engine.settings
    infos: list[CollectionInfo] = []
    with shown_errors(st.sidebar):
        infos = engine.collections()
    names = [i.name for i in infos]
    with st.sidebar:
        st.markdown("### Collection")
        collection = None
        if not names:
            st.info("No collections yet: create one on the Collections page.")
        else:
            if STATE.collection not in names:
                set_value("collection", settings.collection if settings.collection in names else names[0])
            collection = st.selectbox("Collection", names, label_visibility="collapsed", **bind("collection"))
            info = next(i for i in infos if i.name == collection)
            where = f"{info.store} at {info.location}\n\nembedder: {info.embedding_model}"
            st.caption(_collection_caption(info), help=where)

        st.markdown("### Reranker")
        choices = discover_rerankers(settings)
        ids = [c.id for c in choices]
        if settings.reranker_enabled and settings.reranker_model not in ids:
            try:
                resolve_model(settings.reranker_model, settings, setting="RERANKER_MODEL")
            except WorkbenchError as exc:
                st.error(f"{exc} Until then, pick another model below or search without reranking.")
        if STATE.reranker_model not in ids:
            set_value("reranker_model", ids[0] if ids else None)
        rerank = st.toggle(
            "Rerank with a cross-encoder",
            disabled=not ids,
            **bind("rerank"),
            help="Off: the first-stage order is kept." if ids else "No cross-encoder was found: set RERANKER_MODEL.",
        )
        model = None
        if ids:
            by_id = {c.id: c for c in choices}
            model = st.selectbox(
                "Model",
                ids,
                disabled=not rerank,
                format_func=lambda i: by_id[i].short_name,
                help="Cross-encoders found on this machine:\n\n"
                + "\n\n".join(f"- {c.short_name}: {c.id} ({c.source}; {c.path})" for c in choices),
                **bind("reranker_model"),
            )
            st.caption(f"`{by_id[model].short_name}`", help=f"{by_id[model].id}\n\n{by_id[model].path}")

        st.markdown("### Candidates")
        retrieval = st.radio(
            "First stage",
            ["dense", "bm25", "hybrid"],
            horizontal=True,
            format_func={"dense": "dense", "bm25": "BM25", "hybrid": "hybrid"}.get,
            help="dense: vector search · BM25: keywords · hybrid: both, fused by reciprocal rank (k = 60)",
            **bind("retrieval"),
        )
        k = st.slider("k — candidates to rerank", 1, MAX_K, **bind("k"))
        st.session_state[widget_key("top_n")] = STATE.top_n()
        if k > 1:
            st.slider(
                "top n — kept after reranking",
                1,
                k,
                key=widget_key("top_n"),
                on_change=lambda: setattr(STATE, "top_n_wanted", st.session_state[widget_key("top_n")]),
            )
        else:
            st.caption("top n = 1 (k is 1)")
        st.markdown("### Filters")
        raw = st.text_area(
            "Metadata equalities, one key=value per line",
            placeholder="title=Leave and Time Off Policy\npage=2",
            height=80,
            **bind("filters_text"),
        )
        filters, filter_error = {}, None
        try:
            filters = parse_filters(raw)
        except WorkbenchError as exc:
            filter_error = str(exc)
            st.error(filter_error)
    return Controls(
        collection=collection,
        k=k,
        top_n=STATE.top_n(),
        filters=filters,
        filter_error=filter_error,
        rerank=bool(rerank and ids),
        reranker_model=model,
        retrieval=retrieval,
    )


engine = engine_resource()
password_gate(engine)
ensure_demo(engine)
pages = {
    "explore": st.Page(VIEWS_DIR / "explore.py", title="Explore", icon=":material/manage_search:", default=True),
    "compare": st.Page(VIEWS_DIR / "compare.py", title="Compare", icon=":material/compare_arrows:"),
    "latency": st.Page(VIEWS_DIR / "latency.py", title="Latency", icon=":material/timer:"),
    "evaluate": st.Page(VIEWS_DIR / "evaluate.py", title="Evaluate", icon=":material/fact_check:"),
    "collections": st.Page(VIEWS_DIR / "collections.py", title="Collections", icon=":material/folder_open:"),
}
publish_pages(pages)
navigation = st.navigation(list(pages.values()))
publish_controls(sidebar(engine))
navigation.run()

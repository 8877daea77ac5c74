"""Rerank Workbench's app: `run()` sets the page up, asks for the password (when one is set), builds the demo on
first start, draws the shared sidebar (once, for every page) and runs the page the user is on. The entry scripts
(`app.py` in a checkout, `workbench/streamlit_app.py` in the package) only call `run()`."""

from __future__ import annotations

import hmac
import time

import streamlit as st

from workbench.app import PAGES_DIR, STATIC_DIR
from workbench.app.history import remember_browser
from workbench.app.judging import ask_rater_when_needed, rater_input, start_run
from workbench.app.markdown import text_md
from workbench.app.state import (
    STATE,
    Controls,
    bind,
    capped_slider,
    engine_resource,
    log,
    publish_controls,
    publish_pages,
    set_value,
    shown_errors,
)
from workbench.app.widgets import PAGE_CONTROLS, SIDEBAR_CONTROLS
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import WorkbenchError
from workbench.fusion import linear
from workbench.inputs import parse_filters
from workbench.models import resolve_model, short_model_name
from workbench.rerankers import discover_rerankers
from workbench.services.backend_audit import enable_auto_audit
from workbench.services.demo import demo_needs_building, prepare_demo
from workbench.types import CollectionInfo
from workbench.vocab import MAX_K, RETRIEVAL, RETRIEVAL_MODES


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
    """On the first visit of a session, build the demo collection if it is missing (offline, with progress) and
    attach its judgments (`demo.prepare_demo`, as every front end does)."""
    if STATE.demo_checked:
        return
    with shown_errors():
        if demo_needs_building(engine):
            log.info("Building the demo collection (first start, offline)…")
            with st.status("First start: building the demo collection (offline)…", expanded=True) as status:
                bar = st.progress(0.0, text="Embedding the demo handbook")
                info = prepare_demo(
                    engine, progress=lambda done, total: bar.progress(done / max(total, 1), text=f"{done}/{total}")
                )
                label = f"Demo collection ready: {info.count} passages" if info else "Demo collection ready"
                status.update(label=label, state="complete")
            log.info("Demo collection ready: %s passages", info.count if info else "?")
        else:
            prepare_demo(engine)
        enable_auto_audit(engine.settings)  # faster backends never audited here are checked in the background
        engine.warm_in_background()  # the reranker loads (and, never measured here, measures) off the page
    STATE.demo_checked = True


def _collection_caption(info: CollectionInfo) -> str:
    embedder = short_model_name(info.embedding_model)
    count = f"{info.count:,} chunks" if info.count >= 0 else "count unknown"
    said = f"**{info.store}** · {count} · {info.dimension or '?'}-d · embedder `{embedder}`"
    if info.read_only:  # attached: another tool's collection, or a search service, read and never written
        said += f" · read-only, {text_md(info.written_by or 'attached')}"
    return said


def sidebar(engine: Engine, used: tuple[str, ...] = SIDEBAR_CONTROLS) -> Controls:
    """The controls every page shares: collection, reranker, retrieval, k, top n, filters; those the page does
    not use (`used`) are drawn greyed, keeping their values for the pages that do."""
    with st.sidebar:
        if len(used) < len(SIDEBAR_CONTROLS):
            st.caption("Greyed controls do not apply on this page; they keep their values for the pages that use them.")
        collection = _collection_picker(engine, disabled="collection" not in used)
        rerank, model = _reranker_picker(engine.settings, disabled="reranker" not in used)
        auditing = engine.backends_auditing()
        for name in engine.backends_measuring():
            if name in auditing:
                done, of = auditing[name]
                st.caption(
                    f"Checking the faster backends of {name} against fp32 torch on the demo: {done} of {of}, in the "
                    "background (once per machine): searches run on torch meanwhile and switch to the fastest one "
                    "found faithful."
                )
                continue
            st.caption(
                f"Measuring which backend runs {name} fastest on this machine, in the background (once per "
                "machine): searches run on torch meanwhile and switch when it is done."
            )
        retrieval, k, fusion = _candidate_controls(engine.settings, used)
        filters, filter_error = _filters(disabled="filters" not in used)
        st.markdown("### Judging")
        rater = rater_input(engine)
    return Controls(
        rater=rater,
        collection=collection,
        k=k,
        top_n=STATE.top_n(),
        filters=filters,
        filter_error=filter_error,
        rerank=rerank,
        reranker_model=model,
        retrieval=retrieval,
        fusion=fusion,
    )


def _collection_picker(engine: Engine, disabled: bool = False) -> str | None:
    """The collection, with its store, size and embedder (None when there is none yet)."""
    infos: list[CollectionInfo] = []
    with shown_errors(st.sidebar):
        infos = engine.collections()
    names = [i.name for i in infos]
    st.markdown("### Collection")
    if not names:
        st.info("No collections yet: create one on the Collections page.")
        return None
    if STATE.collection not in names:
        set_value("collection", engine.settings.collection if engine.settings.collection in names else names[0])
    collection = st.selectbox(
        "Collection", names, label_visibility="collapsed", disabled=disabled, **bind("collection")
    )
    info = next(i for i in infos if i.name == collection)
    where = f"{info.store} at {info.location}\n\nembedder: {info.embedding_model}"
    st.caption(_collection_caption(info), help=where)
    return collection


def _reranker_picker(settings: Settings, disabled: bool = False) -> tuple[bool, str | None]:
    """Whether to rerank, and with which of the cross-encoders found on this machine."""
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
        disabled=not ids or disabled,
        **bind("rerank"),
        help="Off: the first-stage order is kept." if ids else "No cross-encoder was found: set RERANKER_MODEL.",
    )
    if not ids:
        return False, None
    by_id = {c.id: c for c in choices}
    model = st.selectbox(
        "Model",
        ids,
        disabled=not rerank or disabled,
        format_func=lambda i: by_id[i].short_name,
        help="Cross-encoders found on this machine:\n\n"
        + "\n\n".join(f"- {c.short_name}: {c.shown_id} ({c.source}; {c.path})" for c in choices),
        **bind("reranker_model"),
    )
    st.caption(f"`{by_id[model].short_name}`", help=f"{by_id[model].id}\n\n{by_id[model].path}")
    return bool(rerank), model


def _fusion_control(settings: Settings, disabled: bool = False) -> str | None:
    """Hybrid's fusion: the settings' RRF, RRF with k = 60 and equal weights, or a weighted sum of normalised
    scores with the dense list's weight."""
    labels = {"settings": f"RRF (k = {settings.rrf_k}, the settings')", "minmax": "min-max, weighted",
              "zscore": "z-score, weighted", "l2": "L2, weighted"}  # fmt: skip
    method = st.selectbox("Fusion", list(labels), format_func=labels.get, disabled=disabled, **bind("fusion_method"))
    if method == "settings":
        return None
    weight = st.slider(
        "dense weight (BM25 weighs the rest)", 0.0, 1.0, step=0.05, disabled=disabled, **bind("fusion_weight")
    )
    return linear(method, weight).spec


def _candidate_controls(settings: Settings, used: tuple[str, ...]) -> tuple[str, int, str | None]:
    """The first stage (and hybrid's fusion), k, and top n (at most k), greyed where the page does not use them."""
    st.markdown("### Candidates")
    retrieval = st.radio(
        "First stage",
        RETRIEVAL_MODES,
        horizontal=True,
        format_func=lambda mode: RETRIEVAL[mode].label,
        help=" · ".join(f"{m.label}: {m.description}" for m in RETRIEVAL.values()) + f" (k = {settings.rrf_k})",
        disabled="first stage" not in used,
        **bind("retrieval"),
    )
    fusion = _fusion_control(settings, disabled="first stage" not in used) if retrieval == "hybrid" else None
    k = st.slider("k — candidates to rerank", 1, MAX_K, disabled="k" not in used, **bind("k"))
    if k > 1:
        capped_slider("top n — kept after reranking", "top_n_wanted", k, disabled="top n" not in used)
    else:
        st.caption("top n = 1 (k is 1)")
    return retrieval, k, fusion


def _filters(disabled: bool = False) -> tuple[dict, str | None]:
    """The metadata filters typed, and what is wrong with them (shown here, and stopping the search)."""
    st.markdown("### Filters")
    raw = st.text_area(
        "Metadata equalities, one key=value per line",
        placeholder="title=Leave and Time Off Policy\npage=2",
        height=80,
        disabled=disabled,
        **bind("filters_text"),
    )
    try:
        return parse_filters(raw), None
    except WorkbenchError as exc:
        st.error(str(exc))
        return {}, str(exc)


PAGES = (
    # (file in pages/, title, icon); the first is the default page
    ("explore", "Explore", ":material/manage_search:"),
    ("compare", "Compare", ":material/compare_arrows:"),
    ("latency", "Latency", ":material/timer:"),
    ("evaluate", "Evaluate", ":material/fact_check:"),
    ("grade", "Grade", ":material/rate_review:"),
    ("prefer", "Prefer", ":material/thumbs_up_down:"),
    ("experiments", "Experiments", ":material/history:"),
    ("collections", "Collections", ":material/folder_open:"),
)


def run() -> None:
    """The whole app, one script run: what every entry script calls."""
    st.set_page_config(page_title="Rerank Workbench", page_icon=str(STATIC_DIR / "favicon.png"), layout="wide")
    start_run()
    engine = engine_resource()
    password_gate(engine)
    ensure_demo(engine)
    pages = {
        name: st.Page(PAGES_DIR / f"{name}.py", title=title, icon=icon, default=index == 0)
        for index, (name, title, icon) in enumerate(PAGES)
    }
    publish_pages(pages)
    navigation = st.navigation(list(pages.values()))
    current = next((name for name, p in pages.items() if p.url_path == navigation.url_path), "explore")
    publish_controls(sidebar(engine, PAGE_CONTROLS.get(current, SIDEBAR_CONTROLS)))
    if STATE.problem:
        st.error(STATE.problem, icon=":material/error:")
        STATE.problem = None
    remember_browser()
    ask_rater_when_needed(engine)
    navigation.run()

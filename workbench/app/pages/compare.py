"""Compare: one query through two configurations side by side, with overlap and rank correlation."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from workbench.app import diff_view
from workbench.app.history import remember
from workbench.app.judging import Judging, grade_control
from workbench.app.progress import search_with_progress, transient_progress
from workbench.app.state import (
    STATE,
    CompareSide,
    Controls,
    bind,
    capped_slider,
    controls,
    engine_resource,
    set_value,
    shown_errors,
)
from workbench.app.uploads import save_upload
from workbench.app.widgets import (
    compact_toggle,
    downloads,
    fallback_note,
    file_picker,
    reranked_row,
    score_note,
    sidebar_note,
    text_md,
)
from workbench.engine import Engine
from workbench.evaluation.agreement import agreement
from workbench.evaluation.calibration import load_calibration
from workbench.evaluation.sanity import not_as_intended
from workbench.evaluation.service import search_checks
from workbench.experiments import open_experiment_store
from workbench.judgments import load_judgments, query_figures
from workbench.rerankers import discover_rerankers
from workbench.rerankers.factory import on_backend
from workbench.services.comparisons import QuerySetComparison, compare_over_query_set
from workbench.services.store_comparison import (
    StoreComparison,
    StoreTarget,
    compare_stores,
    copy_into,
    missing_targets,
    release,
)
from workbench.spreadsheet import csv_text
from workbench.types import SearchResult
from workbench.vocab import (
    BACKENDS,
    MAX_K,
    RETRIEVAL,
    RETRIEVAL_MODES,
    STORES,
    VECTOR_STORE_KINDS,
)

AS_CONFIGURED = "as each is configured"

PRESETS = {
    "reranker off vs on": (CompareSide(rerank=False), CompareSide(rerank=True)),
    "dense vs hybrid candidates (both reranked)": (CompareSide(retrieval="dense"), CompareSide(retrieval="hybrid")),
    "dense vs hybrid, no reranker": (
        CompareSide(retrieval="dense", rerank=False),
        CompareSide(retrieval="hybrid", rerank=False),
    ),
}


def run() -> None:
    """The Compare page, drawn under the sidebar that `main.run` draws: an outline of its sections."""
    engine = engine_resource()
    c = controls()
    st.title("Compare")
    sidebar_note(
        "compare",
        own="each configuration's collection, k, first stage and reranker, and the top n compared (the presets "
        "start from the sidebar's collection and k)",
    )
    st.caption(
        "The same query through two configurations: reranker on or off, dense or hybrid candidates, two depths, two "
        "rerankers, or two collections (and so two embedders). The sidebar's filters apply to both."
    )
    names, attached = _collection_names(engine)
    choices = discover_rerankers(engine.settings)
    _presets(c, attached)
    left, right = st.columns(2)
    with left:
        a = _configuration(c, names, choices, "compare_a", "Configuration A")
    with right:
        b = _configuration(c, names, choices, "compare_b", "Configuration B")
    backend = st.selectbox(
        "Backend of both rerankers", [*BACKENDS, AS_CONFIGURED], key="compare-backend",
        help="Both local cross-encoders run on one backend (fp32 torch, the reference, unless you pick another), so "
        "that their scores and times compare models, not backends (a service's backend is its own).",
    )  # fmt: skip
    _over_a_query_set(engine, c, a, b)
    query, top_n = _query_and_top_n(c, a, b)
    results = _search_both(engine, c, query, top_n, a, b, None if backend == AS_CONFIGURED else backend)
    _agreement(results)
    _lists(engine, c, results, {"A": a, "B": b}, {m.id: m for m in choices})
    _across_stores(engine, c, names, query)


def _collection_names(engine: Engine) -> tuple[list[str], list[str]]:
    """The collections to compare in, and those of them attached (another tool's, or a search service); the page
    stops when there are none."""
    infos = []
    with shown_errors():
        infos = engine.collections()
    if not infos:
        st.info("No collections yet: create one on the Collections page.")
        st.stop()
    return [info.name for info in infos], [info.name for info in infos if info.read_only]


def _presets(c: Controls, attached: list[str]) -> None:
    """One-click starting points, from the sidebar's collection and k; with an attached source (your search as it
    runs) and a collection of the workbench's in the sidebar, your search against the workbench's hybrid."""
    presets = dict(PRESETS)
    if attached and c.collection and c.collection not in attached:
        yours = attached[0]
        presets[f"your search ({yours}) vs the workbench's hybrid"] = (
            CompareSide(collection=yours, retrieval="dense"),
            CompareSide(collection=c.collection, retrieval="hybrid"),
        )

    def _apply_preset(name: str) -> None:
        a, b = presets[name]
        for side, preset in (("compare_a", a), ("compare_b", b)):
            current: CompareSide = getattr(STATE, side)
            for field in ("rerank", "retrieval"):
                set_value(f"{side}.{field}", getattr(preset, field))
            set_value(f"{side}.k", c.k)
            set_value(f"{side}.collection", preset.collection or c.collection or current.collection)

    st.markdown("Start from:")
    preset_columns = st.columns(len(presets))
    for column, preset in zip(preset_columns, presets, strict=True):
        column.button(preset, on_click=_apply_preset, args=(preset,), width="stretch")


def _configuration(c: Controls, names: list[str], choices: list[Any], side: str, title: str) -> CompareSide:
    """One side's form: collection, k, first stage, reranker."""
    by_id = {m.id: m for m in choices}
    model_ids = list(by_id)
    config: CompareSide = getattr(STATE, side)
    if config.collection not in names:
        set_value(f"{side}.collection", c.collection if c.collection in names else names[0])
    if config.model not in model_ids:
        set_value(f"{side}.model", model_ids[0] if model_ids else None)
    st.markdown(f"#### {title}")
    st.selectbox("Collection", names, **bind(f"{side}.collection"))
    st.number_input("k", 1, MAX_K, **bind(f"{side}.k"))
    st.radio(
        "Candidates",
        RETRIEVAL_MODES,
        horizontal=True,
        format_func=lambda mode: RETRIEVAL[mode].label,
        **bind(f"{side}.retrieval"),
    )
    rerank = st.toggle("Rerank", disabled=not model_ids, **bind(f"{side}.rerank"))
    if model_ids:
        st.selectbox(
            "Reranker",
            model_ids,
            format_func=lambda i: by_id[i].short_name,
            disabled=not rerank,
            help="\n\n".join(f"- {m.short_name}: {m.shown_id} ({m.path})" for m in choices),
            **bind(f"{side}.model"),
        )
    return getattr(STATE, side)


def _query_and_top_n(c: Controls, a: CompareSide, b: CompareSide) -> tuple[str, int]:
    """The top n compared (the user's choice, shown at most the smaller k, with a note when it is held down) and
    the query; the page stops without a query to run."""
    most = min(a.k, b.k)
    wanted = STATE.compare_top_n
    top_n = capped_slider("top n compared", "compare_top_n", most)
    if wanted > most:
        st.caption(
            f"top n compared is {top_n}, the smaller k; it goes back to {wanted} when both configurations' k allow it."
        )
    if not STATE.compare_query and STATE.query:
        set_value("compare_query", STATE.query)
    query = st.text_input("Query", **bind("compare_query"))
    if not query.strip():
        st.info("Type a query to compare the two configurations.")
        st.stop()
    if c.filter_error:
        st.error(f"The comparison did not run: {c.filter_error}")
        st.stop()
    return query, top_n


def _over_a_query_set(engine: Engine, c: Controls, a: CompareSide, b: CompareSide) -> None:
    """Both configurations over a kept query set: how much B changes what people see, query by query (and the
    judged figures where the collection's judgments cover the queries)."""
    with st.expander("Both over a query set: how often B changes what people see", expanded=False), shown_errors():
        store = open_experiment_store(engine.settings)
        names = store.query_set_names()
        if not names:
            st.caption("Keep a query set on the Experiments page (from a file, your searches or judged queries).")
            return
        chosen = st.selectbox("Query set", names, key="compare-query-set")
        candidates = file_picker(
            st, "Optional: your search's candidates for these queries (JSONL of {query_id, query, hits}): both "
            "configurations rerank them instead of searching", ["jsonl"], "compare-candidates",
        )  # fmt: skip
        top_n = min(a.k, b.k, c.top_n)
        if st.button("Compare over the query set", key="compare-query-set-run"):
            plan_a, plan_b = a.plan(engine, top_n, c.filters), b.plan(engine, top_n, c.filters)
            with tempfile.TemporaryDirectory() as folder, transient_progress("searching") as bar:
                request = QuerySetComparison(
                    chosen, plan_a, plan_b, tag=STATE.session_tag,
                    # your search's first stage, reranked by each side's reranker
                    candidates=str(save_upload(candidates, Path(folder))) if candidates is not None else None,
                    judgments_of=plan_b.collection or engine.settings.collection,
                )  # fmt: skip
                STATE.set_comparison, plan_b = compare_over_query_set(
                    engine, request, warn=st.warning,
                    progress=lambda done, total: bar.progress(done / total, text=f"{done}/{total} searches"),
                )  # fmt: skip
            STATE.set_comparison_plan = plan_b
        if STATE.set_comparison is not None:
            diff_view.figures(STATE.set_comparison, "set")
            diff_view.disagreements(STATE.set_comparison, STATE.set_comparison_plan, "set")


def _search_both(
    engine: Engine, c: Controls, query: str, top_n: int, a: CompareSide, b: CompareSide, backend: str | None
) -> dict[str, SearchResult]:
    """The query through both configurations (their local cross-encoders on `backend` when one is given), each
    with its progress; the page stops when one fails."""
    results = {}
    for name, config in (("A", a), ("B", b)):
        with shown_errors(), st.spinner(f"Searching configuration {name}…", show_time=True):
            plan = config.plan(engine, top_n, c.filters)
            model = engine.reranker_id(plan.reranker)
            if backend is not None and model:
                plan = plan.with_(reranker=on_backend(model, backend))
            bar = st.empty() if plan.reranks else None
            results[name] = search_with_progress(
                lambda progress, plan=plan: engine.search(
                    query, plan, progress=progress, rerank_budget_ms=engine.settings.rerank_budget_ms
                ),
                bar,
                f"Configuration {name}, reranking",
                first_use=engine.first_use(plan),
            )
            if bar is not None:
                bar.empty()
            if results[name] is not None and fallback_note(results[name]):
                st.warning(f"Configuration {name}: {fallback_note(results[name])}", icon=":material/speed:")
            remember(engine, results[name])
    if len(results) < 2:
        st.stop()
    return results


def _agreement(results: dict[str, SearchResult]) -> None:
    """How far the two lists agree: overlap, Jaccard, Kendall's tau, RBO."""
    ids_a = [r.id for r in results["A"].reranked]
    ids_b = [r.id for r in results["B"].reranked]
    agree = agreement(ids_a, ids_b)
    m = st.columns(5)
    m[0].metric(f"overlap@{agree.n}", f"{agree.overlap_at_n:.2f}", help=f"{agree.overlap} shared documents")
    m[1].metric("Jaccard", f"{agree.jaccard:.2f}")
    m[2].metric("Kendall τ (shared)", "—" if agree.kendall_tau is None else f"{agree.kendall_tau:.2f}")
    m[3].metric("RBO (p=0.9)", f"{agree.rbo:.2f}")
    backends = [results[side].reranker_backend for side in ("A", "B")]
    m[4].metric(
        "total ms A / B", f"{results['A'].timings.total_ms:.0f} / {results['B'].timings.total_ms:.0f}",
        help=f"A scored on {backends[0] or 'no reranker'}, B on {backends[1] or 'no reranker'}",
    )  # fmt: skip
    local = all(b and "://" not in b for b in backends)  # two services differ by URL: that is no backend choice
    if local and backends[0] != backends[1]:
        st.warning(
            f"The two sides ran on different backends (A {text_md(backends[0])}, B {text_md(backends[1])}): the time "
            "difference is the backends' as much as the models'. Pick one in 'Backend of both rerankers' to run both "
            "on it.",
            icon=":material/warning:",
        )

    summary = pd.DataFrame([{"metric": k, "value": v} for k, v in agree.model_dump().items()])
    st.download_button("Agreement (CSV)", csv_text(summary), "agreement.csv", "text/csv")
    notes = dict.fromkeys(score_note(results[side]) for side in ("A", "B") if results[side].reranker_model)
    if notes:
        st.caption(" ".join(notes))


def _lists(
    engine: Engine,
    c: Controls,
    results: dict[str, SearchResult],
    configs: dict[str, CompareSide],
    by_id: dict[str, Any],
) -> None:
    """The two lists side by side, graded in place, with each list's figures once the query is judged."""
    ids_a = [r.id for r in results["A"].reranked]
    ids_b = [r.id for r in results["B"].reranked]

    def _describe(side: str, config: CompareSide) -> str:
        result = results[side]
        model = by_id[config.model].short_name if config.rerank and config.model in by_id else "no reranker"
        return f"{side}: {result.collection} · {result.retrieval} · k={result.k} · {model}"

    compact = compact_toggle()
    left, right = st.columns(2)
    shared = set(ids_a) & set(ids_b)
    for column, side, config in ((left, "A", configs["A"]), (right, "B", configs["B"])):
        result = results[side]
        with column:
            st.subheader(_describe(side, config), help=result.reranker_model or "")
            faults = search_checks(engine, result)
            if faults:  # the same banner as Explore's: this side's reranker did not run as intended
                st.warning(text_md(not_as_intended(faults)), icon=":material/report:")
            grades = None
            judgments = load_judgments(engine.settings, result.collection)
            match = judgments.for_query(result.query) if judgments else None
            if match:
                grades = match[1]
                figures = query_figures(result, *match)
                reranked = result.reranker_model is not None
                shown = figures.ndcg_after if reranked else figures.ndcg_before
                first = figures.first_relevant_after if reranked else figures.first_relevant_before
                judged = figures.judged_after if reranked else figures.judged_before
                cells = st.columns(2)
                cells[0].metric(
                    "nDCG@10 of this list", f"{shown:.3f}", help=f"judged query {match[0]}; judged@10 {judged:.0%}"
                )
                cells[1].metric("first relevant", f"#{first}" if first else "none judged")
            calibration = load_calibration(engine.settings, result.collection, result.reranker_model)
            judging = Judging(engine, result.collection, result.query, grades or {}, c.rater)
            for row in result.reranked:
                only = None if row.id in shared else f"only in {side}"
                reranked_row(
                    row, grades, result.score_scale, note=only, calibration=calibration, compact=compact,
                    extra=lambda hit, side=side, judging=judging: grade_control(
                        judging, str(hit.metadata.get("document_id", hit.id)), f"compare-{side}"
                    ),
                )  # fmt: skip
            downloads(result, f"compare-{side}")


def _across_stores(engine: Engine, c: Controls, names: list[str], query: str) -> None:
    """The same query in the collection of the same name in each store picked, copied there on request."""
    st.divider()
    st.subheader("The same query across stores")
    st.caption(
        "The collection of the same name in each store you pick (fill one from another with `workbench compare-stores "
        "--copy-from`): do they return the same candidates, how fast, and how close is each store's HNSW search to an "
        "exact scan of the same vectors."
    )
    available = [kind for kind in VECTOR_STORE_KINDS if STORES[kind].embedded or engine.settings.url_of(kind)]
    picked = st.multiselect("Stores", available, default=available[:2], key="stores-picked")
    collection = c.collection or names[0]
    targets = [StoreTarget(kind=kind) for kind in picked]
    run_it = st.button("Compare stores", disabled=len(picked) < 2, key="stores-run")
    offer = STATE.stores_missing
    if offer and offer["collection"] == collection and set(offer["kinds"]) <= set(picked):
        st.warning(
            f"'{text_md(collection)}' is not in {', '.join(offer['kinds'])} yet. Copy it there (its chunks and "
            "vectors, nothing is embedded again) and compare?",
            icon=":material/content_copy:",
        )
        if st.button(f"Copy '{collection}' into {', '.join(offer['kinds'])} and compare", key="stores-copy"):
            with transient_progress("copying") as bar, shown_errors():
                copy_into(
                    engine,
                    collection,
                    [StoreTarget(kind=kind) for kind in offer["kinds"]],
                    progress=lambda done, total: bar.progress(done / max(total, 1), text=f"{done}/{total} chunks"),
                )
                STATE.stores_missing = None
                run_it = True
    if run_it:
        with shown_errors():
            missing = missing_targets(engine, collection, targets)
            release(engine, collection, targets)
            if missing:
                STATE.stores_missing = {"collection": collection, "kinds": [t.kind for t in missing]}
                st.rerun()
        with shown_errors(), st.spinner("Searching each store…", show_time=True):
            across = compare_stores(engine, query, c.plan(engine).with_(collection=collection), targets)
            _draw_across(across)


def _draw_across(across: StoreComparison) -> None:
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "store": r.store,
                    "search ms (p50)": r.search_ms_p50,
                    f"recall@{across.k} vs exact": r.recall_vs_exact,
                    f"top {across.top_n} after reranking": ", ".join(r.reranked_ids),
                }
                for r in across.runs
            ]
        ),
        hide_index=True,
        width="stretch",
    )
    st.dataframe(
        pd.DataFrame(
            [
                {"stores": pair, f"overlap@{a.n}": a.overlap_at_n, "Kendall τ": a.kendall_tau, "RBO": a.rbo}
                for pair, a in across.agreement.items()
            ]
        ),
        hide_index=True,
        width="stretch",
    )


if __name__ == "__main__":  # Streamlit runs a page file as __main__; importing the module draws nothing
    run()

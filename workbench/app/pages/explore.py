"""Explore: one query, the first-stage list beside the reranked list, movements, judgments, slopegraph, timings."""

from __future__ import annotations

from typing import Any

import streamlit as st

from workbench.app.charts import mini_slopegraph, slopegraph, stage_bar
from workbench.app.explain_view import why_here
from workbench.app.history import open_history, remember
from workbench.app.judging import Judging, grade_control
from workbench.app.progress import search_with_progress
from workbench.app.state import (
    STATE,
    Controls,
    bind,
    controls,
    engine_resource,
    page,
    set_value,
    shown_errors,
    widget_key,
)
from workbench.app.widgets import (
    calibration_caption,
    compact_toggle,
    counted,
    downloads,
    fallback_note,
    reranked_row,
    score_note,
    sidebar_note,
    text_md,
    vector_row,
)
from workbench.engine import Engine
from workbench.evaluation.calibration import load_calibration, nothing_relevant
from workbench.evaluation.sanity import not_as_intended
from workbench.evaluation.service import search_checks
from workbench.judgments import load_judgments, query_figures
from workbench.services.demo import DEMO_COLLECTION, GROUPS, sample_queries
from workbench.services.hints import no_match_hint
from workbench.types import RankedHit, SearchPlan, SearchResult
from workbench.vocab import ORDER_SCALE


def run() -> None:
    """The Explore page, drawn under the sidebar that `main.run` draws: an outline of its sections."""
    engine = engine_resource()
    c = controls()
    st.title("Explore")
    sidebar_note("explore")
    st.caption(
        "First-stage retrieval beside cross-encoder reranking. Change top n freely: the result is reranked once and "
        "re-sliced, no model runs."
    )
    # the query box first: on a first visit the sample queries below it never push it out of view
    query = st.text_input("Query", placeholder="Ask the collection something…", **bind("query"))
    if c.collection == DEMO_COLLECTION:
        _sample_queries()
    history = st.container()  # drawn last, so that it counts the search this run makes
    status = st.empty()  # above the lists: says when they are another setting's while a new search runs
    # Two places, in this order on every run (so each keeps its place between runs): the first-stage preview of a
    # new query, and the result. A new query empties the result's place at once (no earlier query's lists stay
    # below the preview), and the preview's place is emptied before the result is drawn: the result never reuses
    # the preview's elements, so no preview card survives beside it. A rerun that asks nothing new (a grade, a new
    # top n) redraws the result over the previous one in place, never emptied first, so the lists do not blink and
    # a control being clicked does not vanish under the pointer.
    area = st.container()
    preview = area.empty()
    result, box = _search(engine, c, query, history, area, preview, status)
    with box:
        _headline(engine, result)
        _lists(engine, c, result)


def _stop(engine: Engine, history: Any) -> None:
    """End the page here, with the history of searches drawn in its place."""
    with history:
        open_history(engine)
    st.stop()


def _sample_queries() -> None:
    """The demo's sample queries, grouped: one click puts a query in the box."""

    def _use_sample(group: str) -> None:
        picked = st.session_state.get(widget_key(f"sample.{group}"))
        if picked:
            set_value("query", picked)

    with st.expander("Sample queries", expanded=not STATE.query):
        for group, title in GROUPS.items():
            st.markdown(f"**{title.capitalize()}**")
            st.pills(
                title,
                [q.text for q in sample_queries(group)],
                key=widget_key(f"sample.{group}"),
                on_change=_use_sample,
                args=(group,),
                label_visibility="collapsed",
            )


def _search(
    engine: Engine, c: Controls, query: str, history: Any, area: Any, preview: Any, status: Any
) -> tuple[SearchResult, Any]:
    """The search the sidebar's plan makes for the query, and the container in `area` its result goes in; a new
    query's first-stage list is shown in `preview` while the reranker works, and `preview` is emptied once the
    search ends. The page stops here when there is nothing to search, or the search failed."""
    if c.collection is None:
        _stop(engine, history)
    if not query.strip():
        st.info("Type a query and press Enter, or pick a sample query.")
        _stop(engine, history)
    if c.filter_error:
        st.error(f"The search did not run: {c.filter_error}", icon=":material/filter_alt_off:")
        _stop(engine, history)

    result = None
    reranking = " and reranking" if c.reranker is not None else ""
    plan = c.plan(engine)
    asked = (query, plan.with_(top_n=plan.k).key)  # a new top n re-slices: no preview, no search
    bar = None
    new_query = STATE.explore_asked != asked
    shown = STATE.explore_asked
    if new_query and shown is not None and shown[0] == query:  # the same query under new settings (a k slider held)
        status.info(
            f"Searching with k = {plan.k}{reranking}… Until it ends, any list below is the previous setting's.",
            icon=":material/hourglass_top:",
        )
    box = area.empty() if new_query else area.container()
    if plan.reranks and new_query:
        bar = _first_stage_preview(preview, engine, query, plan)
    STATE.explore_asked = asked
    with shown_errors(), st.spinner(f"Searching{reranking}: {text_md(query.strip()[:60])}…", show_time=True):
        result = search_with_progress(
            lambda progress: engine.search(
                query, plan, progress=progress, rerank_budget_ms=engine.settings.rerank_budget_ms
            ),
            bar,
            first_use=engine.first_use(plan),
        )
    preview.empty()  # before the result is drawn, and above an error
    status.empty()
    if result is None:
        _stop(engine, history)
    remember(engine, result)
    with history:
        open_history(engine)
    return result, box.container() if new_query else box


def _headline(engine: Engine, result: SearchResult) -> None:
    """The search's figures (candidates, movement, timings, caches); the page stops when nothing matched."""
    cached = result.cache.result_cached
    moved_up = sum(r.movement in {"up", "new"} for r in result.reranked)
    cols = st.columns(5)
    cols[0].metric("candidates", len(result.candidates), help=f"k = {result.k} · {result.retrieval}")
    cols[1].metric("moved up or new", moved_up)
    cols[2].metric("dropped from top n", len(result.dropped))
    if cached:
        cols[3].metric("rerank ms now", "0", help=f"cached view; the first run took {result.timings.rerank_ms:.0f} ms")
        cols[4].metric("total ms now", "0", help=f"cached view; the first run took {result.timings.total_ms:.0f} ms")
        st.success("Re-sliced from the cached result: no model ran for this view.", icon=":material/cached:")
    else:
        cols[3].metric(
            "rerank ms", f"{result.timings.rerank_ms:.0f}", help=f"scored by {result.reranker_backend or '—'}"
        )
        cols[4].metric("total ms", f"{result.timings.total_ms:.0f}")
        if result.cache.score_hits:
            st.info(f"{result.cache.score_hits} of {len(result.candidates)} scores came from the score cache.")
    if fallback_note(result):
        st.warning(fallback_note(result), icon=":material/speed:")
    if result.duplicates_removed:
        st.caption(f"{result.duplicates_removed} duplicate passages removed from the candidates.")
    if not result.candidates:
        if result.filters:
            st.warning(
                f"Nothing matched with these filters. {no_match_hint(engine, result.collection, result.filters)}"
            )
        else:
            st.warning("Nothing matched: try other words.")
        st.stop()  # the history is drawn already


def _lists(engine: Engine, c: Controls, result: SearchResult) -> None:
    """The first-stage list beside the reranked list, graded in place, with the stage bar and slopegraph."""
    cached = result.cache.result_cached
    grades = _judged_figures(engine, result)
    judging = Judging(engine, result.collection, result.query, grades, c.rater)
    st.plotly_chart(stage_bar(result.timings, cached=cached), width="stretch", key="stage-bar")
    calibration = load_calibration(engine.settings, result.collection, result.reranker_model)
    if result.reranker_model:
        if result.score_scale == ORDER_SCALE:  # a listwise reranker: ranks, no score to calibrate or explain
            st.caption(f"{score_note(result)} Ranked by `{result.reranker_backend}`.")
        else:
            st.caption(
                f"{score_note(result)} Scored by `{result.reranker_backend}`. {calibration_caption(calibration)} "
                'Switch on "Why here?" in a reranked card to see which sentences and query terms made its score.'
            )
        nothing = nothing_relevant(result, calibration)
        if nothing:
            st.warning(nothing, icon=":material/do_not_disturb_on:")
        faults = search_checks(engine, result)
        if faults:
            st.warning(text_md(not_as_intended(faults)), icon=":material/report:")

    compact = compact_toggle()
    left, right = st.columns(2)
    first_stage = result.first_stage.heading + (f" ({result.fusion})" if result.fusion else "")
    with left:
        st.subheader(f"{first_stage} · top {result.top_n} of {len(result.candidates)}")
        for candidate in result.candidates[: result.top_n]:
            vector_row(
                candidate, result.top_n, grades, result.retrieval, lambda doc: grade_control(judging, doc, "first"),
                compact=compact, fusion=result.fusion,
            )  # fmt: skip
    with right:
        heading = "Reranked" if result.reranker_model else "No reranking: first-stage order"
        st.subheader(f"{heading} · top {result.top_n}")
        if result.reranker_model is None:
            st.caption("Reranking is off: the order is the first-stage order.")
        explain = why_here(result) if result.reranker_model and result.score_scale != ORDER_SCALE else None

        def card_extra(row: RankedHit) -> None:
            grade_control(judging, str(row.metadata.get("document_id", row.id)), "reranked")
            if explain is not None:
                explain(row)

        for row in result.reranked:
            reranked_row(row, grades, result.score_scale, calibration=calibration, extra=card_extra, compact=compact)

    relevant = {doc for doc, grade in grades.items() if grade > 0}
    st.plotly_chart(slopegraph(result, relevant), width="stretch", key="slopegraph")
    downloads(result, "explore")
    if st.button(
        "Compare this query in two configurations →", on_click=set_value, args=("compare_query", result.query)
    ):
        st.switch_page(page("compare"))


def _judged_figures(engine: Engine, result: SearchResult) -> dict[str, int]:
    """The query's grades (empty when it is not judged), with its nDCG@10, judged@10 and first relevant ranks
    before and after reranking when it is."""
    judgments = load_judgments(engine.settings, result.collection)
    match = judgments.for_query(result.query) if judgments is not None else None
    if match is None:
        where = (
            f"'{result.collection}' has judgments for {counted(judgments.query_count, 'query', 'queries')}; this "
            "query is not one of them"
            if judgments is not None
            else f"'{result.collection}' has no judgments yet"
        )
        st.caption(
            f"{text_md(where)}. Grade a card (0-3) to judge it: its nDCG@10 and first relevant rank appear here, "
            "and Evaluate counts it."
        )
        return {}
    query_id, grades = match
    figures = query_figures(result, query_id, grades)
    j = st.columns([1.6, 1, 1.1, 1.1, 1.3])  # the first tile holds "−0.017 vs first stage 0.917" whole at 1400 px

    def _rank(value: int | None) -> str:
        return f"#{value}" if value else f"none in the top {len(result.candidates)}"

    change = figures.ndcg_after - figures.ndcg_before
    moved = round(change, 3) != 0  # "+0.000" is no change: no arrow, no colour
    j[0].metric(
        "nDCG@10 after reranking",
        f"{figures.ndcg_after:.3f}",
        f"{change:+.3f} vs first stage {figures.ndcg_before:.3f}"
        if moved
        else f"same as first stage {figures.ndcg_before:.3f}",
        delta_color="normal" if moved else "off",
        delta_arrow="auto" if moved else "off",
        help="One query's change: a fact about this query, not a test; Evaluate says whether the reranker helps "
        "over a query set.",
    )
    j[1].metric(
        "judged@10",
        f"{figures.judged_after:.0%}",
        help=f"the share of the reranked top 10 that has a judgment (first stage: {figures.judged_before:.0%})"
        "; an unjudged document counts as not relevant",
    )
    j[2].metric("first relevant, before", _rank(figures.first_relevant_before))
    j[3].metric("first relevant, after", _rank(figures.first_relevant_after))
    relevant = {doc for doc, grade in grades.items() if grade > 0}
    j[4].plotly_chart(
        mini_slopegraph(result, relevant), width="stretch", key="mini-slopegraph", config={"displayModeBar": False}
    )
    relevant_judged = counted(figures.relevant_judged, "relevant document", "relevant documents")
    st.caption(
        f"Judged query `{query_id.replace('`', '')}`: {relevant_judged} judged; badges mark "
        "each document's grade in both lists, and grey ones are unjudged (counted as not relevant). Grade any card "
        "with its 0-3 buttons."
    )
    return grades


def _first_stage_preview(slot: Any, engine: Engine, query: str, plan: SearchPlan) -> Any | None:
    """The first-stage list at once (embedding and search take milliseconds), beside a running state for the
    reranker with a progress bar, in `slot`; returns the bar. A search that fails here is left to the full search
    to report."""
    try:
        first = engine.search(query, plan.with_(reranker=None))
    except Exception:  # the full search below shows the error in its place
        return None
    with slot.container():
        left, right = st.columns(2)
        with left:
            st.subheader(f"{first.first_stage.heading} · top {first.top_n} of {len(first.candidates)}")
            for candidate in first.candidates[: first.top_n]:
                vector_row(candidate, first.top_n, None, first.retrieval, fusion=first.fusion)
        with right:
            st.subheader(f"Reranking {len(first.candidates)} candidates…")
            bar = st.progress(0.0, text=f"Reranking: 0 of {len(first.candidates)} candidates scored")
            st.info("The first-stage list is on the left; the reranked list replaces this when the model is done.")
    return bar


if __name__ == "__main__":  # Streamlit runs a page file as __main__; importing the module draws nothing
    run()

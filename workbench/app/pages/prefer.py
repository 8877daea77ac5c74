"""Prefer: blind side by side. Two configurations' top n lists for each query, which side is which drawn at random
per query (seeded, kept), nothing on screen that tells them apart; a person says which list answers better, by
key or button. The session lives in the judgments' store (`workbench.services.preferences`): a reload resumes it,
two browsers share it, and its verdict is B's share of the decisive queries."""

from __future__ import annotations

import uuid

import streamlit as st

from workbench.app.judging import ask_rater_name
from workbench.app.state import STATE, CompareSide, Controls, controls, engine_resource, error_text, shown_errors
from workbench.app.widgets import counted, sidebar_note, text_md
from workbench.engine import Engine
from workbench.errors import WorkbenchError
from workbench.experiments import open_experiment_store
from workbench.preferences import open_preference_store
from workbench.services import preferences as blind
from workbench.types import SearchPlan

SESSION_PARAM = "session"  # the session's id in the page's URL: a reload, a bookmark or a second browser resumes it
KEYS = {"left": "Left", "same": "Down", "right": "Right", "skip": "S", "undo": "U"}
COMPARE_PAGE = "the Compare page's A and B"
OFF_ON = "the sidebar's first stage, without and with the sidebar's reranker"
JUDGED = "the judged queries of B's collection"
KEPT = "a kept query set"
TYPED = "queries typed here"


def run() -> None:
    """The Prefer page: a session under way (its id in the URL), or the form that starts or resumes one."""
    engine = engine_resource()
    c = controls()
    st.title("Prefer")
    session_id = st.query_params.get(SESSION_PARAM)
    if not session_id:
        sidebar_note("prefer", own="the two configurations, the queries and the seed")
        _start_or_resume(engine, c)
        return
    if not c.rater:
        ask_rater_name(engine, "Your choices are kept under your name, so that several people's can be told apart.")
    with shown_errors():
        _choose(engine, session_id, c.rater)


def _plans(engine: Engine, c: Controls, which: str) -> tuple[SearchPlan, SearchPlan]:
    collection = c.collection or engine.settings.collection
    if which == COMPARE_PAGE:
        a, b = STATE.compare_a, STATE.compare_b
    else:
        a = CompareSide(collection=collection, retrieval=c.retrieval, k=c.k, rerank=False)
        b = CompareSide(collection=collection, retrieval=c.retrieval, k=c.k, rerank=True, model=c.reranker_model)
    sides = [side.model_copy(update={"collection": side.collection or collection}) for side in (a, b)]
    return sides[0].plan(engine, c.top_n, {}), sides[1].plan(engine, c.top_n, {})


def _start_or_resume(engine: Engine, c: Controls) -> None:
    st.caption(
        "People who are not relevance engineers can say which of two lists answers a question better far faster "
        "than they can grade twenty cards. Each query shows both lists side by side; which side is which is drawn "
        "at random per query, and nothing on screen tells them apart. Identical lists are counted as ties, never "
        "asked. The verdict: how often B's list was preferred, with its exact 95 % interval."
    )
    which = st.radio("Configurations", [OFF_ON, COMPARE_PAGE], key="prefer-plans")
    with shown_errors():
        first, second = _plans(engine, c, which)
        st.markdown(f"**A** `{text_md(first.key)}`  \n**B** `{text_md(second.key)}`")
    source = st.radio("Queries", [JUDGED, KEPT, TYPED], horizontal=True, key="prefer-source")
    query_set, typed = None, ()
    if source == KEPT:
        names = open_experiment_store(engine.settings).query_set_names()
        query_set = st.selectbox("Query set", names, key="prefer-query-set") if names else None
        if not names:
            st.caption("No query set is kept yet: keep one on the Experiments page.")
    elif source == TYPED:
        typed = tuple(st.text_area("One query a line", key="prefer-typed").splitlines())
    name = st.text_input("Name (optional)", key="prefer-name", max_chars=80)
    if st.button("Start a blind session", type="primary", key="prefer-start"):
        request = blind.PreferenceRequest(
            first=first, second=second, query_set=query_set, typed=typed, name=name,
            judged_of=(second.collection or engine.settings.collection) if source == JUDGED else None,
        )  # fmt: skip
        with shown_errors(), st.spinner("Starting the session…"):
            session = blind.start_preferences(engine, request)
            st.query_params[SESSION_PARAM] = session.id
            st.rerun()
    sessions = open_preference_store(engine.settings).sessions()
    if sessions:
        st.divider()
        by_id = {s.id: s for s in sessions}
        picked = st.selectbox("Or resume a session", list(by_id), key="prefer-resume", format_func=lambda i: (
            f"{by_id[i].title} · {len(by_id[i].queries)} queries · {by_id[i].created_at:%Y-%m-%d}"
        ))  # fmt: skip
        if st.button("Resume", key="prefer-resume-go"):
            st.query_params[SESSION_PARAM] = picked
            st.rerun()


def _record(session_id: str, query_id: str, choice: str, rater: str, request_key: str) -> None:
    """A button's (or its key's) choice, recorded before the page runs again; a problem is shown on the next run."""
    engine = engine_resource()
    try:
        if choice == "undo":
            blind.undo(engine, session_id, rater, request_key)
        else:
            blind.choose(engine, session_id, query_id, choice, rater, request_key)
    except WorkbenchError as exc:
        STATE.problem = error_text(exc)


def _choose(engine: Engine, session_id: str, rater: str) -> None:
    pair = blind.next_pair(engine, session_id, rater)
    if pair is None:
        _done(engine, session_id, rater)
        return
    st.caption(
        f"Rating as **{text_md(rater)}**. Which list answers the query better? Keys: the left arrow, the down "
        "arrow (about the same), the right arrow, S to skip, U to undo. Which side is which is drawn at random "
        "for each query."
    )
    st.progress(
        pair.decided / pair.queries,
        text=f"{pair.decided} of {pair.queries} queries done (chosen, skipped or identical)",
    )
    st.markdown(f"### {text_md(pair.query)}")
    _buttons(pair, rater)
    left, right = st.columns(2, border=True)
    for column, title, passages in ((left, "Left", pair.left), (right, "Right", pair.right)):
        with column:
            st.markdown(f"#### {title}")
            for rank, passage in enumerate(passages, 1):
                heading = f"**{text_md(passage.title)}**  \n" if passage.title else ""
                st.markdown(f"{rank}. {heading}{text_md(passage.text)}")
    if st.button("Leave this session", key="prefer-leave", type="tertiary"):
        del st.query_params[SESSION_PARAM]
        st.rerun()


def _buttons(pair: blind.BlindPair, rater: str) -> None:
    """The five choices as buttons, each with its key; one request key per pair shown, so a double press counts once."""
    request = f"{pair.query_id}:{uuid.uuid4().hex}"
    labels = {"left": "Left is better", "same": "About the same", "right": "Right is better", "skip": "Skip",
              "undo": "Undo"}  # fmt: skip
    cells = st.columns(len(labels))
    for cell, (choice, label) in zip(cells, labels.items(), strict=True):
        cell.button(
            label, key=f"prefer-{choice}", shortcut=KEYS[choice], width="stretch",
            type="primary" if choice in ("left", "right") else "secondary",
            on_click=_record, args=(pair.session_id, pair.query_id, choice, rater, f"{request}:{choice}"),
        )  # fmt: skip


def _done(engine: Engine, session_id: str, rater: str) -> None:
    session, verdict = blind.verdict_of(engine, session_id)
    st.success(f"Nothing left for {text_md(rater)} to choose in this session.", icon=":material/check:")
    st.markdown(f"**A** `{text_md(session.shared().first.key)}`  \n**B** `{text_md(session.shared().second.key)}`")
    for line in verdict.lines():
        st.markdown(text_md(line))
    if verdict.disagreements:
        st.markdown(f"{counted(len(verdict.disagreements), 'disagreement', 'disagreements')} to settle:")
        st.dataframe([{"query": d.query, **d.choices} for d in verdict.disagreements], hide_index=True, width="stretch")
    st.code(f"workbench gate --preferences {session.id}", language="bash")
    if st.button("Keep as an experiment", key="prefer-keep", type="primary"):
        with shown_errors():
            kept = blind.keep_preferences(engine, session.id)
            st.success(f"Kept as experiment `{kept.id}`: the Experiments page lists it (`?experiment={kept.id}`).")
    c1, c2 = st.columns(2)
    if c1.button("Undo my last choice", key="prefer-undo-done", shortcut=KEYS["undo"]):
        _record(session_id, "", "undo", rater, uuid.uuid4().hex)
        st.rerun()
    if c2.button("Leave this session", key="prefer-leave-done"):
        del st.query_params[SESSION_PARAM]
        st.rerun()


if __name__ == "__main__":  # Streamlit runs a page file as __main__; importing the module draws nothing
    run()

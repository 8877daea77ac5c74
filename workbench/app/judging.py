"""Rating where the user looks: a grade control on every card of Explore and Compare (either list), the rater's
name (asked once, kept for this browser's user id in the session store, so a reload keeps it), and the marks on
unjudged documents. A rating goes through `workbench.judgments.rate`, the same service the CLI, the HTTP API and
the MCP server use; the page's next run reads the judgments anew, so the query's figures move in the same view."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from workbench.app.history import user_session_id
from workbench.app.state import STATE, log
from workbench.engine import Engine
from workbench.errors import WorkbenchError, error_message
from workbench.inputs import validate_rater
from workbench.judgments import rate
from workbench.services.sessions import open_session_store
from workbench.vocab import DEFAULT_RATER, GRADE_SCALE

_RATER_KEY = "wb.rater"
_RATER_SESSION = "rater:"  # the session-store id prefix under which a user's rater name is kept
# Lists shown side by side: a document graded in one shows its grade in the other at once.
_TWIN_LISTS = (("first", "reranked"), ("compare-A", "compare-B"))


@dataclass(frozen=True)
class Judging:
    """What a card needs to show and take a grade: where the query is judged, its grades, who rates."""

    engine: Engine
    collection: str
    query: str
    grades: dict[str, int]
    rater: str


def _remembered_rater(engine: Engine) -> str:
    try:
        kept = open_session_store(engine.settings).get(_RATER_SESSION + user_session_id(), 1).summary
    except WorkbenchError as exc:  # a convenience: rating works with the default name
        log.warning("could not read the rater's name: %s", exc)
        kept = None
    return kept or DEFAULT_RATER


def _keep_rater(engine: Engine) -> None:
    name = st.session_state[_RATER_KEY]
    try:
        name = validate_rater(name)
        open_session_store(engine.settings).set_summary(_RATER_SESSION + user_session_id(), name)
    except WorkbenchError as exc:
        STATE.flash = error_message(exc)
        st.session_state[_RATER_KEY] = _remembered_rater(engine)


def rater_input(engine: Engine) -> str:
    """The sidebar's "Rating as" field: the name grades are recorded under (asked once, remembered)."""
    if _RATER_KEY not in st.session_state:
        st.session_state[_RATER_KEY] = _remembered_rater(engine)
    st.text_input(
        "Rating as",
        key=_RATER_KEY,
        on_change=_keep_rater,
        args=(engine,),
        help="Your name as a rater: every grade you give on a card is kept under it, with the time. Several "
        "raters can grade the same documents; Evaluate shows how far they agree.",
    )
    return str(st.session_state[_RATER_KEY])


def _grade_label(grade: int) -> str:
    return f"{grade} {GRADE_SCALE[grade]}" if grade == 0 else str(grade)


def _rated(judging: Judging, doc_id: str, key: str, twins: tuple[str, ...]) -> None:
    grade = st.session_state.get(key)
    if grade is None:
        return
    try:
        rating = rate(
            judging.engine.settings, judging.collection, doc_id, grade, query=judging.query, rater=judging.rater
        )
    except WorkbenchError as exc:
        STATE.flash = error_message(exc)
        return
    for twin in twins:  # the same document's control in the other list shows the new grade too
        st.session_state[twin] = rating.current_grade
    st.toast(f"Graded {doc_id} {rating.grade} ({GRADE_SCALE[rating.grade]}) as {rating.rater}.")


def grade_control(judging: Judging, doc_id: str, where: str) -> None:
    """A row of grade buttons (0 to 3) for one card; `where` names its list (Explore's `first` and `reranked`,
    Compare's `compare-A` and `compare-B`, Evaluate's `queue` and `judge`)."""
    lists = next((pair for pair in _TWIN_LISTS if where in pair), (where,))
    keys = tuple(f"grade-{name}-{hash((judging.collection, judging.query, doc_id))}" for name in lists)
    key = keys[lists.index(where)]
    current = judging.grades.get(doc_id)
    if key not in st.session_state or st.session_state[key] != current:
        st.session_state[key] = current
    st.segmented_control(
        "Grade",
        list(GRADE_SCALE),
        format_func=_grade_label,
        key=key,
        on_change=_rated,
        args=(judging, doc_id, key, tuple(k for k in keys if k != key)),
        label_visibility="collapsed",
        help="Grade this document for the query: " + ", ".join(f"{g} {label}" for g, label in GRADE_SCALE.items()),
    )

"""Rating where the user looks: a grade control on every card of Explore and Compare (either list), Evaluate's
queue and the judge's grades, the rater's name (asked before the first grade, kept for this browser), and the
marks on unjudged documents. A rating goes through `workbench.judgments.rate`, the same service the CLI, the HTTP
API and the MCP server use; the page's next run reads the judgments anew, so the query's figures move in the same
view.

Only a click writes a grade. Streamlit calls a widget's `on_change` whenever the value the browser sends differs
from the one it last kept, and the browser can send back the value of a control that the previous run did not
draw (a card that left the list when k or a preset changed): Streamlit has forgotten it, so the stale value reads
as a change. Each run therefore records the controls it drew and the grade each showed; a change counts only for a
control drawn in the previous run and only when it differs from what that control showed.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from workbench.app.history import user_session_id
from workbench.app.state import STATE, error_text, log
from workbench.engine import Engine
from workbench.errors import InputError, WorkbenchError
from workbench.inputs import validate_rater
from workbench.judgments import rate
from workbench.services.sessions import open_session_store
from workbench.vocab import GRADE_SCALE

_RATER_KEY = "wb.rater"
_RATER_SESSION = "rater:"  # the session-store id prefix under which a user's rater name is kept
_SHOWN_KEY = "wb._grade_controls_shown"  # control key -> the grade it showed, for the controls the last run drew
_PENDING_KEY = "wb._pending_grade"  # a grade clicked before the rater had a name, kept until the name is given
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


@dataclass(frozen=True)
class _Click:
    """A grade a person clicked: on which control, for which document, and the controls twinned with it."""

    judging: Judging
    doc_id: str
    grade: int
    key: str | None = None  # the segmented control clicked, if it was one (a grading walk's buttons are not)
    twins: tuple[str, ...] = ()


def start_run() -> None:
    """Forget which grade controls the previous run drew: called at the top of every script run, after the
    widgets' callbacks (which read that record) have run."""
    st.session_state[_SHOWN_KEY] = {}


def _remembered_rater(engine: Engine) -> str:
    try:
        kept = open_session_store(engine.settings).get(_RATER_SESSION + user_session_id(), 1).summary
    except WorkbenchError as exc:  # a convenience: the name is asked again
        log.warning("could not read the rater's name: %s", exc)
        kept = None
    return kept or ""


def _store_rater(engine: Engine, name: str) -> str:
    """Validate and keep the rater's name for this browser; the name as kept (InputError when it is not one)."""
    name = validate_rater(name)
    open_session_store(engine.settings).set_summary(_RATER_SESSION + user_session_id(), name)
    return name


def _keep_rater(engine: Engine) -> None:
    typed = st.session_state[_RATER_KEY]
    try:
        if not str(typed).strip():
            raise InputError("Type your name as a rater: grades are kept under it.")
        _store_rater(engine, typed)
    except WorkbenchError as exc:
        STATE.problem = error_text(exc)
        st.session_state[_RATER_KEY] = _remembered_rater(engine)


def rater_input(engine: Engine) -> str:
    """The sidebar's "Rating as" field: the name grades are recorded under ("" until the user gives one: the
    first grade asks for it)."""
    if _RATER_KEY not in st.session_state:
        st.session_state[_RATER_KEY] = _remembered_rater(engine)
    st.text_input(
        "Rating as",
        key=_RATER_KEY,
        on_change=_keep_rater,
        args=(engine,),
        placeholder="your name (asked at your first grade)",
        help="Your name as a rater: every grade you give is kept under it, with the time. It is kept for this "
        "browser (new tabs and visits too). Several raters can grade the same documents; Evaluate shows how far "
        "they agree.",
    )
    return str(st.session_state[_RATER_KEY]).strip()


def _grade_label(grade: int) -> str:
    return f"{grade} {GRADE_SCALE[grade]}" if grade == 0 else str(grade)


def _record(click: _Click, rater: str) -> bool:
    """Write a clicked grade under `rater` and show it on the twin controls; whether it was written."""
    judging = click.judging
    try:
        rating = rate(judging.engine.settings, judging.collection, click.doc_id, click.grade, query=judging.query,
                      rater=rater)  # fmt: skip
    except WorkbenchError as exc:
        STATE.problem = error_text(exc)
        return False
    for twin in click.twins:  # the same document's control in the other list shows the new grade too
        st.session_state[twin] = rating.current_grade
    st.toast(f"Graded {click.doc_id} {rating.grade} ({GRADE_SCALE[rating.grade]}) as {rating.rater}.")
    return True


def _rated(judging: Judging, doc_id: str, key: str, twins: tuple[str, ...]) -> None:
    shown: dict[str, int | None] = st.session_state.get(_SHOWN_KEY, {})
    grade = st.session_state.get(key)
    if key not in shown or grade is None or grade == shown[key]:
        return  # not a click on a control the page showed (see the module's docstring), or a deselection
    if not judging.rater:
        st.session_state[key] = shown[key]  # the grade waits for the rater's name
    record_grade(judging, doc_id, int(grade), key, twins)


def record_grade(
    judging: Judging, doc_id: str, grade: int, key: str | None = None, twins: tuple[str, ...] = ()
) -> bool:
    """Keep a grade a person gave (a callback's work): under the rater's name, or, before the rater has one, held
    while "Who is grading?" asks for it. Whether it was written now."""
    click = _Click(judging, doc_id, grade, key, twins)
    if not judging.rater:
        st.session_state[_PENDING_KEY] = click
        return False
    return _record(click, judging.rater)


@st.dialog("Who is grading?")
def _ask_rater(engine: Engine, click: _Click) -> None:
    st.markdown(
        f"Grades are kept under the rater's name, so that several people's grades can be told apart and their "
        f"agreement measured. Your grade **{click.grade} ({GRADE_SCALE[click.grade]})** for `{click.doc_id}` is "
        "recorded once you give it."
    )
    typed = st.text_input("Your name as a rater", key="rater-prompt", max_chars=64)
    keep, cancel = st.columns(2)
    if keep.button("Keep my name and grade", type="primary", key="rater-prompt-keep"):
        try:
            name = _store_rater(engine, typed)
        except WorkbenchError as exc:
            st.error(error_text(exc), icon=":material/error:")
            return
        st.session_state[_RATER_KEY] = name
        st.session_state.pop(_PENDING_KEY, None)
        _record(click, name)
        st.rerun()
    if cancel.button("Not now", key="rater-prompt-cancel"):
        st.session_state.pop(_PENDING_KEY, None)
        st.rerun()


def ask_rater_when_needed(engine: Engine) -> None:
    """When a grade was clicked before the rater had a name, ask for the name (and then record the grade)."""
    click = st.session_state.get(_PENDING_KEY)
    if click is not None:
        _ask_rater(engine, click)


def grade_control(judging: Judging, doc_id: str, where: str) -> None:
    """A row of grade buttons (0 to 3) for one card; `where` names its list (Explore's `first` and `reranked`,
    Compare's `compare-A` and `compare-B`, Evaluate's `queue` and `judge`, the grading walk's `walk`)."""
    lists = next((pair for pair in _TWIN_LISTS if where in pair), (where,))
    keys = tuple(f"grade-{name}-{hash((judging.collection, judging.query, doc_id))}" for name in lists)
    key = keys[lists.index(where)]
    current = judging.grades.get(doc_id)
    if key not in st.session_state or st.session_state[key] != current:
        st.session_state[key] = current
    st.session_state.setdefault(_SHOWN_KEY, {})[key] = current
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


def ask_rater_name(engine: Engine, why: str) -> None:
    """Ask for the rater's name on the page (as the first grade does) and stop the page until it is given; `why`
    says what is kept under it."""
    st.info(why, icon=":material/person:")
    typed = st.text_input("Your name as a rater", key="rater-prompt-page", max_chars=64)
    if st.button("Keep my name", type="primary", key="rater-prompt-page-keep"):
        try:
            st.session_state[_RATER_KEY] = _store_rater(engine, typed)
        except WorkbenchError as exc:
            st.error(error_text(exc), icon=":material/error:")
            st.stop()
        st.rerun()
    st.stop()

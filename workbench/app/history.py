"""Each user's searches: this session's rows for the Latency page, and a history kept in the session store
(so it survives a reload) that Explore lists and re-opens. The user is known by an id kept in a cookie of the
browser (never in the page's URL, which is shared)."""

from __future__ import annotations

import re
import time
import uuid

import streamlit as st

from workbench.app.state import STATE, HistoryEntry, log, set_value
from workbench.app.widgets import counted, text_md
from workbench.engine import Engine
from workbench.errors import WorkbenchError
from workbench.services.sessions import MAX_LIMIT, open_session_store
from workbench.types import SearchResult

_USER = re.compile(r"^[a-f0-9]{16}$")
_COOKIE = "wb_user"  # the browser's cookie holding the user id, so new tabs and visits find the same user
_COOKIE_DAYS = 400  # the longest a browser keeps a cookie


def _valid(user: object) -> str | None:
    return str(user) if user and _USER.match(str(user)) else None


def _browser_cookie() -> str | None:
    try:
        return _valid(st.context.cookies.get(_COOKIE))
    except Exception:  # no browser behind this session (a script run outside `streamlit run`)
        return None


def user_session_id() -> str:
    """The session-store id of this browser's user: `app:<id>`. The id comes from the browser's own cookie (new
    tabs and visits), else this session's state, else a new one. A `?u=` in the address is never taken (an
    earlier version put the id there, so a copied link carried its author's id: a colleague opening it would have
    become its author for good); one found is removed. `remember_browser` writes the cookie."""
    user = _browser_cookie() or _valid(STATE.history_user) or uuid.uuid4().hex[:16]
    if "u" in st.query_params:
        del st.query_params["u"]
    STATE.history_user = user
    return f"app:{user}"


def remember_browser() -> None:
    """Keep this browser's user id in a cookie (once a session, when the browser does not hold it yet), so the
    rater's name and the history are found again in a new tab or on a new visit without the URL's ?u=."""
    user = user_session_id().removeprefix("app:")
    if _browser_cookie() == user or STATE.cookie_written == user:
        return
    STATE.cookie_written = user
    st.html(
        f"<script>document.cookie = '{_COOKIE}={user}; path=/; max-age={_COOKIE_DAYS * 86400}; SameSite=Strict';"
        "</script>",
        unsafe_allow_javascript=True,
    )


def remember(engine: Engine, result: SearchResult) -> None:
    """Record a new search once: a re-sliced view (top n changed) is not a new search."""
    plan = result.plan
    signature = (result.query, plan.with_(top_n=plan.k, min_score=None).model_dump_json())  # top n re-slices
    if STATE.last_signature == signature:
        return
    STATE.last_signature = signature
    entry = HistoryEntry(
        query=result.query,
        plan=plan,
        backend=result.reranker_backend,
        candidates=len(result.candidates),
        # a whole result from the cache, or every score from the score cache: no model ran for it
        cached=result.cache.result_cached
        or bool(result.reranker_model and result.candidates and result.cache.score_misses == 0),
        timings=result.timings,
    )
    pending = STATE.history_pending
    now = time.monotonic()
    store = open_session_store(engine.settings)
    turn_id = uuid.uuid4().hex
    try:
        if pending is not None and now - pending[0] < HISTORY_SETTLE_S and _a_step_of(pending[1], entry):
            # the k slider held down: its in-between values are not searches of yours, the last one stands
            store.forget_turn(user_session_id(), pending[2])
            STATE.history[-1:] = [entry]
        else:
            STATE.history.append(entry)
        store.add_turn(user_session_id(), "query", result.query, entry.model_dump(), turn_id=turn_id)
    except WorkbenchError as exc:  # history is a convenience: a search never fails because of it
        log.warning("could not save the query history: %s", exc)
    STATE.history_pending = (now, entry, turn_id)


HISTORY_SETTLE_S = 3.0  # a search followed this soon by the same query at another k was a step of a held slider


def _a_step_of(earlier: HistoryEntry, later: HistoryEntry) -> bool:
    """Whether `later` is `earlier` with only k (and the top n it caps) moved: a slider's next step."""
    return earlier.query == later.query and earlier.plan.with_(k=later.plan.k, top_n=later.plan.top_n) == later.plan


def _reopen(entry: HistoryEntry) -> None:
    plan = entry.plan
    set_value("query", entry.query)
    set_value("collection", plan.collection)
    set_value("k", plan.k)
    set_value("retrieval", plan.retrieval)
    STATE.top_n_wanted = plan.top_n
    set_value("filters_text", "\n".join(f"{key}={value}" for key, value in plan.filters.items()))


def open_history(engine: Engine, limit: int = 15) -> None:
    """An expander listing this user's recent searches (newest first); one click re-opens one."""
    try:
        view = open_session_store(engine.settings).get(user_session_id(), limit=limit)
    except WorkbenchError as exc:
        log.warning("could not read the query history: %s", exc)
        return
    entries = [HistoryEntry.model_validate(t.meta) for t in reversed(view.turns) if t.role == "query" and t.meta]
    if not entries:
        return
    with st.expander(f"History ({counted(view.total_turns, 'search', 'searches')})", expanded=False):
        for position, entry in enumerate(entries):
            # a query is shown as text: Markdown in it (an image link, bold) must not render or fetch anything
            plan = entry.plan
            label = text_md(f"{entry.query[:80]} — {plan.collection} · k={plan.k} · {plan.retrieval}")
            st.button(label, key=f"history-{position}", on_click=_reopen, args=(entry,), type="tertiary")


def history_queries(engine: Engine) -> list[str]:
    """This user's searched queries, oldest first (the most recent 200): what a query set from the history holds."""
    view = open_session_store(engine.settings).get(user_session_id(), limit=MAX_LIMIT)
    return [turn.text for turn in view.turns if turn.role == "query"]

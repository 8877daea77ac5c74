"""Per-user state behind one typed accessor, the shared engine, and error display.

`STATE` is the only way the app reads or writes `st.session_state`: each field is typed and has a default.
Widgets are tied to a field with `bind("field")` (or a dotted path into a model field, "compare_a.k"): the
widget's own key is seeded from the field before it is drawn and written back when it changes, so values
survive page switches (Streamlit forgets the keys of widgets a page did not draw).
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

import streamlit as st
from pydantic import BaseModel, Field, model_validator

from workbench.app.markdown import message_md
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import error_message, is_expected
from workbench.paths import config_stamp
from workbench.types import SearchPlan, StageTimings
from workbench.vocab import DEFAULT_K, DEFAULT_RERANKER_CHOICE, DEFAULT_TOP_N, MAX_K

log = logging.getLogger("workbench.app")
T = TypeVar("T")
_PREFIX = "wb."
_WIDGET = "w."


class CompareSide(BaseModel):
    """One configuration on the Compare page."""

    collection: str | None = None
    k: int = DEFAULT_K
    rerank: bool = True
    model: str | None = None
    retrieval: str = "dense"

    def plan(self, engine: Engine, top_n: int, filters: dict[str, Any]) -> SearchPlan:
        """This side as a search plan, comparing its top `top_n` (at most its k) under the sidebar's filters."""
        reranker = (self.model or DEFAULT_RERANKER_CHOICE) if self.rerank else None
        return engine.plan(
            collection=self.collection, retrieval=self.retrieval, k=self.k, top_n=min(top_n, self.k), filters=filters,
            reranker=reranker,
        )  # fmt: skip


class HistoryEntry(BaseModel):
    """One search this user ran: what was asked, the plan that answered it, what it cost."""

    query: str
    plan: SearchPlan
    backend: str | None
    candidates: int
    cached: bool
    timings: StageTimings

    @model_validator(mode="before")
    @classmethod
    def _from_flat(cls, given: Any) -> Any:
        """Histories saved before entries carried a plan kept each field flat; they still load."""
        if not isinstance(given, dict) or "plan" in given:
            return given
        filters = dict(part.split("=", 1) for part in str(given.get("filters", "")).split(",") if "=" in part)
        reranker = given.get("reranker")
        return {
            "query": given.get("query"),
            "plan": {
                "collection": given.get("collection"), "retrieval": given.get("retrieval", "dense"),
                "k": given.get("k"), "top_n": given.get("top_n"),
                "filters": {key.strip(): value.strip() for key, value in filters.items()},
                "reranker": None if reranker in (None, "none") else reranker,
            },
            **{name: given.get(name) for name in ("backend", "candidates", "cached")},
            "timings": {name: given.get(name, 0.0) for name in StageTimings.model_fields},
        }  # fmt: skip

    def row(self) -> dict[str, Any]:
        """The entry as one flat table row (the Latency page's)."""
        plan = self.plan
        return {
            "query": self.query, "collection": plan.collection, "k": plan.k, "top_n": plan.top_n,
            "filters": ", ".join(f"{key}={value}" for key, value in plan.filters.items()),
            "retrieval": plan.retrieval, "reranker": plan.reranker or "none", "backend": self.backend,
            "candidates": self.candidates, "cached": self.cached, **self.timings.model_dump(),
        }  # fmt: skip


class _Field(Generic[T]):
    """A typed entry of st.session_state with a default (a value, or a factory for mutable ones)."""

    def __init__(self, default: T | None = None, factory: Callable[[], T] | None = None) -> None:
        self.default = default
        self.factory = factory

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = _PREFIX + name

    def __get__(self, obj: object, owner: type | None = None) -> T:
        if obj is None:
            return self  # type: ignore[return-value]
        if self.key not in st.session_state:
            st.session_state[self.key] = self.factory() if self.factory else self.default
        return st.session_state[self.key]

    def __set__(self, obj: object, value: T) -> None:
        st.session_state[self.key] = value


class AppState:
    """Everything the app remembers for one user, across pages and reruns."""

    authenticated = _Field(False)
    demo_checked = _Field(False)
    # Sidebar
    collection: _Field[str | None] = _Field(None)
    rerank = _Field(True)
    reranker_model: _Field[str | None] = _Field(None)
    retrieval = _Field("dense")
    fusion_method = _Field("settings")  # hybrid's fusion: the settings' RRF, or rrf, minmax, zscore, l2
    fusion_weight = _Field(0.5)  # a linear fusion's dense weight
    k = _Field(DEFAULT_K)
    top_n_wanted = _Field(DEFAULT_TOP_N)
    filters_text = _Field("")
    compact_rows = _Field(False)  # Explore's and Compare's cards as one line each
    # Explore
    query = _Field("")
    sample_pick: _Field[str | None] = _Field(None)
    last_signature: _Field[tuple | None] = _Field(None)
    # the newest search, kept here until it is known not to be a step of a slider held down (HISTORY_SETTLE_S)
    history_pending: _Field[tuple[float, HistoryEntry, str] | None] = _Field(None)  # (when, entry, its turn id)
    history: _Field[list[HistoryEntry]] = _Field(factory=list)
    history_user: _Field[str | None] = _Field(None)
    cookie_written: _Field[str | None] = _Field(None)  # the user id this session wrote into the browser's cookie
    explore_asked: _Field[tuple | None] = _Field(None)  # the query and plan (less top n) the preview last showed
    explanations: _Field[dict[tuple, Any]] = _Field(factory=dict)  # "Why here?" answers kept (explain_view)
    # Compare
    compare_a: _Field[CompareSide] = _Field(factory=lambda: CompareSide(rerank=False))
    compare_b: _Field[CompareSide] = _Field(factory=CompareSide)
    compare_top_n = _Field(DEFAULT_TOP_N)  # the sidebar's default top n: one set of defaults
    compare_query = _Field("")
    stores_missing: _Field[dict[str, Any] | None] = _Field(None)  # stores to offer a copy into, for a collection
    # Evaluate, Latency, Collections
    eval_report: _Field[Any] = _Field(None)
    eval_pool: _Field[list[Any]] = _Field(factory=list)  # this session's reports the judging queue pools
    eval_qrels: _Field[Any] = _Field(None)
    eval_plan: _Field[Any] = _Field(None)  # the plan the report ran: its query-by-query table opens its lists
    reranker_comparison: _Field[Any] = _Field(None)
    prices: _Field[Any] = _Field(None)
    eval_error: _Field[str | None] = _Field(None)
    eval_experiment: _Field[str | None] = _Field(None)
    eval_linked: _Field[str | None] = _Field(None)  # "the same evaluation was kept on ..." when one was linked
    tuning_run: _Field[Any] = _Field(None)  # Evaluate's last tuning grid
    tuning_error: _Field[str | None] = _Field(None)
    tuning_experiment: _Field[str | None] = _Field(None)  # where its recommended cell was kept
    # this session's mark on the candidates files it attaches (the engine, shared by every session, holds them)
    session_tag: _Field[str] = _Field(factory=lambda: uuid.uuid4().hex[:8])
    set_comparison: _Field[Any] = _Field(None)  # Compare's two configurations over a query set (a RunDiff)
    set_comparison_plan: _Field[Any] = _Field(None)  # the id the last evaluation was kept under
    rerun_outcome: _Field[dict[str, Any] | None] = _Field(None)  # Experiments' last "run again": ids and changes
    judge_run: _Field[Any] = _Field(None)  # the LLM judge's last run on Evaluate's queue
    load_run: _Field[Any] = _Field(None)
    depth_points: _Field[Any] = _Field(None)
    parity: _Field[Any] = _Field(None)  # the last parity audit run on the Latency page
    flash: _Field[str | None] = _Field(None)
    problem: _Field[str | None] = _Field(None)  # what a callback could not do, shown once at the top of the next run
    ingest_report: _Field[Any] = _Field(None)
    browse_collection: _Field[str | None] = _Field(None)

    def top_n(self) -> int:
        """top n as shown: what the user last chose, never above k."""
        return max(1, min(self.top_n_wanted, self.k))


STATE = AppState()


def _get_path(path: str) -> Any:
    head, _, rest = path.partition(".")
    value = getattr(STATE, head)
    for part in rest.split(".") if rest else []:
        value = getattr(value, part)
    return value


def _set_path(path: str, value: Any) -> None:
    head, _, rest = path.partition(".")
    if not rest:
        setattr(STATE, head, value)
        return
    container = getattr(STATE, head)
    *parents, last = rest.split(".")
    for part in parents:
        container = getattr(container, part)
    setattr(container, last, value)


def widget_key(path: str) -> str:
    return _WIDGET + path


def bind(path: str, on_change: Callable[[], None] | None = None) -> dict[str, Any]:
    """Keyword arguments tying a widget to a STATE field: `st.slider(..., **bind("k"))`."""
    key = widget_key(path)
    if key not in st.session_state:
        st.session_state[key] = _get_path(path)

    def keep() -> None:
        _set_path(path, st.session_state[key])
        if on_change:
            on_change()

    return {"key": key, "on_change": keep}


def capped_slider(label: str, path: str, upper: int, **kwargs: Any) -> int:
    """A 1..`upper` slider for a STATE field that keeps the user's choice (`path`) when `upper` falls below it:
    it shows min(choice, upper), and the choice comes back when the cap rises. A slider whose range changed can
    report its clamped value back as a change; only a value other than the one it showed counts as the user's.
    Returns the value shown (1 without a slider when `upper` is 1)."""
    key, shown_key = widget_key(path), widget_key(path) + ".shown"
    value = max(1, min(int(_get_path(path)), upper))

    def chosen() -> None:
        if st.session_state[key] != st.session_state.get(shown_key):
            _set_path(path, st.session_state[key])

    st.session_state[shown_key] = value
    st.session_state[key] = value
    if upper > 1:
        st.slider(label, 1, upper, key=key, on_change=chosen, **kwargs)
    return value


def set_value(path: str, value: Any) -> None:
    """Set a field and the widget tied to it (call from callbacks or before the widget is drawn)."""
    _set_path(path, value)
    st.session_state[widget_key(path)] = value


def explore_with(query: str, plan: SearchPlan) -> None:
    """Put a query and a plan's collection, first stage, k and top n into the sidebar and Explore's box (a button's
    callback, before the page switches to Explore)."""
    set_value("query", query)
    set_value("collection", plan.collection)
    set_value("k", min(plan.k, MAX_K))
    set_value("retrieval", plan.retrieval)
    STATE.top_n_wanted = min(plan.top_n, plan.k)


def for_report(name: str, report: Any, version: Any, compute: Callable[[], T]) -> T:
    """`compute()` kept in this browser's session for one report (and `version` of what it also reads), so the
    reruns every widget causes do not repeat it; computed again for another report or version."""
    kept: dict[str, tuple[Any, Any, Any]] = st.session_state.setdefault("per-report", {})
    held = kept.get(name)
    if held is None or held[0] is not report or held[1] != version:
        held = (report, version, compute())
        kept[name] = held
    return held[2]


@st.cache_resource(show_spinner="Loading the workbench…", max_entries=1)
def _engine_for(config: str) -> Engine:
    return Engine(Settings())


def engine_resource() -> Engine:
    """One engine per server process and version of the settings file: models, store clients and caches are shared
    by every session, and a `workbench.toml` changed while the app runs (a collection attached) is read on the next
    rerun, without a restart (the models stay loaded: the process keeps them)."""
    return _engine_for(config_stamp())


engine_resource.clear = _engine_for.clear  # type: ignore[attr-defined]


def error_text(exc: BaseException) -> str:
    """The message a user sees for an exception: the one error table's words (`errors.error_message`), as
    Markdown that shows any text it quotes literally (an id or a name from a link or a file renders no image)."""
    return message_md(error_message(exc))


@contextlib.contextmanager
def shown_errors(where: Any = None) -> Iterator[None]:
    """Errors become messages the user can act on; nothing escapes as a traceback. Unexpected ones are logged."""
    try:
        yield
    except Exception as exc:  # the app must keep working after anything a store or a model throws
        if not is_expected(exc):
            log.exception("unexpected error in the app")
        (where or st).error(error_text(exc), icon=":material/error:")


class Controls(BaseModel):
    """What the sidebar chose; every page reads it through `controls()`."""

    collection: str | None
    k: int
    top_n: int
    filters: dict[str, Any] = Field(default_factory=dict)
    filter_error: str | None = None
    rerank: bool = True
    reranker_model: str | None = None
    retrieval: str = "dense"
    fusion: str | None = None  # hybrid's fusion as a plan names it (None: the settings' RRF)
    rater: str = ""  # the name grades given on cards are kept under ("" until the user gives one)

    @property
    def reranker(self) -> str | None:
        """The plan's reranker: the chosen model, 'default' for the configured one, or None."""
        return (self.reranker_model or DEFAULT_RERANKER_CHOICE) if self.rerank else None

    def plan(self, engine: Engine) -> SearchPlan:
        """What the sidebar chose, as the search plan every page searches with."""
        return engine.plan(
            collection=self.collection, retrieval=self.retrieval,
            fusion=self.fusion if self.retrieval == "hybrid" else None, k=self.k, top_n=self.top_n,
            filters=self.filters, reranker=self.reranker,
        )  # fmt: skip


def publish_pages(pages: dict[str, Any]) -> None:
    st.session_state["wb._pages"] = pages


def page(name: str) -> Any:
    """The st.Page object of a view (for st.switch_page), by its file stem."""
    return st.session_state["wb._pages"][name]


def controls() -> Controls:
    """The sidebar's choices of this run (drawn once, by the entry script)."""
    return st.session_state["wb._controls"]


def publish_controls(value: Controls) -> None:
    st.session_state["wb._controls"] = value

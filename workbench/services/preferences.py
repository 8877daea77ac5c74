"""Blind preference sessions, as every front end runs them (the Prefer page, `workbench preferences`, the API):
start one from two plans and a query source, walk it query by query (the next pair's searches prefetched while
the person reads), record choices and undos, and read its verdict."""

from __future__ import annotations

import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import BaseModel

from workbench.engine import Engine
from workbench.errors import ExperimentNotFoundError, InputError
from workbench.evaluation.io import Dataset, Qrels
from workbench.evaluation.preference import ranking_of
from workbench.evaluation.runner import report_of_runs
from workbench.experiments import Experiment, keep_report, open_experiment_store
from workbench.experiments.query_sets import QueryItem
from workbench.experiments.service import Keeping
from workbench.inputs import validate_query, validate_rater
from workbench.judgments import load_judgments
from workbench.preferences import (
    CHOICES,
    UNDO,
    ChoiceRow,
    PreferenceSession,
    PreferenceVerdict,
    ShownLists,
    open_preference_store,
    preference_verdict,
    standing_choices,
)
from workbench.services.demo import demo_dataset, ensure_demo_collection
from workbench.types import SearchPlan, SearchResult
from workbench.vocab import DEMO_COLLECTION, MAX_QUERY_SET_QUERIES

log = logging.getLogger("workbench.services.preferences")
_prefetch = ThreadPoolExecutor(max_workers=1, thread_name_prefix="preference-prefetch")


@dataclass(frozen=True)
class PreferenceRequest:
    """A session to start: configuration A (`first`) and B (`second`), and its queries: a kept query set's, the
    judged queries of a collection (`judged_of`), or queries typed (`typed`); exactly one of the three."""

    first: SearchPlan
    second: SearchPlan
    query_set: str | None = None
    judged_of: str | None = None
    typed: tuple[str, ...] = ()
    name: str = ""
    seed: int | None = None


class BlindPassage(BaseModel):
    """One passage as a blind list shows it: its document's title and its text, nothing that tells the sides
    apart (no score, rank movement, id, backend or timing)."""

    title: str
    text: str


class BlindPair(BaseModel):
    """The next query to choose on: its text, where it is in the session, and the two lists as the sides show
    them. `done` and `decided` count this rater's choices (identical lists included, as ties)."""

    session_id: str
    query_id: str
    query: str
    position: int
    queries: int
    decided: int
    left: list[BlindPassage]
    right: list[BlindPassage]


def _queries(engine: Engine, request: PreferenceRequest) -> tuple[list[QueryItem], str, str | None]:
    """The session's queries, where they came from in words, and whose judgments grade them."""
    given = [request.query_set is not None, request.judged_of is not None, bool(request.typed)]
    if sum(given) != 1:
        raise InputError(
            "Name one source of queries: a kept query set, a collection's judged queries, or queries typed."
        )
    judgments_of = request.second.collection or engine.settings.collection
    if request.query_set is not None:
        kept = open_experiment_store(engine.settings).query_set(request.query_set)
        return list(kept.queries), f"query set {kept.name}", judgments_of
    if request.judged_of is not None:
        qrels, texts = _judged(engine, request.judged_of)
        if not qrels:
            raise InputError(f"'{request.judged_of}' has no judged queries (rate results or import qrels first).")
        items = [QueryItem(id=q, text=texts[q]) for q in sorted(qrels) if texts.get(q)]
        return items[:MAX_QUERY_SET_QUERIES], f"judged queries of {request.judged_of}", request.judged_of
    texts = [validate_query(t) for t in request.typed if t and t.strip()]
    unique = list(dict.fromkeys(texts))
    return [QueryItem(id=f"typed-{i}", text=t) for i, t in enumerate(unique, 1)], "queries typed", judgments_of


def _judged(engine: Engine, collection: str) -> tuple[Qrels, dict[str, str]]:
    """A collection's judged queries' grades and texts (the demo's shipped ones when its store has none)."""
    stored = load_judgments(engine.settings, collection)
    if stored is not None:
        return stored.qrels, stored.queries
    if collection == DEMO_COLLECTION:
        demo = demo_dataset("test", engine.settings)
        return demo.qrels, demo.queries
    return {}, {}


def start_preferences(engine: Engine, request: PreferenceRequest) -> PreferenceSession:
    """A new session, kept: its queries, its seed (random unless given) and both plans, checked now."""
    items, source, judgments_of = _queries(engine, request)
    for plan in (request.first, request.second):
        if plan.collection == DEMO_COLLECTION:
            ensure_demo_collection(engine)
        if plan.collection:
            engine.collection_info(plan.collection)  # a collection that is not there fails now, by name
    session = PreferenceSession(
        name=request.name, first=request.first, second=request.second, queries=items, query_source=source,
        judgments_of=judgments_of, seed=request.seed if request.seed is not None else uuid.uuid4().int % 2**31,
    )  # fmt: skip
    open_preference_store(engine.settings).add_session(session)
    return session


def _lists(engine: Engine, session: PreferenceSession, query_id: str) -> tuple[SearchResult, SearchResult]:
    text = session.text_of(query_id)
    return engine.search(text, session.first), engine.search(text, session.second)


def _document_ids(result: SearchResult) -> list[str]:
    ids = [str(row.metadata.get("document_id", row.id)) for row in result.reranked]
    return list(dict.fromkeys(ids))


def _blind(result: SearchResult) -> list[BlindPassage]:
    return [
        BlindPassage(title=str(row.metadata.get("title") or row.metadata.get("source") or ""), text=row.text)
        for row in result.reranked
    ]


def _settled(rows: list[ChoiceRow], rater: str) -> set[str]:
    """The queries this rater need not be asked: those they chose on or skipped."""
    return {q for (q, r) in standing_choices(rows) if r == rater}


def next_pair(engine: Engine, session_id: str, rater: str) -> BlindPair | None:
    """The next query this rater has not chosen on, with its two lists as the sides show them (None when the
    session is done). Queries whose two lists are identical are kept as ties and passed over without asking. The
    pair after it is searched in the background meanwhile, so it shows at once."""
    rater = validate_rater(rater)
    store = open_preference_store(engine.settings)
    session = store.session(session_id)
    settled = _settled(store.choices(session.id), rater)
    kept = store.lists(session.id)
    order = [item.id for item in session.queries]

    def asked(query_id: str) -> bool:
        return query_id not in settled and not (query_id in kept and kept[query_id].identical)

    for position, query_id in enumerate(order, 1):
        if not asked(query_id):
            continue
        a, b = _lists(engine, session, query_id)
        kept[query_id] = store.keep_lists(
            session.id, ShownLists(query_id=query_id, a=_document_ids(a), b=_document_ids(b))
        )
        if kept[query_id].identical:
            continue
        for later in [q for q in order[position:] if asked(q)][:1]:  # searched while the person reads this pair
            _prefetch.submit(_warm, engine, session, later)
        left, right = (a, b) if session.a_on_left(query_id) else (b, a)
        identical = sum(1 for shown in kept.values() if shown.identical)
        return BlindPair(
            session_id=session.id, query_id=query_id, query=session.text_of(query_id), position=position,
            queries=len(order), decided=len(settled) + identical, left=_blind(left), right=_blind(right),
        )  # fmt: skip
    return None


def _warm(engine: Engine, session: PreferenceSession, query_id: str) -> None:
    try:
        _lists(engine, session, query_id)
    except Exception as exc:  # a warm-up that fails is asked again, in view, when its turn comes
        log.info("Prefetching a preference pair failed: %s", type(exc).__name__)


def choose(
    engine: Engine, session_id: str, query_id: str, choice: str, rater: str, request_key: str | None = None
) -> bool:
    """Record a choice between the sides as they were shown for the query (`left`, `same`, `right`, `skip`);
    whether it was added (False: a retry of a request key already recorded)."""
    if choice not in CHOICES:
        raise InputError(f"A choice is one of {', '.join(CHOICES)}; got '{str(choice)[:20]}'.")
    rater = validate_rater(rater)
    store = open_preference_store(engine.settings)
    session = store.session(session_id)
    session.text_of(query_id)  # a query of the session, or an InputError naming it
    kept = store.lists(session.id).get(query_id)
    if kept is None:
        raise InputError(f"Query '{query_id}' has not been shown in this session yet: choose on the pair shown.")
    row = ChoiceRow(
        session_id=session.id, query_id=query_id, rater=rater, choice=choice,
        a_side="left" if session.a_on_left(query_id) else "right", created_at=datetime.now(UTC),
        request_key=request_key or uuid.uuid4().hex,
    )  # fmt: skip
    return store.add_choice(row)


def undo(engine: Engine, session_id: str, rater: str, request_key: str | None = None) -> bool:
    """Take back this rater's last choice in the session (an undo row is appended; nothing is deleted)."""
    rater = validate_rater(rater)
    store = open_preference_store(engine.settings)
    session = store.session(session_id)
    row = ChoiceRow(
        session_id=session.id, query_id="", rater=rater, choice=UNDO, a_side="left", created_at=datetime.now(UTC),
        request_key=request_key or uuid.uuid4().hex,
    )  # fmt: skip
    return store.add_choice(row, undo_needs_a_choice=True)


def verdict_of(engine: Engine, session_id: str) -> tuple[PreferenceSession, PreferenceVerdict]:
    """The session and its verdict now (with agreement with the grades where its queries have some)."""
    store = open_preference_store(engine.settings)
    session = store.session(session_id)
    qrels = _judged(engine, session.judgments_of)[0] if session.judgments_of else None
    texts = {item.id: item.text for item in session.queries}
    verdict = preference_verdict(
        session.id, list(texts), texts, store.choices(session.id), store.lists(session.id), qrels or None
    )
    return session, verdict


def keep_preferences(engine: Engine, session_id: str, *, name: str = "", tags: tuple[str, ...] = ()) -> Experiment:
    """The session kept as an experiment (listed, diffed, linked and exported as any other): its plan is B's, its
    runs the lists the queries showed (A's as "before", B's as "after"), its figures graded where the judgments
    grade those queries, and its report carries the preference verdict (what `gate --preferences` decides on)."""
    session, verdict = verdict_of(engine, session_id)
    lists = open_preference_store(engine.settings).lists(session.id)
    shown = [item for item in session.queries if item.id in lists]
    if not shown:
        raise InputError(f"Nothing was shown in preference session {session.id} yet: there is nothing to keep.")
    before_run, after_run = ({item.id: ranking_of(getattr(lists[item.id], side)) for item in shown} for side in "ab")
    grades = _judged(engine, session.judgments_of)[0] if session.judgments_of else {}
    queries = {item.id: item.text for item in shown}
    dataset = Dataset(f"preference session {session.id}", queries, {q: grades[q] for q in queries if q in grades})
    report = report_of_runs(
        dataset, session.second, before_run, after_run, embedding_model=engine.settings.embedding_model,
        warnings=[f"A blind preference session: 'before' is configuration A ({session.shared().first.key}), "
                  f"'after' is B ({session.shared().second.key}), each query's top {session.second.top_n} as shown."],
    )  # fmt: skip
    report.preference = verdict
    keeping = Keeping(name=name or session.title, tags=("preferences", *tags))
    return keep_report(engine, report, session.second, dataset, source=f"preferences ({session.query_source})",
                       keeping=keeping)  # fmt: skip


def preferences_for_gate(engine: Engine, evidence_id: str) -> tuple[PreferenceVerdict, str, str, str]:
    """The preference verdict the gate decides on, and its candidate, baseline and evidence in words: a session's
    (as it stands now), or a kept preference experiment's (as it was kept)."""
    try:
        session, verdict = verdict_of(engine, evidence_id)
    except ExperimentNotFoundError:
        kept = open_experiment_store(engine.settings).get(evidence_id)
        found = kept.evaluation().preference
        if found is None:
            raise InputError(f"Experiment {kept.id} is not a preference session kept: `gate` without --preferences "
                             "decides on it.") from None  # fmt: skip
        return found, f"B: {kept.shared().plan.key}", "A (the session's)", f"experiment {kept.id}"
    shared = session.shared()
    return verdict, f"B: {shared.second.key}", f"A: {shared.first.key}", f"preference session {session.id}"

"""Blind preference sessions on the demo (tiny models): the lists shown blind with sides from the seed, choices and
undo kept as rows never overwritten, identical lists tied without asking, two raters at once losing nothing and
counting nothing twice, the command line, and the gate's exit on the verdict's interval; the store on SQLite and on
a real PostgreSQL."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import cli_here, tiny_env
from tests.live_servers import served_data  # noqa: F401  (a module fixture: the demo with the tiny models)
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import ExperimentNotFoundError, InputError
from workbench.experiments.query_sets import QueryItem
from workbench.preferences import ChoiceRow, PreferenceSession, ShownLists, open_preference_store
from workbench.services.preferences import PreferenceRequest, choose, next_pair, start_preferences, undo, verdict_of

pytestmark = pytest.mark.live_server  # the demo's data folder is the live servers' (tests/live_servers.py)

FORBIDDEN = ("score", "rank", "movement", "shift", "reranker", "backend", "ms", "id")


def _engine(settings: Settings) -> Engine:
    return Engine(settings)


def _start(engine: Engine, *, same: bool = False, seed: int = 11, typed: tuple[str, ...] = ()) -> PreferenceSession:
    first = engine.plan(collection="demo", k=20, top_n=5, reranker=None)
    second = first if same else engine.plan(collection="demo", k=20, top_n=5)
    source = {"typed": typed} if typed else {"judged_of": "demo"}
    return start_preferences(engine, PreferenceRequest(first=first, second=second, seed=seed, **source))


def test_each_query_is_shown_blind_with_its_sides_from_the_seed_and_undo_takes_back_the_last(
    served_data: Settings,  # noqa: F811
) -> None:
    engine = _engine(served_data)
    session = _start(engine)
    sides = {session.a_on_left(item.id) for item in session.queries}
    assert sides == {True, False}  # both sides drawn over 50 queries
    pair = next_pair(engine, session.id, "ann")
    assert pair is not None and pair.position == 1 and pair.query == session.queries[0].text
    a = [r.text for r in engine.search(pair.query, session.first).reranked]
    b = [r.text for r in engine.search(pair.query, session.second).reranked]
    shown = ([p.text for p in pair.left], [p.text for p in pair.right])
    assert shown == ((a, b) if session.a_on_left(pair.query_id) else (b, a))
    for passage in pair.left + pair.right:  # nothing beside the title and the text
        assert set(passage.model_dump()) == {"title", "text"}
    assert not set(pair.model_dump()) & set(FORBIDDEN)

    assert choose(engine, session.id, pair.query_id, "left", "ann", "k1") is True
    assert choose(engine, session.id, pair.query_id, "left", "ann", "k1") is False  # a retry: nothing added
    following = next_pair(engine, session.id, "ann")
    assert following is not None and following.query_id != pair.query_id
    assert next_pair(engine, session.id, "bob").query_id == pair.query_id  # bob has not chosen yet
    undo(engine, session.id, "ann")
    assert next_pair(engine, session.id, "ann").query_id == pair.query_id  # exactly the last choice taken back
    with pytest.raises(InputError, match="Nothing of ann's to undo"):
        undo(engine, session.id, "ann")
    rows = open_preference_store(served_data).choices(session.id)
    assert [(r.choice, r.rater) for r in rows] == [("left", "ann"), ("undo", "ann")]  # appended, never overwritten
    assert rows[0].a_side == ("left" if session.a_on_left(pair.query_id) else "right")

    with pytest.raises(InputError, match="has not been shown"):
        choose(engine, session.id, session.queries[-1].id, "left", "ann")
    with pytest.raises(InputError, match="A choice is one of"):
        choose(engine, session.id, pair.query_id, "sideways", "ann")
    with pytest.raises(ExperimentNotFoundError, match="No preference session"):
        next_pair(engine, "0123456789ab", "ann")


def test_identical_lists_are_ties_never_asked(served_data: Settings) -> None:  # noqa: F811
    engine = _engine(served_data)
    session = _start(engine, same=True, typed=("parking at the office", "how many vacation days"))
    assert next_pair(engine, session.id, "ann") is None
    verdict = verdict_of(engine, session.id)[1]
    assert (verdict.identical, verdict.pooled.ties, verdict.pooled.decisive) == (2, 2, 0)
    assert verdict.outcome == "inconclusive"


def test_two_raters_choosing_at_once_lose_nothing_and_count_nothing_twice(served_data: Settings) -> None:  # noqa: F811
    engine = _engine(served_data)
    session = _start(engine, seed=5)
    problems: list[BaseException] = []

    def walk(rater: str, choice: str) -> None:
        try:
            while (pair := next_pair(engine, session.id, rater)) is not None:
                key = f"{rater}:{pair.query_id}"
                choose(engine, session.id, pair.query_id, choice, rater, key)
                choose(engine, session.id, pair.query_id, choice, rater, key)  # a double press: counted once
        except BaseException as exc:  # handed to the test's thread
            problems.append(exc)

    threads = [threading.Thread(target=walk, args=(r, c)) for r, c in (("ann", "left"), ("bob", "right"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not problems, problems
    lists = open_preference_store(served_data).lists(session.id)
    asked = [q for q, shown in lists.items() if not shown.identical]
    rows = open_preference_store(served_data).choices(session.id)
    assert len(rows) == 2 * len(asked) and len(lists) == len(session.queries)
    verdict = verdict_of(engine, session.id)[1]
    by_rater = {r.rater: r for r in verdict.raters}
    for rater in ("ann", "bob"):
        assert by_rater[rater].decisive == len(asked)
    # each chose the same side on every query: the configuration it was depends on the seed's draw
    on_left_a = sum(session.a_on_left(q) for q in asked)
    assert (by_rater["ann"].a, by_rater["ann"].b) == (on_left_a, len(asked) - on_left_a)
    assert verdict.fleiss_kappa is not None and len(verdict.disagreements) == len(asked)


def _choose_all(engine: Engine, session: PreferenceSession, prefer: str, most: int | None = None) -> None:
    done = 0
    while (pair := next_pair(engine, session.id, "ann")) is not None and (most is None or done < most):
        a_left = session.a_on_left(pair.query_id)
        side = "left" if (prefer == "a") == a_left else "right"
        choose(engine, session.id, pair.query_id, side, "ann")
        done += 1


def test_the_command_line_walks_a_session_and_the_gate_exits_on_its_interval(
    served_data: Settings,  # noqa: F811
    tiny_models: dict[str, Path],
) -> None:
    env = tiny_env(served_data.data_dir, tiny_models)
    code, out, err = cli_here(
        ["preferences", "start", "--collection", "demo", "--a", "reranker=none,k=20,n=5", "--b", "k=20,n=5",
         "--judged", "demo", "--seed", "3", "--json"], env,
    )  # fmt: skip
    assert code == 0, err
    session = PreferenceSession.model_validate_json(out)
    code, out, _ = cli_here(["preferences", "next", session.id, "--rater", "ann", "--json"], env)
    pair = json.loads(out)
    assert code == 0 and set(pair["left"][0]) == {"title", "text"}
    code, out, _ = cli_here(["preferences", "choose", session.id, pair["query_id"], "right", "--rater", "ann"], env)
    assert code == 0 and "recorded" in out
    code, _, err = cli_here(["preferences", "choose", session.id, pair["query_id"], "up", "--rater", "ann"], env)
    assert code == 2 and "invalid choice" in err
    code, out, _ = cli_here(["preferences", "verdict", session.id, "--json"], env)
    pooled = json.loads(out)["pooled"]
    right_was = (0, 1) if session.a_on_left(pair["query_id"]) else (1, 0)  # B on the right, or A
    assert code == 0 and (pooled["a"], pooled["b"]) == right_was
    code, out, _ = cli_here(["preferences", "list"], env)
    assert code == 0 and session.id in out

    engine = _engine(served_data)
    ship, no_ship, unsure = (_start(engine, seed=s) for s in (21, 22, 23))
    _choose_all(engine, ship, "b")
    _choose_all(engine, no_ship, "a")
    _choose_all(engine, unsure, "b", most=2)
    for session_, expected in ((ship, 0), (no_ship, 1), (unsure, 3)):
        verdict = verdict_of(engine, session_.id)[1]
        pooled = verdict.pooled
        if expected == 0:
            assert pooled.decisive >= 6 and pooled.a == 0  # enough for the interval to clear one half
        code, out, err = cli_here(["gate", "--preferences", session_.id, "--json"], env)
        decision = json.loads(out)
        assert code == expected == decision["exit_code"], (out, err)
        assert decision["preferences"]["pooled"]["b"] == pooled.b
    code, _, err = cli_here(["gate", "--preferences", ship.id, "demo"], env)
    assert code == 2 and "leave out --dataset" in err


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_the_store_keeps_sessions_lists_and_choices_on_sqlite_and_postgresql(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if kind == "sqlite":
        settings = Settings(data_dir=tmp_path, session_db=None)
    else:
        schema = f"p{abs(hash(str(tmp_path) + str(time.time()))) % 10**8}"
        settings = Settings(data_dir=tmp_path, session_db=request.getfixturevalue("postgres_url"), pg_schema=schema)
    store = open_preference_store(settings)
    plan = Engine(settings).plan(collection="demo", reranker=None)
    session = PreferenceSession(first=plan, second=plan, queries=[QueryItem(id="q1", text="parking")], seed=4)
    store.add_session(session)
    assert store.session(session.id) == session and [s.id for s in store.sessions()] == [session.id]
    first = store.keep_lists(session.id, ShownLists(query_id="q1", a=["d1"], b=["d2"]))
    again = store.keep_lists(session.id, ShownLists(query_id="q1", a=["x"], b=["y"]))
    assert first == again == store.lists(session.id)["q1"]  # the lists as first shown

    def row(choice: str, key: str) -> ChoiceRow:
        return ChoiceRow(session_id=session.id, query_id="q1", rater="ann", choice=choice, a_side="left",
                         created_at=datetime.now(UTC), request_key=key)  # fmt: skip

    assert store.add_choice(row("left", "a")) and not store.add_choice(row("right", "a"))
    assert store.add_choice(row("undo", "b"), undo_needs_a_choice=True)
    with pytest.raises(InputError):
        store.add_choice(row("undo", "c"), undo_needs_a_choice=True)
    assert [r.choice for r in store.choices(session.id)] == ["left", "undo"]
    with pytest.raises(ExperimentNotFoundError):
        store.session("aaaaaaaaaaaa")


def test_a_session_kept_as_an_experiment_is_listed_diffed_exported_and_gated(
    served_data: Settings,  # noqa: F811
    tiny_models: dict[str, Path],
) -> None:
    """`preferences keep`: an experiment whose runs are the lists shown (A before, B after), graded by the demo's
    judgments (nDCG@10 equal to the evaluation's metrics on the same runs), whose report carries the verdict; it is
    listed, diffed against an evaluation, exported and imported, and the gate reads it as it reads the session."""
    from workbench.evaluation.metrics import evaluate
    from workbench.experiments import diff_experiments, export_experiment, import_experiment, open_experiment_store

    engine = _engine(served_data)
    session = _start(engine, seed=31)
    _choose_all(engine, session, "b")
    env = tiny_env(served_data.data_dir, tiny_models)
    code, out, err = cli_here(["preferences", "keep", session.id, "--name", "blind check", "--tag", "q4"], env)
    assert code == 0, err
    experiment_id = out.split("experiment ", 1)[1].split(":", 1)[0]
    kept = open_experiment_store(served_data).get(experiment_id)
    assert kept.name == "blind check" and {"preferences", "q4"} <= set(kept.tags)
    assert kept.summary().verdict == "blind: ship" and kept.plan == session.second
    lists = open_preference_store(served_data).lists(session.id)
    assert set(kept.after_run) == set(lists)
    first = next(iter(lists.values()))
    assert sorted(kept.after_run[first.query_id], key=kept.after_run[first.query_id].get, reverse=True) == list(
        dict.fromkeys(first.b)
    )
    report = kept.evaluation()
    mean_after = evaluate(kept.qrels, kept.after_run, session.second.top_n)[0]["ndcg@10"]
    assert report.after["ndcg@10"] == pytest.approx(mean_after)
    assert report.preference is not None and report.preference.pooled.b == verdict_of(engine, session.id)[1].pooled.b
    assert any("blind preference" in line for line in report.to_markdown().splitlines())
    assert experiment_id in [e.id for e in open_experiment_store(served_data).list()]
    again = import_experiment(engine, export_experiment(kept))
    assert again.evaluation().preference == report.preference
    # diffed against an evaluation of B kept the usual way: the same lists on the queries both ran
    from workbench.experiments import run_experiment
    from workbench.services.demo import demo_dataset

    evaluated = run_experiment(engine, demo_dataset("test", served_data), session.second, source="demo")
    diff = diff_experiments(evaluated, kept)
    assert diff.agreement.queries == len(set(kept.after_run) & set(evaluated.after_run)) > 0
    assert diff.agreement.top1_change_rate == 0.0 and diff.agreement.overlap_at_n.mean == 1.0
    code, out, _ = cli_here(["gate", "--preferences", experiment_id, "--json"], env)
    assert code == 0 and json.loads(out)["candidate_experiment"] == f"experiment {experiment_id}"

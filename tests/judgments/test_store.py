"""The judgments store on SQLite and on a real PostgreSQL: history kept, the current grade by policy, queries
found by their text, imports and exports that round-trip, attached files moved in once, bad input refused."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from workbench.config import Settings
from workbench.errors import InputError
from workbench.evaluation.io import read_qrels
from workbench.judgments import (
    JudgmentRow,
    Rating,
    attach_judgments,
    current_grades,
    export_judgments,
    export_queries,
    judgment_rows,
    load_judgments,
    rate,
    typed_query_id,
)
from workbench.judgments.store import open_judgment_store
from workbench.paths import demo_dir

pytestmark = pytest.mark.live_server

QRELS = demo_dir() / "qrels" / "test.tsv"
QUERIES = demo_dir() / "queries.jsonl"


@pytest.fixture(params=["sqlite", "postgresql"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    if request.param == "sqlite":
        return Settings(data_dir=tmp_path, session_db=None)
    schema = f"j{abs(hash(str(tmp_path) + str(time.time()))) % 10**8}"
    return Settings(data_dir=tmp_path, session_db=request.getfixturevalue("postgres_url"), pg_schema=schema)


def _row(doc: str, grade: int, rater: str, minute: int, source: str = "person") -> JudgmentRow:
    at = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=minute)
    return JudgmentRow(
        collection="c1x", query_id="q", doc_id=doc, grade=grade, rater=rater, source=source, created_at=at
    )


def test_policies_pick_the_current_grade_from_the_history() -> None:
    rows = [
        _row("d", 1, "ann", 0),
        _row("d", 3, "bob", 1),
        _row("d", 2, "ann", 2),  # ann changes her mind: her grade is now 2
        _row("d", 3, "cy", 3),
        _row("e", 0, "llm:judge", 0, "llm"),
        _row("e", 2, "ann", 1),
        _row("f", 1, "llm:judge", 0, "llm"),
    ]
    assert current_grades(rows, "latest") == {"q": {"d": 3, "e": 2, "f": 1}}
    assert current_grades(rows, "majority") == {"q": {"d": 3, "e": 2, "f": 1}}  # ann 2, bob 3, cy 3
    assert current_grades(rows[:3], "majority") == {"q": {"d": 2}}  # 2 against 3: the more recent of the tie
    assert current_grades(rows, "rater:bob") == {"q": {"d": 3, "e": 2, "f": 1}}  # bob's, else the latest
    assert current_grades(rows, "rater:ann")["q"]["d"] == 2
    # a person's grade outranks the LLM judge's even when the judge rated later
    assert current_grades([_row("e", 2, "ann", 0), _row("e", 0, "llm:judge", 5, "llm")])["q"]["e"] == 2


def test_imports_keep_history_and_round_trip_as_trec_and_beir(settings: Settings, tmp_path: Path) -> None:
    imported = attach_judgments(settings, "demo", QRELS, QUERIES, replace=False)
    original = read_qrels(QRELS)
    assert imported.qrels == original and imported.given == sum(len(d) for d in original.values())
    again = attach_judgments(settings, "demo", QRELS, QUERIES, replace=False)  # already there: nothing added
    assert again.qrels == original and len(judgment_rows(settings, "demo")) == imported.given

    for fmt, name in (("trec", "out.qrels"), ("beir", "out.tsv")):
        path = tmp_path / name
        path.write_text(export_judgments(settings, "demo", fmt))
        assert read_qrels(path) == original
    queries = [json.loads(line) for line in export_queries(settings, "demo").splitlines()]
    assert len(queries) == 50 and all(q["text"] for q in queries)

    qid, doc = "h1", next(iter(original["h1"]))
    rating = rate(settings, "demo", doc, 3, query_id=qid, rater="ann")
    rating = rate(settings, "demo", doc, 1, query_id=qid, rater="ann")
    assert rating.current_grade == 1 and rating.ratings_of_pair == 3  # import, then ann twice
    history = [json.loads(line) for line in export_judgments(settings, "demo", "history").splitlines()]
    mine = [h for h in history if h["query_id"] == qid and h["doc_id"] == doc]
    assert [(h["grade"], h["rater"], h["source"]) for h in mine] == [
        (original[qid][doc], "imported test.tsv", "import"),
        (3, "ann", "person"),
        (1, "ann", "person"),
    ]
    assert mine[0]["query"] == load_judgments(settings, "demo").queries[qid]
    assert load_judgments(settings, "demo").qrels[qid][doc] == 1
    assert load_judgments(settings, "demo", "rater:imported test.tsv").qrels[qid][doc] == original[qid][doc]


def test_a_typed_query_finds_the_judged_one_by_its_text(settings: Settings) -> None:
    attach_judgments(settings, "demo", QRELS, QUERIES)
    judgments = load_judgments(settings, "demo")
    qid, text = next(iter(judgments.queries.items()))
    typed = "  " + text.upper().replace(" ", "   ") + " "
    rating = rate(settings, "demo", "leave-policy.md#1", 2, query=typed)
    assert rating.query_id == qid and rating.rater == "me"
    new = rate(settings, "demo", "leave-policy.md#1", 2, query="a query nobody judged before")
    assert new.query_id == typed_query_id("A query  nobody judged before")
    stored = load_judgments(settings, "demo")
    assert stored.queries[new.query_id] == "a query nobody judged before"
    assert stored.for_query("A QUERY nobody judged before") == (new.query_id, {"leave-policy.md#1": 2})


def test_files_attached_before_the_store_move_into_it_once(settings: Settings) -> None:
    folder = Path(settings.data_dir) / "judgments" / "legacy"
    folder.mkdir(parents=True)
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\nq2\td3\t1\n")
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "first"}\n{"_id": "q2", "text": "second"}\n')
    for _ in range(2):
        judgments = load_judgments(settings, "legacy")
        assert judgments.qrels == {"q1": {"d1": 2, "d2": 0}, "q2": {"d3": 1}} and judgments.given == 3
    assert (folder / "qrels.tsv").exists()  # the files stay where they were


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"grade": 7}, "grade must be one of 0 not relevant"),
        ({"grade": "high"}, "grade must be a whole number"),
        ({"rater": "ann\x1b[31m"}, "rater must be 1-64 characters"),
        ({"doc_id": ""}, "document id must be 1-512 visible characters"),
        ({"query": "\u200b\u200b"}, "The query is empty"),
        ({"query": None, "query_id": "nope"}, "No judged query has the id 'nope'"),
        ({"query": None}, "Name the query"),
        ({"collection": "../etc"}, "Collection name '../etc' is not allowed"),
    ],
)
def test_bad_ratings_are_refused_naming_the_problem(tmp_path: Path, kwargs: dict, message: str) -> None:
    settings = Settings(data_dir=tmp_path)
    args = {"collection": "demo", "doc_id": "d1", "grade": 2, "query": "vacation", "rater": "ann", **kwargs}
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        rate(settings, args.pop("collection"), args.pop("doc_id"), args.pop("grade"), **args)
    assert load_judgments(settings, "demo") is None  # nothing stored


def test_a_retried_rating_with_an_idempotency_key_is_stored_once(settings: Settings) -> None:
    """Eight threads send the same keyed rating at once (a client retrying over a flaky link): one row is
    stored, seven answers are replays of it; the key reused for another grade is refused; a new key adds."""
    from concurrent.futures import ThreadPoolExecutor

    def send(_: int) -> Rating:
        return rate(settings, "demo", "leave-policy.md#2", 2, query="carry over leave", rater="ann",
                    idempotency_key="retry-7f3a")  # fmt: skip

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(send, range(8)))
    rows = [r for r in open_judgment_store(settings).rows("demo") if r.doc_id == "leave-policy.md#2"]
    assert len(rows) == 1 and rows[0].grade == 2 and rows[0].rater == "ann"
    assert sorted(a.replayed for a in answers) == [False] + [True] * 7
    assert all(a.current_grade == 2 and a.ratings_of_pair == 1 for a in answers)
    with pytest.raises(InputError, match="was used for another grade"):
        rate(
            settings,
            "demo",
            "leave-policy.md#2",
            3,
            query="carry over leave",
            rater="ann",
            idempotency_key="retry-7f3a",
        )
    assert rate(settings, "demo", "leave-policy.md#2", 3, query="carry over leave", rater="ann",
                idempotency_key="retry-8b1c").ratings_of_pair == 2  # fmt: skip
    with pytest.raises(InputError, match="idempotency key must be"):
        rate(settings, "demo", "leave-policy.md#2", 3, query="carry over leave", idempotency_key="bad key\x00")


def test_a_collections_judgments_say_whose_grades_they_hold(tmp_path: Path) -> None:
    """Issue 36, item 10: every figure resting on judgments says whose they are."""
    from workbench.judgments import load_judgments, rate

    settings = Settings(data_dir=tmp_path)
    for rater, doc in (("ann", "d1"), ("ann", "d2"), ("bea", "d1")):
        rate(settings, "birds", doc, 2, query="which birds wade", rater=rater)
    judged = load_judgments(settings, "birds")
    assert judged is not None and judged.provenance == "ann's 2 grades + 1 by bea"
    assert judged.dataset().name == "birds (judgments store: ann's 2 grades + 1 by bea)"


def test_the_judged_queries_are_counted_by_the_rater_who_brought_them(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 69, item 9: Grade offered "51 queries" where Evaluate ran the demo's 50, with no word why."""
    from workbench.config import Settings
    from workbench.judgments import judgment_rows, queries_by_rater, rate

    settings = Settings(data_dir=tmp_path)
    for i in range(3):
        rate(settings, "demo-like", "d1", 2, query=f"shipped question {i}", rater="demo handbook")
    rate(settings, "demo-like", "d2", 1, query="shipped question 0", rater="ann")
    rate(settings, "demo-like", "d1", 3, query="a question ann asked herself", rater="ann")
    assert queries_by_rater(judgment_rows(settings, "demo-like")) == "3 by demo handbook, 1 more by ann"

"""The grading walk: each query's top n before and after reranking, in reading order, without what is graded; and
each rater's progress through it, counted by hand."""

from __future__ import annotations

from datetime import UTC, datetime

from workbench.engine import Engine
from workbench.judgments import JudgmentRow, grading_walk, load_judgments, rater_progress
from workbench.services.demo import DEMO_COLLECTION

QUERIES = ["how many vacation days do I get per year", "do we have a bicycle plan"]


def _doc(hit) -> str:
    return str(hit.metadata.get("document_id", hit.id))


def test_a_walk_holds_each_querys_top_n_before_and_after(demo_engine: Engine) -> None:
    plan = demo_engine.plan(collection=DEMO_COLLECTION, k=20, top_n=5)
    walk = grading_walk(demo_engine, QUERIES, plan)
    expected = []
    for query in QUERIES:
        result = demo_engine.search(query, plan)
        after = list(dict.fromkeys(_doc(r) for r in result.reranked))
        before = list(dict.fromkeys(_doc(c) for c in result.candidates[:5]))
        expected += [(query, doc) for doc in after + [d for d in before if d not in after]]
        for item in (i for i in walk if i.query == query):
            assert item.rank_after == (after.index(item.doc_id) + 1 if item.doc_id in after else None)
            assert item.rank_before == (before.index(item.doc_id) + 1 if item.doc_id in before else None)
            assert item.text and item.title
    assert [(i.query, i.doc_id) for i in walk] == expected

    judged = load_judgments(demo_engine.settings, DEMO_COLLECTION)
    unjudged = grading_walk(demo_engine, QUERIES, plan, judgments=judged, only_unjudged=True)
    match = judged.for_query(QUERIES[0])
    assert match is not None  # a judged demo query: its graded documents leave the walk
    assert [(i.query, i.doc_id) for i in unjudged] == [
        (q, d) for q, d in expected if not (q == QUERIES[0] and d in match[1])
    ]


def test_each_raters_progress_counts_the_walks_pairs_they_graded(demo_engine: Engine) -> None:
    plan = demo_engine.plan(collection=DEMO_COLLECTION, k=10, top_n=3)
    walk = grading_walk(demo_engine, QUERIES[:1], plan)
    now = datetime.now(UTC)

    def row(qid: str, doc: str, rater: str) -> JudgmentRow:
        return JudgmentRow(collection="demo", query_id=qid, doc_id=doc, grade=1, rater=rater, source="person",
                           created_at=now)  # fmt: skip

    queries = {"h1": QUERIES[0].upper(), "x9": "something else"}  # matched with case and spacing ignored
    rows = [
        row("h1", walk[0].doc_id, "ann"),
        row("h1", walk[0].doc_id, "ann"),  # graded twice: one pair
        row("h1", walk[1].doc_id, "ann"),
        row("h1", walk[1].doc_id, "bob"),
        row("h1", "not-in-the-walk", "bob"),
        row("x9", walk[0].doc_id, "cy"),  # another query
    ]
    assert rater_progress(walk, rows, queries) == {"ann": 2, "bob": 1}

"""A history entry carries the plan that answered the search; entries saved in the older flat form still load."""

from __future__ import annotations

from workbench.app.state import HistoryEntry
from workbench.types import SearchPlan, StageTimings


def test_a_flat_entry_saved_before_plans_loads_as_the_same_plan() -> None:
    flat = {
        "query": "parental leave", "collection": "demo", "k": 40, "top_n": 7, "filters": "year=2024, team=hr",
        "retrieval": "hybrid", "reranker": "none", "backend": None, "candidates": 40, "cached": False,
        "embed_ms": 1.5, "search_ms": 2.5, "rerank_ms": 0.0, "total_ms": 4.0,
    }  # fmt: skip
    entry = HistoryEntry.model_validate(flat)
    assert entry.plan == SearchPlan(
        collection="demo", retrieval="hybrid", k=40, top_n=7, filters={"year": "2024", "team": "hr"}, reranker=None
    )
    assert entry.timings == StageTimings(embed_ms=1.5, search_ms=2.5, rerank_ms=0.0, total_ms=4.0)
    row = entry.row()
    assert {key: row[key] for key in flat} == {**flat, "filters": "year=2024, team=hr"}


def test_an_entry_round_trips_through_the_session_store_form() -> None:
    plan = SearchPlan(collection="demo", k=20, top_n=5, filters={"page": 2}, reranker="some/model", min_score=0.5)
    entry = HistoryEntry(query="q", plan=plan, backend="torch", candidates=20, cached=True, timings=StageTimings())
    again = HistoryEntry.model_validate(entry.model_dump())
    assert again == entry and again.plan.filters == {"page": 2}

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import CollectionNotFoundError, InputError, ModelNotFoundError
from workbench.types import SearchPlan, SearchResult


@pytest.fixture
def nature(tiny_engine: Engine, corpus_dir: Path) -> Engine:
    tiny_engine.ingest(corpus_dir, "nature")
    return tiny_engine


def test_search_returns_both_orders_scores_ranks_and_timings(nature: Engine) -> None:
    result = nature.search("herons and fish", nature.plan(collection="nature", k=6, top_n=3))
    assert isinstance(result, SearchResult)
    assert len(result.candidates) == 6 and len(result.reranked) == 3
    assert [c.vector_rank for c in result.candidates] == [1, 2, 3, 4, 5, 6]
    vector_scores = [c.vector_score for c in result.candidates]
    assert vector_scores == sorted(vector_scores, reverse=True)
    rerank_scores = [r.rerank_score for r in result.reranked]
    assert rerank_scores == sorted(rerank_scores, reverse=True)
    assert sorted(c.rerank_rank for c in result.candidates) == [1, 2, 3, 4, 5, 6]
    for row in result.reranked:
        assert row.shift == row.rank_before - row.rank_after
        assert row.movement == (
            "new" if row.rank_before > 3 else "up" if row.shift > 0 else "down" if row.shift < 0 else "same"
        )
    assert {c.id for c in result.dropped} == {c.id for c in result.candidates[:3]} - {r.id for r in result.reranked}
    t = result.timings
    assert t.embed_ms > 0 and t.search_ms > 0 and t.rerank_ms > 0
    assert t.total_ms >= t.embed_ms + t.search_ms + t.rerank_ms
    assert result.cache.score_misses == 6 and result.cache.score_hits == 0


def test_duplicate_texts_are_removed(nature: Engine) -> None:
    result = nature.search("herons wade in shallow water", nature.plan(collection="nature", k=8, top_n=3))
    texts = [" ".join(c.text.split()) for c in result.candidates]
    assert len(texts) == len(set(texts))
    assert result.duplicates_removed == 1  # the JSONL repeats the heron sentence of the Markdown guide


def test_changing_top_n_reslices_without_a_model_call(nature: Engine) -> None:
    first = nature.search("rivers and deltas", nature.plan(collection="nature", k=8, top_n=2))
    reranker = nature.reranker()
    calls = reranker.model_calls
    again = nature.search("rivers and deltas", nature.plan(collection="nature", k=8, top_n=5))
    assert reranker.model_calls == calls
    assert again.cache.result_cached and len(again.reranked) == 5
    assert first.top(5).reranked == again.reranked
    assert first.top(1).reranked == first.reranked[:1]
    with pytest.raises(InputError, match="top_n"):
        first.top(9)


def test_repeat_after_result_cache_cleared_hits_the_score_cache(nature: Engine) -> None:
    nature.search("oak trees", nature.plan(collection="nature", k=5, top_n=2))
    nature._results.clear()
    again = nature.search("oak trees", nature.plan(collection="nature", k=5, top_n=2))
    assert again.cache.score_hits == 5 and again.cache.score_misses == 0
    assert not again.cache.result_cached


def test_a_query_is_embedded_once_for_every_plan_that_needs_its_vector(
    nature: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = nature.embedder()
    embedded: list[str] = []
    real = embedder.embed_query
    monkeypatch.setattr(embedder, "embed_query", lambda text: embedded.append(text) or real(text))
    plans = [nature.plan(collection="nature", k=k, retrieval=r) for k in (3, 6) for r in ("dense", "hybrid")]
    results = [nature.search("moss on stones", plan) for plan in plans]
    assert embedded == ["moss on stones"]
    fresh = nature.search("moss on stones", plans[0], use_cache=False)  # a timed run embeds again
    assert embedded == ["moss on stones"] * 2 and fresh.timings.embed_ms > 0
    assert [c.id for c in fresh.candidates] == [c.id for c in results[0].candidates]
    nature.clear_caches()
    nature.search("moss on stones", plans[1])
    assert len(embedded) == 3


def test_a_preview_and_the_reranked_search_after_it_run_the_first_stage_once(
    nature: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issues 52 and 55: Explore's first-stage preview and its reranked search searched the store twice, and the
    reranked result's timings read "embed 0 ms" (the vector came from the cache). The first stage now runs once and
    the reranked result carries the times it really took."""
    store = nature.registry.get("nature")
    searched: list[int] = []
    real = store.search
    monkeypatch.setattr(store, "search", lambda *a, **kw: searched.append(1) or real(*a, **kw))
    plan = nature.plan(collection="nature", k=6, top_n=3)
    preview = nature.search("rivers and deltas", plan.with_(reranker=None))
    reranked = nature.search("rivers and deltas", plan)
    assert len(searched) == 1
    assert [c.id for c in reranked.candidates] == [c.id for c in preview.candidates]
    assert reranked.timings.embed_ms == pytest.approx(preview.timings.embed_ms) and reranked.timings.embed_ms > 0
    assert reranked.timings.search_ms == pytest.approx(preview.timings.search_ms)


def test_filters_restrict_candidates(nature: Engine) -> None:
    result = nature.search("nature", nature.plan(collection="nature", k=10, top_n=3, filters={"source": "guide.md"}))
    assert result.candidates and all(c.metadata["source"] == "guide.md" for c in result.candidates)
    result = nature.search(
        "nature", nature.plan(collection="nature", k=10, top_n=3, filters={"page": 2, "source": "guide.md"})
    )
    assert [c.metadata["section"] for c in result.candidates] == ["Rivers"]


def test_no_reranker_keeps_the_vector_order(nature: Engine) -> None:
    result = nature.search("glaciers", nature.plan(collection="nature", k=5, top_n=3, reranker=None))
    assert result.reranker_model is None
    assert [r.id for r in result.reranked] == [c.id for c in result.candidates[:3]]
    assert all(r.movement == "same" and r.rerank_score is None for r in result.reranked)


def test_result_is_plain_json_data(nature: Engine) -> None:
    result = nature.search("volcanoes", nature.plan(collection="nature", k=4, top_n=2))
    data = json.loads(result.to_json())
    assert {"candidates", "reranked", "dropped", "timings"} <= data.keys()
    assert set(data["timings"]) == {"embed_ms", "search_ms", "rerank_ms", "total_ms"}
    assert SearchResult.model_validate_json(result.to_json()) == result


@pytest.mark.parametrize(
    ("query", "k", "top_n", "message"),
    [
        ("", 5, 2, "empty"),
        ("   \n\t ", 5, 2, "empty"),
        ("x" * 513, 5, 2, "513 characters"),
        ("ok", 0, 1, "k must be between 1 and 200"),
        ("ok", 201, 1, "k must be between 1 and 200"),
        ("ok", 5, 0, "top_n must be between 1 and k"),
        ("ok", 5, 6, "top_n must be between 1 and k"),
        ("ok", 2.5, 1, "whole number"),
    ],
)
def test_bad_inputs_are_clear_errors(nature: Engine, query: str, k: int, top_n: int, message: str) -> None:
    with pytest.raises(InputError, match=message):
        nature.search(query, nature.plan(collection="nature", k=k, top_n=top_n))


def test_512_characters_is_allowed(nature: Engine) -> None:
    assert nature.search(" " + "y" * 512 + " ", nature.plan(collection="nature", k=3, top_n=1)).query == "y" * 512


def test_bad_filters(nature: Engine) -> None:
    with pytest.raises(InputError, match="Filter 'page'"):
        nature.search("ok", nature.plan(collection="nature", k=3, top_n=1, filters={"page": [1, 2]}))


def test_unknown_collection_lists_what_exists(nature: Engine) -> None:
    with pytest.raises(CollectionNotFoundError, match=r"'nope' not found.*Available: nature"):
        nature.search("ok", nature.plan(collection="nope", k=3, top_n=1))


def test_missing_reranker_model_is_named(nature: Engine, tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="RERANKER_MODEL"):
        nature.search("ok", nature.plan(collection="nature", k=3, top_n=1, reranker=str(tmp_path / "no-such-model")))


def test_delete_collection(nature: Engine) -> None:
    nature.delete_collection("nature")
    assert "nature" not in {c.name for c in nature.collections()}
    with pytest.raises(CollectionNotFoundError):
        nature.delete_collection("nature")


def test_the_rerank_reports_its_progress_batch_by_batch(tiny_settings: Settings, corpus_dir: Path) -> None:
    engine = Engine(tiny_settings.model_copy(update={"reranker_batch_size": 2}))
    engine.ingest(corpus_dir, "nature")
    heard: list[tuple[int, int]] = []
    result = engine.search(
        "where do herons fish",
        engine.plan(collection="nature", k=6, top_n=3),
        progress=lambda d, t: heard.append((d, t)),
    )
    total = len(result.candidates)
    assert total >= 5 and heard[-1] == (total, total)  # the last batch completes the request
    assert len(heard) == -(-total // 2) and [d for d, _ in heard] == sorted({d for d, _ in heard})  # batch by batch
    heard.clear()
    engine.search(
        "where do herons fish",
        engine.plan(collection="nature", k=6, top_n=3),
        progress=lambda d, t: heard.append((d, t)),
    )
    assert heard == []  # a cached result runs no model

    def broken(scored: int, total: int) -> None:
        raise RuntimeError("a listener that fails")

    again = engine.search("coral reefs and animals", engine.plan(collection="nature", k=6, top_n=3), progress=broken)
    assert again.reranked  # a failing listener never stops the search


def test_a_search_plan_is_validated_once_and_names_itself(tiny_engine: Engine, corpus_dir: Path) -> None:
    tiny_engine.ingest(corpus_dir, "nature")
    plan = tiny_engine.plan(collection="nature", k=6, retrieval="hybrid", filters=["source=rivers.txt"])
    assert (plan.k, plan.top_n, plan.filters, plan.reranker) == (6, 6, {"source": "rivers.txt"}, "default")
    assert plan.key == 'nature · hybrid k=6 → 6 · default · source="rivers.txt"'
    assert plan == tiny_engine.plan(collection="nature", k=6, retrieval="hybrid", filters={"source": "rivers.txt"})
    by_plan = tiny_engine.search("rivers", plan)
    by_keywords = tiny_engine.search(
        "rivers", tiny_engine.plan(collection="nature", retrieval="hybrid", k=6, filters=["source=rivers.txt"])
    )
    assert [c.id for c in by_plan.reranked] == [c.id for c in by_keywords.reranked]
    assert by_keywords.cache.result_cached  # the same plan: the same cached result
    narrower = plan.with_(top_n=2)
    assert (narrower.k, narrower.top_n) == (6, 2) and "k=6 → 2" in narrower.key and plan.top_n == 6
    unranked = tiny_engine.plan(collection="nature", reranker=None)
    assert not unranked.reranks and "none" in unranked.key
    for bad, words in [
        ({"k": 0}, "k must be between 1"),
        ({"k": 5, "top_n": 6}, "top_n must be between 1 and k"),
        ({"retrieval": "sparse"}, "retrieval must be one of"),
        ({"depth": 3}, "depth: not a field"),
        ({"min_score": float("inf")}, "finite number"),
    ]:
        with pytest.raises(InputError, match=words):
            SearchPlan(**bad)

from __future__ import annotations

import time
from pathlib import Path

import pytest

from workbench.config import Settings
from workbench.rerankers import CrossEncoderReranker, ScoreCache

TEXTS = [
    "short one",
    "a considerably longer document about rivers, deltas, sediment and the sea that runs on and on",
    "middle length text about herons",
    "x",
]


@pytest.fixture
def reranker(tiny_models: dict[str, Path]) -> CrossEncoderReranker:
    return CrossEncoderReranker(str(tiny_models["reranker"]), Settings(offline=True, reranker_batch_size=2))


def test_length_sorted_batches_give_each_text_its_own_score(reranker: CrossEncoderReranker) -> None:
    scores = reranker.predict("rivers", TEXTS)
    one_by_one = [float(reranker._model.predict([("rivers", t)])[0]) for t in TEXTS]
    assert scores == pytest.approx(one_by_one, abs=1e-5)


def test_repeated_query_costs_no_model_call(reranker: CrossEncoderReranker) -> None:
    first, hits = reranker.score("rivers", TEXTS)
    assert hits == 0 and reranker.model_calls == 1
    second, hits = reranker.score("rivers", TEXTS)
    assert hits == len(TEXTS) and reranker.model_calls == 1
    assert second == first
    _, hits = reranker.score("rivers", [*TEXTS, "a new document"])
    assert hits == len(TEXTS) and reranker.model_calls == 2


def test_cache_entries_expire_after_ttl() -> None:
    cache = ScoreCache(ttl=0.2, max_size=10)
    key = ScoreCache.key("m", "q", "doc")
    cache.put_many({key: 1.5})
    assert cache.get_many([key]) == [1.5]
    time.sleep(0.3)
    assert cache.get_many([key]) == [None]


def test_cache_is_bounded_in_size() -> None:
    cache = ScoreCache(ttl=60, max_size=3)
    cache.put_many({ScoreCache.key("m", "q", str(i)): float(i) for i in range(10)})
    assert len(cache) == 3


def test_cache_size_zero_turns_it_off() -> None:
    cache = ScoreCache(ttl=60, max_size=0)
    key = ScoreCache.key("m", "q", "doc")
    cache.put_many({key: 1.0})
    assert cache.get_many([key]) == [None]


def test_changed_text_is_scored_afresh() -> None:
    assert ScoreCache.key("m", "q", "old text") != ScoreCache.key("m", "q", "new text")

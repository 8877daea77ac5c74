"""Hybrid fusion: the arithmetic against ranx (RRF, and weighted sums after min-max and z-score normalisation) and
against hand computations (weighted RRF and L2, which ranx has not); the text a plan names a fusion by; and a
fusion through the engine, in the plan's key, its result and its cache."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from ranx import Run
from ranx import fuse as ranx_fuse

from workbench.engine import Engine
from workbench.errors import InputError
from workbench.fusion import Fusion, linear, parse_fusion, rrf
from workbench.retrieval import fuse
from workbench.types import Hit, SearchPlan

DENSE = {"a": 0.91, "b": 0.85, "c": 0.42, "e": 0.40, "f": 0.38}
BM25 = {"c": 12.5, "a": 7.25, "d": 3.0, "g": 2.5}


def hits(scores: dict[str, float]) -> list[Hit]:
    ordered = sorted(scores.items(), key=lambda item: -item[1])
    return [Hit(id=doc, text=f"text of {doc}", score=score) for doc, score in ordered]


def ours(fusion: Fusion) -> dict[str, float]:
    return {hit.id: hit.score for hit in fuse({"dense": hits(DENSE), "bm25": hits(BM25)}, fusion)}


def theirs(norm: str | None, method: str, params: dict) -> dict[str, float]:
    runs = [Run({"q": dict(DENSE)}, name="dense"), Run({"q": dict(BM25)}, name="bm25")]
    return dict(ranx_fuse(runs, norm=norm, method=method, params=params).to_dict()["q"])


@pytest.mark.parametrize(
    ("fusion", "norm", "method", "params"),
    [
        (rrf(60), None, "rrf", {"k": 60}),
        (rrf(5), None, "rrf", {"k": 5}),
        (linear("minmax", 0.7), "min-max", "wsum", {"weights": [0.7, 0.3]}),
        (linear("minmax", 0.5), "min-max", "wsum", {"weights": [0.5, 0.5]}),
        (linear("zscore", 0.3), "zmuv", "wsum", {"weights": [0.3, 0.7]}),
    ],
    ids=["rrf-60", "rrf-5", "minmax-0.7", "minmax-0.5", "zscore-0.3"],
)
def test_fused_scores_equal_ranx(fusion: Fusion, norm: str | None, method: str, params: dict) -> None:
    mine, reference = ours(fusion), theirs(norm, method, params)
    assert mine.keys() == reference.keys()
    for doc in mine:
        assert mine[doc] == pytest.approx(reference[doc], abs=1e-9), doc
    assert sorted(mine, key=lambda d: -mine[d]) == sorted(reference, key=lambda d: -reference[d])


def test_weighted_rrf_and_l2_by_hand() -> None:
    weighted = ours(rrf(10, dense_weight=2.0, bm25_weight=0.5))
    assert weighted["a"] == pytest.approx(2 / 11 + 0.5 / 12)
    assert weighted["c"] == pytest.approx(2 / 13 + 0.5 / 11)
    assert weighted["g"] == pytest.approx(0.5 / 14)
    dense_norm = math.sqrt(sum(v * v for v in DENSE.values()))
    bm25_norm = math.sqrt(sum(v * v for v in BM25.values()))
    l2 = ours(linear("l2", 0.25))
    assert l2["a"] == pytest.approx(0.25 * 0.91 / dense_norm + 0.75 * 7.25 / bm25_norm)
    assert l2["b"] == pytest.approx(0.25 * 0.85 / dense_norm)  # absent from BM25's list: 0 there
    assert l2["d"] == pytest.approx(0.75 * 3.0 / bm25_norm)


def test_a_list_of_equal_scores_and_ties_keep_first_appearance() -> None:
    flat = [Hit(id=d, text=d, score=1.0) for d in ("x", "y")]
    fused = fuse({"dense": flat, "bm25": []}, linear("minmax", 0.5))
    assert [h.id for h in fused] == ["x", "y"] and all(h.score == 0.0 for h in fused)  # 0 / 1e-9, not a crash
    assert fuse({"dense": [], "bm25": []}, linear("zscore", 0.5)) == []
    fused = {h.id: h for h in fuse({"dense": hits(DENSE), "bm25": hits(BM25)}, linear("minmax", 0.5))}
    assert fused["c"].sources == {"dense": {"score": 0.42, "rank": 3}, "bm25": {"score": 12.5, "rank": 1}}
    assert fused["d"].sources == {"bm25": {"score": 3.0, "rank": 3}}


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("rrf", "rrf k=60"),
        ("RRF k=20 dense=2 bm25=1", "rrf k=20 dense=2 bm25=1"),
        ("rrf 30", "rrf k=30"),
        ("minmax 0.7", "minmax 0.7"),
        ("min-max", "minmax 0.5"),
        ("z-score:0.3", "zscore 0.3"),
        ("l2 dense=0.25", "l2 0.25"),
    ],
)
def test_a_fusion_is_read_from_text_and_written_back(text: str, spec: str) -> None:
    fusion = parse_fusion(text)
    assert fusion.spec == spec and parse_fusion(fusion.spec) == fusion


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "named by text"),
        ("borda", "Unknown fusion 'borda'"),
        ("minmax 2", "from 0 to 1"),
        ("minmax bm25=0.3", "'bm25=0.3' is not understood"),
        ("rrf k=0", "from 1 to 1000"),
        ("rrf k=2.5", "whole number"),
        ("rrf k=1e400", "not a finite number"),
        ("minmax nan", "not understood"),
        ("rrf dense=0 bm25=0", "cannot both be 0"),
        ("rrf k=60 k=20", "not understood"),
        ("rrf " + "1" * 90, "at most 80 characters"),
    ],
)
def test_a_bad_fusion_is_one_clear_line(text: str, said: str) -> None:
    with pytest.raises(InputError, match=said):
        parse_fusion(text)


def test_the_plan_carries_the_fusion_in_its_key_and_refuses_it_without_hybrid() -> None:
    plan = SearchPlan(collection="demo", retrieval="hybrid", fusion="Z-Score 0.4", k=20, top_n=5, reranker=None)
    assert plan.fusion == "zscore 0.4"
    assert plan.key == "demo · hybrid(zscore 0.4) k=20 → 5 · none"
    assert SearchPlan(collection="demo", retrieval="hybrid", k=20, top_n=5, reranker=None).key == (
        "demo · hybrid k=20 → 5 · none"  # a plan without a fusion keeps the key it had before fusions existed
    )
    assert plan.with_(retrieval="dense").fusion is None  # another first stage drops what only hybrid has
    with pytest.raises(InputError, match="this plan's first stage is bm25"):
        SearchPlan(retrieval="bm25", fusion="rrf")


@pytest.fixture
def nature(tiny_engine: Engine, corpus_dir: Path) -> Engine:
    tiny_engine.ingest(corpus_dir, "nature")
    return tiny_engine


def test_a_named_fusion_runs_through_the_engine(nature: Engine) -> None:
    query = "volcanoes and rivers"
    default = nature.search(query, nature.plan(collection="nature", retrieval="hybrid", k=6, reranker=None))
    plan = nature.plan(collection="nature", fusion="minmax 0.3", k=6, reranker=None)
    assert plan.retrieval == "hybrid"  # a fusion named alone asks for hybrid
    fused = nature.search(query, plan)
    assert fused.fusion == "minmax 0.3" and default.fusion is None and fused.plan == plan.with_(reranker=None)
    dense = nature.search(query, nature.plan(collection="nature", retrieval="dense", k=12, reranker=None))
    keywords = nature.search(query, nature.plan(collection="nature", retrieval="bm25", k=12, reranker=None))
    # the engine fetches k + max(5, k // 5) of each list before fusing; recompute from those lists by hand
    lists = {
        "dense": [Hit(id=c.id, text=c.text, score=c.vector_score) for c in dense.candidates[:11]],
        "bm25": [Hit(id=c.id, text=c.text, score=c.vector_score) for c in keywords.candidates[:11]],
    }
    expected = fuse(lists, parse_fusion("minmax 0.3"))[:6]
    assert [c.id for c in fused.candidates] == [h.id for h in expected]
    assert [c.vector_score for c in fused.candidates] == pytest.approx([h.score for h in expected])
    again = nature.search(query, plan)
    assert again.fusion == "minmax 0.3" and [c.id for c in again.candidates] == [c.id for c in fused.candidates]

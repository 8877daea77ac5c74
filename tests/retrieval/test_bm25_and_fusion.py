"""BM25 checked by hand against Lucene's formula, reciprocal rank fusion checked by hand, and both through the
engine: index built at ingest, kept in step with re-ingests, rebuilt when missing, filtered like the stores."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.fusion import rrf
from workbench.retrieval import BM25Index, fuse, tokenize
from workbench.types import Chunk, Hit

DOCS = {
    "d1": "The heron wades in shallow water and spears fish.",
    "d2": "Rivers carry sediment to the sea; the river delta grows.",
    "d3": "Herons and egrets nest in colonies near rivers.",
    "d4": "Oak trees live for centuries.",
}


def _index(tmp_path: Path) -> BM25Index:
    index = BM25Index(tmp_path / "bm25", k1=0.9, b=0.4)
    index.replace_all(
        Chunk(id=i, text=t, metadata={"content_hash": i, "topic": "birds" if "eron" in t else "other"})
        for i, t in DOCS.items()
    )
    return index


def _lucene(query: str, k1: float = 0.9, b: float = 0.4) -> dict[str, float]:
    """BM25 as Lucene scores it: idf = ln(1 + (N - df + .5) / (df + .5)),
    tf part = tf / (tf + k1 (1 - b + b dl/avgdl))."""
    docs = dict(zip(DOCS, tokenize(list(DOCS.values())), strict=True))
    avgdl = sum(len(t) for t in docs.values()) / len(docs)
    scores = {}
    for doc, tokens in docs.items():
        total = 0.0
        for term in set(tokenize([query])[0]):
            df = sum(term in t for t in docs.values())
            tf = tokens.count(term)
            if tf:
                idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
                total += idf * tf / (tf + k1 * (1 - b + b * len(tokens) / avgdl))
        if total:
            scores[doc] = total
    return scores


def test_tokens_are_lowercased_stemmed_and_free_of_stop_words() -> None:
    assert tokenize(["The Herons wading in the RIVERS"]) == [["heron", "wade", "river"]]


@pytest.mark.parametrize("query", ["heron river", "herons wading in rivers", "sediment of the delta", "oak"])
def test_scores_match_lucenes_bm25_by_hand(tmp_path: Path, query: str) -> None:
    hits = _index(tmp_path).search(query, 10)
    expected = _lucene(query)
    assert {h.id: h.score for h in hits} == pytest.approx(expected, rel=1e-4)
    assert [h.id for h in hits] == sorted(expected, key=lambda d: -expected[d])


def test_no_shared_term_means_no_hit_and_filters_restrict(tmp_path: Path) -> None:
    index = _index(tmp_path)
    assert index.search("volcano", 5) == []
    assert index.search("the of and", 5) == []  # stop words only
    assert [h.id for h in index.search("heron river", 5, {"topic": "other"})] == ["d2"]
    assert index.search("heron", 5, {"topic": "nothing"}) == []


def test_saved_and_loaded_and_updated_incrementally(tmp_path: Path) -> None:
    index = _index(tmp_path)
    index.save()
    again = BM25Index(tmp_path / "bm25", k1=0.9, b=0.4)
    assert again.load() and len(again) == 4
    assert [h.id for h in again.search("oak", 3)] == ["d4"]
    again.update([Chunk(id="d5", text="Volcanoes erupt ash.", metadata={"content_hash": "v"})], ["d4"])
    assert [h.id for h in again.search("volcano oak", 3)] == ["d5"]
    assert not BM25Index(tmp_path / "bm25", k1=1.2, b=0.75).load()  # other parameters: rebuilt, not misread


def test_reciprocal_rank_fusion_by_hand() -> None:
    def hits(*ids: str) -> list[Hit]:
        return [Hit(id=i, text=i, score=10.0 - n) for n, i in enumerate(ids)]

    fused = fuse({"dense": hits("a", "b", "c"), "bm25": hits("c", "a", "d")}, rrf(60))
    expected = {"a": 1 / 61 + 1 / 62, "b": 1 / 62, "c": 1 / 63 + 1 / 61, "d": 1 / 63}
    assert [h.id for h in fused] == ["a", "c", "b", "d"]
    assert {h.id: h.score for h in fused} == pytest.approx(expected)
    assert fused[1].sources == {"dense": {"score": 8.0, "rank": 3}, "bm25": {"score": 10.0, "rank": 1}}
    weighted = fuse({"dense": hits("a", "b"), "bm25": hits("b", "a")}, rrf(60, bm25_weight=2))
    assert [h.id for h in weighted] == ["b", "a"]


@pytest.fixture
def nature(tiny_engine: Engine, corpus_dir: Path) -> Engine:
    tiny_engine.ingest(corpus_dir, "nature")
    return tiny_engine


def test_bm25_and_hybrid_through_the_engine(nature: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = nature.embedder(nature.collection_info("nature").embedding_model)
    embedded: list[str] = []
    embed_query = embedder.embed_query
    monkeypatch.setattr(embedder, "embed_query", lambda text: embedded.append(text) or embed_query(text))
    bm25 = nature.search("volcanoes magma", nature.plan(collection="nature", retrieval="bm25", k=5, top_n=2))
    assert bm25.retrieval == "bm25" and bm25.candidates[0].text.startswith("Volcanoes release gas")
    assert embedded == []  # no embedding for keyword search
    hybrid = nature.search("volcanoes magma", nature.plan(collection="nature", retrieval="hybrid", k=6, top_n=3))
    assert embedded == ["volcanoes magma"]
    assert hybrid.retrieval == "hybrid" and hybrid.candidates[0].sources.keys() <= {"dense", "bm25"}
    top = next(c for c in hybrid.candidates if c.text.startswith("Volcanoes"))
    assert "bm25" in top.sources and top.sources["bm25"]["rank"] == 1
    filtered = nature.search(
        "herons", nature.plan(collection="nature", retrieval="bm25", k=5, top_n=1, filters={"source": "more.jsonl"})
    )
    assert all(c.metadata["source"] == "more.jsonl" for c in filtered.candidates)
    with pytest.raises(InputError, match="retrieval must be one of"):
        nature.search("herons", nature.plan(collection="nature", retrieval="sparse"))


def test_the_index_follows_reingests_and_is_rebuilt_when_missing(nature: Engine, corpus_dir: Path) -> None:
    assert nature.search("glaciers", nature.plan(collection="nature", retrieval="bm25", k=3, top_n=1)).candidates
    (corpus_dir / "notes.txt").write_text("Lichens grow very slowly on bare rock.\n")
    nature.ingest(corpus_dir, "nature")
    assert not nature.search("glaciers", nature.plan(collection="nature", retrieval="bm25", k=3, top_n=1)).candidates
    assert nature.search("lichens", nature.plan(collection="nature", retrieval="bm25", k=3, top_n=1)).candidates
    folder = nature.bm25.folder("nature", nature.registry.get("nature"))
    shutil.rmtree(folder)
    nature.bm25 = type(nature.bm25)(nature.settings)  # a new process: nothing in memory, nothing on disk
    nature.clear_caches()
    assert nature.search("lichens", nature.plan(collection="nature", retrieval="bm25", k=3, top_n=1)).candidates
    assert (folder / "index.json").exists()
    nature.delete_collection("nature")
    assert not folder.exists()


def test_an_index_whose_texts_the_store_no_longer_holds_is_rebuilt(tiny_settings: Settings, corpus_dir: Path) -> None:
    """A store changed behind the index's back with the same number of chunks (what `kill -9` during a changed-
    text re-ingest leaves): the next process notices by the chunks' content hashes and rebuilds the index."""
    from workbench.ingest import content_hash
    from workbench.stores.base import CONTENT_HASH_KEY

    first = Engine(tiny_settings)
    first.ingest(corpus_dir, "nature")
    assert not first.search("flamingos", first.plan(collection="nature", retrieval="bm25", k=5, top_n=3)).candidates
    store = first.registry.get("nature")
    [chunk] = [c for c in store.all_chunks() if c.text.startswith("Glaciers")]
    changed_text = "Flamingos stand on one leg in salty lagoons."
    changed = chunk.model_copy(
        update={"text": changed_text, "metadata": {**chunk.metadata, CONTENT_HASH_KEY: content_hash(changed_text)}}
    )
    store.upsert([changed], first.embedder().embed_documents([changed_text]))  # the store moved on; the index not
    assert store.count() == len(first.bm25.get("nature", store))

    later = Engine(tiny_settings)  # a new process
    hits = later.search("flamingos", later.plan(collection="nature", retrieval="bm25", k=5, top_n=3)).candidates
    assert [h.id for h in hits] == [chunk.id] and hits[0].text == changed_text

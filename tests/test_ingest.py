from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from workbench.engine import Engine
from workbench.errors import IngestError, InputError
from workbench.ingest import chunk_documents, split_text
from workbench.loaders import Document

LONG = " ".join(f"Sentence number {i} says something about topic {i % 7}." for i in range(60))


def test_chunks_respect_size_and_carry_overlap() -> None:
    chunks = split_text(LONG, chunk_size=200, chunk_overlap=60)
    assert len(chunks) > 5
    assert all(len(c) <= 200 for c in chunks)
    for previous, current in itertools.pairwise(chunks):
        last_sentence = previous.split(". ")[-1]
        assert current.startswith(last_sentence.rstrip(".")), "each chunk starts with the previous one's tail"
    covered = " ".join(chunks)
    assert all(f"Sentence number {i} " in covered for i in range(60))


def test_no_overlap_means_no_repeated_text() -> None:
    chunks = split_text(LONG, chunk_size=300, chunk_overlap=0)
    assert " ".join(chunks) == " ".join(LONG.split())


def test_a_word_longer_than_a_chunk_is_cut() -> None:
    assert all(len(c) <= 50 for c in split_text("x" * 180, chunk_size=50, chunk_overlap=10))


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (100, 100), (100, -1)])
def test_bad_chunk_settings(size: int, overlap: int) -> None:
    with pytest.raises(InputError):
        split_text("text", size, overlap)


def test_chunk_ids_are_stable_and_carry_their_document() -> None:
    document = Document("guide.md#3", LONG, {"title": "Guide"})
    first = chunk_documents([document], 200, 20)
    second = chunk_documents([document], 200, 20)
    assert [c.id for c in first] == [c.id for c in second] == [f"guide.md#3::{i}" for i in range(len(first))]
    assert first[1].metadata["document_id"] == "guide.md#3" and first[1].metadata["chunk_index"] == 1


def test_reingest_adds_nothing_and_changes_are_updated(tiny_engine: Engine, corpus_dir: Path) -> None:
    report = tiny_engine.ingest(corpus_dir, "nature")
    assert (report.added, report.updated, report.unchanged) == (report.chunks, 0, 0)
    assert tiny_engine.collection_info("nature").count == report.chunks
    again = tiny_engine.ingest(corpus_dir, "nature")
    assert (again.added, again.updated, again.unchanged) == (0, 0, report.chunks)
    (corpus_dir / "notes.txt").write_text("Glaciers carve valleys shaped like the letter U, slowly.\n")
    changed = tiny_engine.ingest(corpus_dir, "nature")
    assert (changed.added, changed.updated) == (0, 1)
    assert tiny_engine.collection_info("nature").count == report.chunks


def test_an_interrupted_ingest_resumes(tiny_engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(10):
        (folder / f"f{i}.txt").write_text(f"Document {i} is about subject {i}.")
    tiny_engine.settings = tiny_engine.settings.model_copy(update={"embedding_batch_size": 3})

    def stop_after_two_batches(done: int, total: int) -> None:
        if done >= 6:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tiny_engine.ingest(folder, "resume", progress=stop_after_two_batches)
    assert tiny_engine.collection_info("resume").count == 6
    report = tiny_engine.ingest(folder, "resume")
    assert (report.added, report.unchanged) == (4, 6)
    assert tiny_engine.collection_info("resume").count == 10


def test_a_collection_keeps_its_embedding_model(tiny_engine: Engine, corpus_dir: Path, tmp_path: Path) -> None:
    from workbench.config import Settings
    from workbench.embeddings import SentenceTransformerEmbedder
    from workbench.ingest import ingest_path

    tiny_engine.ingest(corpus_dir, "owned")
    other = SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2", Settings(offline=True))
    with pytest.raises(IngestError, match="was built with embedding model"):
        ingest_path(corpus_dir, "owned", registry=tiny_engine.registry, embedder=other)

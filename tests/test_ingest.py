from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.conftest import killed_when_written
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
    tiny_engine.settings = tiny_engine.settings.model_copy(update={"ingest_unit": 3})

    def stop_after_two_units(done: int, total: int) -> None:
        if done >= 6:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tiny_engine.ingest(folder, "resume", progress=stop_after_two_units)
    assert tiny_engine.collection_info("resume").count == 6
    report = tiny_engine.ingest(folder, "resume")
    assert (report.added, report.unchanged) == (4, 6)
    assert tiny_engine.collection_info("resume").count == 10


def _stored(engine: Engine, name: str) -> dict[str, str]:
    return {c.id: c.text for c in engine.browse(name, 0, 1000)}


def test_a_shortened_file_loses_its_stale_chunks(tiny_engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    long_file = folder / "policy.txt"
    long_file.write_text("\n\n".join(f"Paragraph {i} explains rule {i} in some detail here." for i in range(6)))
    first = tiny_engine.ingest(folder, "stale", chunk_size=60, chunk_overlap=0)
    assert first.chunks == 6 and tiny_engine.collection_info("stale").count == 6
    long_file.write_text("Only one rule is left now.")
    again = tiny_engine.ingest(folder, "stale", chunk_size=60, chunk_overlap=0)
    assert (again.chunks, again.updated, again.removed) == (1, 1, 5)
    assert _stored(tiny_engine, "stale") == {"policy.txt::0": "Only one rule is left now."}
    result = tiny_engine.search("rule", tiny_engine.plan(collection="stale", k=5, top_n=1))
    assert [c.text for c in result.candidates] == ["Only one rule is left now."]


def test_another_file_with_the_same_name_is_kept_beside_it_unless_replace(tiny_engine: Engine, tmp_path: Path) -> None:
    for sub in ("a", "b", "c"):
        (tmp_path / sub).mkdir()
    (tmp_path / "a" / "notes.txt").write_text("\n\n".join(f"Alpha note {i} about herons." for i in range(4)))
    (tmp_path / "b" / "notes.txt").write_text("Beta note about owls.")
    (tmp_path / "c" / "notes.txt").write_text("Gamma note about kestrels.")
    tiny_engine.ingest(tmp_path / "a" / "notes.txt", "same-name", chunk_size=40, chunk_overlap=0)
    assert tiny_engine.collection_info("same-name").count == 4

    # A different file of the same name: both kept (it used to replace the first, reported as "updated 1")
    report = tiny_engine.ingest(tmp_path / "b" / "notes.txt", "same-name", chunk_size=40, chunk_overlap=0)
    assert (report.added, report.updated, report.removed) == (1, 0, 0)
    assert len(report.warnings) == 1 and "'notes.txt'" in report.warnings[0] and "'b/notes.txt'" in report.warnings[0]
    assert "--replace" in report.warnings[0] and str(tmp_path) not in report.warnings[0]
    stored = _stored(tiny_engine, "same-name")
    assert len(stored) == 5 and stored["b/notes.txt::0"] == "Beta note about owls."
    again = tiny_engine.ingest(tmp_path / "b" / "notes.txt", "same-name", chunk_size=40, chunk_overlap=0)
    assert (again.added, again.unchanged, again.warnings) == (0, 1, [])  # the same file again: nothing new

    # The same file changed is an update, as before
    (tmp_path / "a" / "notes.txt").write_text("Alpha note about herons, revised.")
    changed = tiny_engine.ingest(tmp_path / "a" / "notes.txt", "same-name", chunk_size=40, chunk_overlap=0)
    assert (changed.updated, changed.removed, changed.warnings) == (1, 3, [])

    # Asked to replace: the other file's document goes
    replaced = tiny_engine.ingest(
        tmp_path / "c" / "notes.txt", "same-name", chunk_size=40, chunk_overlap=0, replace=True
    )
    assert replaced.updated == 1 and "replaced" in replaced.warnings[0]
    stored = _stored(tiny_engine, "same-name")
    assert stored == {"notes.txt::0": "Gamma note about kestrels.", "b/notes.txt::0": "Beta note about owls."}


def test_uploads_are_matched_by_name(tiny_engine: Engine, tmp_path: Path) -> None:
    for version, text in (("one", "First upload about swifts."), ("two", "Second upload about swallows.")):
        folder = tmp_path / version
        folder.mkdir()
        (folder / "upload.txt").write_text(text)
        report = tiny_engine.ingest(folder, "uploads", shown_as="your upload", uploaded=True)
        assert report.warnings == []
    assert _stored(tiny_engine, "uploads") == {"upload.txt::0": "Second upload about swallows."}


def test_files_in_subfolders_keep_their_own_identity(tiny_engine: Engine, tmp_path: Path) -> None:
    for sub in ("2023", "2024"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "report.md").write_text(f"# Report {sub}\n\n## Summary\nThe {sub} summary.\n")
    report = tiny_engine.ingest(tmp_path, "years")
    assert report.chunks == 2 and tiny_engine.collection_info("years").count == 2
    assert set(_stored(tiny_engine, "years")) == {"2023/report.md#0::0", "2024/report.md#0::0"}


def test_one_bad_file_does_not_discard_the_good_ones(tiny_engine: Engine, tmp_path: Path) -> None:
    (tmp_path / "good.txt").write_text("Kestrels hover over fields.")
    (tmp_path / "table.csv").write_text("city,population\nLyon,522000\n")
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe\x81")
    report = tiny_engine.ingest(tmp_path, "mixed")
    assert report.documents == 2 and report.added == 2
    assert [(p.name, "not UTF-8" in p.reason) for p in report.problems] == [("bad.txt", True)]
    assert "1 file skipped" in report.summary()
    stored = _stored(tiny_engine, "mixed")
    assert stored["table.csv#1::0"] == "city: Lyon population: 522000"  # chunk text has single spaces
    [row] = tiny_engine.search(
        "Lyon", tiny_engine.plan(collection="mixed", k=5, top_n=1, filters={"population": 522000})
    ).candidates
    assert row.metadata["population"] == 522000  # the typing rule: numbers in a CSV are numbers


def test_nothing_readable_is_an_error_listing_the_files(tiny_engine: Engine, tmp_path: Path) -> None:
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe\x81")
    with pytest.raises(IngestError, match=r"no file could be read\. bad.txt: not UTF-8"):
        tiny_engine.ingest(tmp_path, "nothing", shown_as="your upload")


KILL_SCRIPT = """
import os, sys, time
os.environ["WORKBENCH_CONFIG"] = ""
from workbench.config import Settings
from workbench.engine import Engine
folder, store, name, embedder = sys.argv[1:5]
engine = Engine(Settings(store=store, persist_dir=folder + "-store", embedding_model=embedder,
                         reranker_model="none", ingest_unit=4, offline=True))
stop_at = int(sys.argv[5])
def progress(done, total):
    if done >= stop_at:
        print("UNITS-WRITTEN", flush=True)
        time.sleep(600)
engine.ingest(folder, name, chunk_size=60, chunk_overlap=0, progress=progress)
"""


@pytest.mark.parametrize("store", ["chroma", "qdrant"])
def test_kill_9_mid_ingest_then_rerun_gives_exact_counts(
    tmp_path: Path, tiny_models: dict[str, Path], store: str
) -> None:
    from workbench.config import Settings

    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(6):
        (folder / f"f{i}.txt").write_text("\n\n".join(f"File {i} paragraph {j} says a thing." for j in range(3)))
    settings = Settings(
        store=store,
        persist_dir=str(folder) + "-store",
        embedding_model=str(tiny_models["embedder"]),
        reranker_model="none",
        offline=True,
    )

    def killed_run(stop_at: int) -> None:
        killed_when_written(KILL_SCRIPT, str(folder), store, "killed", str(tiny_models["embedder"]), str(stop_at))

    killed_run(8)  # 9 of 18 chunks written, then kill -9
    engine = Engine(settings)
    assert 0 < engine.collection_info("killed").count < 18
    report = engine.ingest(folder, "killed", chunk_size=60, chunk_overlap=0)
    assert report.added + report.unchanged == 18
    stored = _stored(engine, "killed")
    produced = {f"f{i}.txt::{j}" for i in range(6) for j in range(3)}
    unexpected = {i: stored[i] for i in sorted(set(stored) - produced)}  # named in a failure: what else is there
    assert len(stored) == 18 == engine.collection_info("killed").count == len(set(stored.values())), unexpected
    engine.registry.backend().close()

    # shrink every file, kill -9 part-way through replacing them, rerun: exactly the new chunks remain
    for i in range(6):
        (folder / f"f{i}.txt").write_text(f"File {i} now has one short paragraph.")
    killed_run(4)  # the 12 stale chunks deleted, 4 of the 6 new ones written, then kill -9
    engine = Engine(settings)
    stored = _stored(engine, "killed")
    assert sorted(stored) == [f"f{i}.txt::0" for i in range(6)]
    assert sum(text.endswith("one short paragraph.") for text in stored.values()) == 4
    [listed] = [c for c in engine.collections() if c.name == "killed"]
    assert listed.ingesting is not None and not listed.ingesting.running
    assert listed.ingesting.words() == "interrupted at 4 of 6 chunks: the same ingest again resumes it"
    report = engine.ingest(folder, "killed", chunk_size=60, chunk_overlap=0)
    assert (report.unchanged, report.updated) == (4, 2)
    assert next(c for c in engine.collections() if c.name == "killed").ingesting is None
    stored = _stored(engine, "killed")
    assert sorted(stored) == [f"f{i}.txt::0" for i in range(6)]
    assert all(text.endswith("one short paragraph.") for text in stored.values())
    engine.registry.backend().close()


def test_a_collection_keeps_its_embedding_model(tiny_engine: Engine, corpus_dir: Path, tmp_path: Path) -> None:
    from workbench.config import Settings
    from workbench.embeddings import SentenceTransformerEmbedder
    from workbench.ingest import ingest_path

    tiny_engine.ingest(corpus_dir, "owned")
    other = SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2", Settings(offline=True))
    with pytest.raises(IngestError, match="was built with embedding model"):
        ingest_path(corpus_dir, "owned", registry=tiny_engine.registry, embedder=other)

"""Re-ingesting what changed, killed or not: a BEIR corpus from another folder updates its passages by corpus id
(never a second copy, and a warning on every run, resumed ones included), and after kill -9 during a `--replace`
re-ingest and the resume, the BM25 index holds exactly the store's texts."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.conftest import killed_when_written
from workbench.config import Settings
from workbench.engine import Engine

KILL_SCRIPT = """
import os, sys, time
os.environ["WORKBENCH_CONFIG"] = ""
from workbench.config import Settings
from workbench.engine import Engine
folder, persist, data, name, embedder, stop_at, replace = sys.argv[1:8]
engine = Engine(Settings(persist_dir=persist, data_dir=data, embedding_model=embedder, reranker_model="none",
                         ingest_unit=2, offline=True))
def progress(done, total):
    if done >= int(stop_at):
        print("UNITS-WRITTEN", flush=True)
        time.sleep(600)
engine.ingest(folder, name, chunk_size=60, chunk_overlap=0, progress=progress, replace=replace == "1")
"""


def _beir(folder: Path, texts: dict[str, str]) -> Path:
    folder.mkdir(parents=True)
    lines = [json.dumps({"_id": doc_id, "title": "", "text": text}) for doc_id, text in texts.items()]
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def _settings(tmp_path: Path, tiny_models: dict[str, Path]) -> Settings:
    return Settings(
        persist_dir=tmp_path / "store", data_dir=tmp_path / "data", embedding_model=str(tiny_models["embedder"]),
        reranker_model="none", ingest_unit=2, offline=True,
    )  # fmt: skip


def _killed_run(folder: Path, settings: Settings, name: str, stop_at: int, replace: bool = False) -> None:
    """The ingest in a process of its own, killed with SIGKILL once `stop_at` chunks are written."""
    killed_when_written(
        KILL_SCRIPT, str(folder), str(settings.persist_dir), str(settings.data_dir), name, settings.embedding_model,
        str(stop_at), "1" if replace else "0",
    )  # fmt: skip


def _store_texts(engine: Engine, name: str) -> dict[str, str]:
    return {c.id: c.text for c in engine.browse(name, 0, 1000)}


def _bm25_texts(engine: Engine, name: str) -> dict[str, str]:
    index = engine.bm25.get(name, engine.registry.get(name))
    return {chunk_id: entry["text"] for chunk_id, entry in index._entries.items()}


ORIGINAL = {f"p{i}": f"Passage {i} tells of rivers and their floods." for i in range(8)}
CHANGED = {**ORIGINAL, "p1": "Passage 1 now tells of mountains.", "p6": "Passage 6 now tells of deserts."}


def test_a_changed_corpus_from_another_folder_updates_its_passages(
    tmp_path: Path, tiny_models: dict[str, Path]
) -> None:
    engine = Engine(_settings(tmp_path, tiny_models))
    first = engine.ingest(_beir(tmp_path / "v1" / "corpus", ORIGINAL), "passages")
    assert first.added == 8 and not first.warnings
    again = engine.ingest(_beir(tmp_path / "v2" / "corpus-edited", CHANGED), "passages")
    assert engine.collection_info("passages").count == 8  # not 16: the same ids are the same passages
    assert again.updated == 2 and again.unchanged == 6 and again.added == 0
    assert len(again.warnings) == 1 and "matched by their corpus id" in again.warnings[0]
    stored = _store_texts(engine, "passages")
    assert {i.removesuffix("::0"): t for i, t in stored.items()} == CHANGED
    assert _bm25_texts(engine, "passages") == stored


def test_a_killed_then_resumed_ingest_of_another_folders_corpus_warns_and_ends_exact(
    tmp_path: Path, tiny_models: dict[str, Path]
) -> None:
    settings = _settings(tmp_path, tiny_models)
    Engine(settings).ingest(_beir(tmp_path / "v1" / "corpus", ORIGINAL), "passages")
    edited = _beir(tmp_path / "v2" / "corpus-edited", {k: v + " Revised." for k, v in ORIGINAL.items()})
    _killed_run(edited, settings, "passages", stop_at=4)  # 4 of 8 passages rewritten, then kill -9
    engine = Engine(settings)
    resumed = engine.ingest(edited, "passages")
    assert resumed.warnings and "another folder" in resumed.warnings[0]  # said again on the resumed run
    assert resumed.updated == 4 and resumed.unchanged == 4
    stored = _store_texts(engine, "passages")
    assert len(stored) == 8 and all(text.endswith("Revised.") for text in stored.values())
    assert _bm25_texts(engine, "passages") == stored


@pytest.mark.parametrize("stop_at", [1, 2])
def test_kill_9_during_a_replace_then_resume_leaves_bm25_equal_to_the_store(
    tmp_path: Path, tiny_models: dict[str, Path], stop_at: int
) -> None:
    """Files re-ingested with --replace from another folder (every text changed), killed part-way, resumed: the
    BM25 index the resuming process searches, and the one a fresh process reads, hold the store's texts."""
    settings = _settings(tmp_path, tiny_models)
    old, new = tmp_path / "old" / "docs", tmp_path / "new" / "docs"
    for folder, word in ((old, "rivers"), (new, "floods")):  # same length: the chunk count stays, only texts change
        folder.mkdir(parents=True)
        for i in range(4):
            (folder / f"f{i}.txt").write_text(f"File {i} is about {word}.\n\nIts second part is about {word} too.")
    engine = Engine(settings)
    engine.ingest(old, "files", chunk_size=60, chunk_overlap=0)
    assert "rivers" in " ".join(_bm25_texts(engine, "files").values())
    _killed_run(new, settings, "files", stop_at=stop_at, replace=True)
    assert len(_store_texts(Engine(settings), "files")) == 4
    resuming = Engine(settings)
    resuming.ingest(new, "files", chunk_size=60, chunk_overlap=0, replace=True)
    stored = _store_texts(resuming, "files")
    assert all("floods" in text for text in stored.values()) and len(stored) == 4
    assert _bm25_texts(resuming, "files") == stored
    hits = resuming.search(
        "rivers", resuming.plan(collection="files", retrieval="bm25", k=8, top_n=8, reranker=None)
    ).candidates
    assert not hits or all("rivers" not in h.text for h in hits)
    assert _bm25_texts(Engine(settings), "files") == stored


NUMERIC_KEYS = {
    "digits": lambda key, number: isinstance(number, int) and "e" not in key,  # "8888706419968592"
    "whole": lambda key, number: isinstance(number, int) and "e" in key,  # "26261257600600e1"
    "float": lambda key, number: isinstance(number, float) and math.isfinite(number),  # "1234e300": not exact
}


def _file_whose_key_reads_as_a_number(folder: Path, kind: str) -> Path:
    """A file in `folder` whose source key (16 hex digits of its path's hash) reads as a number of the given kind:
    about one file in 750 has a key of digits, one in 1,150 a key with one 'e'. The folder's path decides which
    names these are, so each kind is looked for."""
    from workbench.ingest import source_key
    from workbench.inputs import normalise_value

    for i in range(400_000):
        path = folder / f"note-{i}.txt"
        key = source_key(path)
        number = normalise_value(key)
        if number != key and NUMERIC_KEYS[kind](key, number):
            return path
    raise AssertionError(f"no file name with a {kind} key in 400,000")


@pytest.mark.parametrize("kind", sorted(NUMERIC_KEYS))
def test_a_file_whose_source_key_reads_as_a_number_is_the_same_file_on_every_ingest(
    tmp_path: Path, tiny_models: dict[str, Path], kind: str
) -> None:
    """Ingesting the same folder again changes nothing, whatever its files' source keys look like: a key of digits
    is kept as text. A collection written while such keys were kept as numbers is matched too (a float as precisely
    as the store keeps it): no second copy."""
    from workbench.ingest import source_key
    from workbench.inputs import normalise_value

    folder = tmp_path / "notes"
    folder.mkdir()
    numeric = _file_whose_key_reads_as_a_number(folder, kind)
    numeric.write_text("The river holds trout and perch.")
    (folder / "plain.txt").write_text("The lake holds pike.")
    engine = Engine(_settings(tmp_path, tiny_models))
    engine.ingest(folder, "notes", chunk_size=None)
    kept = engine.registry.get("notes").stored_chunks([numeric.name], key="source_key")
    assert list(kept.values()) == [source_key(numeric)]  # text, as computed
    again = engine.ingest(folder, "notes", chunk_size=None)
    assert (again.added, again.updated, again.unchanged, again.warnings) == (0, 0, 2, [])

    # as such a collection was written before: the key stored as the number it reads as
    [chunk_id] = kept
    raw = engine.registry.get("notes")._collection  # type: ignore[attr-defined]
    metadata = raw.get(ids=[chunk_id], include=["metadatas"])["metadatas"][0]
    raw.update(ids=[chunk_id], metadatas=[{**metadata, "source_key": normalise_value(source_key(numeric))}])
    assert engine.registry.get("notes").stored_chunks([numeric.name], key="source_key")[chunk_id] != kept[chunk_id]
    old = engine.ingest(folder, "notes", chunk_size=None)
    assert (old.added, old.updated, old.unchanged, old.warnings) == (0, 0, 2, [])
    assert sorted(c.id for c in engine.browse("notes", 0, 100)) == sorted([chunk_id, "plain.txt::0"])

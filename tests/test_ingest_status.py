"""An ingest respects the user's time: another process sees its progress, an estimate comes first (at the rate
this machine measured), embedding runs longest first, and a large BEIR corpus can be sampled for a quick look."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import cli_here, stopped_halfway_ingest
from workbench.config import Settings
from workbench.engine import Engine
from workbench.evaluation import Dataset
from workbench.evaluation.sample import corpus_sample
from workbench.ingest import write_chunks
from workbench.ingest_status import kept_rate
from workbench.stores.base import CONTENT_HASH_KEY, ORIGIN_KEY
from workbench.types import Chunk, IngestStatus, spoken_duration

PAUSED_INGEST = """
import os, sys, time
from workbench.config import Settings
from workbench.engine import Engine
folder, persist, embedder = sys.argv[1:4]
engine = Engine(Settings(persist_dir=persist, embedding_model=embedder, reranker_model="none", ingest_unit=4,
                         offline=True))
def progress(done, total):
    if done >= 8:
        print("UNITS-WRITTEN", flush=True)
        time.sleep(600)
engine.ingest(folder, "paused", chunk_size=60, chunk_overlap=0, progress=progress)
"""


@contextlib.contextmanager
def _paused_ingest(folder: str, persist: str, embedder: str, env: dict[str, str]) -> Iterator[None]:
    """An ingest in a process of its own, paused once 8 chunks are done; killed with SIGKILL (a crash) on exit."""
    ingest = subprocess.Popen(
        [sys.executable, "-c", PAUSED_INGEST, folder, persist, embedder],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert ingest.stdout is not None and ingest.stdout.readline().strip() == "UNITS-WRITTEN"
        yield
    finally:
        os.kill(ingest.pid, signal.SIGKILL)
        ingest.wait(timeout=30)


def _workbench(*argv: str, env: dict[str, str]) -> str:
    code = f"from workbench.cli import main; raise SystemExit(main({list(argv)!r}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def test_another_process_sees_an_ingest_under_way_and_one_cut_off(tmp_path: Path, tiny_models: dict[str, Path]) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(6):
        (folder / f"f{i}.txt").write_text("\n\n".join(f"File {i} paragraph {j} says a thing." for j in range(3)))
    persist = str(tmp_path / "store")
    env = dict(
        os.environ, WORKBENCH_PERSIST_DIR=persist, WORKBENCH_EMBEDDING_MODEL=str(tiny_models["embedder"]),
        WORKBENCH_CACHE_DIR=str(tmp_path / "cache"),  # no rate kept: 8 chunks are too few to measure one
    )  # fmt: skip
    arguments = (str(folder), persist, str(tiny_models["embedder"]))
    with _paused_ingest(*arguments, env=env):
        listing = _workbench("collections", env=env)
        assert "paused" in listing and "ingesting 8 of 18 chunks\n" in listing
        [paused] = json.loads(_workbench("collections", "--json", env=env))
        assert paused["ingesting"]["done"] == 8 and paused["ingesting"]["running"] is True
    listing = _workbench("collections", env=env)
    assert "interrupted at 8 of 18 chunks: the same ingest again resumes it" in listing
    resumed = _workbench(
        "ingest", str(folder), "--collection", "paused", "--chunk-size", "60", "--chunk-overlap", "0", env=env
    )
    assert "8 unchanged" in resumed
    listing = _workbench("collections", env=env)
    assert "ingesting" not in listing and "interrupted" not in listing and " 18 " in listing
    # cut off again, then deleted: nothing is left saying it was interrupted
    (folder / "f0.txt").write_text("\n\n".join(f"File 0 paragraph {j} now says another thing." for j in range(9)))
    with _paused_ingest(*arguments, env=env):
        pass
    assert "interrupted at" in _workbench("collections", env=env)
    _workbench("delete", "paused", "--yes", env=env)
    assert "paused" not in _workbench("collections", env=env)


def test_the_estimate_comes_first_at_the_rate_this_machine_measured(
    tmp_path: Path, tiny_models: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    short, long = tmp_path / "short", tmp_path / "long"
    short.mkdir()
    long.mkdir()
    for i in range(100):
        (short / f"d{i:03}.txt").write_text(f"Document {i} tells of river {i} and the fish in it.")
    for i in range(30):
        (long / f"d{i:03}.txt").write_text(" ".join(f"Sentence {j} of document {i}." for j in range(12 + 4 * i)))
    engine = Engine(Settings(persist_dir=tmp_path / "store", embedding_model=str(tiny_models["embedder"]),
                             reranker_model="none", offline=True))  # fmt: skip
    heard: list[str] = []
    progress: list[tuple[int, int]] = []

    def announce(words: str) -> None:
        heard.append(words)
        assert progress == [], words  # before the first progress, so before the bar opens

    engine.ingest(short, "first", chunk_size=None, announce=announce, progress=lambda d, t: progress.append((d, t)))
    assert heard == ["100 chunks to embed with tiny-embedder: the time left shows once the first batch is done"]
    rate = kept_rate(str(tiny_models["embedder"]))
    assert rate is not None and rate > 0  # characters read per second
    heard.clear()
    progress.clear()
    engine.ingest(long, "second", chunk_size=None, announce=announce, progress=lambda d, t: progress.append((d, t)))
    # each text counted up to what the embedder reads of it: its max_seq_length tokens at 5 characters a token
    cap = 5 * engine.embedder().max_seq_length  # type: ignore[attr-defined]
    assert any(len(p.read_text()) > cap for p in long.iterdir())  # some are cut off
    characters = sum(min(len(p.read_text()), cap) for p in long.iterdir())
    assert heard == [
        f"30 chunks to embed: about {spoken_duration(characters / rate)} (this machine's last ingest with "
        f"tiny-embedder read {rate:,.0f} characters/s)"
    ]
    assert kept_rate(str(tiny_models["embedder"])) == rate  # 30 chunks are too few to measure a new one
    heard.clear()
    engine.ingest(
        short, "first", chunk_size=None, announce=announce
    )  # unchanged: nothing to embed, nothing said, no rate kept
    assert heard == [] and kept_rate(str(tiny_models["embedder"])) == rate


def test_the_time_left_counts_characters_not_chunks() -> None:
    status = IngestStatus(
        collection="c", store_location="chroma", embedding_model="m", done=1_000, total=5_000, started=0, updated=0,
        pid=1, host="h", rate=10.0, characters_left=2_700_000, character_rate=27_000, estimated=False,
    )  # fmt: skip
    # 2,700,000 characters at 27,000 a second: 100 s (the chunk rate would say 4,000 / 10 = 400 s)
    assert status.seconds_left == pytest.approx(100)
    assert status.words() == "ingesting 1,000 of 5,000 chunks (10.0 chunks/s, about 2 min left)"
    estimated = status.model_copy(update={"rate": None, "estimated": True})
    assert estimated.words() == "ingesting 1,000 of 5,000 chunks (about 2 min left)"


def test_chunks_are_embedded_longest_first_in_batches(tiny_engine: Engine) -> None:
    embedder = tiny_engine.embedder()
    seen: list[list[str]] = []

    class Recording:
        """The real tiny embedder, with the batches it was given written down."""

        model_id = embedder.model_id
        dimension = embedder.dimension

        def embed_documents(self, texts: list[str]):  # type: ignore[no-untyped-def]
            seen.append(texts)
            return embedder.embed_documents(texts)

        def embed_query(self, text: str):  # type: ignore[no-untyped-def]
            return embedder.embed_query(text)

    chunks = [
        Chunk(
            id=f"d{i}::0", text="word " * ((i * 7) % 23 + 1), metadata={ORIGIN_KEY: f"d{i}", CONTENT_HASH_KEY: f"h{i}"}
        )
        for i in range(40)
    ]
    write_chunks(chunks, "sorted", registry=tiny_engine.registry, embedder=Recording(), unit_size=16)  # type: ignore[arg-type]
    assert [len(batch) for batch in seen] == [16, 16, 8]
    lengths = [len(text) for batch in seen for text in batch]
    assert lengths == sorted(lengths, reverse=True)
    assert tiny_engine.collection_info("sorted").count == 40


def _beir_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    with (folder / "corpus.jsonl").open("w") as corpus:
        for i in range(60):
            corpus.write(json.dumps({"_id": f"doc{i}", "title": "", "text": f"passage {i}"}) + "\n")
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": f"q{i}", "text": f"query {i}"}) + "\n" for i in range(3))
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq0\tdoc5\t1\nq1\tdoc7\t1\nq1\tdoc9\t2\nq2\tdoc11\t1\n"
    )
    return folder


def test_a_corpus_sample_holds_the_judged_passages_and_is_labelled(tmp_path: Path) -> None:
    dataset = Dataset.from_beir(_beir_folder(tmp_path))
    sample = corpus_sample(dataset, 10, tmp_path / "data", max_queries=2)
    lines = [json.loads(line)["_id"] for line in (sample.corpus / "corpus.jsonl").read_text().splitlines()]  # type: ignore[operator]
    assert lines[:3] == ["doc5", "doc7", "doc9"] and len(lines) == 13 and len(set(lines)) == 13
    assert "doc11" not in lines[:3] and list(sample.queries) == ["q0", "q1"]
    assert sample.name == "beir (corpus sample)"
    assert sample.note and sample.note.startswith("Corpus sample: 3 judged passages of these 2 queries and 10 others")
    again = corpus_sample(dataset, 10, tmp_path / "data", max_queries=2)
    assert again.corpus == sample.corpus
    assert [json.loads(x)["_id"] for x in (again.corpus / "corpus.jsonl").read_text().splitlines()] == lines  # type: ignore[operator]


def test_eval_offers_a_corpus_sample_and_labels_its_figures(
    tmp_path: Path, tiny_models: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:

    monkeypatch.setenv("WORKBENCH_PERSIST_DIR", str(tmp_path / "store"))
    monkeypatch.setenv("WORKBENCH_EMBEDDING_MODEL", str(tiny_models["embedder"]))
    monkeypatch.setenv("RERANKER_MODEL", str(tiny_models["reranker"]))
    folder = str(_beir_folder(tmp_path))
    # an ingest cut off before its first batch left the collection empty: the evaluation ingests it again
    cut_off = Engine(Settings(persist_dir=tmp_path / "store", embedding_model=str(tiny_models["embedder"]),
                              reranker_model="none", offline=True))  # fmt: skip
    write_chunks([], "beir-sample-10", registry=cut_off.registry, embedder=cut_off.embedder())
    assert cut_off.collection_info("beir-sample-10").count == 0
    argv = ["eval", folder, "--collection", "beir", "--corpus-sample", "10", "--max-queries", "2", "--depth", "none"]
    code = f"from workbench.cli import main; raise SystemExit(main({[*argv, '--no-save', '--json']!r}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert f"'beir-sample-10' is empty: ingesting a sample of {folder} (13 passages) first." in done.stderr
    assert "13 chunks to embed" in done.stderr  # with a time when an earlier test in this worker kept a rate
    summary = json.loads(done.stdout)
    assert summary["dataset"] == "beir (corpus sample)" and summary["collection"] == "beir-sample-10"
    assert summary["queries"] == 2
    [note, *_] = summary["warnings"]
    assert note.startswith("Corpus sample: 3 judged passages of these 2 queries and 10 others drawn from the 60")


def test_comparing_rerankers_on_a_missing_collection_says_what_it_ingests_first(
    tmp_path: Path, tiny_models: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`eval FOLDER --reranker A --reranker B` on a BEIR folder not yet ingested: the notice, the chunks to embed
    and an ingest bar come before the comparison, as they do for a single reranker's evaluation; with no
    --collection, the collection is the folder's name."""
    second = tmp_path / "tiny-reranker-copy"
    shutil.copytree(tiny_models["reranker"], second)
    monkeypatch.setenv("WORKBENCH_PERSIST_DIR", str(tmp_path / "store"))
    monkeypatch.setenv("WORKBENCH_EMBEDDING_MODEL", str(tiny_models["embedder"]))
    folder = str(_beir_folder(tmp_path))
    argv = ["eval", folder, "--reranker", str(tiny_models["reranker"]), "--reranker", str(second), "-k", "10",
            "-n", "5", "--json"]  # fmt: skip
    code = f"from workbench.cli import main; raise SystemExit(main({argv!r}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    err = done.stderr
    notice = f"'beir' does not exist yet: ingesting {folder} (60 passages) first."
    assert notice in err and "60 chunks to embed" in err and "ingest beir" in err
    assert err.index(notice) < err.index("60 chunks to embed") < err.index("ingest beir") < err.index("rerankers: ")
    comparison = json.loads(done.stdout)
    assert comparison["collection"] == "beir" and comparison["queries"] == 3
    assert [row["reranker"] for row in comparison["rows"]] == [str(tiny_models["reranker"]), str(second)]
    listed = Engine(Settings(persist_dir=tmp_path / "store", embedding_model=str(tiny_models["embedder"]),
                             reranker_model="none", offline=True)).collection_info("beir")  # fmt: skip
    assert listed.count == 60


def test_a_status_whose_pid_now_names_another_process_reads_as_interrupted(tmp_path: Path) -> None:
    """The ingest died and the system gave its pid to a newer process: the status names the pid, but the process
    behind it started later, so the ingest is not running."""
    from workbench.ingest_status import IngestTracker, ingest_statuses, process_started

    tracker = IngestTracker(tmp_path, "chroma:x", "c1", "some-embedder")
    tracker(0, 10)  # the first batch's progress writes the status file
    [status] = ingest_statuses(tmp_path).values()
    assert status.pid == os.getpid() and status.running  # this process wrote it and still runs
    mine = process_started(os.getpid())
    assert mine is not None
    stale = status.model_copy(update={"process_started": mine - 3600.0})  # our pid, an hour-older process
    tracker.path.write_text(stale.model_dump_json())
    [read] = ingest_statuses(tmp_path).values()
    assert read.pid == os.getpid() and read.running is False


def test_an_interrupted_collection_is_named_by_eval_gate_and_tune_and_evaluated_only_knowingly(
    tmp_path: Path, tiny_models: dict[str, Path]
) -> None:
    """Issue 52: after an ingest was stopped at 4 of 12 passages, `eval` ran on the part without a word and kept the
    experiment unmarked. Now eval, gate and tune refuse it, naming the ingest and how to go on; --allow-partial
    evaluates the part, and the figures and the kept experiment say so."""
    folder, data = tmp_path / "halfway", tmp_path / "data"
    env = dict(
        os.environ, WORKBENCH_DATA_DIR=str(data), WORKBENCH_EMBEDDING_MODEL=str(tiny_models["embedder"]),
        RERANKER_MODEL=str(tiny_models["reranker"]), WORKBENCH_CONFIG="", WORKBENCH_CACHE_DIR=str(tmp_path / "cache"),
    )  # fmt: skip
    stopped_halfway_ingest(folder, data, tiny_models["embedder"], env)  # another process, stopped halfway
    # the commands after it run here, as a shell with `env` would run them (one process start each saved)
    for command in (["eval"], ["gate"], ["tune", "-k", "10", "--timing-queries", "1"]):
        code, _, said = cli_here([*command, str(folder), "--collection", "halfway"], env)
        assert code == 2, (command, said)
        assert "'halfway' is partial (interrupted at 4 of 12 chunks" in said and "--allow-partial" in said
    code, out, said = cli_here(["eval", str(folder), "--collection", "halfway", "-k", "10", "--allow-partial"], env)
    assert code == 0 and "Partial collection: 'halfway' is interrupted at 4 of 12 chunks" in out + said, said
    code, out, _ = cli_here(["experiments", "list", "--json"], env)
    kept = json.loads(out)
    assert code == 0 and len(kept) == 1
    code, out, _ = cli_here(["experiments", "show", kept[0]["id"]], env)
    assert code == 0 and "Partial collection" in out

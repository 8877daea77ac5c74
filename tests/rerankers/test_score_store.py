"""Issue 56, item 1: pair scores last across runs and processes. An evaluation run again in a new process scores
no pair; a changed document, or the same model on another max length, is scored again; two processes share the
store at once; the figures of a run from the store equal a run that scored every pair; `workbench cache` shows and
clears it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.config import Settings
from workbench.engine import Engine
from workbench.evaluation import run_evaluation
from workbench.rerankers.scores.score_store import PairScoreStore
from workbench.services.demo import demo_dataset, ensure_demo_collection

EVAL = """
import json, sys
from workbench.config import Settings
from workbench.engine import Engine
from workbench.evaluation import run_evaluation
from workbench.services.demo import demo_dataset, ensure_demo_collection
data, reranker, max_length = sys.argv[1], sys.argv[2], int(sys.argv[3])
engine = Engine(Settings(data_dir=data, reranker_model=reranker, offline=True, reranker_max_length=max_length,
                         reranker_backend="torch", score_store=True))
ensure_demo_collection(engine)
reranker_ = engine.reranker()
report = run_evaluation(engine, demo_dataset("test"), engine.plan(collection="demo", k=10, top_n=10), max_queries=6)
stored = engine.score_cache.stored_hits
print(json.dumps({"scored": reranker_.usage.documents, "after": report.after, "stored": stored}))
"""


def _run(data: Path, reranker: Path, max_length: int = 256) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", EVAL, str(data), str(reranker), str(max_length)], capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_run_again_in_a_new_process_scores_no_pair_and_gives_the_same_figures(
    tmp_path: Path, tiny_models: dict[str, Path]
) -> None:
    first = _run(tmp_path, tiny_models["reranker"])
    assert first["scored"] == 60 and first["stored"] == 0  # 6 queries × 10 candidates
    again = _run(tmp_path, tiny_models["reranker"])
    assert again["scored"] == 0 and again["stored"] == 60 and again["after"] == first["after"]
    other_length = _run(tmp_path, tiny_models["reranker"], max_length=128)  # another setting: another fingerprint
    assert other_length["scored"] == 60


def test_a_changed_document_is_scored_again_and_two_processes_share_the_store(tmp_path: Path) -> None:
    store = PairScoreStore(tmp_path / "scores.sqlite3", max_rows=1000)
    store.put_many("r1", {("q", "t1"): 0.5, ("q", "t2"): 0.25})
    assert store.get_many("r1", [("q", "t1"), ("q", "t3"), ("q", "t2")]) == [0.5, None, 0.25]
    assert store.get_many("r2", [("q", "t1")]) == [None]  # another reranker's fingerprint
    writer = (
        "import sys; from workbench.rerankers.scores.score_store import PairScoreStore as S; "
        "s = S(sys.argv[1], 100000); [s.put_many(sys.argv[2], {('q', f't{i}'): float(i)}) for i in range(300)]"
    )
    writers = [subprocess.Popen([sys.executable, "-c", writer, str(tmp_path / "scores.sqlite3"), name])
               for name in ("a", "b")]  # fmt: skip
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    assert store.counts() == {"a": 300, "b": 300, "r1": 2}
    small = PairScoreStore(tmp_path / "small.sqlite3", max_rows=1000)
    small.put_many("r", {("q", f"t{i}"): float(i) for i in range(1500)})
    assert sum(small.counts().values()) == 1000  # bounded: the oldest go


def test_cache_show_and_clear(tmp_path: Path, tiny_models: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("WORKBENCH_CONFIG", "")
    monkeypatch.setenv("WORKBENCH_SCORE_STORE", "1")  # the suite turns it off (tests/conftest.py)
    engine = Engine(Settings(data_dir=tmp_path, reranker_model=str(tiny_models["reranker"]), offline=True))
    ensure_demo_collection(engine)
    run_evaluation(engine, demo_dataset("test"), engine.plan(collection="demo", k=5, top_n=5), max_queries=2)
    assert main(["cache", "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert sum(shown["scores"].values()) == 10 and all(k.startswith("cross-encoder:") for k in shown["scores"])
    assert main(["cache", "clear"]) == 0
    assert "10 pair scores removed" in capsys.readouterr().out
    assert main(["cache", "show", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["scores"] == {}


def test_a_store_that_cannot_be_used_costs_the_keeping_never_the_search(tmp_path: Path) -> None:
    """A locked or broken scores.sqlite3 never breaks a search: the pairs are scored, and kept in memory."""
    import sqlite3

    from workbench.rerankers.scores import cache as caching
    from workbench.rerankers.scores.cache import ScoreCache

    class Locked(PairScoreStore):
        def get_many(self, reranker, keys):  # type: ignore[no-untyped-def]
            raise sqlite3.OperationalError("database is locked")

        def put_many(self, reranker, scores):  # type: ignore[no-untyped-def]
            raise sqlite3.OperationalError("database is locked")

    cache = ScoreCache(store=Locked(tmp_path / "scores.sqlite3", max_rows=1000))
    keys = [ScoreCache.key("r", "q", t) for t in ("a", "b")]
    scores, reused = cache.resolve(keys, lambda indices: [float(i) for i in indices], persist="fingerprint")
    assert scores == [0.0, 1.0] and reused == 0
    assert cache.resolve(keys, lambda indices: [9.0] * len(indices), persist="fingerprint")[0] == [0.0, 1.0]
    assert "trouble" in caching._said and cache.store is None  # met, said once, and the store is not asked again


RESUMABLE = """
import json, os, signal, sys
from workbench.config import Settings
from workbench.engine import Engine
from workbench.evaluation import run_evaluation
from workbench.services.demo import demo_dataset, ensure_demo_collection
data, reranker, kill_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
engine = Engine(Settings(data_dir=data, reranker_model=reranker, offline=True, reranker_backend="torch",
                         score_store=True))
ensure_demo_collection(engine)
scorer = engine.reranker()

def progress(done, total):
    if done == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)  # killed as `kill -9` would: nothing is tidied up

report = run_evaluation(engine, demo_dataset("test"), engine.plan(collection="demo", k=10, top_n=5), max_queries=20,
                        progress=progress)
print(json.dumps({"scored": scorer.usage.documents, "after": report.after, "before": report.before,
                  "per_query": [o.after for o in report.per_query]}))
"""


def test_a_killed_run_resumes_where_it_stopped_with_the_same_figures(
    tmp_path: Path, tiny_models: dict[str, Path]
) -> None:
    def run(data: Path, kill_at: int) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", RESUMABLE, str(data), str(tiny_models["reranker"]), str(kill_at)],
                              capture_output=True, text=True, timeout=600)  # fmt: skip

    killed = run(tmp_path / "resumed", kill_at=8)
    assert killed.returncode == -9  # SIGKILL after the 8th query
    kept = PairScoreStore(tmp_path / "resumed" / "scores.sqlite3", max_rows=100000).counts()
    assert sum(kept.values()) == 80  # the 8 queries' 10 pairs each, every one kept before the kill
    resumed = json.loads(run(tmp_path / "resumed", kill_at=0).stdout.strip().splitlines()[-1])
    clean = json.loads(run(tmp_path / "clean", kill_at=0).stdout.strip().splitlines()[-1])
    assert clean["scored"] == 200 and resumed["scored"] == 120  # only the 12 queries the killed run never reached
    assert (resumed["after"], resumed["before"], resumed["per_query"]) == (
        clean["after"], clean["before"], clean["per_query"]
    )  # fmt: skip


@pytest.mark.live_server
def test_a_postgresql_score_store_is_shared_by_every_process_that_names_it(
    postgres_url: str, tmp_path: Path, tiny_models: dict[str, Path]
) -> None:
    """WORKBENCH_SESSION_DB naming PostgreSQL keeps the scores there: a run in another process and another data
    folder (another machine, as far as the store can tell) scores no pair and gives the same figures."""
    from workbench.rerankers.scores.score_store import PostgresScoreStore, open_score_store

    def run(data: Path) -> dict:
        done = subprocess.run(
            [sys.executable, "-c", EVAL, str(data), str(tiny_models["reranker"]), "256"], capture_output=True,
            text=True, timeout=600, env={**os.environ, "WORKBENCH_SESSION_DB": postgres_url,
                                         "WORKBENCH_PG_SCHEMA": "scores_test"},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = run(tmp_path / "one")
    elsewhere = run(tmp_path / "two")
    assert first["scored"] == 60 and elsewhere["scored"] == 0 and elsewhere["stored"] == 60
    assert elsewhere["after"] == first["after"]
    assert not (tmp_path / "one" / "scores.sqlite3").exists()  # nothing kept beside it in the data folder
    store = open_score_store(
        Settings(data_dir=tmp_path, session_db=postgres_url, pg_schema="scores_test", score_store=True)
    )
    assert isinstance(store, PostgresScoreStore) and sum(store.counts().values()) == 60
    keys = [("q", f"t{i}") for i in range(3)]
    store.put_many("r", {keys[0]: 0.5, keys[2]: -1.25})
    assert store.get_many("r", keys) == [0.5, None, -1.25] and store.get_many("other", keys[:1]) == [None]
    assert store.clear("r") == 2 and store.clear() == 60 and store.counts() == {}

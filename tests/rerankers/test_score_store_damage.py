"""Issue 68, item 3: the score store never lends a score it did not write. A kept value that is not a finite number
(a NaN, an infinity, a text written into scores.sqlite3 by hand or by another tool) is passed over and the pair
scored again, said once; a damaged, foreign or locked store costs the keeping, never the search, and is said in
one line that names the file (never "the server"); `workbench cache clear` removes a store it cannot open."""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import StoreError
from workbench.evaluation import run_evaluation
from workbench.rerankers.scores import cache as caching
from workbench.rerankers.scores.cache import ScoreCache
from workbench.rerankers.scores.score_store import SCORE_STORE_FILE, PairScoreStore, usable_score_store
from workbench.services.demo import demo_dataset, ensure_demo_collection


def _cache(path: Path) -> ScoreCache:
    return ScoreCache(store=PairScoreStore(path, max_rows=1000))


def test_a_kept_value_that_is_not_a_finite_number_is_scored_again_and_said_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / SCORE_STORE_FILE
    keys = [ScoreCache.key("r", "q", t) for t in ("a", "b", "c", "d", "e")]
    written, _ = _cache(path).resolve(keys, lambda todo: [1.0 + i for i in todo], persist="fp")
    assert written == [1.0, 2.0, 3.0, 4.0, 5.0]
    with sqlite3.connect(path) as db:  # what a hand, a bad tool or a bit flip leaves in the file
        db.execute("UPDATE pair_scores SET score = 'nan' WHERE rowid = 1")
        db.execute("UPDATE pair_scores SET score = 9e999 WHERE rowid = 2")
        db.execute("UPDATE pair_scores SET score = 'abc' WHERE rowid = 3")
        db.execute("UPDATE pair_scores SET score = x'00ff' WHERE rowid = 4")
    caplog.set_level(logging.WARNING, logger="workbench.rerankers")
    caching._said.discard("unusable")
    again = _cache(path)
    scores, reused = again.resolve(keys, lambda todo: [10.0 + i for i in todo], persist="fp")
    assert scores == [10.0, 11.0, 12.0, 13.0, 5.0] and reused == 1  # only the intact score was lent
    assert again.stored_hits == 1
    said = [r.getMessage() for r in caplog.records if "not finite numbers" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("4 kept pair scores")
    third = _cache(path)  # the pairs scored again were kept: the store holds numbers only now
    assert third.resolve(keys, lambda todo: [99.0] * len(todo), persist="fp")[0] == [10.0, 11.0, 12.0, 13.0, 5.0]


def test_an_evaluation_over_a_tampered_store_gives_the_figures_of_a_fresh_one(
    tmp_path: Path, tiny_models: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_SCORE_STORE", "1")

    def evaluate() -> tuple[float, float, int]:
        engine = Engine(Settings(data_dir=tmp_path, embedding_model=str(tiny_models["embedder"]), offline=True,
                                 reranker_model=str(tiny_models["reranker"]), reranker_backend="torch"))  # fmt: skip
        ensure_demo_collection(engine)
        report = run_evaluation(engine, demo_dataset("test"), engine.plan(collection="demo", k=8, top_n=8),
                                max_queries=4)  # fmt: skip
        return report.after["ndcg@10"], report.before["ndcg@10"], engine.score_cache.stored_hits

    fresh_after, before, stored = evaluate()
    assert stored == 0
    assert evaluate() == (fresh_after, before, 32)  # all 32 pairs lent by the store, the same figures
    for value in ("'nan'", "9e999", "-9e999", "'text'"):
        with sqlite3.connect(tmp_path / SCORE_STORE_FILE) as db:
            db.execute(f"UPDATE pair_scores SET score = {value}")
        assert evaluate() == (fresh_after, before, 0), value  # none lent, every pair scored again


@pytest.mark.parametrize("damage", ["random bytes", "truncated", "another table"])
def test_a_damaged_store_costs_the_keeping_never_the_search_and_cache_clear_removes_it(
    damage: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    path = tmp_path / SCORE_STORE_FILE
    if damage == "random bytes":
        path.write_bytes(os.urandom(50_000))
    elif damage == "truncated":
        keys = [ScoreCache.key("r", "q", f"text {i}") for i in range(3000)]
        _cache(path).resolve(keys, lambda todo: [float(i) for i in todo], persist="fp")
        data = path.read_bytes()
        for extra in ("-wal", "-shm"):
            Path(f"{path}{extra}").unlink(missing_ok=True)
        path.write_bytes(data[: len(data) // 3])
    else:
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE pair_scores (id INTEGER, value TEXT)")
    settings = Settings(data_dir=tmp_path, score_store=True)
    caplog.set_level(logging.WARNING, logger="workbench.rerankers")
    with pytest.raises(StoreError) as caught:
        PairScoreStore(path, max_rows=1000)
    assert SCORE_STORE_FILE in str(caught.value) and "server" not in str(caught.value)
    assert usable_score_store(settings) is None  # a search goes on, scoring every pair
    assert any("cache clear" in r.getMessage() for r in caplog.records)

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("WORKBENCH_SCORE_STORE", "1")
    monkeypatch.setenv("WORKBENCH_CONFIG", "")
    assert main(["cache", "clear"]) == 0
    out = capsys.readouterr().out
    assert "Removed it" in out and len(out.strip().splitlines()) == 1
    assert main(["cache", "show"]) == 0  # a new, empty store
    assert "0 pair scores kept" in capsys.readouterr().out


def test_a_locked_store_is_said_as_locked_and_passed_over(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / SCORE_STORE_FILE
    store = PairScoreStore(path, max_rows=1000)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process writing, and not letting go (readers of a WAL file go on)
    try:
        with pytest.raises(StoreError) as caught:
            store.put_many("fp", {("q", "t"): 1.0})
        assert "locked by another process" in str(caught.value) and "server" not in str(caught.value)
        caplog.set_level(logging.WARNING, logger="workbench.rerankers")
        caching._said.discard("trouble")
        cache = ScoreCache(store=store)
        keys = [ScoreCache.key("r", "q", t) for t in ("a", "b")]
        assert cache.resolve(keys, lambda todo: [7.0] * len(todo), persist="fp")[0] == [7.0, 7.0]
        assert cache.store is None  # not asked again by this cache: no later search waits on it
        assert sum("locked by another process" in r.getMessage() for r in caplog.records) == 1
    finally:
        holder.execute("ROLLBACK")
        holder.close()

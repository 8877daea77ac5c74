"""The reranker: scores equal to the cross-encoder's own, every backend agreeing with fp32 torch, the export
cache rebuilt when damaged, the token and score caches, single-flight and micro-batching."""

from __future__ import annotations

import json
import threading
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from workbench.config import Settings
from workbench.errors import ConfigError
from workbench.rerankers import CrossEncoderReranker, ExportCache, ScoreCache, choose_backend, fingerprint

TEXTS = [
    "short one",
    "a considerably longer document about rivers, deltas, sediment and the sea that runs on and on",
    "middle length text about herons",
    "x",
    "Glaciers carve valleys shaped like the letter U over thousands of years of slow movement.",
    "Bees dance to tell other bees where the flowers are.",
    "Oaks live for centuries and feed hundreds of insect species.",
    "Rivers carry sediment from mountains to the sea and build deltas at their mouths.",
]


def _settings(tmp_path: Path, tiny_models: dict[str, Path], **overrides: object) -> Settings:
    folders = {"data_dir": tmp_path / "data", "exports_dir": tmp_path / "data" / "exports"}  # exports of its own
    return Settings(offline=True, reranker_model=str(tiny_models["reranker"]), **folders, **overrides)  # type: ignore[arg-type]


@pytest.fixture
def reranker(tmp_path: Path, tiny_models: dict[str, Path]) -> CrossEncoderReranker:
    return CrossEncoderReranker(str(tiny_models["reranker"]), _settings(tmp_path, tiny_models, reranker_batch_size=2))


def test_scores_equal_the_cross_encoders_own_fresh_tokenization(reranker: CrossEncoderReranker) -> None:
    long_query = "rivers deltas and the sea " * 40  # long enough that truncation cuts both sides
    for query in ("rivers", long_query):
        scores = reranker.predict(query, TEXTS)
        fresh = reranker._model.predict([(query, t) for t in TEXTS], batch_size=1)
        assert scores == pytest.approx([float(s) for s in fresh], abs=1e-5)
    assert reranker.tokens.hits >= len(TEXTS)  # the second query reused every document's token ids
    assert 0 < reranker.tokens_per_pair <= reranker.max_length


def test_repeated_query_costs_no_model_call(reranker: CrossEncoderReranker) -> None:
    first, hits = reranker.score("rivers", TEXTS)
    assert hits == 0 and reranker.model_calls == 1
    second, hits = reranker.score("rivers", TEXTS)
    assert hits == len(TEXTS) and reranker.model_calls == 1
    assert second == first
    _, hits = reranker.score("rivers", [*TEXTS, "a new document"])
    assert hits == len(TEXTS) and reranker.model_calls == 2


@pytest.mark.parametrize(("backend", "correlation"), [("onnx", 0.99), ("onnx-int8", 0.95), ("openvino", 0.95)])
def test_exported_backends_agree_with_fp32_torch(
    tmp_path: Path, tiny_models: dict[str, Path], backend: str, correlation: float
) -> None:
    torch_scores = CrossEncoderReranker(str(tiny_models["reranker"]), _settings(tmp_path, tiny_models)).predict(
        "rivers and deltas", TEXTS
    )
    other = CrossEncoderReranker(
        str(tiny_models["reranker"]), _settings(tmp_path, tiny_models, reranker_backend=backend)
    )
    assert other.backend == f"{backend}:cpu"
    scores = other.predict("rivers and deltas", TEXTS)
    assert spearmanr(torch_scores, scores).statistic >= correlation
    if backend == "onnx":
        assert scores == pytest.approx(torch_scores, abs=1e-3)


def test_a_damaged_export_is_rebuilt_never_used(
    tmp_path: Path, tiny_models: dict[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    settings = _settings(tmp_path, tiny_models)
    cache = ExportCache(settings.exports_dir)
    messages: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        folder, name = cache.ensure(str(tiny_models["reranker"]), "onnx", messages.append)
    assert len(messages) == 1 and "Exporting" in messages[0]
    # Our progress message is all the export says: no tracer warnings, no advice to save what the cache saves.
    assert not [w for w in caught if "trace" in str(w.message).lower()]
    assert "heavily recommended" not in caplog.text
    assert cache.ensure(str(tiny_models["reranker"]), "onnx", messages.append) == (folder, name)
    assert len(messages) == 1  # kept, not exported again
    onnx_file = folder / name
    onnx_file.write_bytes(onnx_file.read_bytes()[: onnx_file.stat().st_size // 2])  # a damaged file
    assert not cache.valid(folder, fingerprint(tiny_models["reranker"]), name)
    folder, name = cache.ensure(str(tiny_models["reranker"]), "onnx", messages.append)
    assert len(messages) == 2 and cache.valid(folder, fingerprint(tiny_models["reranker"]), name)


def _swap_two_ids(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    vocab = data["model"]["vocab"]
    vocab["the"], vocab["of"] = vocab["of"], vocab["the"]
    path.write_text(json.dumps(data), encoding="utf-8")


def _flip_lower_case(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data["do_lower_case"] = not data.get("do_lower_case", True)
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize(("tampered", "edit"), [("tokenizer.json", _swap_two_ids),
                                                ("tokenizer_config.json", _flip_lower_case)])  # fmt: skip
def test_an_exports_tokenizer_changed_since_it_was_made_is_never_used(
    tmp_path: Path, tiny_models: dict[str, Path], tampered: str, edit: Callable[[Path], None]
) -> None:
    """Issue 68, item 6: every file a load reads from an export is in its manifest; a tokenizer edited in the
    export folder makes the export be made again, so the backend scores as fp32 torch does."""
    settings = _settings(tmp_path, tiny_models, reranker_backend="onnx")
    model = str(tiny_models["reranker"])
    query = "The rivers of the sea"
    torch_scores = CrossEncoderReranker(model, _settings(tmp_path, tiny_models)).predict(query, TEXTS)
    folder, name = ExportCache(settings.exports_dir).ensure(model, "onnx")
    edit(folder / tampered)
    assert not ExportCache(settings.exports_dir).valid(folder, fingerprint(model), name)
    scores = CrossEncoderReranker(model, settings).predict(query, TEXTS)
    assert scores == pytest.approx(torch_scores, abs=1e-3)
    assert ExportCache(settings.exports_dir).valid(folder, fingerprint(model), name)  # made again, intact


def test_auto_picks_torch_until_a_backend_is_audited_and_half_precision_on_cuda() -> None:
    assert choose_backend("auto", "cpu") == "torch"
    assert choose_backend("auto", "cuda") == "torch"
    assert choose_backend("auto", "cuda", "onnx") == "torch"  # a CPU choice never moves a GPU off torch
    assert choose_backend("auto", "cpu", "onnx") == "onnx"  # the kept choice (timed, admitted by the audit)
    assert choose_backend("onnx-int8", "cpu") == "onnx-int8"


def test_cuda_without_a_gpu_is_a_clear_error(tmp_path: Path, tiny_models: dict[str, Path]) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA; the error is for machines without it")
    with pytest.raises(ConfigError, match="RERANKER_DEVICE=cuda"):
        CrossEncoderReranker(str(tiny_models["reranker"]), _settings(tmp_path, tiny_models, reranker_device="cuda"))


def test_micro_batched_results_equal_one_at_a_time(tmp_path: Path, tiny_models: dict[str, Path]) -> None:
    reranker = CrossEncoderReranker(
        str(tiny_models["reranker"]), _settings(tmp_path, tiny_models, reranker_batch_window_ms=50)
    )
    queries = [f"query number {i} about rivers" for i in range(8)]
    alone = {q: reranker.predict(q, TEXTS) for q in queries}
    runs_before = reranker.model_calls
    with ThreadPoolExecutor(max_workers=8) as pool:
        together = dict(zip(queries, pool.map(lambda q: reranker.predict(q, TEXTS), queries), strict=True))
    for q in queries:
        assert together[q] == pytest.approx(alone[q], abs=1e-5)
    assert reranker.model_calls - runs_before < len(queries)  # they shared model calls


def test_concurrent_searches_score_a_pair_once(tmp_path: Path, tiny_models: dict[str, Path]) -> None:
    reranker = CrossEncoderReranker(
        str(tiny_models["reranker"]), _settings(tmp_path, tiny_models, reranker_batch_window_ms=30)
    )
    barrier = threading.Barrier(6)

    def search(_: int) -> list[float]:
        barrier.wait()
        return reranker.score("the same query", TEXTS)[0]

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(search, range(6)))
    assert all(r == results[0] for r in results)
    assert reranker.usage.documents == len(TEXTS)  # single-flight: every pair scored once for all six
    assert reranker.cache.hits + reranker.cache.misses == 6 * len(TEXTS)


def test_cache_entries_expire_after_ttl() -> None:
    now = [1000.0]  # the cache's clock, moved by the test: no waiting, nothing a loaded machine can delay
    cache = ScoreCache(ttl=0.2, max_size=10, timer=lambda: now[0])
    key = ScoreCache.key("m", "q", "doc")
    cache.put_many({key: 1.5})
    now[0] += 0.19
    assert cache.get_many([key]) == [1.5]
    now[0] += 0.02
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
    scores, reused = cache.resolve([key, key], lambda indices: [2.0 for _ in indices])
    assert scores == [2.0, 2.0] and reused == 0


def test_changed_text_is_scored_afresh() -> None:
    assert ScoreCache.key("m", "q", "old text") != ScoreCache.key("m", "q", "new text")


def test_a_failed_computation_reaches_every_waiting_search() -> None:
    cache = ScoreCache(ttl=60, max_size=10)
    key = ScoreCache.key("m", "q", "doc")

    def boom(indices: list[int]) -> list[float]:
        raise RuntimeError("model died")

    with pytest.raises(RuntimeError):
        cache.resolve([key], boom)
    assert cache.resolve([key], lambda indices: [np.float32(3.0) for _ in indices])[0] == [3.0]


def test_a_pairs_score_on_dynamic_int8_moves_with_its_batch_mates_and_auto_never_takes_it(
    tmp_path: Path, tiny_models: dict[str, Path]
) -> None:
    """Issue 37: on onnx-int8 the same pair scored alone and beside other pairs differs (dynamic quantization
    scales each call's activations), on fp32 torch it does not; so `auto` never takes a batch-dependent backend."""
    from workbench.rerankers.local.machine import BackendFigures, decide
    from workbench.vocab import BATCH_DEPENDENT_BACKENDS

    pair = [("rivers and deltas", TEXTS[0])]
    mates = [("rivers and deltas", t) for t in TEXTS[1:]] + [("x " * 200, "y " * 200)]

    def alone_and_beside(backend: str) -> tuple[float, float]:
        settings = _settings(tmp_path, tiny_models, reranker_backend=backend)
        reranker = CrossEncoderReranker(str(tiny_models["reranker"]), settings)
        return reranker.score_pairs(pair)[0], reranker.score_pairs(pair + mates)[0]

    alone, beside = alone_and_beside("torch")
    assert beside == pytest.approx(alone, abs=1e-5)
    alone, beside = alone_and_beside("onnx-int8")
    assert abs(beside - alone) > 1e-4, "dynamic int8 no longer depends on batch-mates: revisit the rule"
    fastest = [
        BackendFigures(backend="torch", ms_per_50_pairs=100, speedup=1.0),
        BackendFigures(backend="onnx-int8", ms_per_50_pairs=10, speedup=10.0),
    ]
    # even a kept verdict calling it faithful (edited, or from an audit of another kind) does not admit it
    assert "onnx-int8" in BATCH_DEPENDENT_BACKENDS and decide(fastest, {"onnx-int8": True}) == "torch"


def test_score_many_scores_many_queries_in_one_model_call_and_keeps_them(
    tmp_path: Path, tiny_models: dict[str, Path]
) -> None:
    """A tuning run's union: pairs of several queries scored together (one model call, sorted by length across
    queries) equal each query's own scores, are kept in the cache, and what the cache held is not scored again."""
    reranker = CrossEncoderReranker(str(tiny_models["reranker"]), _settings(tmp_path, tiny_models))
    queries = ["rivers and deltas", "volcanic islands", "how glaciers move"]
    pairs = [(q, t) for q in queries for t in TEXTS]
    reranker.score(queries[0], TEXTS[:2])  # two pairs already kept
    calls, documents = reranker.model_calls, reranker.usage.documents
    scores, reused = reranker.score_many(pairs)
    assert reused == 2 and reranker.model_calls == calls + 1
    assert reranker.usage.documents == documents + len(pairs) - 2
    fresh = CrossEncoderReranker(str(tiny_models["reranker"]), _settings(tmp_path, tiny_models))
    one_by_one = [s for q in queries for s in fresh.score(q, TEXTS, use_cache=False)[0]]
    assert scores == pytest.approx(one_by_one, abs=1e-5)
    again, reused = reranker.score_many(pairs)
    assert again == scores and reused == len(pairs) and reranker.model_calls == calls + 1
    assert reranker.score(queries[2], TEXTS) == (scores[-len(TEXTS) :], len(TEXTS))

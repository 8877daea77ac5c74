"""Issue 58: the OpenVINO backends score each pair as a request of its own, so a score never moves with its
batch-mates (fp32, bf16 and static int8 alike: alone, in mixed batches and under 8 concurrent clients, identical to
the last digit); static int8 is calibrated on the demo's passages, never its judged queries; its export is made
again when the model or the recipe changes; and the parity audit, on the shared QA reranker and the demo, refuses
static int8 (it moves the top 10) and admits OpenVINO fp32, and bf16 where the CPU has it."""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import CrossEncoder
from transformers import AutoModelForSequenceClassification

from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import ModelError
from workbench.evaluation.parity import audit_parity
from workbench.paths import demo_dir
from workbench.rerankers import CrossEncoderReranker, ExportCache, fingerprint
from workbench.rerankers.local import machine
from workbench.rerankers.local.backends import export_file, export_recipe
from workbench.rerankers.local.machine import (
    BackendChoice,
    BackendFigures,
    FaithfulBackends,
    audited_rule,
    installed_backends,
)
from workbench.rerankers.local.openvino_pairs import calibration_pairs
from workbench.services.demo import DEMO_COLLECTION, demo_dataset, ensure_demo_collection
from workbench.vocab import BATCH_SCORE_TOLERANCE, OPENVINO_BACKENDS

QUERY, TEXT = "what do herons eat", "Herons wade in shallow water and spear fish with their long beaks."
OTHERS = [(f"question {i} about rivers and deltas", f"Rivers carry sediment {i} times a year. " * (i % 7 + 1))
          for i in range(31)]  # fmt: skip


def _settings(tmp_path: Path, tiny_models: dict[str, Path], backend: str) -> Settings:
    return Settings(
        offline=True, reranker_model=str(tiny_models["reranker"]), reranker_backend=backend,
        data_dir=tmp_path / "data", exports_dir=tmp_path / "exports",
    )  # type: ignore[arg-type]  # fmt: skip


def _installed(backend: str) -> None:
    if backend not in installed_backends():
        pytest.skip(f"{backend} needs a CPU that multiplies bf16 (AVX512_BF16 or AMX); this one does not")


@pytest.mark.parametrize("backend", sorted(OPENVINO_BACKENDS))
def test_a_pairs_score_is_the_same_alone_in_mixed_batches_and_under_8_clients(
    tmp_path: Path, tiny_models: dict[str, Path], backend: str
) -> None:
    _installed(backend)
    reranker = CrossEncoderReranker(str(tiny_models["reranker"]), _settings(tmp_path, tiny_models, backend))
    assert reranker.backend == f"{backend}:cpu"
    alone = reranker.score_pairs([(QUERY, TEXT)])[0]
    in_batch = reranker.score_pairs([*OTHERS[:15], (QUERY, TEXT), *OTHERS[15:]])[15]
    last = reranker.score_pairs([*OTHERS, (QUERY, TEXT)])[-1]

    def client(i: int) -> float:
        if i % 2:
            return reranker.score(QUERY, [TEXT], use_cache=False)[0][0]
        reranker.score(OTHERS[i][0], [o[1] for o in OTHERS], use_cache=False)
        return reranker.score(QUERY, [TEXT, *(o[1] for o in OTHERS[:i])], use_cache=False)[0][0]

    with ThreadPoolExecutor(8) as pool:
        concurrent = list(pool.map(client, range(8)))
    assert in_batch == alone and last == alone and concurrent == [alone] * 8  # to the last digit


def test_a_run_of_many_batches_scores_each_pair_as_alone_and_hands_back_each_batch_once_in_order(
    tmp_path: Path, tiny_models: dict[str, Path]
) -> None:
    """The next batch starts while the last one's final pairs run (two requests in flight a core): every score is
    still the pair's alone, and each batch is handed back once, in order, with its own scores."""
    settings = _settings(tmp_path, tiny_models, "openvino").model_copy(update={"reranker_batch_size": 3})
    reranker = CrossEncoderReranker(str(tiny_models["reranker"]), settings)
    pairs = [(QUERY, TEXT), *OTHERS]
    alone = [reranker.score_pairs([pair])[0] for pair in pairs]
    assert reranker.score_pairs(pairs) == alone  # 11 batches of 3, to the last digit

    model = reranker._model  # the backend's own queue, as a run drives it
    rows = [reranker._arrays(reranker.encode(q, [t])) for q, t in pairs]
    batches = [rows[i : i + 5] for i in range(0, len(rows), 5)]
    handed: list[tuple[int, list[float]]] = []
    model.score_batches(iter(batches), lambda number, scores: handed.append((number, scores)))
    assert [n for n, _ in handed] == list(range(len(batches)))
    assert [s for _, scores in handed for s in scores] == alone


@pytest.mark.parametrize("backend", sorted(OPENVINO_BACKENDS))
def test_each_openvino_backend_scores_what_the_model_scores(
    tmp_path: Path, tiny_models: dict[str, Path], backend: str
) -> None:
    """Against sentence-transformers' own CrossEncoder in fp32 torch on the same pairs: fp32 to 1e-4; bf16 and int8
    near it (the tiny model's logits are small, so the bounds are loose; the audit below is the real test)."""
    _installed(backend)
    pairs = [(QUERY, TEXT), *OTHERS[:12]]
    reference = CrossEncoder(str(tiny_models["reranker"]), device="cpu", activation_fn=torch.nn.Identity())
    expected = np.asarray(reference.predict(pairs, batch_size=4)).reshape(-1)
    reranker = CrossEncoderReranker(str(tiny_models["reranker"]), _settings(tmp_path, tiny_models, backend))
    scores = np.asarray(reranker.score_pairs(pairs))
    bound = {"openvino": 1e-4, "openvino-bf16": 0.05, "openvino-int8": 0.25}[backend]
    assert np.max(np.abs(scores - expected)) < bound
    assert np.corrcoef(scores, expected)[0, 1] > 0.9


def test_static_int8_is_calibrated_on_passages_never_on_a_judged_query() -> None:
    pairs = calibration_pairs()
    queries = {json.loads(line)["text"] for line in (demo_dir() / "queries.jsonl").read_text().splitlines()}
    assert len(pairs) == 256 and pairs == calibration_pairs()  # fixed: the same export on every machine
    assert not {q for q, _ in pairs} & queries
    assert sum(p.startswith(q) for q, p in pairs) >= 128  # half ask a passage by its own opening words


def test_the_int8_export_is_made_again_when_the_model_or_the_recipe_changes(
    tmp_path: Path, tiny_models: dict[str, Path]
) -> None:
    model = tmp_path / "model"
    shutil.copytree(tiny_models["reranker"], model)
    cache, said = ExportCache(tmp_path / "exports"), []
    first, name = cache.ensure(str(model), "openvino-int8", said.append)
    assert name == export_file("openvino-int8") and (first / name).with_suffix(".bin").exists()
    assert cache.ensure(str(model), "openvino-int8", said.append) == (first, name)
    assert sum("Exporting" in s for s in said) == 1  # kept
    manifest = json.loads((first / "manifest.json").read_text())
    assert manifest["recipe"] == export_recipe("openvino-int8") and "nncf" in manifest["recipe"]

    # another recipe (NNCF upgraded, other calibration pairs): the same folder made again
    (first / "manifest.json").write_text(json.dumps({**manifest, "recipe": "nncf 0.0; calibration 0"}))
    assert cache.ensure(str(model), "openvino-int8", said.append) == (first, name)
    assert sum("Exporting" in s for s in said) == 2
    # damaged weights: made again
    weights = (first / name).with_suffix(".bin")
    weights.write_bytes(weights.read_bytes()[:100])
    assert not cache.valid(first, fingerprint(model), name, export_recipe("openvino-int8"))

    # the model fine-tuned: a new fingerprint, a new export, other scores
    before = CrossEncoderReranker(str(model), _settings(tmp_path, tiny_models, "openvino-int8"))
    scored = before.score_pairs([(QUERY, TEXT)])[0]
    assert sum("Exporting" in s for s in said) == 2  # the reranker rebuilt the damaged one itself, silently to `said`
    tuned = AutoModelForSequenceClassification.from_pretrained(model)
    with torch.no_grad():
        tuned.classifier.weight.mul_(-1.0)
    tuned.save_pretrained(model)
    second, _ = cache.ensure(str(model), "openvino-int8", said.append)
    assert second != first and sum("Exporting" in s for s in said) == 3
    after = CrossEncoderReranker(str(model), _settings(tmp_path, tiny_models, "openvino-int8").model_copy(
        update={"reranker_max_length": 255}))  # fmt: skip  # another max length: not the reranker loaded above
    assert after.score_pairs([(QUERY, TEXT)])[0] != pytest.approx(scored, abs=1e-3)


def test_the_audit_refuses_static_int8_and_admits_openvino_fp32_on_the_demo(
    tmp_path: Path, real_reranker_dir: Path, demo_engine: Engine
) -> None:
    """The shared QA reranker, the demo's 50 judged queries, dense k = 20, top 10. Static int8 scores never move with
    their batch-mates, yet it moves the top 10 on more than a tenth of the queries (measured: 15 of 50), so the
    audit refuses it by that rule alone; OpenVINO fp32 changes no top 10 and is admitted. On the session's demo
    collection (built once for the worker), with exports of its own."""
    settings = Settings(
        data_dir=demo_engine.settings.data_dir, exports_dir=tmp_path / "exports",
        reranker_model=str(real_reranker_dir), offline=True,
    )  # fmt: skip
    engine = Engine(settings)
    ensure_demo_collection(engine)
    plan = engine.plan(collection=DEMO_COLLECTION, k=20, top_n=10, reranker=str(real_reranker_dir))
    bf16 = ["openvino-bf16"] if "openvino-bf16" in installed_backends() else []
    audit = audit_parity(engine, demo_dataset("test"), plan, backends=["openvino", *bf16, "openvino-int8"], keep=False)
    rows = {row.backend: row for row in audit.rows}
    assert rows["openvino"].faithful and rows["openvino"].top_n_changed == 0 and rows["openvino"].batch_drift == 0.0
    int8 = rows["openvino-int8"]
    assert not int8.faithful and int8.batch_drift == 0.0 <= BATCH_SCORE_TOLERANCE
    assert int8.top_n_changed > audit.queries // 10 and any("top n set changed" in r for r in int8.reasons)
    assert not any("batch-mates" in r for r in int8.reasons)
    assert int8.ceiling is not None and int8.ceiling.pairs_per_second > 0  # its speed is reported, never asserted
    if bf16:  # a finer reduction than int8 (measured: 3 of 50 top 10s changed, nDCG@10 within 0.0003): admitted
        assert rows["openvino-bf16"].faithful and rows["openvino-bf16"].batch_drift == 0.0
        assert 0 < rows["openvino-bf16"].max_drift < int8.max_drift


def test_bf16_is_offered_only_where_the_cpu_multiplies_bf16(
    tmp_path: Path, tiny_models: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Elsewhere OpenVINO would quietly run fp32 under the bf16 backend's name: `auto` never measures it, and named
    outright it is refused in one line."""
    monkeypatch.setattr(machine, "_cpu_info", lambda: ("a CPU without bf16", frozenset({"avx2", "fma"})))
    assert "openvino-bf16" not in installed_backends() and "openvino-int8" in installed_backends()
    with pytest.raises(ModelError, match="needs a CPU that multiplies bf16") as caught:
        CrossEncoderReranker(str(tiny_models["reranker"]), _settings(tmp_path, tiny_models, "openvino-bf16"))
    assert "\n" not in str(caught.value)


def test_auto_says_which_backends_it_tried_and_why_it_kept_another() -> None:
    """Where no int8 variant is faithful, `auto`'s line names each backend it measured and the audit's reason."""
    facts = machine.machine_facts("cpu")
    figures = [
        BackendFigures(backend="torch", ms_per_50_pairs=100, speedup=1.0),
        BackendFigures(backend="openvino", ms_per_50_pairs=65, speedup=1.54),
        BackendFigures(backend="openvino-int8", ms_per_50_pairs=31, speedup=3.2),
    ]
    reasons = {"openvino-int8": "the top n set changed on 18 of 50 queries (over 10%)", "openvino": ""}
    audited = FaithfulBackends(
        model="m", model_print="p", machine=facts, faithful={"torch": True, "openvino": True, "openvino-int8": False},
        reasons=reasons, queries=50, measured_at=datetime.now(UTC),
    )  # fmt: skip
    choice = BackendChoice(
        model="m", model_print="p", machine=facts, chosen=audited_rule(figures, audited), figures=figures, pairs=50,
        seconds=1.0, measured_at=datetime.now(UTC), audited=audited,
    )  # fmt: skip
    said = choice.summary()
    assert said.startswith("auto → openvino ") and "openvino 65 ms/50 pairs, 1.54x, faithful" in said
    assert "openvino-int8 31 ms/50 pairs, 3.20x, not faithful (the top n set changed on 18 of 50 queries" in said

"""Issue 37, item 1: the parity audit holds every backend to fp32 torch. Its τ, set changes and paired interval
equal hand and pytrec_eval computations; a backend whose scores move with their batch-mates, or a model that
scores differently, is refused, a faithful one taken; `auto` follows the kept verdicts; a pair's score on the
backend `auto` runs is the same alone, in a batch of others and under 8 concurrent clients."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from tests.rerankers.test_causal_lm import tiny_qwen3  # noqa: F401 - the fixture
from workbench.config import Settings
from workbench.engine import Engine
from workbench.evaluation.parity import audit_parity, compare_query, faithfulness
from workbench.evaluation.service import evaluate_dataset, search_checks
from workbench.evaluation.significance import Difference, difference
from workbench.rerankers import CrossEncoderReranker, ExportCache, fingerprint
from workbench.rerankers.local.machine import (
    BackendChoice,
    BackendFigures,
    choice_path,
    kept_choice,
    kept_faithful,
    machine_facts,
)
from workbench.services.demo import DEMO_COLLECTION, demo_dataset, ensure_demo_collection


def test_tau_set_changes_and_drift_against_a_hand_computation() -> None:
    ids = ["a", "b", "c", "d"]
    # one discordant pair of six (b, c): τ = (5 - 1) / 6; the top 2 goes from {a, b} to {a, c}; largest drift 1.5
    found = compare_query("q1", ids, [4.0, 3.0, 2.0, 1.0], [4.0, 2.0, 3.5, 1.0], top_n=2)
    assert found.kendall_tau == pytest.approx(4 / 6)
    assert found.top_n_changed and found.max_drift == pytest.approx(1.5)
    same_set = compare_query("q2", ids, [4.0, 3.0, 2.0, 1.0], [3.0, 4.0, 1.0, 2.0], top_n=2)
    assert same_set.kendall_tau == pytest.approx((4 - 2) / 6) and not same_set.top_n_changed
    flat = compare_query("q3", ids, [1.0, 1.0, 1.0, 1.0], [4.0, 3.0, 2.0, 1.0], top_n=2)
    assert flat.kendall_tau is None  # no order on one side: τ is undefined, not 0


def test_the_faithfulness_rule_names_each_reason() -> None:
    inside = Difference(delta=0.001, ci_low=-0.004, ci_high=0.006, p_value=0.7)
    assert faithfulness(inside, changed=2, queries=50, batch_drift=3e-6) == []
    outside = Difference(delta=-0.01, ci_low=-0.03, ci_high=0.01, p_value=0.2)
    reasons = faithfulness(outside, changed=6, queries=50, batch_drift=0.4)
    assert len(reasons) == 3
    assert "[-0.0300, +0.0100] leaves ±0.01" in reasons[0] and "6 of 50" in reasons[1] and "0.4" in reasons[2]
    assert faithfulness(None, changed=0, queries=5, batch_drift=0.0) == []  # no judgments: the other two decide
    assert faithfulness(inside, changed=0, queries=5, batch_drift=0.0, tolerance=0.005)  # a tighter tolerance


@pytest.fixture
def perturbed_reranker(tiny_models: dict[str, Path], tmp_path: Path) -> Path:
    """The tiny cross-encoder with noise added to every weight: another model under the same shape."""
    model = AutoModelForSequenceClassification.from_pretrained(tiny_models["reranker"])
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.3)
    folder = tmp_path / "perturbed-reranker"
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(tiny_models["reranker"]).save_pretrained(folder)
    return folder


def test_the_audit_on_the_demo_refuses_what_moves_and_keeps_its_verdicts_for_auto(
    tiny_settings: Settings, tiny_models: dict[str, Path], perturbed_reranker: Path, tmp_path: Path
) -> None:
    settings = tiny_settings.model_copy(update={"data_dir": tmp_path / "data", "exports_dir": tmp_path / "exports"})
    engine = Engine(settings)
    ensure_demo_collection(engine)
    dataset = demo_dataset("test")
    model = str(tiny_models["reranker"])
    # timings kept from an earlier calibration (faked: onnx and int8 faster than torch), so the audit decides
    facts, model_print = machine_facts("cpu"), fingerprint(model)
    figures = [
        BackendFigures(backend="torch", ms_per_50_pairs=100, speedup=1.0),
        BackendFigures(backend="onnx", ms_per_50_pairs=50, speedup=2.0),
        BackendFigures(backend="onnx-int8", ms_per_50_pairs=25, speedup=4.0),
    ]
    root = ExportCache(settings.exports_dir).choices_root
    timed = BackendChoice(
        model="tiny-reranker", model_print=model_print, machine=facts, chosen="torch", figures=figures, pairs=100,
        seconds=1.0, measured_at=datetime.now(UTC),
    )  # fmt: skip
    choice_path(root, model_print, facts).parent.mkdir(parents=True)
    choice_path(root, model_print, facts).write_text(timed.model_dump_json())
    assert kept_choice(root, model_print, facts).chosen == "torch"  # type: ignore[union-attr]  # no audit: torch

    plan = engine.plan(collection=DEMO_COLLECTION, k=10, top_n=5, reranker=model)
    audit = audit_parity(
        engine, dataset, plan, backends=["onnx", "onnx-int8"], served=[str(perturbed_reranker), model], max_queries=8
    )
    rows = {row.backend: row for row in audit.rows}
    assert list(rows)[:3] == ["torch", "onnx", "onnx-int8"] and audit.queries == 8 and audit.judged
    assert rows["torch"].faithful and rows["torch"].tau_median == pytest.approx(1.0) and rows["torch"].max_drift == 0.0
    assert rows["onnx"].faithful and rows["onnx"].max_drift < 1e-3
    assert not rows["onnx-int8"].faithful and any("batch-mates" in r for r in rows["onnx-int8"].reasons)
    perturbed = rows[str(perturbed_reranker)]
    assert not perturbed.faithful and perturbed.top_n_changed > 0 and perturbed.ceiling is None
    assert rows[model].faithful  # the same model, named as a served copy, is faithful
    # an evaluation of the unfaithful copy says its figures are about how it is served, not the model; the faithful
    # copy's evaluation says nothing of the kind
    served = evaluate_dataset(engine, dataset, plan.with_(reranker=str(perturbed_reranker)), max_queries=8, depth=())
    assert served.verdict is not None and served.verdict.direction == "unknown"
    assert [c.name for c in served.verdict.not_as_intended] == ["served"]
    assert "disagrees with its local reference tiny-reranker" in served.verdict.words()
    assert "the top n set changed" in served.verdict.words()
    same = evaluate_dataset(engine, dataset, plan.with_(reranker=model), max_queries=8, depth=())
    assert same.verdict is not None and "served" not in [c.name for c in same.verdict.not_as_intended]
    # one search with the unfaithful copy carries the same check to Explore's and Compare's banners
    text = next(iter(dataset.queries.values()))
    flagged = search_checks(engine, engine.search(text, plan.with_(reranker=str(perturbed_reranker))))
    assert [c.name for c in flagged] == ["served"] and "disagrees with its local reference" in flagged[0].words
    assert search_checks(engine, engine.search(text, plan.with_(reranker=model))) == []
    # the verdicts are kept with the speeds measured on these pairs: auto takes onnx when the audit found it at least
    # 1.1x torch's speed here (the calibration's faked 2x is not what decides), never the faster-looking int8
    kept = kept_faithful(root, model_print, facts)
    assert kept is not None and kept.faithful == {"torch": True, "onnx": True, "onnx-int8": False}
    assert set(kept.speedups) == {"torch", "onnx", "onnx-int8"} and kept.speedups["torch"] == 1.0
    expected = "onnx" if kept.speedups["onnx"] >= 1.1 else "torch"
    assert audit.auto_runs == expected and kept_choice(root, model_print, facts).chosen == expected  # type: ignore[union-attr]
    # a fresh load follows it (this process loaded `auto` as torch before the audit: another max length is new)
    fresh = CrossEncoderReranker(model, settings.model_copy(update={"reranker_max_length": 200}))
    assert fresh.backend == f"{expected}:cpu"
    assert any(f"auto now runs {expected}" in line for line in audit.lines())

    # the paired interval of onnx-int8's nDCG@10 change, recomputed: each backend scores each query's candidates
    # alone (as the audit does), pytrec_eval grades the reranked documents, and the same bootstrap takes the pairs
    ndcg = {}
    for backend in ("torch", "onnx-int8"):
        reranker = CrossEncoderReranker(model, settings.model_copy(update={"reranker_backend": backend}))
        run = {}
        for qid in list(dataset.queries)[:8]:
            result = engine.search(dataset.queries[qid], plan.with_(reranker=None), max_query_chars=None)
            scores = reranker.score(dataset.queries[qid], [c.text for c in result.candidates], use_cache=False)[0]
            folded: dict[str, float] = {}
            for c, score in zip(result.candidates, scores, strict=True):
                doc = str(c.metadata.get("document_id", c.id))
                folded[doc] = max(folded.get(doc, -np.inf), float(score))
            run[qid] = folded
        qrels = {qid: dataset.qrels[qid] for qid in run}
        per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
        ndcg[backend] = [per_query[qid]["ndcg_cut_10"] for qid in sorted(per_query)]
    expected = difference(ndcg["torch"], ndcg["onnx-int8"])
    assert rows["onnx-int8"].ndcg_change is not None
    assert rows["onnx-int8"].ndcg_change.delta == pytest.approx(expected.delta, abs=1e-9)
    assert (rows["onnx-int8"].ndcg_change.ci_low, rows["onnx-int8"].ndcg_change.ci_high) == pytest.approx(
        (expected.ci_low, expected.ci_high), abs=1e-9
    )


def test_a_pair_scores_the_same_alone_in_a_batch_and_under_8_clients_on_the_backend_auto_runs(
    tiny_settings: Settings,
) -> None:
    """On the backend `auto` runs with nothing audited (torch), through the engine's micro-batcher: one pair's
    score alone, inside a batch of other queries' pairs, and while 8 clients search at once."""
    engine = Engine(tiny_settings)
    reranker = engine.reranker()
    assert reranker is not None and reranker.backend == "torch:cpu"
    query, text = "what do herons eat", "Herons wade in shallow water and spear fish with their long beaks."
    others = [(f"question {i} about rivers and deltas", f"Rivers carry sediment {i} times a year.") for i in range(31)]
    alone = reranker.score_pairs([(query, text)])[0]
    in_batch = reranker.score_pairs([*others[:15], (query, text), *others[15:]])[15]

    def client(i: int) -> float:
        if i % 2:
            return reranker.score(query, [text], use_cache=False)[0][0]
        reranker.score(others[i][0], [o[1] for o in others], use_cache=False)
        return reranker.score(query, [text, *(o[1] for o in others[:i])], use_cache=False)[0][0]

    with ThreadPoolExecutor(8) as pool:
        concurrent = list(pool.map(client, range(8)))
    # fp32 torch promises its score to 1e-4 (BATCH_SCORE_TOLERANCE); padding moves it by about 1e-6
    assert in_batch == pytest.approx(alone, abs=1e-4)
    assert all(score == pytest.approx(alone, abs=1e-4) for score in concurrent)


def test_doctor_parity_from_the_command_line(tmp_path: Path, tiny_models: dict[str, Path]) -> None:
    env = {
        **os.environ, "WORKBENCH_DATA_DIR": str(tmp_path / "data"), "WORKBENCH_EXPORTS_DIR": str(tmp_path / "exports"),
        "EMBEDDING_MODEL": str(tiny_models["embedder"]), "RERANKER_MODEL": str(tiny_models["reranker"]),
    }  # fmt: skip
    workbench = str(Path(sys.executable).parent / "workbench")
    command = [workbench, "doctor", "--parity", "demo", "--max-queries", "4", "-k", "8"]
    done = subprocess.run([*command, "--json"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    audit = json.loads(done.stdout)
    assert audit["rows"][0]["backend"] == "torch" and audit["queries"] == 4 and audit["auto_runs"]
    assert audit["peak"]["fp32_gflops_per_core"] > 0
    # issue 52: `doctor` after the audit names the backend the audit said auto runs (it said torch while no
    # calibration was kept, and `doctor`, calibrating next, named openvino)
    doctor = subprocess.run([workbench, "doctor", "--json"], env=env, capture_output=True, text=True, timeout=600)
    assert doctor.returncode == 0, doctor.stderr
    assert json.loads(doctor.stdout)["choice"]["chosen"] == audit["auto_runs"]
    for row in audit["rows"]:
        assert 0 < row["ceiling"]["share_of_ceiling"] <= 1
    words = subprocess.run([*command, "--no-keep"], env=env, capture_output=True, text=True, timeout=600)
    assert words.returncode == 0 and "every backend against fp32 torch" in words.stdout
    assert "Traceback" not in words.stderr
    refused = subprocess.run(
        [workbench, "doctor", "--parity", "demo", "-k", "0"], env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode != 0 and "k" in refused.stderr and "Traceback" not in refused.stderr


@pytest.mark.live_server
def test_a_causal_lm_served_with_another_instruction_is_flagged(
    tiny_qwen3: Path,  # noqa: F811 - the fixture imported above
    served_data: Settings,
    tmp_path: Path,
) -> None:
    """Issue 53: the audit takes served copies of a causal-LM reranker beside the local one (torch, its only
    backend). `workbench serve` with the same model and template is faithful; served with another instruction (a
    template mismatch, as a server that ignores the model card's would be) it is not, and the audit says why."""
    from tests.live_servers import ApiServer, api_env

    settings = served_data.model_copy(update={"reranker_model": str(tiny_qwen3)})
    servers = []
    for name, instruction in (("same", ""), ("other", "Judge whether the passage is about cooking recipes")):
        data = tmp_path / name
        data.mkdir()
        env = api_env(settings.model_copy(update={"data_dir": data}), WORKBENCH_OFFLINE="1")
        env["RERANKER_INSTRUCTION"] = instruction
        servers.append(ApiServer(data, env))
    try:
        for server in servers:
            server.wait_ready()
        engine = Engine(settings)
        plan = engine.plan(collection="demo", k=10, top_n=5, reranker=str(tiny_qwen3))
        audit = audit_parity(
            engine, demo_dataset("test"), plan, served=[s.url for s in servers], max_queries=12, keep=False
        )
    finally:
        logs = [server.stop() for server in servers]
    assert [row.backend for row in audit.rows] == ["torch", *(s.url for s in servers)]  # no ONNX for a causal LM
    same, other = audit.rows[1], audit.rows[2]
    assert same.faithful, same.reasons
    assert not other.faithful and other.reasons
    assert all("Traceback" not in log for log in logs)

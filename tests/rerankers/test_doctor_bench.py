"""`workbench doctor --bench` (issue 74): every local cross-encoder on every backend at fixed lengths, as a table and
as JSON that validates against its documented schema. Timings are never asserted; every figure derived from them
is recomputed here from the rounds the report carries, and the FLOPs from the model's shape by hand."""

from __future__ import annotations

import json
import statistics
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import cli_here
from workbench.services.backend_bench import BENCH_LENGTHS, bench_pairs, demo_bench_pairs, schema_text

SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "doctor-bench.schema.json"


def _env(tmp_path: Path, tiny_models: dict[str, Path]) -> dict[str, str]:
    return {
        "WORKBENCH_DATA_DIR": str(tmp_path / "data"), "WORKBENCH_EXPORTS_DIR": str(tmp_path / "exports"),
        "WORKBENCH_MODELS_DIR": str(tiny_models["reranker"].parent), "WORKBENCH_CONFIG": "",
    }  # fmt: skip


def _hand_gflop(config: dict, tokens: float) -> float:
    """Matrix multiplies of one pair through a BERT encoder, by hand: per layer Q, K, V and out (4 of T·H·H),
    the scores and their use (2 of T·T·H), the feed-forward (2 of T·H·I), each multiply-add 2 FLOPs; then the
    pooler and the one-label classifier."""
    t, h, i, layers = tokens, config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    per_layer = 2 * (4 * t * h * h + 2 * t * t * h + 2 * t * h * i)
    return (layers * per_layer + 2 * h * h + 2 * h) / 1e9


def test_the_documented_schema_is_the_reports(tmp_path: Path) -> None:
    assert SCHEMA.read_text(encoding="utf-8") == schema_text(), (
        "docs/doctor-bench.schema.json is stale: write workbench.services.backend_bench.schema_text() into it"
    )


def test_bench_json_validates_and_its_figures_follow_from_its_rounds(
    tmp_path: Path, tiny_models: dict[str, Path]
) -> None:
    from workbench.rerankers.local.backends import ExportCache, fingerprint
    from workbench.rerankers.local.machine import FaithfulBackends, keep_faithful, machine_facts

    folder = tiny_models["reranker"]
    env = _env(tmp_path, tiny_models)
    # a kept audit, as `doctor --parity` leaves one: the bench reports its verdicts as they are
    keep_faithful(
        ExportCache(tmp_path / "exports").choices_root,
        FaithfulBackends(
            model=folder.name, model_print=fingerprint(folder), machine=machine_facts("cpu"),
            faithful={"torch": True, "onnx": False}, reasons={"onnx": "top 10 set changed on 9 of 50; τ 0.8"},
            queries=50, measured_at=datetime.now(UTC),
        ),
    )  # fmt: skip
    argv = ["doctor", "--bench", folder.name, "--lengths", "64,32", "--backends", "onnx", "--pairs", "4", "--json"]
    code, out, err = cli_here(argv, env)
    assert code == 0, err
    report = json.loads(out)
    jsonschema.validate(report, json.loads(SCHEMA.read_text(encoding="utf-8")))
    assert report["lengths"] == [32, 64] and report["machine"]["libraries"]["torch"]
    config = json.loads((folder / "config.json").read_text())
    # the demo's own judged pairs, at their own lengths as a search cuts them (256 tokens): their mean, by hand
    from transformers import AutoTokenizer

    demo = demo_bench_pairs(4)
    assert len({q for q, _ in demo}) > 1  # taken across the queries, not the first one's
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    lengths = [len(tokenizer(q, p, truncation=True, max_length=256)["input_ids"]) for q, p in demo]
    demo_cells = [c for c in report["cells"] if c["pairs_from"] != "fixed length"]
    assert {c["backend"] for c in demo_cells} == {"torch", "onnx"}
    assert {c["tokens"] for c in demo_cells} == {sum(lengths) / len(lengths)}
    for cell in demo_cells:
        assert cell["pairs_from"] == "demo's judged pairs" and cell["pairs"] == 4
        assert cell["gflop_per_pair"] == pytest.approx(_hand_gflop(config, sum(lengths) / len(lengths)))
    cells = {(c["backend"], c["tokens"]): c for c in report["cells"] if c["pairs_from"] == "fixed length"}
    assert set(cells) == {(b, t) for b in ("torch", "onnx") for t in (32, 64)}
    cores = report["machine"]["cores"]
    peak = report["machine"]["peak"]["fp32_gflops_per_core"]
    for (_backend, tokens), cell in cells.items():
        assert cell["model"] == folder.name and cell["pairs"] == 4 and len(cell["seconds"]) == report["rounds"]
        rate = 4 / statistics.median(cell["seconds"])
        assert cell["pairs_per_second"] == pytest.approx(rate)
        assert cell["pairs_per_second_per_core"] == pytest.approx(rate / cores)
        assert cell["gflop_per_pair"] == pytest.approx(_hand_gflop(config, tokens))
        assert cell["share_of_ceiling"] == pytest.approx(rate / cores * _hand_gflop(config, tokens) / peak)
        torch_median = statistics.median(cells[("torch", tokens)]["seconds"])
        assert cell["x_torch"] == pytest.approx(torch_median / statistics.median(cell["seconds"]))
    assert {c["audit"] for c in report["cells"] if c["backend"] == "torch"} == {"reference"}
    onnx = cells[("onnx", 32)]
    assert onnx["audit"] == "not faithful" and onnx["audit_reason"] == "top 10 set changed on 9 of 50"

    code, out, err = cli_here(argv[:-1], env)  # the table a user pastes
    assert code == 0, err
    assert "| model | backend | tokens | pairs/s per core |" in out
    assert f"| {folder.name} | onnx | 32 |" in out and "not faithful (top 10 set changed on 9 of 50)" in out
    assert f"| {folder.name} | onnx | {sum(lengths) / len(lengths):.0f} (the demo's pairs, mean) |" in out


@pytest.mark.parametrize("tokens", [32, *BENCH_LENGTHS])
def test_every_bench_pair_is_exactly_its_length(tiny_models: dict[str, Path], tokens: int) -> None:
    """Checked with the tokenizer itself: no pair is shorter (padded) or longer."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_models["reranker"]))
    pairs = bench_pairs(50)  # every demo query
    encoded = tokenizer([q for q, _ in pairs], [p for _, p in pairs], truncation="only_second", max_length=tokens)
    assert {len(ids) for ids in encoded["input_ids"]} == {tokens}


def test_a_backend_the_cpu_cannot_run_is_never_offered_and_named_is_one_line(
    tmp_path: Path, tiny_models: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.rerankers.local import machine

    cpu, flags = machine._cpu_info()
    monkeypatch.setattr(machine, "_cpu_info", lambda: (cpu, flags - {"avx512_bf16", "amx_bf16"}))
    assert "openvino-bf16" not in machine.installed_backends()
    env = _env(tmp_path, tiny_models)
    code, out, err = cli_here(["doctor", "--bench", "--backends", "openvino-bf16"], env)
    assert code != 0 and out == ""
    assert (
        err.strip()
        .splitlines()[-1]
        .endswith(
            "The backend openvino-bf16 is not offered on this machine: this CPU does not multiply bf16 (no "
            "avx512_bf16 or amx_bf16)."
        )
    )


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--bench", "--lengths", "8"], "A bench length (tokens a pair) is a whole number from 32 to 512; got 8."),
        (["--bench", "--lengths", "64,1024"], "from 32 to 512; got 1024."),
        (["--bench", "--lengths", "a,b"], "from 32 to 512; got 'a'."),
        (["--bench", "--lengths", ","], "Name at least one bench length (tokens a pair), e.g. 128,256."),
        (["--bench", "--pairs", "0"], "Pairs a round is a whole number from 1 to 512; got 0."),
        (["--bench", "--backends", "tensorrt"], "Unknown backend 'tensorrt': the backends are torch, onnx,"),
        (["--lengths", "64"], "--lengths go(es) with --bench."),
        (["--bench", "--parity", "demo"], "Ask for one of --bench, --parity and --checks at a time."),
        (["--bench", "no-such-model"], "no-such-model"),
        (["--bench", "tiny-embedder"], "tiny-embedder is not a cross-encoder: the bench times those."),
    ],
)
def test_bad_bench_requests_are_one_line(
    tmp_path: Path, tiny_models: dict[str, Path], argv: list[str], said: str
) -> None:
    code, out, err = cli_here(["doctor", *argv], _env(tmp_path, tiny_models))
    assert code != 0 and out == "" and said in err and "Traceback" not in err

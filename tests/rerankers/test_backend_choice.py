"""`auto` measured where it runs: the decision rule on faked timings, the int8 configuration a CPU takes, a real
calibration of the tiny model (kept, reused, followed, its pairs' length recounted), and
`workbench doctor`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import cli_here, tiny_env
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import ModelError
from workbench.rerankers import CrossEncoderReranker
from workbench.rerankers.local.backends import (
    ExportCache,
    backend_choice,
    backend_measured,
    fingerprint,
    load_cross_encoder,
    measure_backends_in_background,
)
from workbench.rerankers.local.machine import (
    BackendChoice,
    BackendFigures,
    FaithfulBackends,
    calibration_pairs,
    choice_path,
    decide,
    installed_backends,
    int8_config,
    keep_faithful,
    machine_facts,
)


def _figures(**backends: tuple[float, bool | None]) -> tuple[list[BackendFigures], dict[str, bool] | None]:
    """Faked timings, and the parity audit's verdicts (None: that backend was never audited)."""
    figures = [BackendFigures(backend="torch", ms_per_50_pairs=100, speedup=1.0)]
    faithful: dict[str, bool] = {}
    for name, (speed, verdict) in backends.items():
        figures.append(BackendFigures(backend=name.replace("_", "-"), ms_per_50_pairs=100 / speed, speedup=speed))
        if verdict is not None:
            faithful[name.replace("_", "-")] = verdict
    return figures, faithful or None


@pytest.mark.parametrize(
    ("backends", "chosen"),
    [
        ({"onnx": (1.0, True), "onnx_int8": (1.02, True)}, "torch"),  # issue 11's machine: nothing is faster
        ({"onnx": (2.6, True), "onnx_int8": (4.3, False)}, "onnx"),  # int8 is fastest but not faithful
        ({"onnx": (2.2, True), "onnx_int8": (3.6, True)}, "onnx"),  # int8's scores move with their batch-mates
        ({"onnx": (2.0, False), "openvino": (1.5, True)}, "openvino"),  # the fastest faithful one
        ({"onnx": (1.05, True), "onnx_int8": (0.9, True)}, "torch"),  # under 1.1x: not worth an export
        ({"onnx": (3.0, None)}, "torch"),  # never audited: never taken, however fast
    ],
)
def test_the_decision_rule_on_faked_timings(backends: dict, chosen: str) -> None:
    figures, faithful = _figures(**backends)
    assert decide(figures, faithful) == chosen
    assert decide(figures) == "torch"  # without an audit, auto is the reference


def test_the_audits_speeds_on_the_collections_own_pairs_decide_over_the_calibrations() -> None:
    figures, faithful = _figures(onnx=(1.0, True), openvino=(1.02, True))  # short demo pairs: nothing gains
    assert decide(figures, faithful) == "torch"
    assert decide(figures, faithful, {"onnx": 1.35, "openvino": 1.95}) == "openvino"  # long passages: it does
    assert decide(figures, faithful, {"onnx": 1.05, "openvino": 1.0}) == "torch"
    figures, faithful = _figures(onnx=(2.0, True))
    assert decide(figures, faithful, {"onnx": 0.9}) == "torch"  # the audit measured no gain where it counts


def test_the_int8_configuration_follows_the_cpu() -> None:
    assert int8_config("aarch64", set()) == "arm64" and int8_config("arm64", {"avx2"}) == "arm64"
    assert int8_config("x86_64", {"avx2", "avx512f", "avx512_vnni"}) == "avx512_vnni"
    assert int8_config("x86_64", {"avx2", "avx512f"}) == "avx512"
    assert int8_config("x86_64", {"avx2", "fma"}) == "avx2"


@pytest.fixture(scope="module")
def tiny_exports(tmp_path_factory: pytest.TempPathFactory, tiny_models: dict[str, Path]) -> Path:
    """The tiny cross-encoder exported once for every installed backend (ONNX, int8, OpenVINO), with no kept
    choice: each test copies it into its own exports folder, so it measures and chooses afresh without paying the
    exports again (the exports' own tests are tests/rerankers/test_onnx*.py and test_openvino_pairs.py)."""
    import shutil

    root = tmp_path_factory.mktemp("tiny-exports")
    backend_choice(str(tiny_models["reranker"]), exports_root=root)
    shutil.rmtree(ExportCache(root).choices_root)
    return root


def _exports_in(tmp_path: Path, tiny_exports: Path) -> Path:
    """A copy of the tiny model's exports in this test's folder (its own choices kept there)."""
    import shutil

    return Path(shutil.copytree(tiny_exports, tmp_path / "exports"))


def test_a_real_calibration_is_kept_reused_and_followed(
    tmp_path: Path, tiny_models: dict[str, Path], tiny_exports: Path
) -> None:
    model = str(tiny_models["reranker"])
    _exports_in(tmp_path, tiny_exports)
    settings = Settings(
        data_dir=tmp_path, exports_dir=tmp_path / "exports", reranker_model=model, reranker_calibrate=True, offline=True
    )
    engine = Engine(settings)
    plan = engine.plan(collection="any", reranker=model)
    assert not backend_measured(model, exports_root=settings.exports_dir)
    # a one-shot process measures before its first score (an app or API test earlier in this worker set the flag)
    measure_backends_in_background(on=False)
    before = engine.first_use(plan)  # what the page says while the first search waits
    assert before is not None and "measuring which backend" in before and "once per machine" in before
    heard: list[str] = []
    facts, choice = backend_choice(model, exports_root=settings.exports_dir, progress=heard.append)
    assert choice is not None and any(m.startswith("Measuring the reranker's backends") for m in heard)
    assert [f.backend for f in choice.figures] == list(installed_backends())  # each this machine runs, in order
    assert [f.backend for f in choice.figures][:4] == ["torch", "onnx", "onnx-int8", "openvino"]
    torch_row = choice.figures[0]
    assert torch_row.speedup == 1.0 and all(f.ms_per_50_pairs > 0 and f.tokens_per_pair > 0 for f in choice.figures)
    assert choice.chosen == "torch" and choice.audited is None and choice.machine == facts  # nothing audited yet
    assert "No parity audit yet" in choice.summary()
    assert choice_path(ExportCache(settings.exports_dir).choices_root, fingerprint(model), facts).is_file()
    assert backend_measured(model, exports_root=settings.exports_dir)
    loading = engine.first_use(plan)  # measured: only the load is left
    assert loading is not None and loading.startswith("Loading") and "measuring" not in loading
    engine.reranker(model)
    assert engine.first_use(plan) is None and engine.first_use(plan.with_(reranker=None)) is None

    # the pairs' mean length, recounted with the model's own tokenizer (truncated as the reranker truncates)
    pairs = calibration_pairs()[0]
    reranker = CrossEncoderReranker(model, settings.model_copy(update={"reranker_backend": "torch"}))
    lengths = [len(ids) for query, text in pairs for ids, _ in reranker.encode(query, [text])]
    assert torch_row.tokens_per_pair == pytest.approx(sum(lengths) / len(lengths), abs=0.5)

    heard.clear()  # kept: the next use reads it, measuring nothing
    _, again = backend_choice(model, exports_root=settings.exports_dir, progress=heard.append)
    assert again == choice and not heard


def test_auto_follows_the_kept_choice(tmp_path: Path, tiny_models: dict[str, Path]) -> None:
    """A kept choice whose (faked) figures make ONNX the fastest faithful backend: `auto` loads ONNX."""
    model = str(tiny_models["reranker"])
    settings = Settings(
        data_dir=tmp_path, exports_dir=tmp_path / "exports", reranker_model=model, reranker_max_length=200, offline=True
    )
    facts = machine_facts("cpu")
    figures, faithful = _figures(onnx=(1.8, True), onnx_int8=(2.5, False))
    faked = BackendChoice(
        model="tiny-reranker", model_print=fingerprint(model), machine=facts, chosen="torch", figures=figures,
        pairs=100, seconds=1.0, measured_at=datetime.now(UTC),
    )  # fmt: skip
    root = ExportCache(settings.exports_dir).choices_root
    path = choice_path(root, fingerprint(model), facts)
    path.parent.mkdir(parents=True)
    path.write_text(faked.model_dump_json())
    assert CrossEncoderReranker(model, settings).backend == "torch:cpu"  # timed, never audited: the reference
    keep_faithful(
        root,
        FaithfulBackends(
            model="tiny-reranker", model_print=fingerprint(model), machine=facts, faithful=faithful or {},
            reasons={}, queries=50, measured_at=datetime.now(UTC),
        ),
    )  # fmt: skip
    audited = settings.model_copy(update={"reranker_max_length": 199})  # a new load: this process kept the torch one
    assert CrossEncoderReranker(model, audited).backend == "onnx:cpu"


def test_doctor_prints_the_machine_and_the_choice(
    tmp_path: Path, tiny_models: dict[str, Path], tiny_exports: Path
) -> None:
    _exports_in(tmp_path, tiny_exports)
    env = {
        **os.environ, "WORKBENCH_DATA_DIR": str(tmp_path), "WORKBENCH_EXPORTS_DIR": str(tmp_path / "exports"),
        "RERANKER_MODEL": str(tiny_models["reranker"]),
    }  # fmt: skip
    command = [str(Path(sys.executable).parent / "workbench"), "doctor"]
    done = subprocess.run([*command, "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["machine"]["int8_config"] in {"avx2", "avx512", "avx512_vnni", "arm64"}
    assert body["choice"]["chosen"] in installed_backends() and len(body["choice"]["figures"]) == len(
        installed_backends()
    )
    words = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert words.returncode == 0 and f"auto → {body['choice']['chosen']}" in words.stdout
    assert "int8 configuration" in words.stdout and "Measuring" not in words.stderr  # kept from the first run


def test_speeds_taken_on_a_busy_machine_say_so_and_doctor_measures_them_again_when_it_is_quiet(
    tmp_path: Path,
    tiny_models: dict[str, Path],
    tiny_exports: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 52: the speeds `doctor` kept were measured at load 18, kept as this machine's, with no sign of it."""
    _exports_in(tmp_path, tiny_exports)
    from workbench.cli import main

    model = str(tiny_models["reranker"])
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("WORKBENCH_EXPORTS_DIR", str(tmp_path / "exports"))
    monkeypatch.setenv("RERANKER_MODEL", model)
    cores = os.cpu_count() or 1
    monkeypatch.setattr(os, "getloadavg", lambda: (9.0 * cores, 9.0 * cores, 9.0 * cores))  # the OS's load, busy
    assert main(["doctor"]) == 0
    said = capsys.readouterr()
    facts = machine_facts("cpu")
    path = choice_path(ExportCache(tmp_path / "exports").choices_root, fingerprint(model), facts)
    busy = BackendChoice.model_validate_json(path.read_text())
    assert busy.load_per_core == pytest.approx(9.0)
    assert "taken at load 9.0 per core, a busy machine: the speeds may be low" in said.out
    assert main(["doctor"]) == 0  # still busy: measuring again would be no better
    assert "measuring them again" not in capsys.readouterr().err
    monkeypatch.setattr(os, "getloadavg", lambda: (0.25 * cores, 0.5, 0.5))
    assert main(["doctor"]) == 0
    said = capsys.readouterr()
    assert (
        "the kept backend speeds were taken at load 9.0 per core (a busy machine); measuring them again now, at "
        "load 0.2" in said.err
    )
    quiet = BackendChoice.model_validate_json(path.read_text())
    assert quiet.load_per_core == pytest.approx(0.25) and quiet.measured_at > busy.measured_at
    assert "busy machine" not in said.out


@pytest.mark.parametrize("chosen", ["../../../victim", "", "tensorrt", "../onnx"])
def test_a_tampered_kept_choice_is_ignored_and_nothing_outside_the_exports_is_touched(
    tmp_path: Path, tiny_models: dict[str, Path], chosen: str
) -> None:
    """A kept choice naming no known backend (edited, damaged) is never acted on: `auto` loads as if none were
    kept, no folder beside or above the exports is deleted or written, and the other exports stay."""
    model = str(tiny_models["reranker"])
    data = tmp_path / "data"
    settings = Settings(
        data_dir=data, exports_dir=data / "exports", reranker_model=model, offline=True, reranker_calibrate=False
    )
    victim = tmp_path / "victim"
    (victim / "keep").mkdir(parents=True)
    (victim / "keep" / "file.txt").write_text("precious")
    facts = machine_facts("cpu")
    figures, _ = _figures(onnx=(1.8, True), onnx_int8=(2.5, False))
    faked = BackendChoice(
        model="tiny-reranker", model_print=fingerprint(model), machine=facts, chosen="onnx", figures=figures,
        pairs=100, seconds=1.0, measured_at=datetime.now(UTC),
    )  # fmt: skip
    exports = ExportCache(settings.exports_dir)
    path = choice_path(exports.choices_root, fingerprint(model), facts)
    path.parent.mkdir(parents=True)
    path.write_text(faked.model_dump_json().replace('"chosen":"onnx"', json.dumps({"chosen": chosen})[1:-1]))
    sibling = exports.folder(model, fingerprint(model), "onnx-int8")
    sibling.mkdir(parents=True)
    (sibling / "marker").write_text("an earlier export")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "data" not in p.parts)

    reranker = CrossEncoderReranker(model, settings)
    assert reranker.backend == "torch:cpu"  # as if none were kept: torch
    assert (victim / "keep" / "file.txt").read_text() == "precious"
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "data" not in p.parts) == before
    assert (sibling / "marker").read_text() == "an earlier export"
    with pytest.raises(ModelError, match="not a backend with an export"):
        exports.folder(model, fingerprint(model), chosen)


def test_an_unmeasured_reranker_answers_on_torch_at_once_and_switches_once_measured(
    tmp_path: Path, tiny_models: dict[str, Path], tiny_exports: Path
) -> None:
    """`auto` on a machine that never measured the model: torch at once, the measurement in a thread, then the
    chosen backend swapped in; torch's scores meanwhile are cached apart from the chosen backend's."""
    import time

    from workbench.rerankers.factory import first_use_words
    from workbench.rerankers.local.backends import measure_backends_in_background, measuring_now

    model = str(tiny_models["reranker"])
    _exports_in(tmp_path, tiny_exports)
    settings = Settings(data_dir=tmp_path, exports_dir=tmp_path / "exports", reranker_calibrate=True, offline=True)
    measure_backends_in_background()  # what the app, `serve` and `mcp` do: they stay up
    try:
        words = first_use_words(settings, model)
        assert words is not None and "measured in the background, once per machine" in words
        reranker = CrossEncoderReranker(model, settings)
    finally:
        measure_backends_in_background(on=False)
    assert reranker.backend == "torch:cpu" and reranker.measuring
    assert "tiny-reranker" in measuring_now() and reranker.cache_key.endswith("@torch-until-measured")
    texts = ["herons wade in shallow water", "oaks live for centuries", "glaciers carve valleys"]
    on_torch, _ = reranker.score("which birds wade", texts)
    deadline = time.monotonic() + 600
    while reranker.measuring and time.monotonic() < deadline:
        reranker.score("which birds wade", texts)  # searches go on while it measures
        time.sleep(0.2)
    assert not reranker.measuring and "tiny-reranker" not in measuring_now()
    _, choice = backend_choice(model, exports_root=settings.exports_dir)
    assert choice is not None and reranker.backend == f"{choice.chosen}:cpu"
    assert reranker.cache_key == model
    after, cached = reranker.score("which birds wade", texts)
    assert cached == 0  # the chosen backend scores afresh
    # the chosen backend's own scores, loaded apart from the reranker: the swap put in what was chosen
    chosen_model, label, _ = load_cross_encoder(
        model, "cpu", reranker.max_length, choice.chosen, exports_root=settings.exports_dir
    )
    assert label == reranker.backend
    alone = chosen_model.predict([("which birds wade", text) for text in texts], show_progress_bar=False)
    assert after == pytest.approx([float(score) for score in alone], abs=1e-5)
    if choice.chosen != "onnx-int8":  # int8 is held to the nDCG guard, not to torch's scores
        assert after == pytest.approx(on_torch, abs=1e-3)
    # a second reranker of the same model in this process starts on the kept choice, measuring nothing
    again = CrossEncoderReranker(model, settings)
    assert again.backend == reranker.backend and not again.measuring


# Fast by default (issue 76): faster backends no audit judged are audited on the demo without being asked ------------


def _calibrated_with_a_faster(model: str, exports: Path, faster: str = "onnx", speedup: float = 10.0) -> BackendChoice:
    """The tiny model calibrated for real, then its kept figures saying `faster` is `speedup` times torch and every
    other backend no faster (the tiny model's own speeds are noise): what drives the decision to audit, and the
    estimate a command weighs; the audit itself then runs for real."""
    backend_choice(model, exports_root=exports)
    path = choice_path(ExportCache(exports).choices_root, fingerprint(model), machine_facts("cpu"))
    kept = BackendChoice.model_validate_json(path.read_text(encoding="utf-8"))
    torch_ms = next(f.ms_per_50_pairs for f in kept.figures if f.backend == "torch")
    figures = [
        f.model_copy(update={"speedup": speedup if f.backend == faster else 1.0,
                             "ms_per_50_pairs": torch_ms / speedup if f.backend == faster else torch_ms})
        for f in kept.figures
    ]  # fmt: skip
    kept = kept.model_copy(update={"figures": figures, "chosen": "torch", "audited": None})
    path.write_text(kept.model_dump_json(), encoding="utf-8")
    return kept


def test_a_server_audits_the_faster_backends_in_the_background_and_auto_follows_the_verdict(
    tmp_path: Path, tiny_models: dict[str, Path], tiny_exports: Path
) -> None:
    """What the app, `serve` and `mcp` do: a reranker whose faster backend no audit judged answers on torch at once,
    the audit runs on the demo in the background (its progress said as checked of how many), its verdict is kept,
    and the reranker then runs what `auto` chooses by it; a second start finds the verdict and audits nothing.
    WORKBENCH_AUTO_AUDIT=false never audits."""
    import time

    from workbench.rerankers.local.backends import auditing_now, set_auto_auditor, unaudited_faster
    from workbench.services.backend_audit import enable_auto_audit

    model = str(tiny_models["reranker"])
    exports = _exports_in(tmp_path, tiny_exports)
    settings = Settings(
        data_dir=tmp_path / "data", exports_dir=exports, embedding_model=str(tiny_models["embedder"]),
        reranker_model=model, reranker_calibrate=True, auto_audit=True, offline=True,
    )  # fmt: skip
    _calibrated_with_a_faster(model, exports)
    assert unaudited_faster(model, exports_root=exports) == ["onnx"]
    measure_backends_in_background()
    enable_auto_audit(settings)
    seen: set[tuple[int, int]] = set()
    try:
        reranker = CrossEncoderReranker(model, settings)
        assert reranker.measuring and reranker.backend == "torch:cpu"  # answers at once, on torch
        texts = ["herons wade in shallow water", "oaks live for centuries", "glaciers carve valleys"]
        reranker.score("which birds wade", texts)  # searches go on, on torch, their scores kept apart
        assert reranker.cache_key.endswith("@torch-until-measured")
        deadline = time.monotonic() + 600
        while reranker.measuring and time.monotonic() < deadline:
            seen |= set(auditing_now().values())
            time.sleep(0.05)
        assert not reranker.measuring and auditing_now() == {}
        # the verdict is kept: nothing is left to audit, and auto runs what the rule says by it
        assert unaudited_faster(model, exports_root=exports) == []
        _, choice = backend_choice(model, exports_root=exports)
        assert choice is not None and choice.audited is not None and "onnx" in choice.audited.faithful
        assert reranker.backend == f"{choice.chosen}:cpu"
        again = CrossEncoderReranker(model, settings)  # a second start: the kept verdict, no audit
        assert not again.measuring and again.backend == reranker.backend
    finally:
        measure_backends_in_background(on=False)
        set_auto_auditor(None)
    assert seen and all(total == 2 and 0 <= done <= total for done, total in seen), seen  # torch, then onnx

    # WORKBENCH_AUTO_AUDIT=false: today's behaviour, torch until `doctor --parity` is run
    other = _exports_in(tmp_path / "off", tiny_exports)
    _calibrated_with_a_faster(model, other)
    off = settings.model_copy(update={"exports_dir": other, "auto_audit": False})
    measure_backends_in_background()
    enable_auto_audit(off)
    try:
        quiet = CrossEncoderReranker(model, off)
    finally:
        measure_backends_in_background(on=False)
        set_auto_auditor(None)
    assert not quiet.measuring and quiet.backend == "torch:cpu" and unaudited_faster(model, exports_root=other)
    for said, meant in (("false", False), ("true", True)):
        os.environ["WORKBENCH_AUTO_AUDIT"] = said
        try:
            assert Settings().auto_audit is meant
        finally:
            os.environ["WORKBENCH_AUTO_AUDIT"] = "0"  # as tests/conftest.py leaves it


def test_a_command_audits_first_only_when_its_pairs_repay_the_audit(
    tmp_path: Path, tiny_models: dict[str, Path], tiny_exports: Path
) -> None:
    """`eval` weighs the audit against its own work, from the kept calibration: 50 demo queries at k = 50 (2,500
    pairs) repay an audit of a backend ten times faster; 5 queries do not, and it says so with the estimate."""
    from workbench.services.backend_audit import AUDIT_OVERHEAD, AUDIT_QUERIES, audit_cost
    from workbench.vocab import PARITY_K

    model = str(tiny_models["reranker"])
    exports = _exports_in(tmp_path, tiny_exports)
    kept = _calibrated_with_a_faster(model, exports)
    settings = Settings(
        data_dir=tmp_path / "data", exports_dir=exports, reranker_model=model, reranker_calibrate=True,
        auto_audit=True, offline=True,
    )  # fmt: skip
    per_pair = next(f.ms_per_50_pairs for f in kept.figures if f.backend == "torch") / 50_000
    cost = audit_cost(settings, model, 2_500)
    assert cost is not None and cost.backends == ["onnx"]
    assert cost.torch_seconds == pytest.approx(2_500 * per_pair) and cost.fastest_seconds == pytest.approx(
        250 * per_pair
    )
    assert cost.audit_seconds == pytest.approx(AUDIT_QUERIES * PARITY_K * per_pair * 1.1 * AUDIT_OVERHEAD)
    assert cost.repays and not audit_cost(settings, model, 250).repays  # type: ignore[union-attr]
    assert audit_cost(settings.model_copy(update={"auto_audit": False}), model, 10**6) is None

    env = {**tiny_env(tmp_path / "data", tiny_models), "WORKBENCH_EXPORTS_DIR": str(exports),
           "WORKBENCH_CALIBRATE_BACKENDS": "1", "WORKBENCH_AUTO_AUDIT": "1"}  # fmt: skip
    arguments = ["eval", "demo", "-k", "50", "-n", "10", "--depth", "none", "--no-save"]
    code, _, said = cli_here([*arguments, "--max-queries", "5"], env)
    assert code == 0 and "not worth it for this run (`workbench doctor --parity demo` runs it)" in said, said
    assert "250 pairs take about" in said
    code, _, said = cli_here(arguments, env)
    assert code == 0 and "2,500 pairs take about" in said and "auditing them on the demo first" in said, said
    assert "the audit admitted" in said
    _, choice = backend_choice(model, exports_root=exports)
    assert choice is not None and choice.audited is not None and "onnx" in choice.audited.faithful
    code, _, said = cli_here(arguments, env)  # the next command has nothing to audit
    assert code == 0 and "auditing them" not in said and "not worth it" not in said, said


def test_the_app_says_it_checks_the_faster_backends_then_ranks_on_the_one_auto_chose(
    tmp_path: Path, tiny_models: dict[str, Path], tiny_exports: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app's first start on a machine whose faster backend no audit judged: its sidebar says the check and how
    far it got (the audit is held at its start, so the page is seen while it runs; then it runs for real), a search
    meanwhile ranks on torch, and once the verdict is in, a search names the backend `auto` chose by it."""
    import threading
    import time

    from streamlit.testing.v1 import AppTest

    from workbench.app import ENTRY_SCRIPT
    from workbench.app.state import engine_resource
    from workbench.rerankers.local.backends import set_auto_auditor
    from workbench.services import backend_audit

    model = str(tiny_models["reranker"])
    exports = _exports_in(tmp_path, tiny_exports)
    _calibrated_with_a_faster(model, exports)
    env = {**tiny_env(tmp_path / "data", tiny_models), "WORKBENCH_EXPORTS_DIR": str(exports),
           "WORKBENCH_CALIBRATE_BACKENDS": "1", "WORKBENCH_AUTO_AUDIT": "1"}  # fmt: skip
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    release, real = threading.Event(), backend_audit.audit_on_demo

    def held(*args: object, **kwargs: object) -> object:
        release.wait(300)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(backend_audit, "audit_on_demo", held)
    engine_resource.clear()
    try:
        at = AppTest.from_file(str(ENTRY_SCRIPT), default_timeout=180)
        at.run()
        checking, deadline = "", time.monotonic() + 120
        while not checking and time.monotonic() < deadline:
            at.run()
            checking = next((c.value for c in at.sidebar.caption if "Checking the faster backends" in c.value), "")
        assert checking.startswith(
            "Checking the faster backends of tiny-reranker against fp32 torch on the demo: 0 of 2, in the background"
        ), [c.value for c in at.sidebar.caption]
        at.text_input(key="w.query").input("vacation days").run()
        assert any("Ranked by `torch:cpu`" in c.value or "Scored by `torch:cpu`" in c.value for c in at.caption)
        release.set()
        reranker = engine_resource().reranker()
        assert reranker is not None
        while getattr(reranker, "measuring", False) and time.monotonic() < deadline + 300:
            time.sleep(0.2)
        _, choice = backend_choice(model, exports_root=exports)
        assert choice is not None and choice.audited is not None and reranker.backend == f"{choice.chosen}:cpu"
        at.text_input(key="w.query").input("parental leave").run()
        assert not [c for c in at.sidebar.caption if "Checking the faster backends" in c.value]
        assert any(f"by `{choice.chosen}:cpu`" in c.value for c in at.caption), [c.value for c in at.caption]
    finally:
        release.set()
        set_auto_auditor(None)
        measure_backends_in_background(on=False)
        engine_resource.clear()

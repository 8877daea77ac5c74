"""How a cross-encoder runs: torch (fp32 on the CPU, fp16 or bf16 on CUDA), ONNX Runtime fp32, ONNX Runtime with
int8 weights (dynamic quantization), or OpenVINO in fp32, bf16 (where the CPU multiplies bf16) or static int8 (NNCF),
each pair its own request (`openvino_pairs`). The variants come from sentence-transformers' own exports
(`backend="onnx"` and `backend="openvino"`, through Optimum and optimum-intel), its quantization helper
(`export_dynamic_quantized_onnx_model`) and NNCF's post-training quantization.

An export is made once per model folder and kept under `<exports_dir>/<name>-<fingerprint>/<backend>/` (the user's
cache folder: once per machine),
where the fingerprint hashes the model's files; a manifest written last records the exported file's hash, so a
stale, half-written or damaged export is found and rebuilt, never used.

`auto` chooses per device: on CUDA, torch in half precision; on the CPU, what a short calibration measured on this
machine for this model (`machine.measure_backends`, run once and kept under `<exports_dir>/backend-choices/`): the
fastest backend that the parity audit (`workbench doctor --parity`) found faithful to fp32 torch here and that is
at least 1.1x faster, else torch. With nothing kept (never measured, never audited), torch.
The int8 export follows the CPU: `avx512_vnni`, `avx512`, `avx2` or `arm64`. A reranker loaded before its
model was ever measured here runs on torch at once while `measure_in_background` measures, then switches.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import shutil
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from workbench.config import get_settings
from workbench.errors import ModelError, WorkbenchError
from workbench.extras import require_extra
from workbench.models import LOADED, load_failure, pick_device, quiet_transformers, refusing_fresh_weights
from workbench.redact import plain_text
from workbench.rerankers.local.machine import (
    MIN_SPEEDUP,
    BackendChoice,
    FaithfulBackends,
    MachineFacts,
    choice_path,
    installed_backends,
    kept_choice,
    kept_faithful,
    machine_facts,
    measure_backends,
)
from workbench.rerankers.local.openvino_pairs import PairwiseOpenVINO, quantize_static_int8
from workbench.rerankers.local.openvino_pairs import calibration_pairs as openvino_calibration_pairs
from workbench.vocab import BACKENDS, BATCH_DEPENDENT_BACKENDS, EXPORTED_BACKENDS, OPENVINO_BACKENDS, spoken

log = logging.getLogger("workbench.rerankers")
FP32_FILE = "onnx/model.onnx"
OPENVINO_FILE = "openvino/openvino_model.xml"
OPENVINO_INT8_FILE = "openvino/openvino_model_int8.xml"
CALIBRATION_MAX_LENGTH = 512  # the int8 calibration pairs are read whole (they are shorter)
_NOT_READ_BY_LOADERS = (".md",)  # a model card; every other file a loader may read is part of the fingerprint
_export_lock = threading.Lock()
_fingerprints: dict[tuple[Any, ...], str] = {}
_fingerprint_lock = threading.Lock()


def int8_file(config: str) -> str:
    """The int8 export's file for a quantization configuration (sentence-transformers' own naming: unsigned
    weights for avx2, signed for the others)."""
    return f"onnx/model_{'quint8' if config == 'avx2' else 'qint8'}_{config}.onnx"


def export_file(backend: str, int8_config: str = "avx2") -> str:
    """The model file of a backend's export, inside its export folder."""
    return {
        "onnx-int8": int8_file(int8_config),
        "openvino": OPENVINO_FILE,
        "openvino-bf16": OPENVINO_FILE,
        "openvino-int8": OPENVINO_INT8_FILE,
    }.get(backend, FP32_FILE)


@functools.cache  # asked on every load of an export; NNCF and the calibration pairs do not change in a process
def export_recipe(backend: str) -> str:
    """What else than the model's files an export depends on (an export made by another recipe is made again): the
    static int8 quantizer's version and its calibration pairs; nothing for the others."""
    if backend != "openvino-int8":
        return ""
    import nncf

    pairs = json.dumps(openvino_calibration_pairs(), ensure_ascii=False).encode()
    return f"nncf {nncf.__version__}; calibration {hashlib.blake2b(pairs, digest_size=8).hexdigest()}"


def _read_into(digest: Any, path: Path) -> None:
    with path.open("rb") as handle:
        while block := handle.read(1 << 22):
            digest.update(block)


def model_files(folder: Path) -> list[str]:
    """Every file a loader may read in a model folder, as paths relative to it, in a fixed order: the weights
    (every shard), every config and tokenizer file, and the sub-modules' folders (a ColBERT's `1_Dense/`); hidden
    files and model cards are left out."""
    found = []
    for path in folder.rglob("*"):
        relative = path.relative_to(folder)
        if any(part.startswith(".") for part in relative.parts) or path.suffix in _NOT_READ_BY_LOADERS:
            continue
        if path.is_file():
            found.append(relative.as_posix())
    return sorted(found)


def fingerprint(folder: str | Path) -> str:
    """A hash of every file of a model folder a loader may read (`model_files`: names, sizes and contents). Kept
    per process while the files' sizes and modification times stay the same: a load asks for it more than once,
    and hashing a model's weights takes a noticeable fraction of a second."""
    folder = Path(folder)
    present = [(name, (folder / name).stat()) for name in model_files(folder)] if folder.is_dir() else []
    key = (str(folder.resolve()), tuple((name, st.st_size, st.st_mtime_ns) for name, st in present))
    with _fingerprint_lock:
        known = _fingerprints.get(key)
    if known is not None:
        return known
    digest = hashlib.blake2b(digest_size=16)
    for name, _ in present:
        digest.update(name.encode())
        _read_into(digest, folder / name)
    with _fingerprint_lock:
        _fingerprints[key] = digest.hexdigest()
    return digest.hexdigest()


def _export_files(folder: Path) -> dict[str, str]:
    """Every file of an export folder a load may read, by its path in the folder, with a hash of its contents."""
    return {name: _file_hash(folder / name) for name in model_files(folder) if name != "manifest.json"}


def _file_hash(path: Path) -> str:
    digest = hashlib.blake2b(digest_size=16)
    _read_into(digest, path)
    return digest.hexdigest()


def choose_backend(requested: str, device: str, calibrated: str | None = None) -> str:
    """The backend to run: the requested one; for `auto`, torch on a GPU, else the choice kept for this machine
    (timed, and admitted by the parity audit), else torch, the reference every other backend is audited against."""
    if requested != "auto":
        return requested
    if device.startswith("cuda") or device == "mps":
        return "torch"
    return calibrated if calibrated is not None else "torch"


def intact_export(folder: Path, model_print: str, file_name: str, recipe: str = "") -> bool:
    """The export is complete, made from these exact model files by this recipe (the int8 quantization's), and
    every file a load reads from it (the model, its weights, the tokenizer and config files) is as it was
    written: a file changed, added or removed since makes the export be made again."""
    manifest = folder / "manifest.json"
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
        return (
            isinstance(data, dict)
            and data.get("fingerprint") == model_print
            and data.get("recipe", "") == recipe
            and (folder / file_name).is_file()
            and data.get("files") == _export_files(folder)
        )
    except (OSError, ValueError):
        return False


def staged_export(folder: Path, make: Callable[[Path], None], model_print: str, recipe: str = "") -> None:
    """Make an export into a staging folder beside `folder` (`make(staging)`), write its manifest (the model's
    fingerprint, the recipe, every file as written) and move it into place: a half-made export is never found as
    one. On a failure the staging folder is removed and the failure raised."""
    shutil.rmtree(folder, ignore_errors=True)
    staging = folder.with_name(folder.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        make(staging)
        manifest = {"fingerprint": model_print, "recipe": recipe, "files": _export_files(staging)}
        (staging / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        staging.rename(folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


class ExportCache:
    """ONNX exports of model folders under `root` (`Settings.exports_dir`, in the user's cache folder), checked
    against a manifest on every use."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    @property
    def choices_root(self) -> Path:
        """Where `auto`'s calibrated choices are kept, beside the exports they were measured with."""
        return self.root / "backend-choices"

    def folder(self, model_path: str | Path, model_print: str, backend: str) -> Path:
        """The export folder of one backend of one model: always a child of `root`, so that rebuilding it never
        deletes anything else (a backend outside EXPORTED_BACKENDS has no export folder)."""
        if backend not in EXPORTED_BACKENDS:
            raise ModelError(f"'{plain_text(backend)[:40]}' is not a backend with an export: use {spoken(BACKENDS)}.")
        shared = "openvino" if backend == "openvino-bf16" else backend  # bf16 runs the fp32 export in bf16
        return self.root / f"{Path(model_path).name}-{model_print[:16]}" / shared

    def valid(self, folder: Path, model_print: str, file_name: str, recipe: str = "") -> bool:
        """The export is intact (`intact_export`)."""
        return intact_export(folder, model_print, file_name, recipe)

    def ensure(
        self,
        model_path: str,
        backend: str,
        progress: Callable[[str], None] | None = None,
        int8_config: str = "avx2",
    ) -> tuple[Path, str]:
        """The folder and file name of an intact export for `backend` ("onnx", "onnx-int8" quantized with
        `int8_config`, or "openvino"), made if needed."""
        model_print = fingerprint(model_path)
        folder = self.folder(model_path, model_print, backend)
        file_name = export_file(backend, int8_config)
        recipe = export_recipe(backend)
        with _export_lock:
            if self.valid(folder, model_print, file_name, recipe):
                return folder, file_name
            say = progress or (lambda message: log.warning(message))
            say(f"Exporting {Path(model_path).name} for the {backend} backend (once; kept in {self.root})…")

            def make(staging: Path) -> None:
                from sentence_transformers import CrossEncoder
                from sentence_transformers.backend import export_dynamic_quantized_onnx_model

                with quiet_export():
                    runtime = "openvino" if backend in OPENVINO_BACKENDS else "onnx"
                    with refusing_fresh_weights(Path(model_path).name):
                        model = CrossEncoder(model_path, backend=runtime, device="cpu")
                    model.save_pretrained(str(staging))
                    if backend == "onnx-int8":
                        suffix = Path(file_name).stem.removeprefix("model_")
                        export_dynamic_quantized_onnx_model(model, int8_config, str(staging), file_suffix=suffix)
                    if backend == "openvino-int8":
                        say("Quantizing it to static int8 (NNCF, calibrated on the demo's passages)…")
                        quantize_static_int8(
                            staging / OPENVINO_FILE, staging / file_name, model.tokenizer, CALIBRATION_MAX_LENGTH
                        )

            try:
                staged_export(folder, make, model_print, recipe)
            except Exception as exc:
                raise ModelError(
                    f"Exporting {Path(model_path).name} to ONNX failed ({type(exc).__name__}: {exc}). "
                    "Set RERANKER_BACKEND=torch to run without ONNX."
                ) from exc
            return folder, file_name


@contextmanager
def quiet_export() -> Iterator[None]:
    """Silences what an export (a reranker's or an embedder's) prints besides our own progress message:
    sentence-transformers' advice to save the export (we do, in the cache) and the tracer's warnings about constants,
    which are expected for this graph."""
    import torch

    advice = logging.getLogger("sentence_transformers.backend.utils")
    level = advice.level
    advice.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            yield
    finally:
        advice.setLevel(level)


def quiet_session_options() -> Any:
    """ONNX Runtime options whose worker threads sleep between runs instead of spinning: a spinning pool takes
    the CPU from everything else in the process (the torch embedder, the app, other searches)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return options


def load_cross_encoder(
    path: str,
    device: str = "auto",
    max_length: int = 256,
    backend: str = "auto",
    *,
    exports_root: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    setting: str = "RERANKER_MODEL",
    calibrate_backends: bool = True,
) -> tuple[Any, str, str]:
    """The CrossEncoder at a resolved path for a backend (torch, onnx, onnx-int8, auto), loaded once per process,
    device, max length and backend: (model returning raw logits, backend label, model fingerprint).

    ONNX exports are made once and kept under `exports_root` (default: the process settings' exports folder);
    `progress(message)` hears when one is made, and when `auto` first measures the backends on this machine
    (`calibrate_backends`).
    """
    chosen = pick_device(device)
    root = Path(exports_root) if exports_root is not None else get_settings().exports_dir

    def load() -> tuple[Any, str, str]:
        quiet_transformers()
        try:
            return _load_backend(path, backend, chosen, max_length, ExportCache(root), progress, calibrate_backends)
        except WorkbenchError:
            raise
        except Exception as exc:
            raise load_failure(path, setting, exc) from exc

    return LOADED.get("cross_encoder", (path, chosen, max_length, backend, str(root)), load)


def _pick_backend(
    model_path: str,
    model_print: str,
    backend: str,
    device: str,
    facts: MachineFacts,
    max_length: int,
    exports: ExportCache,
    progress: Callable[[str], None] | None,
    calibrate_backends: bool,
) -> str:
    """The backend a load runs: `backend` as named, or for `auto` on a CPU the kept audit's choice (measured now
    when `calibrate_backends`); a backend this machine cannot run as named is refused in one line."""
    calibrated = None
    if backend == "auto" and device == "cpu":
        kept = _kept_choice(model_path, model_print, facts, max_length, exports, progress, measure=calibrate_backends)
        calibrated = kept.chosen if kept is not None else None
        if calibrated not in (None, *installed_backends()):  # measured with a runtime since uninstalled
            calibrated = None
    chosen = choose_backend(backend, device, calibrated)
    if chosen in OPENVINO_BACKENDS:
        require_extra("openvino", f"The {chosen} backend")
    if chosen == "openvino-bf16" and chosen not in installed_backends():
        raise ModelError(
            "The openvino-bf16 backend needs a CPU that multiplies bf16 (AVX512_BF16 or AMX); this one does not, and "
            "OpenVINO would quietly run fp32 under its name. Use RERANKER_BACKEND=openvino."
        )
    return chosen


def _torch_cross_encoder(model_path: str, device: str, max_length: int, identity: Any) -> tuple[Any, str]:
    """The torch CrossEncoder (bf16, or fp16 where bf16 is not, on a GPU) and its backend label."""
    import torch
    from sentence_transformers import CrossEncoder

    dtype = None
    if device.startswith("cuda"):
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    kwargs = {"torch_dtype": dtype} if dtype is not None else {}
    with refusing_fresh_weights(Path(model_path).name):
        model = CrossEncoder(
            model_path, device=device, max_length=max_length, activation_fn=identity, model_kwargs=kwargs
        )
    precision = {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(dtype, "fp32")  # type: ignore[call-overload]
    return model, f"torch-{precision}:{device}" if precision != "fp32" else f"torch:{device}"


def _load_backend(
    model_path: str,
    backend: str,
    device: str,
    max_length: int,
    exports: ExportCache,
    progress: Callable[[str], None] | None = None,
    calibrate_backends: bool = False,
) -> tuple[Any, str, str]:
    """A sentence-transformers CrossEncoder for `backend` on `device` that returns raw logits, its backend
    label ('torch:cpu', 'torch-fp16:cuda', 'onnx-int8:cpu'...) and the model's fingerprint."""
    import torch
    from sentence_transformers import CrossEncoder

    model_print = fingerprint(model_path)
    facts = machine_facts(device)
    chosen = _pick_backend(model_path, model_print, backend, device, facts, max_length, exports, progress,
                           calibrate_backends)  # fmt: skip
    identity = torch.nn.Identity()
    try:
        if chosen == "torch":
            return (*_torch_cross_encoder(model_path, device, max_length, identity), model_print)

        def load_export() -> Any:
            folder, file_name = exports.ensure(model_path, chosen, progress, facts.int8_config)
            if chosen in OPENVINO_BACKENDS:
                from transformers import AutoTokenizer

                tokenizer = AutoTokenizer.from_pretrained(str(folder))
                return PairwiseOpenVINO(folder / file_name, tokenizer, max_length, chosen)
            return CrossEncoder(
                str(folder),
                backend="onnx",
                device="cpu",
                max_length=max_length,
                activation_fn=identity,
                model_kwargs={"file_name": file_name, "session_options": quiet_session_options()},
            )

        try:
            model = load_export()
        except ModelError:
            raise
        except Exception:
            # A damaged export that the manifest did not catch: rebuild it once.
            shutil.rmtree(exports.folder(model_path, model_print, chosen), ignore_errors=True)
            model = load_export()
        return model, f"{chosen}:cpu", model_print
    except ModelError:
        raise
    except Exception as exc:
        advice = (
            "Set RERANKER_MODEL to another model"
            if chosen == "torch"
            else ("Set RERANKER_BACKEND=torch, or RERANKER_MODEL to another model")
        )
        raise ModelError(
            f"The reranker {Path(model_path).name} cannot be loaded for the {chosen} backend "
            f"({type(exc).__name__}: {exc}). {advice}."
        ) from exc


def kept_audit(model_path: str, *, exports_root: str | Path) -> FaithfulBackends | None:
    """The parity audit's verdicts kept for the model on this CPU (what `auto` decides by), or None; measures
    nothing."""
    return kept_faithful(ExportCache(exports_root).choices_root, fingerprint(model_path), machine_facts("cpu"))


def backend_measured(model_path: str, device: str = "auto", *, exports_root: str | Path) -> bool:
    """Whether `auto` already has a kept choice for the model on this machine (or needs none: a GPU)."""
    chosen_device = pick_device(device)
    if chosen_device != "cpu":
        return True
    exports = ExportCache(exports_root)
    return kept_choice(exports.choices_root, fingerprint(model_path), machine_facts(chosen_device)) is not None


def backend_choice(
    model_path: str,
    device: str = "auto",
    max_length: int = 256,
    *,
    exports_root: str | Path,
    recalibrate: bool = False,
    progress: Callable[[str], None] | None = None,
) -> tuple[MachineFacts, BackendChoice | None]:
    """This machine's facts and `auto`'s kept choice for the model, measured now when there is none (or when
    `recalibrate`); no choice on a GPU, where `auto` is torch in half precision."""
    chosen_device = pick_device(device)
    facts = machine_facts(chosen_device)
    model_print = fingerprint(model_path)
    exports = ExportCache(exports_root)
    if recalibrate:
        choice_path(exports.choices_root, model_print, facts).unlink(missing_ok=True)
    if chosen_device != "cpu":
        return facts, kept_choice(exports.choices_root, model_print, facts)
    quiet_transformers()
    return facts, _kept_choice(model_path, model_print, facts, max_length, exports, progress, measure=True)


def _kept_choice(
    model_path: str,
    model_print: str,
    facts: MachineFacts,
    max_length: int,
    exports: ExportCache,
    progress: Callable[[str], None] | None,
    measure: bool,
) -> BackendChoice | None:
    """`auto`'s choice kept for the model on this CPU; when there is none and `measure`, calibrated now (each
    backend loaded on the CPU, its export made if needed) and kept."""
    kept = kept_choice(exports.choices_root, model_print, facts)
    if kept is not None or not measure:
        return kept

    def load_one(name: str) -> Any:
        return _load_backend(model_path, name, "cpu", max_length, exports, progress)[0]

    return measure_backends(model_path, model_print, facts, load_one, exports.choices_root, progress or log.warning)


AuditProgress = Callable[[int, int], None]  # (backends checked, of how many)
# What audits a model's faster backends (its folder, the backends, progress): a parity audit on the demo, which lives
# above this floor, so a front end that stays up registers it (`services.backend_audit.enable_auto_audit`)
AutoAuditor = Callable[[str, list[str], AuditProgress], None]
_auditor: AutoAuditor | None = None
_auditing: dict[str, tuple[int, int]] = {}  # model fingerprint -> (backends checked, of how many), while it runs


def set_auto_auditor(auditor: AutoAuditor | None) -> None:
    """From now on, a background measurement that leaves faster backends no audit judged runs `auditor` on them
    (None: never; WORKBENCH_AUTO_AUDIT=false)."""
    global _auditor
    _auditor = auditor


def unaudited_faster(model_path: str, *, exports_root: str | Path) -> list[str]:
    """The backends `auto`'s kept calibration found at least MIN_SPEEDUP times faster than torch on this CPU that no
    parity audit has judged here (never a batch-dependent one, which `auto` never takes); empty without a kept
    calibration."""
    exports = ExportCache(exports_root)
    kept = kept_choice(exports.choices_root, fingerprint(model_path), machine_facts("cpu"))
    if kept is None:
        return []
    judged = kept.audited.faithful if kept.audited is not None else {}
    return [
        f.backend
        for f in kept.figures
        if f.backend != "torch"
        and f.speedup >= MIN_SPEEDUP
        and f.backend not in BATCH_DEPENDENT_BACKENDS
        and f.backend not in judged
    ]


def needs_audit(model_path: str, *, exports_root: str | Path) -> bool:
    """Whether a background measurement would audit the model's faster backends now: an auditor is registered and
    the kept calibration leaves faster backends no audit judged."""
    return _auditor is not None and bool(unaudited_faster(model_path, exports_root=exports_root))


def auditing_now() -> dict[str, tuple[int, int]]:
    """The rerankers whose faster backends are being audited in the background, by folder name: (checked, of)."""
    with _measuring_lock:
        return {_measuring_names.get(key, key): progress for key, progress in _auditing.items()}


def _audit_faster(model_path: str, model_print: str, exports_root: str | Path) -> None:
    """The registered auditor on the model's unaudited faster backends (a failure is logged: `auto` keeps what it
    ran before, torch)."""
    auditor = _auditor
    faster = unaudited_faster(model_path, exports_root=exports_root) if auditor is not None else []
    if auditor is None or not faster:
        return
    name = Path(model_path).name
    log.info("Checking %s's faster backends (%s) against fp32 torch on the demo, in the background.", name,
             ", ".join(faster))  # fmt: skip

    def progress(done: int, total: int) -> None:
        with _measuring_lock:
            _auditing[model_print] = (done, total)

    progress(0, len(faster) + 1)
    try:
        auditor(model_path, faster, progress)
    except Exception as exc:  # an optimisation: the reranker keeps running on what it ran
        log.warning("Checking the faster backends of %s failed (%s): staying on torch.", name, exc)
    finally:
        with _measuring_lock:
            _auditing.pop(model_print, None)


_background = threading.Event()  # set by a front end that stays up (the app, `serve`, `mcp`)
_measuring: dict[str, list[Callable[[], None]]] = {}  # model fingerprint -> who waits to switch when it is done
_measuring_names: dict[str, str] = {}
_measuring_lock = threading.Lock()


def measure_backends_in_background(on: bool = True) -> None:
    """Called by a front end that stays up: from now on, a reranker never measured on this CPU answers on torch
    while its backends are measured in a thread. A one-shot command measures before its first score instead (a
    thread still measuring when the process exits would be cut off inside the export)."""
    if on:
        _background.set()
    else:
        _background.clear()


def background_measurement() -> bool:
    """Whether this process measures backends in the background (see `measure_backends_in_background`)."""
    return _background.is_set()


def measuring_now() -> list[str]:
    """The rerankers whose backends are being measured in the background in this process, by folder name."""
    with _measuring_lock:
        return sorted(_measuring_names.values())


def measure_in_background(
    model_path: str, max_length: int, *, exports_root: str | Path, when_done: Callable[[], None]
) -> None:
    """Measure `auto`'s backends for the model on this CPU in a thread of its own (once per model and process,
    however many ask), keep the choice, then call every `when_done`. A failure is logged; the callers stay on
    what they run."""
    model_print = fingerprint(model_path)
    with _measuring_lock:
        if model_print in _measuring:
            _measuring[model_print].append(when_done)
            return
        _measuring[model_print] = [when_done]
        _measuring_names[model_print] = Path(model_path).name

    def measure() -> None:
        try:
            backend_choice(model_path, "cpu", max_length, exports_root=exports_root, progress=log.info)
            _audit_faster(model_path, model_print, exports_root)  # faster backends no audit judged: checked now
        except Exception as exc:  # measuring is an optimisation: the reranker keeps running on torch
            log.warning("Measuring the backends of %s failed (%s): staying on torch.", Path(model_path).name, exc)
            with _measuring_lock:
                _measuring.pop(model_print, None)
                _measuring_names.pop(model_print, None)
            return
        with _measuring_lock:
            waiting = _measuring.pop(model_print, [])
        try:
            for done in waiting:
                done()
        finally:
            with _measuring_lock:
                _measuring_names.pop(model_print, None)

    threading.Thread(target=measure, name=f"workbench-measure-{model_print[:8]}", daemon=True).start()

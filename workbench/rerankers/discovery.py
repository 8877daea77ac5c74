"""The rerankers a user can pick: cross-encoder folders found on this machine (the models folders, the Hugging
Face cache), the configured RERANKER_MODEL and RERANKER_SERVICE_URL, the rerankers WORKBENCH_RERANKERS names
(services, hosted APIs), and the configured cross-encoder's int8 variant (`<id>@onnx-int8`)."""

from __future__ import annotations

from pathlib import Path

from workbench.config import Settings
from workbench.errors import ModelNotFoundError
from workbench.models import ModelChoice, is_cross_encoder, resolve_model
from workbench.redact import redact_url
from workbench.rerankers.factory import runs_here, split_backend
from workbench.vocab import BACKEND_SEPARATOR


def discover_rerankers(settings: Settings) -> list[ModelChoice]:
    """Cross-encoders this machine has: in WORKBENCH_MODELS_DIR (as <name> or <org>/<name>), in the Hugging
    Face cache (by hub id), and the configured RERANKER_MODEL when it resolves locally; the services and hosted
    rerankers the settings name; and the configured model's int8 variant. The configured one first."""
    found = _in_models_dirs(settings)
    for model_id, choice in _in_hub_cache().items():
        found.setdefault(model_id, choice)
    configured = settings.reranker_model
    if settings.reranker_enabled and configured not in found:
        choice = _configured(settings, configured)
        if choice is not None:
            found[configured] = choice
    extra = [settings.reranker_service_url or "", *settings.extra_rerankers()]
    for model_id in (m for m in extra if m and m not in found):
        found[model_id] = ModelChoice(model_id, redact_url(model_id), "WORKBENCH_RERANKERS or RERANKER_SERVICE_URL")
    local = found.get(configured)
    if local is not None and runs_here(configured) and split_backend(configured)[1] is None:
        variant = f"{configured}{BACKEND_SEPARATOR}onnx-int8"
        found.setdefault(variant, ModelChoice(variant, local.path, "int8 variant of RERANKER_MODEL (exported once)"))
    return sorted(found.values(), key=lambda c: (c.id != configured, c.short_name.lower()))


def is_local_cross_encoder(choice: ModelChoice) -> bool:
    """A choice that is a cross-encoder folder on this machine as it is (no service, no `@backend` variant)."""
    return isinstance(choice.path, Path) and BACKEND_SEPARATOR not in choice.id and is_cross_encoder(choice.path)


def _in_models_dirs(settings: Settings) -> dict[str, ModelChoice]:
    """The cross-encoders in the models folders, by <name> or <org>/<name>."""
    found: dict[str, ModelChoice] = {}
    for models_dir in settings.model_dirs():
        if not models_dir.is_dir():
            continue
        for config in sorted([*models_dir.glob("*/config.json"), *models_dir.glob("*/*/config.json")]):
            folder = config.parent
            if is_cross_encoder(folder):
                model_id = folder.relative_to(models_dir).as_posix()
                found.setdefault(model_id, ModelChoice(model_id, folder.resolve(), f"models dir {models_dir}"))
    return found


def _in_hub_cache() -> dict[str, ModelChoice]:
    """The cross-encoders in the Hugging Face cache, by hub id."""
    found: dict[str, ModelChoice] = {}
    try:
        from huggingface_hub.constants import HF_HUB_CACHE
    except ImportError:  # pragma: no cover - huggingface_hub comes with sentence-transformers
        return found
    for snapshot in sorted(Path(HF_HUB_CACHE).glob("models--*/snapshots/*")):
        if is_cross_encoder(snapshot):
            model_id = snapshot.parents[1].name.removeprefix("models--").replace("--", "/")
            found.setdefault(model_id, ModelChoice(model_id, snapshot, "Hugging Face cache"))
    return found


def _configured(settings: Settings, configured: str) -> ModelChoice | None:
    """RERANKER_MODEL as a choice: a service or hosted model as named, a cross-encoder when it resolves here."""
    if not runs_here(configured):
        return ModelChoice(configured, redact_url(configured), "RERANKER_MODEL")
    try:
        offline = settings.model_copy(update={"offline": True})
        path = Path(resolve_model(split_backend(configured)[0], offline, setting="RERANKER_MODEL"))
    except ModelNotFoundError:
        return None
    return ModelChoice(configured, path, "RERANKER_MODEL")

"""The rerankers a user can pick: cross-encoder folders found on this machine (the models folders, the Hugging
Face cache) and the configured RERANKER_MODEL."""

from __future__ import annotations

from pathlib import Path

from workbench.config import Settings
from workbench.errors import ModelNotFoundError
from workbench.models import ModelChoice, is_cross_encoder, resolve_model


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

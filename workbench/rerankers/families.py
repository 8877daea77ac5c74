"""What a local reranker folder is, read from its config before anything loads: a cross-encoder (a sequence
classifier with its head), a causal LM scored by its answer tokens (Qwen3-Reranker's or bge-reranker-v2-gemma's
layout), or something the workbench must not score as a cross-encoder (a ColBERT model, an encoder without a
classification head, another causal LM family), which is refused naming what it is. A causal LM loaded as a
cross-encoder gets a freshly initialised head, and its scores are noise: that never happens.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from workbench.errors import ConfigError
from workbench.redact import public_name
from workbench.rerankers.late_interaction import is_pylate_checkpoint

FamilyName = Literal["cross-encoder", "causal-lm", "late-interaction", "refused"]
CROSS_ENCODER_HEADS = ("ForSequenceClassification",)
CAUSAL_LM_HEADS = ("ForCausalLM", "ForConditionalGeneration")
# Causal-LM reranker profiles the workbench runs, by the config's model_type (each held to its reference code).
CAUSAL_LM_PROFILES = {"qwen3": "qwen3", "gemma": "gemma", "qwen2": "mxbai"}  # model_type → profile


@dataclass(frozen=True)
class ModelFamily:
    """A folder's family, its architecture as its config names it, and its profile (a causal LM's template)."""

    name: FamilyName
    architecture: str
    model_type: str
    profile: str | None = None


def _read_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _is_colbert(folder: Path) -> bool:
    """A PyLate (or Stanford ColBERT) checkpoint: its sentence-transformers modules or config name ColBERT."""
    for name in ("modules.json", "config_sentence_transformers.json", "artifact.metadata"):
        path = folder / name
        if path.is_file() and ("pylate" in (text := path.read_text(encoding="utf-8", errors="replace").lower())
                               or "colbert" in text):  # fmt: skip
            return True
    return False


def model_family(folder: str | Path) -> ModelFamily:
    """The family of the model in `folder`, from its config.json (architectures, model_type) and, for ColBERT, its
    sentence-transformers files. A config that names no architecture is taken as a cross-encoder (older
    sentence-transformers folders), as before."""
    folder = Path(folder)
    config = _read_json(folder / "config.json")
    architectures = [str(a) for a in config.get("architectures") or []]
    model_type = str(config.get("model_type") or "")
    architecture = architectures[0] if architectures else ""
    if is_pylate_checkpoint(folder):  # a ColBERT model PyLate saved: its encoder and Dense projection
        return ModelFamily("late-interaction", architecture or "ColBERT", model_type, "colbert")
    if _is_colbert(folder):  # another ColBERT layout (Stanford's): its vectors cannot be reproduced here
        return ModelFamily("refused", architecture or "ColBERT", model_type, "colbert")
    if not architectures or any(a.endswith(CROSS_ENCODER_HEADS) for a in architectures):
        return ModelFamily("cross-encoder", architecture, model_type)
    if any(a.endswith(CAUSAL_LM_HEADS) for a in architectures):
        profile = CAUSAL_LM_PROFILES.get(model_type)
        return ModelFamily("causal-lm" if profile else "refused", architecture, model_type, profile)
    return ModelFamily("refused", architecture, model_type)


def refusal(folder: str | Path, family: ModelFamily) -> ConfigError:
    """The one line for a model the workbench will not score as a reranker: what it is, and why not."""
    name = public_name(str(folder))
    if family.profile == "colbert":
        what = (
            "a late-interaction (ColBERT) model in a layout other than PyLate's: its scores are MaxSim over token "
            "vectors, not a classifier's, and the workbench reads PyLate checkpoints only"
        )
    elif family.architecture.endswith(CAUSAL_LM_HEADS):
        what = (
            f"a causal LM ({family.architecture}, model_type '{family.model_type}') whose reranking template the "
            f"workbench does not know (it runs: {', '.join(sorted(CAUSAL_LM_PROFILES))})"
        )
    else:
        what = f"a {family.architecture or 'model'} without a sequence-classification head"
    return ConfigError(
        f"The reranker '{name}' is {what}: loaded as a cross-encoder it would be scored by a freshly initialised "
        "head (noise). Give a cross-encoder folder, or a causal-LM reranker of a family named above."
    )

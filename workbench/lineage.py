"""Which base-model lineage a model comes from (Qwen, Gemma, Llama, GPT, ...), read from its name or, for a local
folder, its config's `model_type`.

An LLM judge favours rankers of its own lineage (Balog, Metzler, Qin, SIGIR 2025, arXiv 2503.19092), so a verdict
resting on a judge's grades states the judge's lineage beside the candidate's and refuses a same-lineage "ship".
A reranker built on a base model belongs to that base model's lineage: bge-reranker-v2-gemma is a Gemma,
mxbai-rerank-v2 and Qwen3-Reranker are Qwens. A name that matches nothing is of an unknown lineage (None), and
the check says it could not be made.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

# In order: the more specific first (a Gemma-based BGE is a Gemma; mxbai's v2 rerankers are Qwen2 models).
_BY_NAME: tuple[tuple[str, str], ...] = (
    (r"mxbai-rerank-(?:xsmall|base|large)-v2", "Qwen"),
    (r"qwen|qwq", "Qwen"),
    (r"gemma|gemini", "Gemma / Gemini"),
    (r"llama|vicuna|\bzephyr", "Llama"),
    (r"mistral|mixtral|ministral|codestral", "Mistral"),
    (r"deepseek", "DeepSeek"),
    (r"\bphi-?\d", "Phi"),
    (r"gpt|\bo[134](?:-mini)?\b|openai|davinci|text-embedding", "GPT (OpenAI)"),
    (r"claude|anthropic", "Claude"),
    (r"command|cohere|rerank-(?:english|multilingual|v3)", "Cohere"),
    (r"\bglm|chatglm", "GLM"),
    (r"jina", "Jina"),
    (r"minilm|ms-marco|bert|electra|deberta|\bbge-reranker-(?:base|large)\b", "BERT-style encoder"),
)
# A local folder's config.json model_type, where its name says nothing.
_BY_MODEL_TYPE: dict[str, str] = {
    "qwen2": "Qwen", "qwen3": "Qwen", "qwen2_moe": "Qwen", "qwen3_moe": "Qwen", "gemma": "Gemma / Gemini",
    "gemma2": "Gemma / Gemini", "gemma3": "Gemma / Gemini", "llama": "Llama", "mistral": "Mistral",
    "mixtral": "Mistral", "phi": "Phi", "phi3": "Phi", "deepseek_v2": "DeepSeek", "deepseek_v3": "DeepSeek",
    "bert": "BERT-style encoder", "roberta": "BERT-style encoder", "xlm-roberta": "BERT-style encoder",
    "electra": "BERT-style encoder", "deberta-v2": "BERT-style encoder", "modernbert": "BERT-style encoder",
}  # fmt: skip


def _model_type(folder: Path) -> str:
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return str(config.get("model_type") or "") if isinstance(config, dict) else ""


def model_lineage(name: str | None) -> str | None:
    """The lineage of the model `name` (a hub id, a served model's name, or a local folder), or None when unknown.
    A local folder is read by its config's model_type first: its folder name may say nothing."""
    if not name:
        return None
    try:
        folder = Path(name)
        model_type = _model_type(folder) if folder.is_dir() else ""
    except (OSError, ValueError):
        model_type = ""
    if model_type in _BY_MODEL_TYPE:
        return _BY_MODEL_TYPE[model_type]
    lowered = name.lower()
    return next((lineage for pattern, lineage in _BY_NAME if re.search(pattern, lowered)), None)

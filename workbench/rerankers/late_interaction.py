"""Late-interaction (ColBERT) rerankers: a PyLate checkpoint's token vectors, scored by MaxSim, as PyLate encodes.

A query is cut to the model's `query_length` (32) with its prefix token ("[Q] ") after [CLS], padded to that length
with [MASK] tokens (query expansion; attended to only when the config says `attend_to_expansion_tokens`), and every
position is kept. A document is cut to `document_length` (180) with its prefix ("[D] "); its padding and the
skiplist's tokens (punctuation) are left out. Each kept token's vector is the encoder's output through the
checkpoint's Dense projection, L2-normalised. A document's score is MaxSim: for each query vector, its largest dot
product with the document's vectors, added up (`score_scale` 'raw': unbounded, not a probability).

Every document is scored on its own vectors only: PyLate's `rank.rerank` pads a list's documents with zero vectors,
so there a document whose best match for some query token is negative scores that token at 0 instead, and its score
depends on the longest document it was ranked with. The workbench masks the padding (as ColBERT's own scoring does),
so a score never depends on its batch-mates; the test holds it to PyLate's `colbert_scores` with the mask, and to
`rank.rerank` for a document ranked alone, to 1e-5.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from workbench.config import Settings
from workbench.errors import ConfigError
from workbench.models import pick_device, refusing_fresh_weights
from workbench.redact import plain_text, public_name
from workbench.rerankers.base import BaseReranker
from workbench.rerankers.local.backends import fingerprint
from workbench.rerankers.scores.cache import ScoreCache
from workbench.vocab import ScoreScale

PYLATE_DENSE = "pylate.models.Dense.Dense"
IDENTITY = "torch.nn.modules.linear.Identity"


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"The ColBERT model's {path.name} is missing from {path.parent.name}.") from exc
    except (OSError, ValueError) as exc:
        raise ConfigError(f"The ColBERT model's {path.name} cannot be read ({type(exc).__name__}).") from exc


def _table(path: Path) -> dict[str, Any]:
    value = _json(path)
    return value if isinstance(value, dict) else {}


def is_pylate_checkpoint(folder: str | Path) -> bool:
    """A PyLate ColBERT folder: its modules.json names PyLate's Dense projection after the encoder."""
    try:
        modules = json.loads((Path(folder) / "modules.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(modules, list) and any(isinstance(m, dict) and m.get("type") == PYLATE_DENSE for m in modules)


def _length(config: dict[str, Any], key: str, default: int, limit: int, model_id: str) -> int:
    """A token length from the model's config_sentence_transformers.json: a whole number from 1 to what its encoder
    holds (`max_position_embeddings`), else one line naming it (a length past the encoder is never tokenized)."""
    value = config.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        said = plain_text(str(value))[:30]
        raise ConfigError(
            f"The ColBERT model '{public_name(model_id)}' has {key} {said} in config_sentence_transformers.json: it "
            f"must be a whole number from 1 to {limit} (what its encoder holds)."
        )
    return value


class ColbertReranker(BaseReranker):
    """A PyLate ColBERT checkpoint on torch (CPU or CUDA): MaxSim over normalised token vectors (see the module)."""

    def __init__(self, model_id: str, path: str | Path, settings: Settings, cache: ScoreCache) -> None:
        import torch
        from safetensors.torch import load_file
        from transformers import AutoModel, AutoTokenizer

        super().__init__(model_id, cache)
        folder = Path(path)
        config = _table(folder / "config_sentence_transformers.json")
        modules = _json(folder / "modules.json")
        dense_dir = folder / str(next(m.get("path") or "" for m in modules if m.get("type") == PYLATE_DENSE))
        dense = _table(dense_dir / "config.json")
        if dense.get("activation_function", IDENTITY) != IDENTITY or dense.get("use_residual"):
            raise ConfigError(
                f"The ColBERT model '{model_id}' projects its vectors with an activation or a residual the workbench "
                "does not reproduce (it runs PyLate's plain linear projection)."
            )
        self.score_scale: ScoreScale = "raw"
        positions = _table(folder / "config.json").get("max_position_embeddings")
        limit = positions if isinstance(positions, int) and not isinstance(positions, bool) and positions > 0 else 512
        self.query_length = _length(config, "query_length", 32, limit, model_id)
        self.document_length = _length(config, "document_length", 180, limit, model_id)
        self.expansion = bool(config.get("do_query_expansion", True))
        self.attend_to_expansion = bool(config.get("attend_to_expansion_tokens", False))
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
            with refusing_fresh_weights(public_name(model_id) or "", unused=("pooler.",)):  # MaxSim reads no pooler
                model = AutoModel.from_pretrained(str(folder), dtype=torch.float32)
            weights = load_file(str(dense_dir / "model.safetensors"))
            projection = weights["linear.weight"]
        except (OSError, KeyError, ValueError) as exc:
            raise ConfigError(
                f"The ColBERT model '{public_name(model_id)}' cannot be loaded: {type(exc).__name__} reading its "
                "encoder, tokenizer or projection (is the folder complete, as PyLate saved it?)."
            ) from exc
        pad = self.tokenizer.mask_token_id if self.tokenizer.mask_token_id is not None else self.tokenizer.eos_token_id
        if pad is None:
            raise ConfigError(f"The ColBERT model '{model_id}' has no [MASK] or end token to expand queries with.")
        self.tokenizer.pad_token_id = pad  # PyLate's query expansion pads with [MASK]
        self.query_prefix = self._token(config.get("query_prefix", "[Q] "))
        self.document_prefix = self._token(config.get("document_prefix", "[D] "))
        self.skiplist = {self.tokenizer.convert_tokens_to_ids(w) for w in config.get("skiplist_words") or []}
        self.lowercase = bool(_table(folder / "sentence_bert_config.json").get("do_lower_case", False)) if (
            folder / "sentence_bert_config.json").is_file() else False  # fmt: skip
        self.device = pick_device(settings.reranker_device)
        self.model = model.to(self.device).eval()
        self.projection = projection.to(self.device)
        self.projection_bias = weights.get("linear.bias")
        self.batch_size = settings.reranker_batch_size or 32
        self.backend = (
            f"colbert torch:{self.device} (MaxSim, query {self.query_length} tokens, document {self.document_length})"
        )
        self.fingerprint = fingerprint(str(folder))
        self._lock = threading.Lock()

    def _token(self, prefix: Any) -> int | None:
        """The id of a prefix token ("[Q] "), None for no prefix."""
        if not prefix:
            return None
        found = self.tokenizer.convert_tokens_to_ids(str(prefix))
        if found is None or found == self.tokenizer.unk_token_id:
            raise ConfigError(f"The ColBERT model's tokenizer has no '{str(prefix).strip()}' token.")
        return int(found)

    @property
    def store_key(self) -> str | None:
        """The weights, device and lengths: what its scores depend on."""
        return f"colbert:{self.fingerprint}:{self.backend}"

    def encode(self, texts: list[str], is_query: bool) -> list[Any]:
        """Each text's kept token vectors (tokens × dimensions, L2-normalised), as PyLate's encode gives them."""
        import torch

        prefix = self.query_prefix if is_query else self.document_prefix
        length = (self.query_length if is_query else self.document_length) - (1 if prefix is not None else 0)
        cleaned = [t.strip().lower() if self.lowercase else t.strip() for t in texts]
        vectors: list[Any] = []
        skiplist = torch.tensor(sorted(self.skiplist), dtype=torch.long)
        with torch.inference_mode():
            for start in range(0, len(cleaned), self.batch_size):
                batch = self.tokenizer(
                    cleaned[start : start + self.batch_size], truncation="longest_first", max_length=length,
                    padding="max_length" if is_query and self.expansion else True, return_tensors="pt",
                )  # fmt: skip
                if prefix is not None:  # the prefix token after [CLS], attended to
                    fills = {"input_ids": prefix, "attention_mask": 1}
                    batch = {
                        name: torch.cat(
                            [ids[:, :1], torch.full((len(ids), 1), fills.get(name, 0), dtype=ids.dtype), ids[:, 1:]],
                            dim=1,
                        )
                        for name, ids in batch.items()
                    }
                if is_query and self.attend_to_expansion:
                    batch["attention_mask"] = torch.ones_like(batch["attention_mask"])
                hidden = self.model(**{k: v.to(self.device) for k, v in batch.items()}).last_hidden_state
                projected = hidden @ self.projection.T
                if self.projection_bias is not None:
                    projected = projected + self.projection_bias.to(self.device)
                for row in range(projected.shape[0]):
                    if is_query:
                        keep = torch.ones_like(batch["input_ids"][row], dtype=torch.bool)
                        if not self.expansion:
                            keep = batch["attention_mask"][row].bool()
                    else:
                        skip = torch.isin(batch["input_ids"][row], skiplist)
                        keep = batch["attention_mask"][row].bool() & ~skip
                    vectors.append(torch.nn.functional.normalize(projected[row][keep.to(self.device)], p=2, dim=1))
        return vectors

    def predict(self, query: str, texts: list[str], deadline: float | None = None) -> list[float]:
        """Every text's MaxSim against the query, no score cache."""
        if not texts:
            return []
        with self._lock:  # one model run at a time: torch's threads already use the cores
            query_vectors = self.encode([query], is_query=True)[0]
            documents = self.encode(texts, is_query=False)
            scores = [float((query_vectors @ d.T).max(dim=1).values.sum()) if len(d) else 0.0 for d in documents]
        self.counted(documents=len(texts), tokens=sum(len(d) for d in documents) + len(query_vectors))
        return scores

"""Causal-LM pointwise rerankers (Qwen3-Reranker's layout): a causal LM asked, under its own template and
instruction, whether a document meets a query; the score is the probability of "yes" against "no" at the last
position (the log-softmax of the two logits, exponentiated), exactly as the model card's transformers code computes
it: the pair cut `longest_first` to leave room for the template, left padding, batches sorted by length.

A profile is one family's template; the instruction is settable (RERANKER_INSTRUCTION) and named in the backend, so
every figure says which template and instruction made it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from workbench.config import Settings
from workbench.errors import ConfigError
from workbench.models import pick_device
from workbench.rerankers.backends import fingerprint
from workbench.rerankers.base import BaseReranker
from workbench.rerankers.cache import ScoreCache
from workbench.rerankers.families import ModelFamily
from workbench.vocab import ScoreScale


@dataclass(frozen=True)
class CausalProfile:
    """One family's template: the text before and after the formatted pair, the pair's format, the default
    instruction and the two answer tokens."""

    name: str
    prefix: str
    suffix: str
    pair: str  # with {instruction}, {query} and {document}
    instruction: str
    yes: str = "yes"
    no: str = "no"


QWEN3 = CausalProfile(
    name="qwen3",
    prefix=(
        "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
        'provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n'
    ),
    suffix="<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
    pair="<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}",
    instruction="Given a web search query, retrieve relevant passages that answer the query",
)
PROFILES = {QWEN3.name: QWEN3}


class CausalLMReranker(BaseReranker):
    """A causal-LM reranker on torch (CPU or CUDA), behind the score cache; scores are probabilities of "yes"."""

    score_scale: ScoreScale = "probability"

    def __init__(self, model_id: str, path: str, family: ModelFamily, settings: Settings, cache: ScoreCache) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        super().__init__(model_id, cache)
        self.path = path
        self.profile = PROFILES[family.profile or ""]
        self.instruction = settings.reranker_instruction or self.profile.instruction
        self.max_length = settings.reranker_max_length
        self.device = pick_device(settings.reranker_device)
        self.tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
        if self.tokenizer.pad_token is None:
            raise ConfigError(f"The causal-LM reranker at '{model_id}' has no pad token in its tokenizer.")
        self.model = AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32).to(self.device).eval()
        self.yes_id = self._answer_id(self.profile.yes)
        self.no_id = self._answer_id(self.profile.no)
        self.prefix_ids = self.tokenizer.encode(self.profile.prefix, add_special_tokens=False)
        self.suffix_ids = self.tokenizer.encode(self.profile.suffix, add_special_tokens=False)
        self.budget = self.max_length - len(self.prefix_ids) - len(self.suffix_ids)
        if self.budget < 16:
            raise ConfigError(
                f"RERANKER_MAX_LENGTH {self.max_length} leaves no room for a pair beside {self.profile.name}'s "
                f"template ({len(self.prefix_ids) + len(self.suffix_ids)} tokens)."
            )
        self.batch_size = settings.reranker_batch_size or 8
        self.backend = f"causal-lm torch:{self.device} ({self.profile.name} template; instruction: {self.instruction})"
        self.fingerprint = fingerprint(path)
        self._lock = threading.Lock()

    @property
    def store_key(self) -> str | None:
        """The weights, the template and instruction, the device and the max length: what its scores depend on."""
        return f"causal-lm:{self.fingerprint}:{self.backend}:{self.max_length}"

    def _answer_id(self, token: str) -> int:
        found = self.tokenizer.convert_tokens_to_ids(token)
        if found is None or found == self.tokenizer.unk_token_id:
            raise ConfigError(f"The causal-LM reranker's tokenizer has no '{token}' token: its answers cannot be read.")
        return int(found)

    def pair_text(self, query: str, document: str) -> str:
        return self.profile.pair.format(instruction=self.instruction, query=query, document=document)

    def _inputs(self, query: str, texts: list[str]) -> list[list[int]]:
        encoded = self.tokenizer(
            [self.pair_text(query, text) for text in texts], padding=False, truncation="longest_first",
            return_attention_mask=False, max_length=self.budget,
        )  # fmt: skip
        return [self.prefix_ids + list(ids) + self.suffix_ids for ids in encoded["input_ids"]]

    def cut_shares(self, query: str, texts: list[str]) -> list[float]:
        """For each text, the share of its formatted pair's tokens cut at RERANKER_MAX_LENGTH with the template."""
        whole = self.tokenizer([self.pair_text(query, text) for text in texts], add_special_tokens=False)
        return [max(0.0, 1 - self.budget / len(ids)) if ids else 0.0 for ids in whole["input_ids"]]

    def _run(self, rows: list[list[int]]) -> list[float]:
        import torch

        scores = [0.0] * len(rows)
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]), reverse=True)
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                chunk = order[start : start + self.batch_size]
                batch: Any = self.tokenizer.pad({"input_ids": [rows[i] for i in chunk]}, padding=True,
                                                return_tensors="pt")  # fmt: skip
                logits = self.model(**{k: v.to(self.device) for k, v in batch.items()}).logits[:, -1, :]
                pair = torch.stack([logits[:, self.no_id], logits[:, self.yes_id]], dim=1).float()
                values = torch.nn.functional.log_softmax(pair, dim=1)[:, 1].exp().tolist()
                for i, value in zip(chunk, values, strict=True):
                    scores[i] = float(value)
        self.counted(documents=len(rows), tokens=sum(len(r) for r in rows))
        return scores

    def predict(self, query: str, texts: list[str], deadline: float | None = None) -> list[float]:
        """Every text scored under the profile's template, no score cache."""
        if not texts:
            return []
        with self._lock:  # one model run at a time: torch's threads already use the cores
            return self._run(self._inputs(query, texts))

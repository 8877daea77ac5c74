"""Causal-LM pointwise rerankers: a causal LM asked, under its own template and instruction, whether a document
meets a query, scored at the last position exactly as its model card's transformers code scores it. Three profiles:

- `qwen3` (Qwen3-Reranker): the probability of "yes" against "no" (the log-softmax of the two logits,
  exponentiated); the formatted pair cut `longest_first` to leave room for the template.
- `gemma` (bge-reranker-v2-gemma): the raw logit of "Yes" after "<bos>A: {query}\nB: {passage}\n{prompt}"; the
  query cut at 3/4 of the max length, the passage at the max length, the pair `only_second`, the prompt after it.
- `mxbai` (mxbai-rerank-v2, a Qwen2): the logit of "1" minus that of "0" after "query: …\ndocument: …" and the
  task prompt inside Qwen's chat template, cut as the mxbai-rerank library cuts.

Left padding, batches sorted by length (RoPE attends by relative position, so the padding a batch needs changes no
score). A profile is one family's template; the instruction is settable (RERANKER_INSTRUCTION) and named in the
backend, so every figure says which template and instruction made it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from workbench.config import Settings
from workbench.errors import ConfigError
from workbench.models import pick_device, refusing_fresh_weights
from workbench.redact import public_name
from workbench.rerankers.base import BaseReranker
from workbench.rerankers.families import ModelFamily
from workbench.rerankers.local.backends import fingerprint
from workbench.rerankers.scores.cache import ScoreCache
from workbench.vocab import ScoreScale

Fixed = Callable[[str], tuple[int, ...]]  # a template piece's token ids (memoised per reranker)


@dataclass(frozen=True)
class CausalProfile:
    """One family's template: the text before and after the formatted pair, the pair's format, the default
    instruction, the two answer tokens, and how the last position's logits become a score."""

    name: str
    prefix: str
    suffix: str
    pair: str  # with {instruction}, {query} and {document}
    instruction: str
    yes: str = "yes"
    no: str | None = "no"  # None: the score is the "yes" logit alone
    score_scale: ScoreScale = "probability"
    # how the last position's logits become a score: the probability of yes against no, the yes logit, or the yes
    # logit minus the no logit
    rule: Literal["softmax", "yes logit", "difference"] = "softmax"

    def rows(
        self, tokenizer: Any, fixed: Fixed, instruction: str, query: str, texts: list[str], max_length: int
    ) -> list[list[int]]:
        """The token ids of each (query, text) pair under this template, cut to `max_length` as the card cuts
        (`fixed` gives the ids of the template's fixed pieces, encoded once per reranker)."""
        prefix, suffix = list(fixed(self.prefix)), list(fixed(self.suffix))
        budget = pair_budget(self, fixed, max_length)
        encoded = tokenizer(
            [self.pair.format(instruction=instruction, query=query, document=text) for text in texts], padding=False,
            truncation="longest_first", return_attention_mask=False, max_length=budget,
        )  # fmt: skip
        return [prefix + list(ids) + suffix for ids in encoded["input_ids"]]


@dataclass(frozen=True)
class GemmaProfile(CausalProfile):
    """bge-reranker-v2-gemma's template (FlagEmbedding's `get_inputs`, as its model card runs it)."""

    def rows(
        self, tokenizer: Any, fixed: Fixed, instruction: str, query: str, texts: list[str], max_length: int
    ) -> list[list[int]]:
        prompt, sep = list(fixed(instruction)), list(fixed("\n"))
        asked = tokenizer(f"A: {query}", add_special_tokens=False, max_length=max_length * 3 // 4, truncation=True)
        rows = []
        for text in texts:
            passage = tokenizer(f"B: {text}", add_special_tokens=False, max_length=max_length, truncation=True)
            item = tokenizer.prepare_for_model(
                [tokenizer.bos_token_id, *asked["input_ids"]], sep + passage["input_ids"], truncation="only_second",
                max_length=max_length, padding=False, return_attention_mask=False, return_token_type_ids=False,
                add_special_tokens=False,
            )  # fmt: skip
            rows.append(list(item["input_ids"]) + sep + prompt)
        return rows


@dataclass(frozen=True)
class MxbaiProfile(CausalProfile):
    """mxbai-rerank-v2's template (the mxbai-rerank library's `MxbaiRerankV2.prepare_inputs`): "query: …" (after
    "instruction: …" when one is set) and "document: …" joined by a newline inside Qwen's chat template, the task
    prompt after them; `max_length` is the pair's budget, the template comes on top."""

    def rows(
        self, tokenizer: Any, fixed: Fixed, instruction: str, query: str, texts: list[str], max_length: int
    ) -> list[list[int]]:
        prefix, suffix, sep, task = (list(fixed(text)) for text in (self.prefix, self.suffix, "\n", self.pair))
        template = len(prefix) + len(task) + len(suffix) + len(sep)
        most = tokenizer.model_max_length
        budget = most - template if max_length + template > most else max_length
        asked = f"query: {query}" if not instruction else f"instruction: {instruction}\nquery: {query}"
        query_ids = tokenizer(asked, add_special_tokens=False, max_length=budget * 3 // 4, truncation=True)
        document_most = min(most - len(query_ids["input_ids"]) - template, budget)
        rows = []
        for text in texts:
            document = tokenizer(f"document: {text}", add_special_tokens=False, max_length=document_most,
                                 truncation=True)  # fmt: skip
            item = tokenizer.prepare_for_model(
                query_ids["input_ids"], sep + document["input_ids"], truncation="only_second", max_length=budget,
                padding=False, return_attention_mask=False, return_token_type_ids=False, add_special_tokens=False,
            )  # fmt: skip
            rows.append(prefix + list(item["input_ids"]) + sep + task + suffix)
        return rows


def pair_budget(profile: CausalProfile, fixed: Fixed, max_length: int) -> int:
    """The tokens left for the formatted pair beside the profile's fixed template."""
    return max_length - len(fixed(profile.prefix)) - len(fixed(profile.suffix))


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
GEMMA = GemmaProfile(
    name="gemma",
    prefix="",
    suffix="",
    pair="",
    instruction=(
        "Given a query A and a passage B, determine whether the passage contains an answer to the query by providing "
        "a prediction of either 'Yes' or 'No'."
    ),
    yes="Yes",
    no=None,
    score_scale="logit",
    rule="yes logit",
)
MXBAI = MxbaiProfile(
    name="mxbai",
    prefix=(
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\n"
    ),
    suffix="<|im_end|>\n<|im_start|>assistant\n",
    pair=(  # the task prompt, after the pair
        "You are a search relevance expert who evaluates how well documents match search queries. For each "
        "query-document pair, carefully analyze the semantic relationship between them, then provide your binary "
        "relevance judgment (0 for not relevant, 1 for relevant).\nRelevance:"
    ),
    instruction="",  # none unless RERANKER_INSTRUCTION sets one
    yes="1",
    no="0",
    score_scale="logit",
    rule="difference",
)
PROFILES: dict[str, CausalProfile] = {QWEN3.name: QWEN3, GEMMA.name: GEMMA, MXBAI.name: MXBAI}


class CausalLMReranker(BaseReranker):
    """A causal-LM reranker on torch (CPU or CUDA), behind the score cache; its scores are what its profile says
    (Qwen3's: probabilities of "yes"; Gemma's: the "Yes" logit)."""

    def __init__(self, model_id: str, path: str, family: ModelFamily, settings: Settings, cache: ScoreCache) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        super().__init__(model_id, cache)
        self.path = path
        self.profile = PROFILES[family.profile or ""]
        self.score_scale: ScoreScale = self.profile.score_scale
        self.instruction = settings.reranker_instruction or self.profile.instruction
        self.max_length = settings.reranker_max_length
        self.device = pick_device(settings.reranker_device)
        self.tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
        if self.tokenizer.pad_token is None:
            raise ConfigError(f"The causal-LM reranker at '{model_id}' has no pad token in its tokenizer.")
        with refusing_fresh_weights(public_name(model_id) or "", "RERANKER_MODEL"):
            model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
        self.model = model.to(self.device).eval()
        self.yes_id = self._answer_id(self.profile.yes)
        self.no_id = self._answer_id(self.profile.no) if self.profile.no else None
        tokenizer = self.tokenizer
        # the template's fixed pieces, encoded once: every call of `_inputs` (a hot path) reads them
        self.fixed: Fixed = functools.lru_cache(maxsize=16)(
            lambda text: tuple(tokenizer.encode(text, add_special_tokens=False))
        )
        self.budget = pair_budget(self.profile, self.fixed, self.max_length)
        if self.budget < 16:
            raise ConfigError(
                f"RERANKER_MAX_LENGTH {self.max_length} leaves no room for a pair beside {self.profile.name}'s "
                f"template ({self.max_length - self.budget} tokens)."
            )
        self.batch_size = settings.reranker_batch_size or 8
        said = self.instruction or "none"
        self.backend = f"causal-lm torch:{self.device} ({self.profile.name} template; instruction: {said})"
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
        """The pair as the template words it (for a template without one, the pair as the model reads it)."""
        if not self.profile.pair:
            return f"A: {query}\nB: {document}"
        return self.profile.pair.format(instruction=self.instruction, query=query, document=document)

    def _inputs(self, query: str, texts: list[str]) -> list[list[int]]:
        return self.profile.rows(self.tokenizer, self.fixed, self.instruction, query, texts, self.max_length)

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
                if self.profile.rule == "yes logit":
                    values = logits[:, self.yes_id].float().tolist()
                elif self.profile.rule == "difference" and self.no_id is not None:
                    values = (logits[:, self.yes_id] - logits[:, self.no_id]).float().tolist()
                else:
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

"""A causal-LM reranker served by vLLM, asked through its `POST /score` with the family's template written here
(`vllm+http(s)://HOST:PORT[/v1]#qwen3`), as vLLM's own Qwen3-Reranker example asks it.

vLLM serves Qwen3-Reranker as a sequence classifier (`--hf-overrides` naming `Qwen3ForSequenceClassification`,
`classifier_from_token: ["no", "yes"]`, `is_original_qwen3_reranker: true`): the score is the probability of "yes"
against "no" at the last position, the model card's rule. Served without `--chat-template`, vLLM scores the text it
is sent as one prompt, `text_1 + text_2` and nothing between, so the template must come with the text: `text_1` is
the profile's prefix and the pair up to the document (the instruction and the query), `text_2` each document and
the profile's suffix. The joined text is the model card's prompt, character for character.

The pair is cut where the local kind cuts it: the prompt is at most RERANKER_MAX_LENGTH tokens, the template's
pieces whole, the formatted pair cut at its end (the model card's `longest_first` on one text). The tokens are
counted and cut by the server's own tokenizer (`POST /tokenize`, `POST /detokenize`), asked only for a pair whose
UTF-8 bytes outnumber its budget (a token is at least one byte), so the same setting scores the same pairs served
and local; the `cut` run check reads the same shares.

A server that already applies the family's template (`--chat-template`) is asked through the Cohere-style
`http(s)://` kind with the bare query and documents; asked through this kind it would read the template twice,
which the parity audit flags.

Only Qwen3's template is offered: its split into `text_1` and `text_2` is the one vLLM documents, and it is the
one tested here against a real vLLM server. Gemma's and mxbai's are refused by name.
"""

from __future__ import annotations

import functools
from typing import Any

import httpx

from workbench.config import Settings
from workbench.errors import ConfigError, ModelError
from workbench.redact import plain_text
from workbench.rerankers.base import RerankerUsage
from workbench.rerankers.causal_lm import PROFILES, QWEN3, CausalProfile
from workbench.rerankers.scores.cache import ScoreCache
from workbench.rerankers.served.remote import RerankService, indexed_scores, reported_count
from workbench.vocab import VLLM_KIND, VLLM_PREFIX, VLLM_PROFILE_SEPARATOR, ScoreScale

SERVED_PROFILES: dict[str, CausalProfile] = {QWEN3.name: QWEN3}  # templates that split into text_1 and text_2


def split_vllm_id(model_id: str) -> tuple[str, CausalProfile]:
    """The service URL(s) and the causal-LM profile a `vllm+URL#PROFILE` id names (qwen3 when it names none)."""
    url, _, name = model_id.partition(VLLM_PROFILE_SEPARATOR)
    name = name.strip().lower() or QWEN3.name
    if name in SERVED_PROFILES:
        return url, SERVED_PROFILES[name]
    if name in PROFILES:
        raise ConfigError(
            f"A reranker served by vLLM is asked with Qwen3's template only ('#qwen3'); '{name}' is a template the "
            "workbench runs locally (give the model folder) but does not split into vLLM's text_1 and text_2."
        )
    raise ConfigError(
        f"'{plain_text(name)[:40]}' after '#' names no template: a reranker served by vLLM is "
        f"{VLLM_PREFIX}http://HOST:PORT#qwen3."
    )


class VllmScoreReranker(RerankService):
    """A causal-LM reranker behind vLLM's `POST /score`: `{model?, text_1, text_2: [...]}` ->
    `{data: [{index, score}], usage}`, the template written here; scores are probabilities."""

    kind = VLLM_KIND
    route = "/score"
    prefix = VLLM_PREFIX
    score_scale: ScoreScale = "probability"

    def __init__(self, model_id: str, settings: Settings, cache: ScoreCache) -> None:
        urls, profile = split_vllm_id(model_id)
        super().__init__(urls, settings, cache)
        self.profile = profile
        self.instruction = settings.reranker_instruction or profile.instruction
        before, marker, _ = profile.pair.partition("{document}")
        if not marker:  # a profile without a document slot cannot be split; none such is offered
            raise ConfigError(f"The {profile.name} template has no place for the document.")
        self._query_part = before
        self.max_length = settings.reranker_max_length
        root = httpx.URL(self.url)
        base = root.path.removesuffix(self.route).removesuffix("/v1")  # vLLM serves /tokenize beside /v1, not in it
        self._tokenize_url = root.copy_with(path=base + "/tokenize")
        self._detokenize_url = root.copy_with(path=base + "/detokenize")
        self.model_id = f"{self.model_id}{VLLM_PROFILE_SEPARATOR}{profile.name}"
        said = self.instruction or "none"
        self.backend = f"{VLLM_KIND} /score {self.shown_url} ({profile.name} template; instruction: {said})"

    # The server's tokenizer ----------------------------------------------------------------------------------
    def _call(self, url: httpx.URL, body: dict[str, Any]) -> dict[str, Any]:
        try:
            answer = self.service.client.post(url, json=body, headers=self.service.headers())
        except (httpx.TimeoutException, httpx.ConnectError) as exc:
            raise self.service.unreachable(exc) from exc
        except httpx.HTTPError as exc:
            raise ModelError(f"The reranker at {self.shown_url} could not be asked to count tokens.") from exc
        try:
            read = answer.json() if answer.status_code == 200 else None
        except ValueError:
            read = None
        if not isinstance(read, dict):
            raise ModelError(
                f"The reranker at {self.shown_url} answered {answer.status_code} at {url.path}: the workbench cuts "
                "each pair with the server's own tokenizer (vLLM's /tokenize and /detokenize). Is it vLLM?"
            )
        return read

    def tokens(self, text: str) -> list[int]:
        """`text`'s token ids in the server's tokenizer, no special tokens added."""
        ids = self._call(self._tokenize_url, {"prompt": text, "add_special_tokens": False}).get("tokens")
        if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise ModelError(f"The reranker at {self.shown_url} answered /tokenize without token ids.")
        return ids

    def _text(self, ids: list[int]) -> str:
        text = self._call(self._detokenize_url, {"tokens": ids}).get("prompt")
        if not isinstance(text, str):
            raise ModelError(f"The reranker at {self.shown_url} answered /detokenize without a text.")
        return text

    @functools.cached_property
    def budget(self) -> int:
        """The tokens left for the formatted pair beside the template, as the local kind counts them."""
        left = self.max_length - len(self.tokens(self.profile.prefix)) - len(self.tokens(self.profile.suffix))
        if left < 16:
            raise ConfigError(
                f"RERANKER_MAX_LENGTH {self.max_length} leaves no room for a pair beside {self.profile.name}'s "
                f"template ({self.max_length - left} tokens)."
            )
        return left

    def pair_text(self, query: str, document: str) -> str:
        """The pair as the template words it."""
        return self.profile.pair.format(instruction=self.instruction, query=query, document=document)

    def cut_pair(self, query: str, document: str) -> tuple[str, float]:
        """The formatted pair cut to the budget by the server's tokenizer, and the share of its tokens cut."""
        pair = self.pair_text(query, document)
        if len(pair.encode("utf-8")) <= self.budget:
            return pair, 0.0
        ids = self.tokens(pair)
        if len(ids) <= self.budget:
            return pair, 0.0
        return self._text(ids[: self.budget]), 1 - self.budget / len(ids)

    def cut_shares(self, query: str, texts: list[str]) -> list[float]:
        """For each text, the share of its formatted pair's tokens cut at RERANKER_MAX_LENGTH with the template."""
        return [self.cut_pair(query, text)[1] for text in texts]

    def text_1(self, query: str) -> str:
        """What vLLM reads before each document: the template's start, the instruction and the query."""
        return self.profile.prefix + self._query_part.format(instruction=self.instruction, query=query)

    def request(self, query: str, documents: list[str]) -> dict[str, Any]:
        """One `text_1` (the query's side) for all documents, as vLLM's example asks; where a cut reaches into the
        query's side (a query longer than the budget), pairs are sent one `text_1` each, the template's prefix."""
        asked = self.text_1(query)
        pairs = [self.cut_pair(query, d)[0] for d in documents]
        opening = asked.removeprefix(self.profile.prefix)
        body: dict[str, Any]
        if all(pair.startswith(opening) for pair in pairs):
            body = {"text_1": asked, "text_2": [pair[len(opening) :] + self.profile.suffix for pair in pairs]}
        else:
            body = {"text_1": [self.profile.prefix] * len(pairs), "text_2": [p + self.profile.suffix for p in pairs]}
        if self.served_model:
            body["model"] = self.served_model
        return body

    def read(self, answer: Any, count: int) -> tuple[list[float], RerankerUsage]:
        usage = answer.get("usage") if isinstance(answer.get("usage"), dict) else {}
        return indexed_scores(answer["data"], count, "score"), RerankerUsage(
            tokens=int(reported_count(usage.get("total_tokens")))
        )

"""A pointwise LLM reranker over any OpenAI-compatible chat endpoint (`chat+http(s)://HOST[:PORT]/v1#MODEL`): the
way a chat model is run as a reranker where no rerank endpoint exists (Ollama, llama.cpp's server, vLLM,
OpenAI-compatible gateways).

- **The prompt** is the Qwen3-Reranker model card's, as chat turns: its system turn ("Judge whether the Document
  meets the requirements ... the answer can only be "yes" or "no"."), and a user turn `<Instruct>: ...\\n<Query>:
  ...\\n<Document>: ...` (the instruction is RERANKER_INSTRUCTION, else the card's; the passage cut to its first
  WORKBENCH_LISTWISE_PASSAGE_WORDS words, 300 by default). The server's own chat template writes the turns.
- **The request** asks for one token at temperature 0 with `logprobs: true` and `top_logprobs: 20` (OpenAI's
  most), one request a pair, WORKBENCH_RERANK_CONCURRENCY at a time.
- **The score** is P(yes) among the answer's first-token choices: the probability of the tokens that read "yes"
  (any case, with or without a leading space) over that of "yes" and "no" together, from the top log-probabilities
  the endpoint returned (`score_scale` 'probability'). Where neither word is among them the pair is *undecided*:
  it scores 0.5, is counted (`ChatStats.undecided`) and said on the list it belongs to. An endpoint that returns
  no log-probabilities cannot be read this way and is refused in one line (its text alone would be a tie).
- **Tokens and cost** are what the endpoint's `usage` reports; the price is the user's (`--price chat=USD`).
"""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from workbench.config import Settings
from workbench.errors import ModelError, QueryTimeoutError
from workbench.redact import plain_text, redact_text
from workbench.rerankers.base import BaseReranker
from workbench.rerankers.causal_lm import QWEN3
from workbench.rerankers.scores.cache import ScoreCache
from workbench.rerankers.served.chat_endpoint import AnswerStats, connect_chat, token_counts
from workbench.rerankers.served.remote import SETTING
from workbench.service_calls import InvalidAnswer
from workbench.vocab import CHAT_KIND, CHAT_PREFIX, ScoreScale

TOP_LOGPROBS = 20  # OpenAI's most; vLLM's default --max-logprobs
UNDECIDED_KEPT = 100_000  # undecided pairs remembered to say so on their lists
UNDECIDED = 0.5  # a pair whose answer named neither word among its top tokens
SYSTEM_PROMPT = (
    "Judge whether the Document meets the requirements based on the Query and the Instruct provided. Note that the "
    'answer can only be "yes" or "no".'
)  # the Qwen3-Reranker card's system turn
YES, NO = "yes", "no"


def pointwise_messages(instruction: str, query: str, document: str, max_words: int = 300) -> list[dict[str, str]]:
    """The chat turns asking whether `document` meets `query` (the Qwen3-Reranker card's prompt)."""
    passage = " ".join(document.split()[:max_words])
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": QWEN3.pair.format(instruction=instruction, query=query, document=passage)},
    ]


def answer_word(token: str) -> str | None:
    """'yes' or 'no' when a token reads as that word (any case, a leading space or word-start mark), else None."""
    word = token.strip().lstrip("\u0120\u2581").strip().lower()
    return word if word in (YES, NO) else None


def yes_probability(choices: list[tuple[str, float]]) -> float | None:
    """P(yes) over "yes" and "no" among the first token's (token, logprob) choices; None when neither is there.
    A token listed twice (the chosen one and again among the top) counts once."""
    mass = {YES: 0.0, NO: 0.0}
    for token, logprob in dict(choices).items():
        word = answer_word(token)
        if word is not None:
            mass[word] += math.exp(logprob)
    total = mass[YES] + mass[NO]
    return mass[YES] / total if total > 0 else None


class ChatStats(AnswerStats):
    """What a chat reranker's answers were like since it was created."""

    requests: int = 0
    undecided: int = 0  # answers with neither "yes" nor "no" among their top tokens (scored 0.5)
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def warning(self) -> str | None:
        """The warning an evaluation carries when answers named neither word (None when every one did)."""
        if not self.undecided:
            return None
        return (
            f"{self.undecided} of {self.requests} chat reranker answers named neither yes nor no among their top "
            f"{TOP_LOGPROBS} tokens: those passages scored {UNDECIDED} (undecided) and kept the first stage's order "
            "among themselves."
        )

    def words(self) -> str:
        """One line: pairs asked, and how many answers named neither word."""
        if not self.requests:
            return "No pair asked yet."
        return f"{self.requests} pairs asked, {self.undecided} undecided (neither yes nor no among the top tokens)."


class ChatPointwiseReranker(BaseReranker):
    """A chat model asked, pair by pair, whether a passage meets the query; P(yes) from its log-probabilities."""

    kind: ClassVar[str] = CHAT_KIND
    score_scale: ScoreScale = "probability"

    def __init__(self, model_id: str, settings: Settings, cache: ScoreCache) -> None:
        endpoint = connect_chat(model_id, CHAT_PREFIX, "The chat reranker", settings)
        self.service, self.shown_url, self.chat_model = endpoint.service, endpoint.shown_url, endpoint.chat_model
        super().__init__(endpoint.public_id, cache)
        self.instruction = settings.reranker_instruction or QWEN3.instruction
        self.passage_words = settings.listwise_passage_words
        self.concurrency = settings.rerank_concurrency
        self.procedure = f"Qwen3-Reranker's prompt, P(yes) from the top {TOP_LOGPROBS} logprobs"
        if settings.reranker_instruction:
            self.procedure += f", instruction '{plain_text(settings.reranker_instruction)[:60]}'"
        self.backend = f"{CHAT_KIND} {self.shown_url} ({self.procedure})"
        self._stats = ChatStats()
        self._undecided: set[tuple[str, str]] = set()  # pairs scored 0.5, said on the lists they are in
        self._lock = threading.Lock()

    @property
    def cache_key(self) -> str:
        """Its id and its instruction: another instruction asks another question."""
        return f"{self.model_id}\0{self.instruction}\0{self.passage_words}"

    def ask(self, query: str, document: str) -> float:
        """One chat request: P(yes) for the pair (0.5, counted, when neither word is among the top tokens)."""
        body = {
            "model": self.chat_model,
            "messages": pointwise_messages(self.instruction, query, document, self.passage_words),
            "temperature": 0,
            "max_tokens": 1,
            "logprobs": True,
            "top_logprobs": TOP_LOGPROBS,
        }
        try:
            answer = self.service.post(body)
        except InvalidAnswer as exc:
            raise self._untrusted(str(exc)) from exc
        choices = self._first_token_choices(answer)
        probability = yes_probability(choices)
        prompt, completion, total = token_counts(answer)
        with self._lock:
            self._stats.requests += 1
            self._stats.prompt_tokens += prompt
            self._stats.completion_tokens += completion
            if probability is None:
                self._stats.undecided += 1
                if len(self._undecided) >= UNDECIDED_KEPT:
                    self._undecided.clear()
                self._undecided.add((query, document))
        self.counted(documents=1, tokens=total)
        return UNDECIDED if probability is None else probability

    def _first_token_choices(self, answer: Any) -> list[tuple[str, float]]:
        """The first answer token and its top alternatives, as (token, logprob); ModelError when the answer has no
        log-probabilities or holds ones that are not numbers."""
        try:
            first = answer["choices"][0]
            logprobs = first.get("logprobs")
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ModelError(
                f"The chat reranker at {self.shown_url} answered in a shape the workbench does not read "
                f"({type(exc).__name__}: {redact_text(str(exc))[:120]}): is it an OpenAI-compatible chat endpoint? "
                f"Check {SETTING}."
            ) from exc
        content = logprobs.get("content") if isinstance(logprobs, dict) else None
        if not isinstance(content, list) or not content or not isinstance(content[0], dict):
            raise ModelError(
                f"The chat reranker at {self.shown_url} answered without log-probabilities: a {CHAT_KIND}+ reranker "
                "reads P(yes) from them, so it needs an endpoint that returns `logprobs` with `top_logprobs` "
                "(vLLM, llama.cpp's server, Ollama's OpenAI API, OpenAI). Use listwise+ for one that does not."
            )
        token = content[0]
        listed = [token, *(token.get("top_logprobs") or [])] if isinstance(token.get("top_logprobs"), list) else [token]
        choices: list[tuple[str, float]] = []
        for item in listed:
            if not isinstance(item, dict):
                raise self._untrusted(f"a {type(item).__name__} among its log-probabilities")
            text, logprob = item.get("token"), item.get("logprob")
            if not isinstance(text, str) or isinstance(logprob, bool) or not isinstance(logprob, int | float):
                raise self._untrusted("a log-probability that is not a token and a number")
            if not (math.isfinite(logprob) or logprob == -math.inf) or logprob > 1e-6:
                raise self._untrusted(f"a log-probability of {logprob!r}")
            choices.append((text, float(logprob)))
        if sum(math.exp(logprob) for logprob in dict(choices).values()) > 1.001:  # more than all there is
            raise self._untrusted("log-probabilities whose tokens add up to more than 1")
        return choices

    def _untrusted(self, what: str) -> ModelError:
        return ModelError(
            f"The chat reranker at {self.shown_url} answered {plain_text(what)[:120]}: its scores cannot be trusted, "
            f"so none is used. Check the endpoint, or {SETTING}."
        )

    def predict(self, query: str, texts: list[str], deadline: float | None = None) -> list[float]:
        """P(yes) for each text, WORKBENCH_RERANK_CONCURRENCY requests at a time; QueryTimeoutError once `deadline`
        has passed (no new request is sent after it)."""

        def scored(text: str) -> float:
            if deadline is not None and time.monotonic() > deadline:
                raise QueryTimeoutError("The search ran past its time limit (WORKBENCH_QUERY_TIMEOUT) and was stopped.")
            return self.ask(query, text)

        if len(texts) <= 1 or self.concurrency == 1:
            return [scored(text) for text in texts]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(texts))) as pool:
            return list(pool.map(scored, texts))

    def notes(self, query: str, texts: list[str]) -> list[str]:
        """How many of this list's pairs were undecided (scored 0.5), when any were."""
        with self._lock:
            undecided = sum((query, text) in self._undecided for text in texts)
        if not undecided:
            return []
        return [
            f"{undecided} of {len(texts)} answers named neither yes nor no among their top {TOP_LOGPROBS} tokens: "
            f"those passages score {UNDECIDED} (undecided), so their order among themselves is the first stage's."
        ]

    @property
    def stats(self) -> ChatStats:
        """What its answers were like so far (pairs asked, undecided, tokens)."""
        with self._lock:
            return self._stats.model_copy()

    def close(self) -> None:
        self.service.close()

"""A listwise LLM reranker over any OpenAI-compatible chat endpoint (`listwise+http(s)://HOST[:PORT]/v1#MODEL`):
the model reads a window of numbered passages and answers their order, RankGPT's way.

- **The prompt** is RankGPT's (Sun et al., 2023; the original repository's `create_permutation_instruction`): a
  system turn, each passage as a user turn `[i] text` (cut to its first WORKBENCH_LISTWISE_PASSAGE_WORDS words, 300
  by default) acknowledged by an assistant turn, and the closing instruction; temperature 0.
- **The windows** slide from the bottom of the first stage's list to the top, rank_llm's rule: a window of
  WORKBENCH_LISTWISE_WINDOW passages (20), moved up by WORKBENCH_LISTWISE_STRIDE (10), the last one possibly shorter,
  no window that only repeats the top of the one before. Only the first window's top is compared with every
  passage: a sliding pass is a partial sort, and the docs say so.
- **The answer** is read RankGPT's way (`receive_permutation`): its digits in order, repeats dropped, numbers out of
  range dropped, passages it left out kept after the others in their previous order. Each repair is counted
  (`ListwiseStats`): an answer that needed one is "malformed", and a run whose answers were mostly left out keeps
  the first stage's order, which the run checks then call "identity".
- **Shuffles** (WORKBENCH_LISTWISE_SHUFFLES, 0 by default): permutation self-consistency (Tang et al., 2023) ranks
  the candidates again in N seeded shuffled orders and keeps the central ranking (the passages by mean position,
  Borda's count; ties by the first stage's rank); how much the order moved with the input's is kept as the mean
  Kendall tau between each shuffled ranking and the unshuffled one (1: the model ignores where a passage stood).
- **Its numbers are an order, not scores** (`score_scale` 'order'): a passage's number is minus its rank (-1 for
  the first). Pages show ranks, calibration and "why here?" refuse, and `/rerank` answers (n - rank + 1) / n.
  An order depends on every passage ranked with it, so orders are cached for the whole ordered candidate list,
  never pair by pair.
- **Tokens and cost** are what the endpoint's `usage` reports; the price is the user's (`--price listwise=USD`).
"""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections import OrderedDict
from typing import ClassVar

from pydantic import BaseModel

from workbench.config import Settings
from workbench.errors import ModelError, QueryTimeoutError
from workbench.redact import plain_text, redact_text
from workbench.rerankers.base import BaseReranker, by_query
from workbench.rerankers.scores.cache import ScoreCache
from workbench.rerankers.served.chat_endpoint import AnswerStats, connect_chat, token_counts
from workbench.rerankers.served.remote import SETTING
from workbench.service_calls import InvalidAnswer
from workbench.vocab import LISTWISE_KIND, LISTWISE_PREFIX, ORDER_SCALE, ScoreScale

ORDERS_KEPT = 1024  # whole candidate lists whose order is kept in memory
SHUFFLE_SEED = 2310_07712  # permutation self-consistency's shuffles are seeded: a rerun asks the same orders

SYSTEM_PROMPT = (
    "You are RankGPT, an intelligent assistant that can rank passages based on their relevancy to the query."
)


def rankgpt_messages(query: str, passages: list[str], max_words: int = 300) -> list[dict[str, str]]:
    """RankGPT's chat messages for ranking `passages` for `query` (its `create_permutation_instruction`)."""
    count = len(passages)
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {
            "role": "user",
            "content": f"I will provide you with {count} passages, each indicated by number identifier []. \n"
            f"Rank the passages based on their relevance to query: {query}.",
        },
        {"role": "assistant", "content": "Okay, please provide the passages."},
    ]
    for rank, passage in enumerate(passages, start=1):
        content = " ".join(passage.replace("Title: Content: ", "").strip().split()[:max_words])
        messages.append({"role": "user", "content": f"[{rank}] {content}"})
        messages.append({"role": "assistant", "content": f"Received passage [{rank}]."})
    messages.append(
        {
            "role": "user",
            "content": f"Search Query: {query}. \nRank the {count} passages above based on their relevance to the "
            "search query. The passages should be listed in descending order using identifiers. The most relevant "
            "passages should be listed first. The output format should be [] > [], e.g., [1] > [2]. Only response "
            "the ranking results, do not say any word or explain.",
        }
    )
    return messages


class Permutation(BaseModel):
    """An answer read as an order of a window's passages (0-based), and what had to be repaired to read it."""

    order: list[int]
    repeats: int = 0  # identifiers given more than once (the later ones dropped)
    out_of_range: int = 0  # numbers naming no passage of the window
    missing: int = 0  # passages the answer left out (kept after the others, in their previous order)
    prose: bool = False  # words beside the identifiers

    @property
    def malformed(self) -> bool:
        return bool(self.repeats or self.out_of_range or self.missing or self.prose)


_ASCII_DIGITS = frozenset("0123456789")
_MAX_ID_DIGITS = 6  # a window holds far fewer passages; a longer number names none (and is never converted)


def parse_permutation(answer: str, count: int) -> Permutation:
    """A window's order from the model's answer, RankGPT's way (`receive_permutation`): the digits in order,
    repeats and numbers out of range dropped, passages left out appended in their previous order; each repair
    counted."""
    digits = "".join(c if c in _ASCII_DIGITS else " " for c in answer).split()  # "²" and "٣" are not identifiers
    numbers = [int(part) - 1 if len(part) <= _MAX_ID_DIGITS else -1 for part in digits]  # 5,000 digits: no passage
    seen: dict[int, None] = {}
    repeats = 0
    for number in numbers:
        if number in seen:
            repeats += 1
        seen[number] = None
    kept = [n for n in seen if 0 <= n < count]
    out_of_range = len(seen) - len(kept)
    missing = [i for i in range(count) if i not in set(kept)]
    stripped = "".join(c for c in answer if not (c in _ASCII_DIGITS or c.isspace() or c in "[]>,"))
    return Permutation(
        order=kept + missing, repeats=repeats, out_of_range=out_of_range, missing=len(missing), prose=bool(stripped)
    )


def window_spans(count: int, window: int, stride: int) -> list[tuple[int, int]]:
    """The [start, end) windows a sliding pass ranks over `count` passages, bottom first (rank_llm's rule)."""
    window = min(window, count)
    spans: list[tuple[int, int]] = []
    end, start = count, count - window
    while end > 0 and start + stride != 0:
        start = max(start, 0)
        spans.append((start, end))
        end, start = end - stride, start - stride
    return spans


def kendall_tau(first: list[int], second: list[int]) -> float:
    """Kendall's tau between two orders of the same items (1: the same order, -1: reversed)."""
    position = {item: i for i, item in enumerate(second)}
    n = len(first)
    if n < 2:
        return 1.0
    concordant = sum(1 if position[first[i]] < position[first[j]] else -1 for i in range(n) for j in range(i + 1, n))
    return concordant / (n * (n - 1) / 2)


class ListwiseStats(AnswerStats):
    """What a listwise reranker's answers were like since it was created."""

    windows: int = 0  # chat requests, one a window
    malformed: int = 0  # answers that needed a repair
    repeats: int = 0
    out_of_range: int = 0
    missing: int = 0
    prose: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    shuffled_lists: int = 0  # candidate lists ranked under shuffles
    tau_sum: float = 0.0  # Kendall tau of each shuffled ranking against the unshuffled one, added up
    taus: int = 0

    @property
    def position_sensitivity(self) -> float | None:
        """Mean Kendall tau between shuffled and unshuffled rankings (None without shuffles)."""
        return self.tau_sum / self.taus if self.taus else None

    def count(self, permutation: Permutation) -> None:
        """One window's answer counted: its repairs, by kind."""
        self.windows += 1
        self.malformed += permutation.malformed
        self.repeats += permutation.repeats
        self.out_of_range += permutation.out_of_range
        self.missing += permutation.missing
        self.prose += permutation.prose

    def warning(self) -> str | None:
        """The warning an evaluation carries when answers needed a repair (None when none did)."""
        if not self.malformed:
            return None
        return (
            f"{self.malformed} of {self.windows} listwise answers needed a repair ({self.words().split(' (', 1)[-1]}"
            " Passages an answer left out keep their previous order, so that much of the order is the first "
            "stage's, not the model's."
        )

    def words(self) -> str:
        """One line about the answers: how many windows, how many repaired and how."""
        if not self.windows:
            return "No window ranked yet."
        repairs = [
            f"{n} {what}"
            for n, what in (
                (self.repeats, "repeated ids"),
                (self.out_of_range, "ids out of range"),
                (self.missing, "passages left out"),
                (self.prose, "answers with words"),
            )
            if n
        ]
        line = f"{self.windows} windows ranked, {self.malformed} answers repaired"
        line += f" ({', '.join(repairs)})" if repairs else ""
        if self.position_sensitivity is not None:
            line += f"; under shuffled inputs Kendall tau {self.position_sensitivity:.3f} against the unshuffled order"
        return line + "."


class ListwiseReranker(BaseReranker):
    """An LLM ranking windows of passages over an OpenAI-compatible `POST /chat/completions` (see the module)."""

    kind: ClassVar[str] = LISTWISE_KIND
    score_scale: ScoreScale = ORDER_SCALE

    def __init__(self, model_id: str, settings: Settings, cache: ScoreCache) -> None:
        endpoint = connect_chat(model_id, LISTWISE_PREFIX, "The listwise reranker", settings)
        self.service, self.shown_url, self.chat_model = endpoint.service, endpoint.shown_url, endpoint.chat_model
        super().__init__(endpoint.public_id, cache)
        self.window = settings.listwise_window
        self.stride = settings.listwise_stride
        self.passage_words = settings.listwise_passage_words
        self.shuffles = settings.listwise_shuffles
        self.procedure = (
            f"RankGPT prompt, window {self.window}, stride {self.stride}, {self.passage_words} words a passage"
            + (f", {self.shuffles} shuffles (Borda)" if self.shuffles else "")
        )
        self.backend = f"{LISTWISE_KIND} {self.shown_url} ({self.procedure})"  # every figure names its procedure
        self._stats = ListwiseStats()
        self._orders: OrderedDict[str, list[float]] = OrderedDict()
        self._notes: dict[str, str] = {}  # a list's key -> what its answer needed, where it needed a repair
        self._call = threading.local()  # this thread's list being ranked: its windows' repairs, counted
        self._lock = threading.Lock()

    # Asking the model -----------------------------------------------------------------------------------------
    def rank_window(self, query: str, passages: list[str]) -> Permutation:
        """One chat request: the window's passages in the model's order (0-based), repaired and counted."""
        body = {
            "model": self.chat_model,
            "messages": rankgpt_messages(query, passages, self.passage_words),
            "temperature": 0,
        }
        try:
            answer = self.service.post(body)
        except InvalidAnswer as exc:
            raise self._untrusted(str(exc)) from exc
        try:
            content = answer["choices"][0]["message"].get("content")
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ModelError(
                f"The listwise reranker at {self.shown_url} answered in a shape the workbench does not read "
                f"({type(exc).__name__}: {redact_text(str(exc))[:120]}): is it an OpenAI-compatible chat endpoint? "
                f"Check {SETTING}."
            ) from exc
        if content is not None and not isinstance(content, str):
            raise self._untrusted(f"a {type(content).__name__} as its message")
        permutation = parse_permutation(content or "", len(passages))
        prompt, completion, total = token_counts(answer)
        mine = getattr(self._call, "repairs", None)  # this list's own count, when a list is being ranked
        if mine is not None:
            mine.count(permutation)
        with self._lock:
            self._stats.count(permutation)
            self._stats.prompt_tokens += prompt
            self._stats.completion_tokens += completion
        self.counted(documents=len(passages), tokens=total)
        return permutation

    def _untrusted(self, what: str) -> ModelError:
        return ModelError(
            f"The listwise reranker at {self.shown_url} answered {plain_text(what)[:120]}: its order cannot be "
            f"trusted, so none is used. Check the endpoint, or {SETTING}."
        )

    def sliding_order(self, query: str, texts: list[str], deadline: float | None = None) -> list[int]:
        """The texts' indices in the model's order after one sliding pass, bottom window first."""
        order = list(range(len(texts)))
        for start, end in window_spans(len(texts), self.window, self.stride):
            if deadline is not None and time.monotonic() > deadline:
                raise QueryTimeoutError("The search ran past its time limit (WORKBENCH_QUERY_TIMEOUT) and was stopped.")
            span = order[start:end]
            permutation = self.rank_window(query, [texts[i] for i in span])
            order[start:end] = [span[j] for j in permutation.order]
        return order

    def ranked(self, query: str, texts: list[str], deadline: float | None = None) -> list[int]:
        """The texts' indices in the order kept: the sliding pass's, or with shuffles the central ranking of the
        unshuffled pass and N seeded shuffled ones (mean position; ties by the first stage's rank)."""
        order = self.sliding_order(query, texts, deadline)
        if not self.shuffles or len(texts) < 2:
            return order
        rng = random.Random(f"{SHUFFLE_SEED}:{query}:{len(texts)}")
        orders = [order]
        for _ in range(self.shuffles):
            shuffled = list(range(len(texts)))
            rng.shuffle(shuffled)
            inner = self.sliding_order(query, [texts[i] for i in shuffled], deadline)
            orders.append([shuffled[i] for i in inner])
        taus = [kendall_tau(order, other) for other in orders[1:]]
        with self._lock:
            self._stats.shuffled_lists += 1
            self._stats.tau_sum += sum(taus)
            self._stats.taus += len(taus)
        places = [{item: place for place, item in enumerate(o)} for o in orders]
        mean_position = {i: sum(p[i] for p in places) / len(orders) for i in range(len(texts))}
        return sorted(range(len(texts)), key=lambda i: (mean_position[i], i))

    def predict(self, query: str, texts: list[str], deadline: float | None = None) -> list[float]:
        """Minus each text's rank in the model's order (-1 for the first): an order, not a score."""
        scores = [0.0] * len(texts)
        for rank, i in enumerate(self.ranked(query, texts, deadline), start=1):
            scores[i] = -float(rank)
        return scores

    # Caching whole lists ------------------------------------------------------------------------------------
    def _list_key(self, query: str, texts: list[str]) -> str:
        digest = hashlib.sha256()
        for part in (self.model_id, self.procedure, query, *texts):
            digest.update(part.encode("utf-8", "surrogatepass"))
            digest.update(b"\0")
        return digest.hexdigest()

    def score(
        self, query: str, texts: list[str], use_cache: bool = True, deadline: float | None = None
    ) -> tuple[list[float], int]:
        """The texts' order numbers, kept for this exact ordered list (an order depends on every passage in it),
        and how many came from what was kept (all or none)."""
        key = self._list_key(query, texts)
        if use_cache:
            with self._lock:
                kept = self._orders.get(key)
                if kept is not None:
                    self._orders.move_to_end(key)
                    return list(kept), len(texts)
        self._call.repairs = ListwiseStats()
        try:
            scores = self.predict(query, texts, deadline)
            repaired = self._call.repairs
        finally:
            del self._call.repairs
        with self._lock:
            self._orders[key] = list(scores)
            if repaired.malformed:  # said again whenever this list is asked for, from what was kept too
                self._notes[key] = repaired.warning() or ""
            while len(self._orders) > ORDERS_KEPT:
                dropped, _ = self._orders.popitem(last=False)
                self._notes.pop(dropped, None)
        return scores, 0

    def notes(self, query: str, texts: list[str]) -> list[str]:
        """What its answer for this exact list needed (a repair: ids repeated, out of range, left out, words), so
        the list it gave is shown with that said; empty when the answer was read as given."""
        with self._lock:
            note = self._notes.get(self._list_key(query, texts))
        return [note] if note else []

    def score_many(self, pairs: list[tuple[str, str]]) -> tuple[list[float], int]:
        """Each query's texts ranked together as one list (in the order given), as `score` does."""
        scores = [0.0] * len(pairs)
        cached = 0
        for query, indices in by_query(pairs).items():
            found, hits = self.score(query, [pairs[i][1] for i in indices])
            cached += hits
            for i, value in zip(indices, found, strict=True):
                scores[i] = value
        return scores, cached

    @property
    def stats(self) -> ListwiseStats:
        """What its answers were like so far (windows, repairs, tokens, position sensitivity)."""
        with self._lock:
            return self._stats.model_copy()

    def close(self) -> None:
        self.service.close()

"""The listwise LLM reranker held to RankGPT's own code (the original repository's prompt and permutation parsing,
as the `rerankers` package ships it) and rank_llm's sliding-window rule, over a local OpenAI-compatible chat
endpoint (tests/rerank_apis.py) that ranks by a rule and answers well or malformed. The reference's requests are
sent with the `openai` client to the same endpoint."""

from __future__ import annotations

import importlib
import itertools
import random
import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest

from tests.rerank_apis import LISTWISE_CASES, Behaviour, RerankApis, listwise_order
from workbench.config import Settings
from workbench.errors import ConfigError, ModelError
from workbench.rerankers import create_reranker, reranker_kind
from workbench.rerankers.served.listwise import (
    SHUFFLE_SEED,
    ListwiseReranker,
    kendall_tau,
    parse_permutation,
    rankgpt_messages,
    window_spans,
)
from workbench.rerankers.served.pricing import parse_prices

QUERY = "how do cross encoders rerank passages"
WORDS = ["cross", "encoders", "rerank", "passages", "how", "do", "the", "a", "vector", "search", "query", "model"]


def _rankgpt() -> types.ModuleType:
    """RankGPT's functions as the `rerankers` package ships them. Its module imports LiteLLM for the one call the
    tests make with the openai client instead; where LiteLLM is not installed the name is given an empty module
    (none of the functions used reads it)."""
    try:
        importlib.import_module("litellm")
    except ImportError:
        sys.modules.setdefault("litellm", types.SimpleNamespace(completion=None))  # type: ignore[arg-type]
    return importlib.import_module("rerankers.models.rankgpt_rankers")


def _passages(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) + f" number {i}" for i in range(count)]


@pytest.fixture(scope="module")
def endpoint() -> Iterator[RerankApis]:
    with RerankApis(Behaviour(key="unused")) as server:
        yield server


def _reranker(server: RerankApis, case: str = "good", **settings: Any) -> ListwiseReranker:
    reranker = create_reranker(f"listwise+{server.base}/listwise/{case}/v1#tiny-ranker", Settings(**settings))
    assert isinstance(reranker, ListwiseReranker)
    return reranker


def _reference_order(
    server: RerankApis, case: str, query: str, texts: list[str], window: int, stride: int
) -> list[str]:
    """RankGPT's order from the local endpoint's answers (`reference_pipeline`)."""
    return reference_pipeline(f"{server.base}/listwise/{case}/v1", "tiny-ranker", query, texts, window, stride)[0]


def reference_pipeline(
    base_url: str, model: str, query: str, texts: list[str], window: int, stride: int
) -> tuple[list[str], int]:
    """RankGPT's permutation pipeline (its prompt, the openai client's chat call, its `receive_permutation`) under
    rank_llm's sliding-window loop, transcribed from `ListwiseRankLLM.sliding_windows`: the order, and the tokens
    the endpoint reported."""
    from openai import OpenAI

    rankgpt = _rankgpt()
    client = OpenAI(base_url=base_url, api_key="unused", max_retries=0)
    item = rankgpt.make_item(query, texts)
    rank_start, rank_end = 0, len(texts)
    window_size = min(window, rank_end)
    end_pos, start_pos = rank_end, rank_end - window_size
    tokens = 0
    while end_pos > rank_start and start_pos + stride != rank_start:
        start_pos = max(start_pos, rank_start)
        messages = rankgpt.create_permutation_instruction(item=item, rank_start=start_pos, rank_end=end_pos)
        answer = client.chat.completions.create(model=model, messages=messages, temperature=0)
        tokens += answer.usage.total_tokens if answer.usage else 0
        item = rankgpt.receive_permutation(item, answer.choices[0].message.content or "", start_pos, end_pos)
        end_pos, start_pos = end_pos - stride, start_pos - stride
    return [hit["content"] for hit in item["hits"]], tokens


def _our_order(reranker: ListwiseReranker, texts: list[str]) -> list[str]:
    scores, _ = reranker.score(QUERY, texts, use_cache=False)
    return [text for _, text in sorted(zip(scores, texts, strict=True), key=lambda pair: -pair[0])]


def test_the_prompt_is_rankgpts_own() -> None:
    rankgpt = _rankgpt()
    long = " ".join(f"w{i}" for i in range(450))
    texts = ["Title: Content: a titled passage ", "  spaced \n\n out\ttext  ", long, "plain"]
    assert rankgpt_messages(QUERY, texts) == rankgpt.create_permutation_instruction(
        item=rankgpt.make_item(QUERY, texts), rank_start=0, rank_end=len(texts)
    )
    cut = rankgpt_messages(QUERY, [long], max_words=20)[3]["content"]
    assert cut == "[1] " + " ".join(f"w{i}" for i in range(20))


ANSWERS = [
    "[2] > [1] > [3] > [4]",
    "[2] > [2] > [1] > [3] > [4] > [1]",
    "[3] > [1]",
    "Sure, here it is: [4] > [3] > [2] > [1]. Hope it helps!",
    "[99] > [0] > [2] > [-1] > [4]",
    "",
    "I cannot rank these.",
    "4 3 2 1",
    "[1]>[2]>[3]>[4]",
    "[0004] > [1] > [12345678901234567890]",
]


@pytest.mark.parametrize("answer", ANSWERS)
def test_answers_are_read_and_repaired_as_rankgpt_reads_them(answer: str) -> None:
    rankgpt = _rankgpt()
    texts = ["a", "b", "c", "d"]
    item = rankgpt.receive_permutation(rankgpt.make_item(QUERY, texts), answer, 0, len(texts))
    permutation = parse_permutation(answer, len(texts))
    assert [texts[i] for i in permutation.order] == [hit["content"] for hit in item["hits"]]
    assert sorted(permutation.order) == [0, 1, 2, 3]
    ids = [int(part) for part in "".join(c if c.isdigit() else " " for c in answer).split()]
    assert permutation.repeats == len(ids) - len(set(ids))
    assert permutation.out_of_range == len({i for i in ids if not 1 <= i <= 4})
    assert permutation.missing == 4 - len({i for i in ids if 1 <= i <= 4})
    assert permutation.prose == any(c.isalpha() or c in ".:!-" for c in answer)
    assert permutation.malformed == (answer not in {"[2] > [1] > [3] > [4]", "4 3 2 1", "[1]>[2]>[3]>[4]"})


@pytest.mark.parametrize("window,stride", [(20, 10), (4, 2), (5, 3), (2, 1)])
@pytest.mark.parametrize("count", [1, 2, 3, 7, 10, 19, 20, 21, 25, 30, 100])
def test_windows_cover_every_candidate_as_rank_llm_slides(count: int, window: int, stride: int) -> None:
    spans = window_spans(count, window, stride)
    assert set().union(*(range(s, e) for s, e in spans)) == set(range(count))
    assert spans[0][1] == count and spans[-1][0] == 0  # from the bottom up to the very top
    assert all(0 < e - s <= window for s, e in spans)
    assert all(b[0] < a[0] or b[0] == 0 for a, b in itertools.pairwise(spans))
    if count == 100 and (window, stride) == (20, 10):
        assert len(spans) == 9  # RankGPT's nine windows over the top 100


@pytest.mark.parametrize("count,window,stride", [(8, 20, 10), (35, 20, 10), (23, 4, 2), (12, 5, 3)])
def test_the_order_equals_the_reference_pipeline(endpoint: RerankApis, count: int, window: int, stride: int) -> None:
    texts = _passages(count)
    reranker = _reranker(endpoint, listwise_window=window, listwise_stride=stride)
    sent_before = len(endpoint.behaviour.requests)
    ours = _our_order(reranker, texts)
    our_requests = endpoint.behaviour.requests[sent_before:]
    reference = _reference_order(endpoint, "good", QUERY, texts, window, stride)
    reference_requests = endpoint.behaviour.requests[sent_before + len(our_requests) :]
    assert ours == reference
    assert [r["body"]["messages"] for r in our_requests] == [r["body"]["messages"] for r in reference_requests]
    assert len(our_requests) == len(window_spans(count, window, stride)) == reranker.stats.windows
    if count <= window:  # one window sees every passage: the rule's own order
        assert ours == [texts[i - 1] for i in listwise_order(QUERY, texts)]


@pytest.mark.parametrize("case", [c for c in LISTWISE_CASES if c not in {"good", "list"}])
def test_malformed_answers_are_repaired_as_the_reference_does_and_counted(endpoint: RerankApis, case: str) -> None:
    texts = _passages(27, seed=3)
    reranker = _reranker(endpoint, case, listwise_window=10, listwise_stride=5)
    assert _our_order(reranker, texts) == _reference_order(endpoint, case, QUERY, texts, 10, 5)
    stats = reranker.stats
    windows = window_spans(27, 10, 5)
    assert stats.windows == len(windows)
    well_formed = case == "reversed"
    if case == "endless":  # 20,000 ids naming 7 passages: read in one pass, the rest counted as repeats
        assert stats.repeats > 10_000 and stats.missing > 0
    assert stats.malformed == (0 if well_formed else len(windows))
    assert (stats.repeats > 0) == (case in {"repeats", "endless"})
    assert (stats.missing > 0) == (case in {"missing", "empty", "null", "endless"})
    assert (stats.out_of_range > 0) == (case == "out-of-range")
    assert (stats.prose > 0) == (case == "prose")
    if case in {"empty", "null"}:  # nothing read: every window keeps the first stage's order
        assert _our_order(reranker, texts) == texts
    assert "windows ranked" in stats.words()


def test_tokens_and_cost_are_what_the_endpoint_reported(endpoint: RerankApis) -> None:
    texts = _passages(30)
    reranker = _reranker(endpoint)
    before = len(endpoint.behaviour.requests)
    reranker.score(QUERY, texts)
    sent = endpoint.behaviour.requests[before:]
    prompt = sum(sum(len(m["content"].split()) for m in r["body"]["messages"]) for r in sent)
    completion = sum(len(" > ".join("[x]" for _ in range(e - s)).split()) for s, e in window_spans(30, 20, 10))
    assert reranker.stats.prompt_tokens == prompt and reranker.stats.completion_tokens == completion
    assert reranker.usage.tokens == prompt + completion and reranker.usage.requests == len(sent)
    price = parse_prices(["listwise=0.15"])["listwise"]
    assert price.cost(reranker.usage) == pytest.approx((prompt + completion) * 0.15 / 1_000_000)


def test_an_order_is_kept_for_its_whole_list_only(endpoint: RerankApis) -> None:
    texts = _passages(12)
    reranker = _reranker(endpoint)
    first, cached = reranker.score(QUERY, texts)
    calls = reranker.model_calls
    again, cached_again = reranker.score(QUERY, texts)
    assert (again, cached, cached_again, reranker.model_calls) == (first, 0, 12, calls)
    reranker.score(QUERY, texts[::-1])  # the same passages in another order: another list, asked again
    reranker.score(QUERY, texts[:-1])
    assert reranker.model_calls == calls + 2
    many, _ = reranker.score_many([(QUERY, t) for t in texts] + [("another query", t) for t in texts[:3]])
    assert many[:12] == first and sorted(many[12:]) == [-3.0, -2.0, -1.0]


def test_shuffles_keep_the_central_ranking_and_measure_position_sensitivity(endpoint: RerankApis) -> None:
    query_words = QUERY.split()  # seven passages holding 0 to 6 of the query's words: no ties under the rule
    texts = [" ".join(["filler", *query_words[:k]]) + f" number {k}" for k in (3, 0, 6, 1, 5, 2, 4)]
    steady = _reranker(endpoint, listwise_shuffles=3)
    assert _our_order(steady, texts) == [texts[i - 1] for i in listwise_order(QUERY, texts)]
    assert steady.stats.position_sensitivity == pytest.approx(1.0)  # the rule ignores where a passage stood
    assert steady.stats.windows == 4
    texts = _passages(9, seed=11)

    fickle = _reranker(endpoint, "reversed", listwise_shuffles=2)  # answers the reverse of the rule's order
    ours = _our_order(fickle, texts)
    # By hand: the unshuffled pass and the two seeded shuffles, each one window answered reversed, then Borda.
    rng = random.Random(f"{SHUFFLE_SEED}:{QUERY}:{len(texts)}")
    orders = []
    for turn in range(3):
        shuffled = list(range(9))
        if turn:
            rng.shuffle(shuffled)
        shown = [texts[i] for i in shuffled]
        orders.append([shuffled[i - 1] for i in listwise_order(QUERY, shown)[::-1]])
    mean = {i: sum(o.index(i) for o in orders) / 3 for i in range(9)}
    assert ours == [texts[i] for i in sorted(range(9), key=lambda i: (mean[i], i))]
    taus = [kendall_tau(orders[0], other) for other in orders[1:]]
    assert fickle.stats.position_sensitivity == pytest.approx(sum(taus) / 2)
    assert fickle.stats.position_sensitivity < 1.0


def test_kendall_tau_by_hand() -> None:
    assert kendall_tau([0, 1, 2], [0, 1, 2]) == 1.0
    assert kendall_tau([0, 1, 2], [2, 1, 0]) == -1.0
    assert kendall_tau([0, 1, 2, 3], [1, 0, 2, 3]) == pytest.approx(4 / 6)  # 5 concordant, 1 discordant of 6


def test_the_kind_its_id_and_its_failures(endpoint: RerankApis) -> None:
    model_id = f"listwise+{endpoint.base}/listwise/good/v1#tiny-ranker"
    assert reranker_kind(model_id).name == "listwise" and not reranker_kind(model_id).local
    named = create_reranker(f"listwise+{endpoint.base}/listwise/good/v1", Settings())  # the one model listed
    assert named.model_id == model_id and named.score_scale == "order"
    with pytest.raises(ModelError) as shape:
        _reranker(endpoint, "shape").score(QUERY, _passages(3))
    assert "OpenAI-compatible chat endpoint" in str(shape.value) and "Traceback" not in str(shape.value)
    with pytest.raises(ModelError, match="answered a list as its message: its order cannot be trusted"):
        _reranker(endpoint, "list").score(QUERY, _passages(3))
    with pytest.raises(ModelError) as down:
        create_reranker("listwise+http://127.0.0.1:9/v1#m", Settings(rerank_retries=0)).score(QUERY, ["a", "b"])
    assert "cannot be reached" in str(down.value)
    with pytest.raises(ConfigError, match=r"name the chat model after '#'.*lists none"):
        create_reranker(f"listwise+{endpoint.base}/openai/v1", Settings())
    with pytest.raises(ValueError, match="must be below WORKBENCH_LISTWISE_WINDOW"):
        Settings(listwise_window=5, listwise_stride=5)

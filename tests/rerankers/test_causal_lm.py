"""Issue 53: a causal-LM reranker in Qwen3-Reranker's layout (built here: 2 layers, a tokenizer trained on the demo
corpus) is routed to the causal-LM kind by its config, never loaded as a cross-encoder with a random head, and its
scores equal the model card's own transformers code run in this test, to 1e-5. Models of other families (a ColBERT
checkpoint, a causal LM of an unknown template, an encoder without a head) are refused naming what they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import ConfigError
from workbench.paths import demo_dir
from workbench.rerankers.factory import create_reranker
from workbench.services.demo import ensure_demo_collection

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]


def _demo_texts() -> list[str]:
    texts = []
    for path in sorted((demo_dir() / "docs").rglob("*")):
        if path.is_file():
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
    return texts


@pytest.fixture(scope="module")
def tiny_qwen3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer Qwen3ForCausalLM with a byte-level BPE tokenizer trained on the demo handbook, "yes" and "no" in
    its vocabulary, saved as a model folder."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    folder = tmp_path_factory.mktemp("tiny-qwen3-reranker")
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1200, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    bpe.train_from_iterator([*_demo_texts(), "yes no yes no"] * 2, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tokenizer.add_tokens(["yes", "no"])
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    config = Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, max_position_embeddings=2048, tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id, initializer_range=0.4,
    )  # fmt: skip
    # Larger initial weights than the default let the context reach the last position (with 0.02 every pair
    # scores the same), so the scores rank and orders mean something.
    Qwen3ForCausalLM(config).save_pretrained(folder)
    return folder


def model_card_scores(folder: Path, pairs: list[tuple[str, str]], max_length: int) -> list[float]:
    """Qwen3-Reranker's model card code, as published (transformers usage), on the given (query, document) pairs."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    def format_instruction(instruction, query, doc):  # type: ignore[no-untyped-def]
        if instruction is None:
            instruction = "Given a web search query, retrieve relevant passages that answer the query"
        output = "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {doc}".format(  # noqa: UP032 - the card's
            instruction=instruction, query=query, doc=doc
        )
        return output

    def process_inputs(pairs):  # type: ignore[no-untyped-def]
        inputs = tokenizer(
            pairs, padding=False, truncation="longest_first", return_attention_mask=False,
            max_length=max_length - len(prefix_tokens) - len(suffix_tokens),
        )  # fmt: skip
        for i, ele in enumerate(inputs["input_ids"]):
            inputs["input_ids"][i] = prefix_tokens + ele + suffix_tokens
        inputs = tokenizer.pad(inputs, padding=True, return_tensors="pt", max_length=max_length)
        for key in inputs:
            inputs[key] = inputs[key].to(model.device)
        return inputs

    @torch.no_grad()
    def compute_logits(inputs, **kwargs):  # type: ignore[no-untyped-def]
        batch_scores = model(**inputs).logits[:, -1, :]
        true_vector = batch_scores[:, token_true_id]
        false_vector = batch_scores[:, token_false_id]
        batch_scores = torch.stack([false_vector, true_vector], dim=1)
        batch_scores = torch.nn.functional.log_softmax(batch_scores, dim=1)
        scores = batch_scores[:, 1].exp().tolist()
        return scores

    tokenizer = AutoTokenizer.from_pretrained(str(folder), padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(str(folder)).eval()
    token_false_id = tokenizer.convert_tokens_to_ids("no")
    token_true_id = tokenizer.convert_tokens_to_ids("yes")
    prefix = (
        "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
        'provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n'
    )
    suffix = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    prefix_tokens = tokenizer.encode(prefix, add_special_tokens=False)
    suffix_tokens = tokenizer.encode(suffix, add_special_tokens=False)
    task = "Given a web search query, retrieve relevant passages that answer the query"
    formatted = [format_instruction(task, query, doc) for query, doc in pairs]
    return compute_logits(process_inputs(formatted))


def test_a_qwen3_reranker_is_routed_by_its_config_and_equals_the_model_card(tiny_qwen3: Path, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, reranker_model=str(tiny_qwen3), offline=True, reranker_max_length=400)
    engine = Engine(settings)
    ensure_demo_collection(engine)
    result = engine.search("can I carry over unused vacation days", engine.plan(collection="demo", k=12, top_n=5))
    assert result.score_scale == "probability" and "causal-lm" in (result.reranker_backend or "")
    assert "qwen3 template" in (result.reranker_backend or "")
    texts = [c.text for c in result.candidates]
    expected = model_card_scores(tiny_qwen3, [(result.query, t) for t in texts], 400)
    ours = [c.rerank_score for c in result.candidates]
    assert ours == pytest.approx(expected, abs=1e-5)  # long passages cut at 400 tokens the same way
    assert len({round(s, 6) for s in ours}) > len(ours) // 2  # scores that rank, not a constant
    by_reference = sorted(result.candidates, key=lambda c: (-expected[texts.index(c.text)], c.vector_rank))
    assert [r.id for r in result.reranked] == [c.id for c in by_reference[:5]]


def test_models_of_other_families_are_refused_naming_what_they_are(tiny_qwen3: Path, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, offline=True)
    unknown = tmp_path / "llama-like"
    unknown.mkdir()
    config = json.loads((tiny_qwen3 / "config.json").read_text())
    (unknown / "config.json").write_text(
        json.dumps({**config, "model_type": "llama", "architectures": ["LlamaForCausalLM"]})
    )
    with pytest.raises(ConfigError, match=r"a causal LM \(LlamaForCausalLM.*freshly initialised head"):
        create_reranker(str(unknown), settings)
    with pytest.raises(ConfigError, match="BertModel without a sequence-classification head"):
        create_reranker(str(_bare_encoder(tmp_path)), settings)
    colbert = tmp_path / "colbert"
    colbert.mkdir()
    (colbert / "config.json").write_text(json.dumps({"architectures": ["BertModel"], "model_type": "bert"}))
    (colbert / "modules.json").write_text(json.dumps([{"type": "pylate.models.Dense.Dense"}]))
    with pytest.raises(ConfigError, match="late-interaction \\(ColBERT\\) model"):
        create_reranker(str(colbert), settings)


def _bare_encoder(tmp_path: Path) -> Path:
    folder = tmp_path / "bare"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": ["BertModel"], "model_type": "bert"}))
    return folder

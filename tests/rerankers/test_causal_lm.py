"""Issue 53: causal-LM rerankers in Qwen3-Reranker's and bge-reranker-v2-gemma's layouts (built here: 2 layers, a
tokenizer trained on the demo corpus) are routed to the causal-LM kind by their config, never loaded as a
cross-encoder with a random head, and their scores equal each model card's own transformers code run in this test,
to 1e-5. Models of other families (a ColBERT
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
    return build_tiny_qwen3(tmp_path_factory.mktemp("tiny-qwen3-reranker"))


def build_tiny_qwen3(folder: Path, head_dim: int = 16) -> Path:
    """The tiny Qwen3 reranker saved in `folder` (vLLM's CPU attention takes a `head_dim` of 32 or more)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

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
        num_key_value_heads=2, head_dim=head_dim, max_position_embeddings=2048, tie_word_embeddings=True,
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


def equals_its_reference(
    folder: Path, tmp_path: Path, query: str, max_length: int, reference, scale: str, template: str
) -> None:  # type: ignore[no-untyped-def]
    """A search of the demo reranked by the model in `folder` (routed by its config): its scores equal
    `reference(folder, pairs, max_length)` (the model card's code) to 1e-5, they rank, and so does the top 5."""
    settings = Settings(data_dir=tmp_path, reranker_model=str(folder), offline=True, reranker_max_length=max_length)
    engine = Engine(settings)
    ensure_demo_collection(engine)
    result = engine.search(query, engine.plan(collection="demo", k=12, top_n=5))
    assert result.score_scale == scale and "causal-lm" in (result.reranker_backend or "")
    assert f"{template} template" in (result.reranker_backend or "")
    texts = [c.text for c in result.candidates]
    expected = reference(folder, [(result.query, t) for t in texts], max_length)
    ours = [c.rerank_score for c in result.candidates]
    assert ours == pytest.approx(expected, abs=1e-5)  # long passages cut at max_length tokens the same way
    assert len({round(s, 5) for s in ours}) > len(ours) // 2  # scores that rank, not a constant
    by_reference = sorted(result.candidates, key=lambda c: (-expected[texts.index(c.text)], c.vector_rank))
    assert [r.id for r in result.reranked] == [c.id for c in by_reference[:5]]


def test_a_qwen3_reranker_is_routed_by_its_config_and_equals_the_model_card(tiny_qwen3: Path, tmp_path: Path) -> None:
    equals_its_reference(
        tiny_qwen3, tmp_path, "can I carry over unused vacation days", 400, model_card_scores, "probability", "qwen3"
    )


@pytest.fixture(scope="module")
def tiny_gemma(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer GemmaForCausalLM in bge-reranker-v2-gemma's layout, with a BPE tokenizer trained on the demo
    handbook ("Yes" in its vocabulary, a <bos>, left padding as the card's batches need), saved as a model folder."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GemmaConfig, GemmaForCausalLM, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-gemma-reranker")
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1200, special_tokens=["<pad>", "<bos>", "<eos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )  # fmt: skip
    bpe.train_from_iterator([*_demo_texts(), "Yes No Yes No"] * 2, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>", padding_side="left"
    )
    tokenizer.add_tokens(["Yes"])
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    config = GemmaConfig(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, max_position_embeddings=2048, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, initializer_range=0.1,
    )  # fmt: skip
    # Gemma has no q/k norm: with larger initial weights its logits reach tens, and the card's own code, run on a
    # pair alone and in a padded batch, then differs by 5e-5; at 0.1 it differs by 4e-7 and the scores still rank.
    GemmaForCausalLM(config).save_pretrained(folder)
    return folder


def gemma_model_card_scores(folder: Path, pairs: list[tuple[str, str]], max_length: int) -> list[float]:
    """bge-reranker-v2-gemma's model card code, as published (the transformers usage), on the given pairs."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    def get_inputs(pairs, tokenizer, prompt=None, max_length=1024):  # type: ignore[no-untyped-def]
        if prompt is None:
            prompt = (
                "Given a query A and a passage B, determine whether the passage contains an answer to the query by "
                "providing a prediction of either 'Yes' or 'No'."
            )
        sep = "\n"
        prompt_inputs = tokenizer(prompt, return_tensors=None, add_special_tokens=False)["input_ids"]
        sep_inputs = tokenizer(sep, return_tensors=None, add_special_tokens=False)["input_ids"]
        inputs = []
        for query, passage in pairs:
            query_inputs = tokenizer(
                f"A: {query}", return_tensors=None, add_special_tokens=False, max_length=max_length * 3 // 4,
                truncation=True,
            )  # fmt: skip
            passage_inputs = tokenizer(
                f"B: {passage}", return_tensors=None, add_special_tokens=False, max_length=max_length, truncation=True
            )
            item = tokenizer.prepare_for_model(
                [tokenizer.bos_token_id] + query_inputs["input_ids"], sep_inputs + passage_inputs["input_ids"],
                truncation="only_second", max_length=max_length, padding=False, return_attention_mask=False,
                return_token_type_ids=False, add_special_tokens=False,
            )  # fmt: skip
            item["input_ids"] = item["input_ids"] + sep_inputs + prompt_inputs
            item["attention_mask"] = [1] * len(item["input_ids"])
            inputs.append(item)
        return tokenizer.pad(
            inputs, padding=True, max_length=max_length + len(sep_inputs) + len(prompt_inputs), pad_to_multiple_of=8,
            return_tensors="pt",
        )  # fmt: skip

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModelForCausalLM.from_pretrained(str(folder))
    yes_loc = tokenizer("Yes", add_special_tokens=False)["input_ids"][0]
    model.eval()
    with torch.no_grad():
        inputs = get_inputs(pairs, tokenizer, max_length=max_length)
        scores = model(**inputs, return_dict=True).logits[:, -1, yes_loc].view(-1).float()
    return scores.tolist()


def test_a_gemma_reranker_is_routed_by_its_config_and_equals_the_model_card(tiny_gemma: Path, tmp_path: Path) -> None:
    """bge-reranker-v2-gemma's layout: the "Yes" logit after its own template, equal to its card's code to 1e-5
    (the card pads every pair to one batch; the workbench batches by length: the scores do not move)."""
    equals_its_reference(
        tiny_gemma, tmp_path, "who approves a 900 euro training course", 300, gemma_model_card_scores, "logit", "gemma"
    )


@pytest.fixture(scope="module")
def tiny_mxbai(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer Qwen2ForCausalLM in mxbai-rerank-v2's layout, with a BPE tokenizer trained on the demo handbook (its
    chat markers special, "0" and "1" in the vocabulary, a model max length of 2,048), saved as a model folder."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    folder = tmp_path_factory.mktemp("tiny-mxbai-reranker")
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1200, special_tokens=SPECIALS[:3], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    bpe.train_from_iterator([*_demo_texts(), "0 1 0 1 Relevance: query: document:"] * 2, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>", model_max_length=2048
    )
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=4096, tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id, initializer_range=0.1,
    )  # fmt: skip
    Qwen2ForCausalLM(config).save_pretrained(folder)
    return folder


def mxbai_library_scores(folder: Path, pairs: list[tuple[str, str]], max_length: int) -> list[float]:
    """The mxbai-rerank library's own MxbaiRerankV2 (fp32, CPU) on the given pairs: its logits ("1" minus "0")."""
    from mxbai_rerank import MxbaiRerankV2

    model = MxbaiRerankV2(str(folder), device="cpu", torch_dtype=torch.float32, max_length=max_length)
    return model.predict([q for q, _ in pairs], [d for _, d in pairs]).tolist()


def test_an_mxbai_v2_reranker_is_routed_by_its_config_and_equals_the_mxbai_library(
    tiny_mxbai: Path, tmp_path: Path
) -> None:
    """mxbai-rerank-v2's layout (a Qwen2): the "1" logit minus the "0" logit after its template, equal to what the
    mxbai-rerank library computes on the same pairs, to 1e-5."""
    equals_its_reference(
        tiny_mxbai, tmp_path, "how many vacation days do I get", 300, mxbai_library_scores, "logit", "mxbai"
    )


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
    stanford = tmp_path / "stanford-colbert"  # another ColBERT layout: refused by name
    stanford.mkdir()
    (stanford / "config.json").write_text(json.dumps({"architectures": ["HF_ColBERT"], "model_type": "bert"}))
    (stanford / "artifact.metadata").write_text(json.dumps({"name": "colbertv2.0"}))
    with pytest.raises(ConfigError, match=r"late-interaction \(ColBERT\) model in a layout other than PyLate's"):
        create_reranker(str(stanford), settings)
    broken = tmp_path / "pylate-broken"  # a PyLate folder missing its files: named, never loaded half
    broken.mkdir()
    (broken / "config.json").write_text(json.dumps({"architectures": ["BertModel"], "model_type": "bert"}))
    (broken / "modules.json").write_text(json.dumps([{"type": "pylate.models.Dense.Dense"}]))
    with pytest.raises(ConfigError, match=r"config_sentence_transformers\.json is missing"):
        create_reranker(str(broken), settings)


def _bare_encoder(tmp_path: Path) -> Path:
    folder = tmp_path / "bare"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": ["BertModel"], "model_type": "bert"}))
    return folder


def _relabelled(source: Path, folder: Path, **config: object) -> Path:
    """A copy of a model folder whose config.json says something else (`None` removes a key)."""
    import shutil

    shutil.copytree(source, folder)
    data = json.loads((folder / "config.json").read_text())
    data.update(config)
    (folder / "config.json").write_text(json.dumps({k: v for k, v in data.items() if v is not None}))
    return folder


def test_a_load_that_initialises_any_weight_afresh_is_refused_naming_the_weights(
    tiny_qwen3: Path, tiny_models: dict[str, Path], tmp_path: Path
) -> None:
    """Issue 68, item 5: a damaged or relabelled config never has a reranker scored by fresh weights. transformers
    lists the weights it initialised; the loaders read that list and refuse, naming them."""
    from workbench.errors import ModelError

    settings = Settings(data_dir=tmp_path / "data", offline=True, reranker_backend="torch")
    for folder, named in [
        (_relabelled(tiny_qwen3, tmp_path / "no-architectures", architectures=None), "score.weight"),
        (_relabelled(tiny_qwen3, tmp_path / "as-classifier", architectures=["Qwen3ForSequenceClassification"]),
         "score.weight"),
        (_relabelled(tiny_models["reranker"], tmp_path / "minilm-as-qwen3", architectures=["Qwen3ForCausalLM"],
                     model_type="qwen3"), "lm_head.weight"),
    ]:  # fmt: skip
        with pytest.raises(ModelError, match="initialised at random") as caught:
            create_reranker(str(folder), settings).score("vacation days", ["Employees get 25 days."], use_cache=False)
        assert named in str(caught.value) and "\n" not in str(caught.value)
    for intact in (tiny_qwen3, tiny_models["reranker"]):  # the folders as written load and score
        scores, _ = create_reranker(str(intact), settings).score("vacation days", ["25 days a year"], use_cache=False)
        assert len(scores) == 1


def test_a_refused_folder_is_one_line_on_the_command_line(
    tiny_qwen3: Path, tiny_models: dict[str, Path], demo_cli: Engine, tmp_path: Path
) -> None:
    """Issue 68, item 5, as `workbench query` says it in a process of its own (the hostile doors' models door):
    transformers' tensor-parallel advice about a relabelled folder ran to two lines above the refusal, and `auto`
    announced measuring the backends of a folder it could not load. Only the refusal is printed."""
    import os
    import subprocess
    import sys

    workbench = str(Path(sys.executable).parent / "workbench")
    env = {k: v for k, v in os.environ.items() if k != "RERANKER_BACKEND"}  # auto, as a user runs it
    env["WORKBENCH_EXPORTS_DIR"] = str(tmp_path / "exports")  # no backend choice kept for these folders yet
    for folder in (
        _relabelled(tiny_models["reranker"], tmp_path / "minilm-as-qwen3", architectures=["Qwen3ForCausalLM"],
                    model_type="qwen3"),
        _relabelled(tiny_qwen3, tmp_path / "no-architectures", architectures=None),
    ):  # fmt: skip
        done = subprocess.run([workbench, "query", "vacation days", "--collection", "demo", "-k", "3", "--reranker",
                               str(folder)], env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 2 and "initialised at random" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_fingerprint_keys_every_file_a_loader_reads(tmp_path: Path) -> None:
    """Issue 68, item 4: two sharded checkpoints of one config, a ColBERT whose projection changed, a tokenizer
    config that flips lower-casing: each is another fingerprint, so no model is lent another's kept scores."""
    from workbench.rerankers.local.backends import fingerprint

    base = tmp_path / "base"
    (base / "1_Dense").mkdir(parents=True)
    files = {"config.json": "{}", "model-00001-of-00002.safetensors": "shard one",
             "model-00002-of-00002.safetensors": "shard two", "model.safetensors.index.json": "{}",
             "tokenizer_config.json": '{"do_lower_case": true}', "1_Dense/model.safetensors": "projection",
             "README.md": "a model card"}  # fmt: skip
    for name, text in files.items():
        (base / name).write_text(text)
    prints = {"base": fingerprint(base)}
    changes = [
        ("model-00002-of-00002.safetensors", "another shard two"),
        ("tokenizer_config.json", '{"do_lower_case": false}'),
        ("1_Dense/model.safetensors", "another projection"),
        ("README.md", "another card"),
    ]
    for changed, text in changes:
        import shutil

        other = tmp_path / changed.replace("/", "_")
        shutil.copytree(base, other)
        (other / changed).write_text(text)
        prints[changed] = fingerprint(other)
    assert prints["README.md"] == prints["base"]  # a model card is read by no loader
    rest = [value for key, value in prints.items() if key != "README.md"]
    assert len(set(rest)) == len(rest)

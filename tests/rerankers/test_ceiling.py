"""Issue 37, item 3: speed against the machine's ceiling. The FLOPs of a pair follow the model's config (checked
against torch's own FLOP counter running the model), and the share of the ceiling is measured, between 0 and 1."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoModelForSequenceClassification

from workbench.rerankers.local.ceiling import against_ceiling, flops_per_pair, measure_peak, model_shape


@pytest.mark.parametrize("tokens", [16, 64, 200])
def test_flops_per_pair_equal_what_torch_counts_running_the_model(tiny_models: dict[str, Path], tokens: int) -> None:
    folder = tiny_models["reranker"]
    # eager attention: torch's counter sees the attention's matrix multiplies (a fused kernel hides them)
    model = AutoModelForSequenceClassification.from_pretrained(folder, attn_implementation="eager").eval()
    ids = torch.ones((1, tokens), dtype=torch.long)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(input_ids=ids, attention_mask=torch.ones_like(ids))
    assert flops_per_pair(model_shape(folder), tokens) == counter.get_total_flops()


def test_minilm_l6_costs_six_gflop_a_pair_at_256_tokens(real_reranker_dir: Path) -> None:
    assert flops_per_pair(model_shape(real_reranker_dir), 256) / 1e9 == pytest.approx(6.04, abs=0.005)


def test_the_share_of_the_ceiling_is_measured_between_0_and_1(tiny_models: dict[str, Path]) -> None:
    from workbench.config import Settings
    from workbench.rerankers import CrossEncoderReranker

    peak = measure_peak()
    assert peak.fp32_gflops_per_core > 1 and peak.int8_gops_per_core > 1
    reranker = CrossEncoderReranker(str(tiny_models["reranker"]), Settings(reranker_backend="torch", offline=True))
    pairs = [("what do herons eat", "Herons wade in shallow water and spear fish with their long beaks. " * 3)] * 64
    started = time.perf_counter()
    reranker.score_pairs(pairs)
    rate = len(pairs) / (time.perf_counter() - started)
    [(ids, _)] = reranker.encode(pairs[0][0], [pairs[0][1]])
    tokens = len(ids)
    row = against_ceiling("torch", rate, torch.get_num_threads(), model_shape(tiny_models["reranker"]), tokens, peak)
    assert 0 < row.share_of_ceiling <= 1
    assert row.gflop_per_pair == pytest.approx(flops_per_pair(model_shape(tiny_models["reranker"]), tokens) / 1e9)
    assert row.pairs_per_second_per_core == pytest.approx(rate / torch.get_num_threads())
    int8 = against_ceiling("onnx-int8", rate, 1, model_shape(tiny_models["reranker"]), tokens, peak)
    assert int8.share_of_ceiling == pytest.approx(
        rate * flops_per_pair(model_shape(tiny_models["reranker"]), tokens) / (peak.int8_gops_per_core * 1e9)
    )

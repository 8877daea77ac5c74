"""Speed against the hardware's ceiling: what one (query, document) pair costs a BERT-style cross-encoder in
arithmetic, what this machine's cores can do at most (a short fp32, int8 and bf16 matrix multiply, one core), and so
what share of the ceiling a backend reaches.

FLOPs per pair at T tokens, for L layers of width H and feed-forward width I (a multiply-add counts 2):
Q, K, V and the output projection 8·T·H², attention scores and their use 4·T²·H, the feed-forward 4·T·H·I, per
layer; then the pooler (2·H²) and the classifier (2·H). Embedding lookups, softmax and layer norms are left out:
they are not matrix multiplies and cost under 1 % here. For MiniLM-L6 (H 384, I 1536) at 256 tokens that is
6.04 GFLOP a pair.
"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from workbench.rerankers.local.machine import machine_facts
from workbench.vocab import BF16_CPU_FLAGS

_SIDE = 512  # the multiply's side: large enough to reach the kernels' speed, small enough for a second's test
_ROUNDS = 12


class Peak(BaseModel):
    """This machine's measured peak per core: fp32 GFLOP/s, int8 GOP/s and, where the CPU multiplies bf16, bf16
    GFLOP/s (the best of the runtimes tried)."""

    fp32_gflops_per_core: float
    int8_gops_per_core: float
    bf16_gflops_per_core: float | None = None
    how: str = (
        f"one thread, {_SIDE}x{_SIDE} matrix multiply, best of {_ROUNDS} rounds: torch and ONNX Runtime fp32, "
        "ONNX Runtime MatMulInteger (uint8 x int8, what dynamic int8 runs), torch bf16 where the CPU has it"
    )

    def per_core(self, backend: str) -> float:
        """The peak a backend's arithmetic runs against: int8 for a quantized backend, bf16 for a bf16 one (where
        measured), fp32 otherwise (FLOP/s)."""
        if "int8" in backend:
            return 1e9 * self.int8_gops_per_core
        if "bf16" in backend and self.bf16_gflops_per_core:
            return 1e9 * self.bf16_gflops_per_core
        return 1e9 * self.fp32_gflops_per_core


def model_shape(folder: str | Path) -> dict[str, int]:
    """The layers, width and feed-forward width a model folder's config.json gives."""
    config = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    return {
        "layers": int(config["num_hidden_layers"]),
        "hidden": int(config["hidden_size"]),
        "intermediate": int(config["intermediate_size"]),
    }


def flops_per_pair(shape: dict[str, int], tokens: float) -> float:
    """The multiply-adds (x2) of one pair of `tokens` tokens through the model (see the module's docstring)."""
    t, h, i = float(tokens), shape["hidden"], shape["intermediate"]
    per_layer = 8 * t * h * h + 4 * t * t * h + 4 * t * h * i
    return shape["layers"] * per_layer + 2 * h * h + 2 * h


def _best_rate(run: Any, operations: float) -> float:
    for _ in range(3):
        run()  # warm: first calls pick kernels and allocate
    best = float("inf")
    for _ in range(_ROUNDS):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return operations / best


def _ort_session(op: str, a_type: int, b_type: int, y_type: int) -> Any:
    import onnxruntime as ort
    from onnx import helper

    inputs = [helper.make_tensor_value_info(n, t, [_SIDE, _SIDE]) for n, t in (("A", a_type), ("B", b_type))]
    output = helper.make_tensor_value_info("Y", y_type, [_SIDE, _SIDE])
    graph = helper.make_graph([helper.make_node(op, ["A", "B"], ["Y"])], "peak", inputs, [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


@functools.cache  # the cores do not change while the process runs
def measure_peak() -> Peak:
    """This machine's peak per core, measured now (about a second)."""
    import torch
    from onnx import TensorProto

    operations = 2.0 * _SIDE**3
    rng = np.random.default_rng(0)
    a32, b32 = rng.standard_normal((2, _SIDE, _SIDE), dtype=np.float32)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    bf16 = None
    try:
        ta, tb = torch.from_numpy(a32), torch.from_numpy(b32)
        fp32 = _best_rate(lambda: ta @ tb, operations)
        if BF16_CPU_FLAGS & set(machine_facts("cpu").flags):
            ha, hb = ta.bfloat16(), tb.bfloat16()
            bf16 = _best_rate(lambda: ha @ hb, operations) / 1e9
    finally:
        torch.set_num_threads(threads)
    session = _ort_session("MatMul", TensorProto.FLOAT, TensorProto.FLOAT, TensorProto.FLOAT)
    fp32 = max(fp32, _best_rate(lambda: session.run(None, {"A": a32, "B": b32}), operations))
    a8 = rng.integers(0, 255, (_SIDE, _SIDE), dtype=np.uint8)
    b8 = rng.integers(-128, 127, (_SIDE, _SIDE), dtype=np.int8)
    session = _ort_session("MatMulInteger", TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32)
    int8 = _best_rate(lambda: session.run(None, {"A": a8, "B": b8}), operations)
    return Peak(fp32_gflops_per_core=fp32 / 1e9, int8_gops_per_core=int8 / 1e9, bf16_gflops_per_core=bf16)


class CeilingRow(BaseModel):
    """One backend's speed against the ceiling."""

    backend: str
    pairs_per_second: float
    pairs_per_second_per_core: float
    tokens_per_pair: float
    gflop_per_pair: float
    share_of_ceiling: float  # the backend's arithmetic rate over the measured peak of its cores (0 to 1 as measured)

    def words(self) -> str:
        return (
            f"{self.backend}: {self.pairs_per_second_per_core:.1f} pairs/s per core at {self.tokens_per_pair:.0f} "
            f"tokens ({self.gflop_per_pair:.2f} GFLOP a pair), {self.share_of_ceiling:.0%} of the ceiling"
        )


def against_ceiling(
    backend: str, pairs_per_second: float, cores: int, shape: dict[str, int], tokens: float, peak: Peak
) -> CeilingRow:
    """A backend's measured rate on `cores` cores as a share of what those cores can do at most."""
    flops = flops_per_pair(shape, tokens)
    per_core = pairs_per_second / max(cores, 1)
    share = per_core * flops / peak.per_core(backend)
    return CeilingRow(
        backend=backend, pairs_per_second=pairs_per_second, pairs_per_second_per_core=per_core,
        tokens_per_pair=tokens, gflop_per_pair=flops / 1e9, share_of_ceiling=share,
    )  # fmt: skip

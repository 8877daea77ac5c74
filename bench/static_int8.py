"""Static int8 for the reranker (issue 58): ONNX Runtime's QDQ static quantization, activation scales fixed from
calibration pairs of the demo, against the fp32 ONNX export, interleaved in one run.

    python bench/static_int8.py                                  # the shared QA cross-encoder
    python bench/static_int8.py --model FOLDER --rounds 5

Variants: every weight MatMul in int8 (per-channel signed weights, unsigned activations, min-max scales); and mixed,
the feed-forward down-projections (the MatMuls after GELU, whose activations have the widest range) kept in fp32.
The attention's activation-by-activation MatMuls stay fp32 in both. Each variant's scores are compared with fp32's
on 25 demo queries, each against every demo passage: Spearman's rank correlation per query (median, worst), the
queries whose top 10 set changed, the largest score change; and whether a pair scored alone equals the same pair
in a batch of 32 (static scales: it should, to the last digit). What `doctor --parity` would decide is not this
bench's: it compares on the first stage's candidates with the audit's rule.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from workbench.paths import demo_dir

MAX_LENGTH = 256


def _passages() -> tuple[list[str], list[str]]:
    queries = [json.loads(line)["text"] for line in (demo_dir() / "queries.jsonl").read_text().splitlines()]
    docs = [p.read_text(encoding="utf-8") for p in sorted((demo_dir() / "docs").glob("*.md"))]
    return queries, [d[i : i + 900] for d in docs for i in range(0, len(d), 900)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", default=str(Path(__file__).resolve().parents[2] / "shared/models/minilm-l6-qa-reranker")
    )
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process
    from sentence_transformers import CrossEncoder
    from transformers import AutoTokenizer

    work = Path(tempfile.mkdtemp(prefix="static-int8-"))
    CrossEncoder(args.model, backend="onnx", device="cpu").save_pretrained(str(work / "export"))
    fp32 = str(work / "export" / "onnx" / "model.onnx")
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    queries, passages = _passages()
    rng = np.random.default_rng(0)
    calibration = [(queries[i % 25], passages[rng.integers(len(passages))]) for i in range(128)]
    pairs = [(queries[25 + i], p) for i in range(25) for p in passages]

    def encode(chosen: list[tuple[str, str]], padding: str | bool = True) -> dict[str, np.ndarray]:
        found = tokenizer([q for q, _ in chosen], [p for _, p in chosen], truncation=True, max_length=MAX_LENGTH,
                          padding=padding, return_tensors="np")  # fmt: skip
        return {name: value.astype(np.int64) for name, value in found.items()}

    class Calibration(CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter([encode(calibration[i : i + 16], "max_length") for i in range(0, 128, 16)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.batches, None)

    prepared = str(work / "prepared.onnx")
    quant_pre_process(fp32, prepared, skip_symbolic_shape=True)
    graph = onnx.load(prepared).graph
    weights = {i.name for i in graph.initializer}
    by_activations = [n.name for n in graph.node if n.op_type == "MatMul" and not set(n.input) & weights]
    down = [
        n.name for n in graph.node if n.op_type == "MatMul" and "/output/dense/" in n.name and "attention" not in n.name
    ]
    variants = {"fp32": fp32}
    for name, kept_fp32 in (("int8", []), ("mixed", down)):
        variants[name] = str(work / f"{name}.onnx")
        quantize_static(
            prepared, variants[name], Calibration(), quant_format=QuantFormat.QDQ, per_channel=True,
            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, calibrate_method=CalibrationMethod.MinMax,
            op_types_to_quantize=["MatMul"], nodes_to_exclude=by_activations + kept_fp32,
        )  # fmt: skip
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.log_severity_level = 2, 3
    sessions = {k: ort.InferenceSession(v, options, providers=["CPUExecutionProvider"]) for k, v in variants.items()}
    batches = [encode(pairs[i : i + 32]) for i in range(0, len(pairs), 32)]

    def run(session: ort.InferenceSession, batch: dict[str, np.ndarray]) -> np.ndarray:
        return session.run(None, {i.name: batch[i.name] for i in session.get_inputs()})[0][:, 0]

    scores = {k: np.concatenate([run(s, b) for b in batches]) for k, s in sessions.items()}
    seconds: dict[str, list[float]] = {k: [] for k in sessions}
    for _ in range(args.rounds):  # interleaved: every variant once a round
        for k, session in sessions.items():
            started = time.perf_counter()
            for batch in batches:
                run(session, batch)
            seconds[k].append(time.perf_counter() - started)
    group = len(passages)
    reference = statistics.median(seconds["fp32"])
    for k in sessions:
        rho = [
            spearmanr(scores["fp32"][i : i + group], scores[k][i : i + group]).statistic
            for i in range(0, len(pairs), group)
        ]
        changed = sum(
            set(np.argsort(-scores["fp32"][i : i + group])[:10]) != set(np.argsort(-scores[k][i : i + group])[:10])
            for i in range(0, len(pairs), group)
        )
        alone = np.array([run(sessions[k], encode([p]))[0] for p in pairs[:32]])
        drift = float(np.max(np.abs(alone - run(sessions[k], encode(pairs[:32])))))
        print(f"{k:6} {len(pairs) / statistics.median(seconds[k]) / 2:6.1f} pairs/s per core  "
              f"{reference / statistics.median(seconds[k]):.2f}x  Spearman median {statistics.median(rho):.4f} "
              f"(worst {min(rho):.4f})  top 10 changed on {changed} of 25  largest change "
              f"{float(np.max(np.abs(scores[k] - scores['fp32']))):.3f}  alone vs batch {drift:.2g}")  # fmt: skip


if __name__ == "__main__":
    main()

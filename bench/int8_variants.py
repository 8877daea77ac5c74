"""Every int8 route ONNX Runtime offers for the reranker, against fp32, on real pairs, interleaved in one run.

    python bench/int8_variants.py                     # 2 SciFact queries x k=50, 3 rounds
    python bench/int8_variants.py --queries 4 --rounds 5

Why it exists: the `onnx-int8` backend (sentence-transformers' `avx2` dynamic quantization) is no faster than fp32
on CPUs without VNNI. This bench checks that the cause is the hardware and not the configuration, by timing the
other choices ONNX Runtime's own tools give: unsigned or signed int8 weights (MLAS's U8U8 and U8S8 kernels),
per-tensor or per-channel scales, reduced range, and ONNX Runtime's transformer fusions (attention, LayerNorm,
GELU) with and without int8. Every variant gets the same batches, made by the reranker's own `encode` and
`batches` (its truncation, length sort, batch size and per-batch padding). torch fp32 on the same batches is the
baseline. Quality is each variant's Spearman rank correlation with fp32 over each query's candidates (median and
worst), the same figure docs/performance.md uses.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from rerank_backends import candidate_pairs, pairs_parser

from workbench.config import Settings
from workbench.engine import Engine
from workbench.rerankers import CrossEncoderReranker
from workbench.rerankers.local.backends import ExportCache, quiet_session_options

Batch = dict[str, np.ndarray]


def batches_for(reranker: CrossEncoderReranker, work: list[tuple[str, list[str]]]) -> list[tuple[int, Batch]]:
    """Each query's pairs encoded and batched exactly as the reranker feeds its model (`encode`, `batches`),
    with the index of the query each batch belongs to."""
    return [
        (index, arrays)
        for index, (query, texts) in enumerate(work)
        for _, arrays in reranker.batches(reranker.encode(query, texts))
    ]


def onnx_variants(fp32_file: Path, folder: Path, model_path: str) -> dict[str, Path]:
    """The fp32 export and its int8 and fused variants, made with ONNX Runtime's own quantizer and optimizer."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(model_path)

    files = {"onnx fp32": fp32_file}
    plans = {
        "int8 U8U8 per-channel": {"weight_type": QuantType.QUInt8, "per_channel": True},
        "int8 U8S8 per-tensor": {"weight_type": QuantType.QInt8, "per_channel": False},
        "int8 U8S8 per-channel": {"weight_type": QuantType.QInt8, "per_channel": True},
        "int8 U8S8 reduce-range": {"weight_type": QuantType.QInt8, "per_channel": True, "reduce_range": True},
    }
    for index, (name, options) in enumerate(plans.items()):
        target = folder / f"int8-{index}.onnx"
        quantize_dynamic(fp32_file, target, **options)  # type: ignore[arg-type]
        files[name] = target
    fused = folder / "fused.onnx"
    optimized = optimize_model(
        str(fp32_file), model_type="bert", num_heads=config.num_attention_heads, hidden_size=config.hidden_size
    )
    optimized.save_model_to_file(str(fused))
    files["fused fp32"] = fused
    fused_int8 = folder / "fused-int8.onnx"
    quantize_dynamic(
        fused,
        fused_int8,
        weight_type=QuantType.QInt8,
        per_channel=True,
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},  # fused ops carry no inferred types
    )
    files["fused int8 U8S8"] = fused_int8
    return files


def runners(model_path: str, files: dict[str, Path]) -> dict[str, Callable[[Batch], np.ndarray]]:
    """One scoring function per variant, torch fp32 first; each returns the batch's logits."""
    import onnxruntime as ort
    import torch
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(model_path).eval()

    def torch_fp32(batch: Batch) -> np.ndarray:
        with torch.inference_mode():
            inputs = {name: torch.from_numpy(value) for name, value in batch.items()}
            return model(**inputs).logits[:, 0].numpy()

    scorers: dict[str, Callable[[Batch], np.ndarray]] = {"torch fp32": torch_fp32}
    for name, path in files.items():
        session = ort.InferenceSession(str(path), quiet_session_options(), providers=["CPUExecutionProvider"])
        wanted = {node.name for node in session.get_inputs()}

        def score(batch: Batch, session: ort.InferenceSession = session, wanted: set[str] = wanted) -> np.ndarray:
            return session.run(None, {k: v for k, v in batch.items() if k in wanted})[0][:, 0]

        scorers[name] = score
    return scorers


def main() -> int:
    args = pairs_parser(__doc__, queries=2).parse_args()

    from scipy.stats import spearmanr

    settings = Settings()
    engine = Engine(settings)
    work = candidate_pairs(engine, args.dataset, args.collection, args.queries, args.k)
    reranker = CrossEncoderReranker(
        settings.reranker_model, settings.model_copy(update={"reranker_backend": "torch", "reranker_device": "cpu"})
    )
    model_path = reranker.path
    owned = batches_for(reranker, work)
    batches = [batch for _, batch in owned]
    pairs = sum(len(batch["input_ids"]) for batch in batches)
    exports = ExportCache(settings.exports_dir)
    folder, file_name = exports.ensure(model_path, "onnx", lambda m: print(m, file=sys.stderr))
    with tempfile.TemporaryDirectory(prefix="wb-int8-") as scratch:
        print("quantizing and fusing (ONNX Runtime's tools)...", file=sys.stderr)
        scorers = runners(model_path, onnx_variants(folder / file_name, Path(scratch), model_path))
        scores = {name: [scorer(batch) for batch in batches] for name, scorer in scorers.items()}  # warm-up
        rates: dict[str, list[float]] = {name: [] for name in scorers}
        names = list(scorers)
        for round_number in range(args.rounds):
            shift = round_number % len(names)
            for name in names[shift:] + names[:shift]:
                started = time.perf_counter()
                for batch in batches:
                    scorers[name](batch)
                rates[name].append(pairs / (time.perf_counter() - started))

    print(
        f"{pairs} pairs ({len(work)} SciFact queries x k={args.k}), {args.rounds} interleaved rounds, "
        f"{sum(int(b['attention_mask'].sum()) for b in batches) / pairs:.1f} tokens/pair"
    )
    print(f"{'variant':<24} {'pairs/s':>8} {'vs torch':>9}   rank correlation with fp32, median (min)")
    baseline = statistics.median(rates["torch fp32"])
    for name in names:
        correlations = []
        for index in range(len(work)):
            mine = np.concatenate([s for (q, _), s in zip(owned, scores[name], strict=True) if q == index])
            reference = np.concatenate([s for (q, _), s in zip(owned, scores["torch fp32"], strict=True) if q == index])
            correlations.append(float(spearmanr(mine, reference)[0]))
        rate = statistics.median(rates[name])
        print(
            f"{name:<24} {rate:8.1f} {rate / baseline:8.2f}x   "
            f"{statistics.median(correlations):.3f} ({min(correlations):.3f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

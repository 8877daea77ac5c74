"""Why no int8 variant of the QA reranker is faithful, and what a faster faithful backend gives a person on Explore
(issue 58), in one run on the demo (its 50 judged queries, dense k = 20, top 10: the parity audit's case).

    python bench/quantized_backends.py                   # the shared QA cross-encoder, about 5 minutes on 2 cores
    python bench/quantized_backends.py --json FILE       # also keep the figures (scripts/bench_figures.py)

1. The noise budget: Gaussian noise of standard deviation σ added to fp32 torch's scores, 200 draws each; the share
   of queries whose top 10 set changes. The audit allows 10 %; the largest σ that stays under it, on average, is
   what any backend's score error must stay under.
2. Int8 layer by layer: NNCF's static int8 (the `openvino-int8` backend's recipe and calibration pairs) applied to
   one group of the six layers' matrix multiplies at a time, the rest left in fp32; each variant's score error
   against fp32 torch (σ of the difference, the largest) and the queries whose top 10 set changed.
3. Explore's reranked answer at k = 50: one search (the first stage and the reranker, no score cache) per demo
   query, on each backend, interleaved by round; the median wall time.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _output import add_json_option, keep

GROUPS = {  # the linear layers of a BERT layer, by the names optimum-intel's export gives them
    "attention Q, K, V": r"self\.(query|key|value)/",
    "attention output": r"attention\.output\.dense/",
    "feed-forward up": r"intermediate\.dense/",
    "feed-forward down": r"layer\.\d+\.output\.dense/",
}
SIGMAS = (0.001, 0.003, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2)
EXPLORE_BACKENDS = ("torch", "openvino", "openvino-bf16", "openvino-int8")


def _top(scores: np.ndarray, ids: list[str], n: int = 10) -> set[str]:
    return {i for _, i in sorted(zip((-s for s in scores), ids, strict=True))[:n]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", default=str(Path(__file__).resolve().parents[2] / "shared/models/minilm-l6-qa-reranker")
    )
    parser.add_argument("--rounds", type=int, default=3)
    add_json_option(parser)
    args = parser.parse_args()

    import nncf
    import openvino as ov
    import torch
    from sentence_transformers import CrossEncoder

    from workbench.config import Settings
    from workbench.engine import Engine
    from workbench.rerankers.local.backends import CALIBRATION_MAX_LENGTH
    from workbench.rerankers.local.ceiling import model_shape
    from workbench.rerankers.local.machine import installed_backends
    from workbench.rerankers.local.openvino_pairs import calibration_pairs
    from workbench.services.demo import DEMO_COLLECTION, demo_dataset, ensure_demo_collection

    work = Path(tempfile.mkdtemp(prefix="quantized-backends-"))
    settings = Settings(data_dir=work / "data", exports_dir=work / "exports", reranker_model=args.model, offline=True)
    engine = Engine(settings)
    ensure_demo_collection(engine)
    dataset = demo_dataset("test")
    plan = engine.plan(collection=DEMO_COLLECTION, k=20, top_n=10, reranker=None)
    queries = []
    for text in dataset.queries.values():
        found = engine.search(text, plan, max_query_chars=None).candidates
        queries.append((text, [c.id for c in found], [c.text for c in found]))
    pairs = [(text, t) for text, _, texts in queries for t in texts]
    torch_model = CrossEncoder(args.model, device="cpu", max_length=256, activation_fn=torch.nn.Identity())
    reference = np.asarray(torch_model.predict(pairs, batch_size=32)).reshape(-1)
    bounds = np.cumsum([0] + [len(ids) for _, ids, _ in queries])

    def per_query(scores: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, list[str]]]:
        return [(reference[a:b], scores[a:b], q[1]) for a, b, q in zip(bounds[:-1], bounds[1:], queries, strict=True)]

    # 1. the noise budget
    rng = np.random.default_rng(0)
    budget = {}
    for sigma in SIGMAS:
        shares = []
        for _ in range(200):
            noisy = reference + rng.normal(0, sigma, len(reference))
            shares.append(np.mean([_top(a, ids) != _top(b, ids) for a, b, ids in per_query(noisy)]))
        budget[sigma] = float(np.mean(shares))
        print(f"noise σ {sigma:<6} top 10 set changed on {budget[sigma]:.1%} of queries (mean of 200 draws)")
    allowed = max((s for s, share in budget.items() if share <= 0.10), default=0.0)
    print(f"the audit's 10 % allows a score error of σ ≤ {allowed} (logits; fp32 torch's scores spread σ "
          f"{np.std(reference):.2f})")  # fmt: skip

    # 2. int8 layer by layer
    folder = work / "openvino"
    CrossEncoder(args.model, backend="openvino", device="cpu").save_pretrained(str(folder))
    core = ov.Core()
    fp32_xml = str(folder / "openvino" / "openvino_model.xml")
    base = core.read_model(fp32_xml)
    names = [port.get_any_name() for port in base.inputs]
    linear = [op.get_friendly_name() for op in base.get_ordered_ops() if op.get_type_name() == "MatMul"]
    tokenizer = torch_model.tokenizer
    calibration = calibration_pairs()

    def inputs(batch: list[tuple[str, str]], max_length: int = CALIBRATION_MAX_LENGTH) -> dict[str, np.ndarray]:
        encoded = tokenizer([q for q, _ in batch], [p for _, p in batch], truncation=True, max_length=max_length,
                            padding=True, return_tensors="np")  # fmt: skip
        return {name: encoded[name].astype(np.int64) for name in names}

    batches = [calibration[i : i + 8] for i in range(0, len(calibration), 8)]
    nncf.set_log_level(40)
    layers = {}
    for group, pattern in [*GROUPS.items(), ("all (the openvino-int8 backend)", None)]:
        kept_fp32 = [n for n in linear if pattern is not None and "linear" in n and not re.search(pattern, n)]
        if pattern is not None:
            kept_fp32 += [n for n in linear if "linear" not in n]  # attention's activation-by-activation products
        quantized = nncf.quantize(
            core.read_model(fp32_xml), nncf.Dataset(batches, inputs), model_type=nncf.ModelType.TRANSFORMER,
            subset_size=len(batches), ignored_scope=nncf.IgnoredScope(names=kept_fp32, validate=False),
        )  # fmt: skip
        compiled = core.compile_model(quantized, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        scores = np.concatenate([np.asarray(compiled(inputs(pairs[i : i + 32], 256))[0]).reshape(-1)
                                 for i in range(0, len(pairs), 32)])  # fmt: skip
        changed = sum(_top(a, ids) != _top(b, ids) for a, b, ids in per_query(scores))
        error = scores - reference
        layers[group] = {"sigma": float(np.std(error)), "largest": float(np.max(np.abs(error))), "changed": changed}
        print(f"int8 only in {group:32} σ {np.std(error):.4f}, largest {np.max(np.abs(error)):.3f}, "
              f"top 10 set changed on {changed} of {len(queries)}")  # fmt: skip

    # 3. Explore's reranked answer at k = 50, per backend
    backends = [b for b in EXPLORE_BACKENDS if b in installed_backends()]
    explore = engine.plan(collection=DEMO_COLLECTION, k=50, top_n=10, reranker=None)
    for backend in backends:  # load (and export) each first: loading is not the answer's time
        engine.reranker(f"{args.model}@{backend}")
    times: dict[str, list[float]] = {b: [] for b in backends}
    texts = [text for text, _, _ in queries]
    for _ in range(args.rounds):
        for backend in backends:
            reranker = engine.reranker(f"{args.model}@{backend}")
            for text in texts:
                started = time.perf_counter()
                candidates = engine.search(text, explore, max_query_chars=None).candidates
                reranker.score(text, [c.text for c in candidates], use_cache=False)
                times[backend].append(time.perf_counter() - started)
    answer = {b: statistics.median(t) for b, t in times.items()}
    for backend, seconds in answer.items():
        print(f"Explore at k = 50 on {backend:14} median {seconds:.3f} s ({answer['torch'] / seconds:.2f}× torch)")
    shape = model_shape(args.model)
    tokens = float(np.mean([len(ids) for ids in tokenizer([q for q, _ in pairs], [p for _, p in pairs],
                                                          truncation=True, max_length=256)["input_ids"]]))  # fmt: skip
    keep(args, {"budget": {str(k): v for k, v in budget.items()}, "allowed_sigma": allowed, "tokens": tokens,
                "hidden": shape["hidden"], "intermediate": shape["intermediate"],
                "reference_sigma": float(np.std(reference)), "layers": layers, "queries": len(queries),
                "explore_k50": answer, "rounds": args.rounds})  # fmt: skip


if __name__ == "__main__":
    main()

"""Cross-encoder throughput per backend on real (query, candidate) pairs, interleaved in one run.

    python bench/rerank_backends.py                          # torch, onnx, onnx-int8 on SciFact, k=50
    python bench/rerank_backends.py --backends torch,onnx-int8 --queries 8 --rounds 3
    python bench/rerank_backends.py --cuda                   # also fp16/bf16 torch on CUDA, when present

The pairs are the first N SciFact queries with their k dense candidates. Each round runs every backend over
every query (the order of backends rotates per round); the figure is the median pairs/s over rounds, with the
mean tokens per pair (what RERANKER_MAX_LENGTH leaves of each pair). Quality per backend is measured by
`workbench eval` (docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import CollectionNotFoundError, ConfigError
from workbench.rerankers import CrossEncoderReranker


def candidate_pairs(
    engine: Engine, dataset: Path, collection: str, queries: int, k: int
) -> list[tuple[str, list[str]]]:
    """The first `queries` queries of a BEIR dataset with the texts of their k dense candidates (the dataset is
    ingested into `collection` the first time)."""
    try:
        engine.collection_info(collection)
    except CollectionNotFoundError:
        print(f"ingesting {dataset} into '{collection}' (once)...", file=sys.stderr)
        engine.ingest(dataset, collection)
    texts = [json.loads(line)["text"] for line in (dataset / "queries.jsonl").read_text().splitlines()]
    work = []
    for query in texts[:queries]:
        result = engine.search(query, engine.plan(collection=collection, k=k, top_n=1, reranker=None))
        work.append((query, [c.text for c in result.candidates]))
    return work


def embedder_rates(engine: Engine, texts: list[str], rounds: int) -> None:
    """The embedder through sentence-transformers' own backends (exported to a temp folder for the run)."""
    import tempfile

    from sentence_transformers import SentenceTransformer
    from sentence_transformers.backend import export_dynamic_quantized_onnx_model

    path = engine.embedder().path  # type: ignore[attr-defined]
    folder = tempfile.mkdtemp(prefix="wb-bench-embedder-")
    from workbench.rerankers.local.backends import quiet_session_options

    quiet = {"session_options": quiet_session_options()}
    onnx = SentenceTransformer(path, backend="onnx", device="cpu", model_kwargs=quiet)
    onnx.save_pretrained(folder)
    export_dynamic_quantized_onnx_model(onnx, "avx2", folder)
    models = {
        "torch": SentenceTransformer(path, device="cpu"),
        "onnx": onnx,
        "onnx-int8": SentenceTransformer(
            folder, backend="onnx", device="cpu", model_kwargs={"file_name": "onnx/model_quint8_avx2.onnx"}
        ),
    }
    rates: dict[str, list[float]] = {name: [] for name in models}
    for model in models.values():
        model.encode(texts[:16])
    for round_number in range(rounds):
        names = list(models)
        for name in names[round_number % 3 :] + names[: round_number % 3]:
            started = time.perf_counter()
            models[name].encode(texts, batch_size=64)
            rates[name].append(len(texts) / (time.perf_counter() - started))
    base = statistics.median(rates["torch"])
    print(f"embedder {engine.settings.embedding_model}: {len(texts)} texts, {rounds} interleaved rounds")
    for name, values in rates.items():
        print(f"  {name:<10} {statistics.median(values):8.1f} texts/s  {statistics.median(values) / base:5.2f}x")


def pairs_parser(description: str | None, queries: int) -> argparse.ArgumentParser:
    """The options every reranker-speed bench shares: which dataset and collection, k, queries and rounds."""
    repo = Path(__file__).resolve().parents[1]
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=repo.parent / "shared" / "data" / "scifact")
    parser.add_argument("--collection", default="scifact")
    parser.add_argument("-k", type=int, default=50)
    parser.add_argument("--queries", type=int, default=queries)
    parser.add_argument("--rounds", type=int, default=3)
    return parser


def main() -> int:
    parser = pairs_parser(__doc__, queries=6)
    parser.add_argument("--backends", default="torch,onnx,onnx-int8,openvino")
    parser.add_argument("--cuda", action="store_true", help="also measure torch on CUDA (fp16/bf16) when present")
    parser.add_argument(
        "--embedder",
        action="store_true",
        help="also the embedder (same architecture): texts/s of torch, ONNX and ONNX int8 encoding the candidates",
    )
    args = parser.parse_args()

    settings = Settings()
    engine = Engine(settings)
    work = candidate_pairs(engine, args.dataset, args.collection, args.queries, args.k)
    pairs = sum(len(texts) for _, texts in work)

    rerankers: dict[str, CrossEncoderReranker] = {}
    for backend in args.backends.split(","):
        rerankers[backend] = CrossEncoderReranker(
            settings.reranker_model,
            settings.model_copy(update={"reranker_backend": backend, "reranker_device": "cpu"}),
            progress=lambda message: print(message, file=sys.stderr),
        )
    if args.cuda:
        try:
            rerankers["torch (cuda)"] = CrossEncoderReranker(
                settings.reranker_model,
                settings.model_copy(update={"reranker_backend": "torch", "reranker_device": "cuda"}),
            )
        except ConfigError as exc:
            print(f"no CUDA: {exc}", file=sys.stderr)

    for reranker in rerankers.values():  # warm-up, and every document's token ids cached
        for query, texts in work:
            reranker.predict(query, texts)
    rates: dict[str, list[float]] = {name: [] for name in rerankers}
    names = list(rerankers)
    for round_number in range(args.rounds):
        order = names[round_number % len(names) :] + names[: round_number % len(names)]
        for name in order:
            started = time.perf_counter()
            for query, texts in work:
                rerankers[name].predict(query, texts)
            rates[name].append(pairs / (time.perf_counter() - started))

    if args.embedder:
        embedder_rates(engine, [t for _, texts in work for t in texts], args.rounds)
    baseline = statistics.median(rates[names[0]])
    print(
        f"{pairs} pairs ({args.queries} SciFact queries x k={args.k}), {args.rounds} interleaved rounds, "
        f"max_length {settings.reranker_max_length}"
    )
    print(f"{'backend':<16} {'label':<22} {'pairs/s':>9} {'vs ' + names[0]:>10} {'tokens/pair':>12}")
    for name, reranker in rerankers.items():
        rate = statistics.median(rates[name])
        print(f"{name:<16} {reranker.backend:<22} {rate:9.1f} {rate / baseline:9.2f}x {reranker.tokens_per_pair:12.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

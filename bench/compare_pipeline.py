"""The engine against the pipeline a user of seed 000 writes by hand, on the same Chroma collection, with the
same model folder, max length and batch size, interleaved query by query in one run.

    python bench/compare_pipeline.py                     # SciFact, k=50 -> top 10, 40 queries
    python bench/compare_pipeline.py --queries 100 --backend onnx

The hand-written pipeline: LangChain's `Chroma(...).similarity_search(query, k)`, then
`CrossEncoder(model).predict([(query, doc) ...])`, sort by score, keep top n. The engine: `Engine.search` with
the result and score caches off (every query pays for its model call; documents' token ids are reused, which is
part of the design). Prints p50/p95 per side, the ratio of medians, and on how many queries the two top 10s are
identical (same ids, same order). A warm-up query is run on both sides first and not counted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from _output import add_json_option, keep

from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import CollectionNotFoundError


class SentenceTransformerEmbeddings:
    """What a seed-000 user writes to hand sentence-transformers to LangChain."""

    def __init__(self, model_path: str) -> None:
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(model_path, device="cpu")

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.model.encode(texts, normalize_embeddings=True).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.model.encode([text], normalize_embeddings=True)[0].tolist()


def hand_written(store, cross_encoder, query: str, k: int, top_n: int, batch_size: int) -> list[str]:  # type: ignore[no-untyped-def]
    docs = store.similarity_search(query, k=k)
    scores = cross_encoder.predict(
        [(query, d.page_content) for d in docs], batch_size=batch_size, show_progress_bar=False
    )
    ranked = sorted(zip(docs, scores, strict=True), key=lambda pair: -float(pair[1]))
    return [d.id for d, _ in ranked[:top_n]]


def main() -> int:
    repo = Path(__file__).resolve().parents[1]
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=repo.parent / "shared" / "data" / "scifact")
    parser.add_argument("--collection", default="scifact")
    parser.add_argument("-k", type=int, default=50)
    parser.add_argument("-n", "--top-n", type=int, default=10)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--backend", default="torch", help="the engine's reranker backend (torch, onnx, onnx-int8)")
    add_json_option(parser)
    args = parser.parse_args()

    settings = Settings(reranker_backend=args.backend)
    engine = Engine(settings)
    try:
        engine.collection_info(args.collection)
    except CollectionNotFoundError:
        print(f"ingesting {args.dataset} into '{args.collection}' (once)...", file=sys.stderr)
        engine.ingest(args.dataset, args.collection)
    reranker = engine.reranker()
    embedder = engine.embedder()
    batch = reranker.batch_size

    import torch
    from langchain_chroma import Chroma
    from sentence_transformers import CrossEncoder

    store = Chroma(
        collection_name=args.collection,
        embedding_function=SentenceTransformerEmbeddings(embedder.path),  # type: ignore[attr-defined]
        persist_directory=str(settings.resolved_persist_dir),
    )
    cross_encoder = CrossEncoder(reranker.path, max_length=settings.reranker_max_length, device="cpu")
    torch.set_num_threads(torch.get_num_threads())

    queries = [json.loads(line)["text"] for line in (args.dataset / "queries.jsonl").read_text().splitlines()]
    queries = queries[: args.queries + 1]
    plan = engine.plan(collection=args.collection, k=args.k, top_n=args.top_n)
    hand_written(store, cross_encoder, queries[0], args.k, args.top_n, batch)
    engine.search(queries[0], plan, use_cache=False)

    times: dict[str, list[float]] = {"hand-written": [], "engine": []}
    identical = 0
    for i, query in enumerate(queries[1:]):
        sides = ["hand-written", "engine"] if i % 2 == 0 else ["engine", "hand-written"]  # interleaved
        tops: dict[str, list[str]] = {}
        for side in sides:
            started = time.perf_counter()
            if side == "engine":
                result = engine.search(query, plan, use_cache=False)
                tops[side] = [r.id for r in result.reranked]
            else:
                tops[side] = hand_written(store, cross_encoder, query, args.k, args.top_n, batch)
            times[side].append((time.perf_counter() - started) * 1000)
        identical += tops["engine"] == tops["hand-written"]

    print(
        f"collection {args.collection} · k={args.k} -> top {args.top_n} · {len(times['engine'])} queries, "
        f"interleaved · reranker {reranker.model_id} ({reranker.backend}, batch {batch}, "
        f"max_length {settings.reranker_max_length})"
    )
    print(f"{'side':<14} {'p50 ms':>9} {'p95 ms':>9}")
    for side, values in times.items():
        print(f"{side:<14} {statistics.median(values):9.1f} {float(np.percentile(values, 95)):9.1f}")
    ratio = statistics.median(times["hand-written"]) / statistics.median(times["engine"])
    print(f"ratio (hand-written p50 / engine p50): {ratio:.2f}  (above 1.0: the engine is faster)")
    print(f"identical top {args.top_n} (ids and order): {identical} of {len(times['engine'])} queries")
    keep(args, {
        "collection": args.collection, "k": args.k, "top_n": args.top_n, "queries": len(times["engine"]),
        "backend": reranker.backend, "sides": {side: {"p50": statistics.median(values),
        "p95": float(np.percentile(values, 95))} for side, values in times.items()}, "ratio": ratio,
        "identical": identical,
    })  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

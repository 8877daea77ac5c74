"""The embedder on each backend (WORKBENCH_EMBEDDING_BACKEND): torch against OpenVINO fp32, as an ingest runs it.

Embeds a sample of a BEIR corpus's passages ('title text', as the workbench embeds them) through the workbench's
own embedder on each backend, interleaved over rounds, and prints passages/s, the ratio to torch, and the largest
difference between the two backends' vectors (unit vectors: 1e-7 is float32's rounding):

    python bench/embedding_backends.py ../shared/data/scifact [--sample 512] [--rounds 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

import numpy as np
from _output import add_json_option, keep
from ingest_sort import texts_of

from workbench.config import Settings
from workbench.embeddings import SentenceTransformerEmbedder
from workbench.vocab import EmbeddingBackend

BACKENDS: tuple[EmbeddingBackend, ...] = ("torch", "openvino")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--sample", type=int, default=512, help="passages embedded per backend and round")
    parser.add_argument("--rounds", type=int, default=3)
    add_json_option(parser)
    args = parser.parse_args()
    settings = Settings()
    texts = texts_of(args.folder)
    sample = random.Random(0).sample(texts, min(args.sample, len(texts)))
    embedders = {
        b: SentenceTransformerEmbedder(settings.embedding_model, settings.model_copy(update={"embedding_backend": b}))
        for b in BACKENDS
    }
    vectors = {b: e.embed_documents(sample[:64]) for b, e in embedders.items()}  # warm up, and the vectors compared
    drift = float(np.abs(vectors["openvino"] - vectors["torch"]).max())
    times: dict[str, list[float]] = {b: [] for b in BACKENDS}
    for _ in range(args.rounds):
        for backend, embedder in embedders.items():
            started = time.perf_counter()
            embedder.embed_documents(sample)
            times[backend].append(time.perf_counter() - started)
    rates = {b: len(sample) / statistics.median(seconds) for b, seconds in times.items()}
    print(f"{args.folder.name}: {len(sample)} sampled passages of {len(texts):,}, {settings.embedding_model}, "
          f"embedding batch {settings.embedding_batch_size}, median of {args.rounds} interleaved rounds")  # fmt: skip
    for backend in BACKENDS:
        print(f"  {backend}: {rates[backend]:.1f} passages/s ({rates[backend] / rates['torch']:.2f}x torch)")
    print(f"largest difference between the two backends' vectors: {drift:.1e}")
    keep(args, {
        "corpus": args.folder.name, "passages": len(texts), "sample": len(sample), "rounds": args.rounds,
        "model": settings.embedding_model, "batch": settings.embedding_batch_size, "rates": rates, "drift": drift,
    })  # fmt: skip


if __name__ == "__main__":
    main()

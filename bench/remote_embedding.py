"""Embedding through a service against the local model: Infinity (from .venv-infinity, `scripts/setup.sh --test`)
serving the shipped all-MiniLM-L6-v2 offline over OpenAI's `/embeddings`, called through langchain-openai as
`WORKBENCH_EMBEDDING_MODEL=http://127.0.0.1:PORT` does, on a sample of a BEIR corpus.

    python bench/remote_embedding.py ../shared/data/scifact [--sample 512] [--rounds 3]

Prints the largest difference between the served and the local vectors, and the rate of each (interleaved rounds,
medians). Both run on this machine's CPU here, so the rate says what the round trips cost, not what a GPU server
would give.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
from _output import add_json_option, keep

from workbench.config import Settings
from workbench.embeddings import EmbeddingService, SentenceTransformerEmbedder
from workbench.models import resolve_model

INFINITY = Path(__file__).resolve().parents[1] / ".venv-infinity" / "bin" / "infinity_emb"
LOCAL = "sentence-transformers/all-MiniLM-L6-v2"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def started_infinity(folder: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    home = tempfile.mkdtemp(prefix="infinity-")
    command = [
        str(INFINITY), "v2", "--model-id", folder, "--served-model-name", "all-MiniLM-L6-v2", "--host", "127.0.0.1",
        "--port", str(port), "--engine", "torch", "--device", "cpu",
    ]  # fmt: skip
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": home, "INFINITY_ANONYMOUS_USAGE_STATS": "0"}
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2):
                return process, url
        except OSError:
            time.sleep(0.5)
    process.kill()
    raise TimeoutError("Infinity did not start within 240 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--sample", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    add_json_option(parser)
    args = parser.parse_args()
    rows = [json.loads(line) for line in (args.folder / "corpus.jsonl").open() if line.strip()]
    texts = [f"{r.get('title', '')} {r.get('text', '')}".strip() for r in rows]
    sample = random.Random(0).sample(texts, min(args.sample, len(texts)))
    settings = Settings(offline=True)
    folder = resolve_model(LOCAL, settings, setting="WORKBENCH_EMBEDDING_MODEL")
    process, url = started_infinity(folder)
    try:
        served = EmbeddingService(url, settings)
        local = SentenceTransformerEmbedder(LOCAL, settings)
        gap = float(np.abs(served.embed_documents(sample[:64]) - local.embed_documents(sample[:64])).max())
        seconds: dict[str, list[float]] = {"local": [], "service": []}
        for _ in range(args.rounds):
            for name, embedder in (("local", local), ("service", served)):
                begun = time.perf_counter()
                embedder.embed_documents(sample)
                seconds[name].append(time.perf_counter() - begun)
    finally:
        process.terminate()
        process.wait(timeout=30)
    rates = {name: len(sample) / statistics.median(values) for name, values in seconds.items()}
    print(f"{args.folder.name}: {len(sample)} passages; served model {served.model_id}")
    print(f"largest difference, served vs local vectors: {gap:.2e}")
    print(
        f"rate, median of {args.rounds} interleaved rounds: local {rates['local']:.1f}/s, service "
        f"{rates['service']:.1f}/s ({settings.embedding_concurrency} batches of {settings.embedding_batch_size} "
        f"at once; x{rates['service'] / rates['local']:.2f})"
    )
    keep(args, {
        "corpus": args.folder.name, "passages": len(sample), "rounds": args.rounds, "gap": gap, "rates": rates,
        "concurrency": settings.embedding_concurrency, "batch": settings.embedding_batch_size,
    })  # fmt: skip


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()

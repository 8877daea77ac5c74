"""Embedding order at ingest: units of 256 chunks in corpus order (each sorted by the embedder within its call, as
before) against one global length sort cut into the same units (what `write_chunks` does now).

Prints, over a BEIR corpus, the padded-token ratio of each order (tokens the model computes, padding included,
over the tokens of the texts; 1.00 is no padding), and the embedding rate of each order on a sample of the
corpus, interleaved over rounds:

    python bench/ingest_sort.py ../shared/data/scifact [--sample 768] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

from _output import add_json_option, keep
from sentence_transformers import SentenceTransformer

from workbench.config import Settings
from workbench.models import resolve_model

UNIT = 256


def texts_of(folder: Path) -> list[str]:
    """The corpus's passages as the workbench embeds them ('title text')."""
    rows = [json.loads(line) for line in (folder / "corpus.jsonl").open() if line.strip()]
    return [f"{r.get('title', '')} {r.get('text', '')}".strip() for r in rows]


def unit_order(texts: list[str]) -> list[list[str]]:
    return [texts[i : i + UNIT] for i in range(0, len(texts), UNIT)]


def global_order(texts: list[str]) -> list[list[str]]:
    return unit_order(sorted(texts, key=len, reverse=True))


def padded_ratio(model: SentenceTransformer, units: list[list[str]], batch_size: int) -> float:
    """Tokens computed (each batch padded to its longest, as sentence-transformers pads) over tokens of the texts."""
    tokenizer, limit = model.tokenizer, model.max_seq_length
    computed = real = 0
    for unit in units:
        ordered = sorted(unit, key=len, reverse=True)  # sentence-transformers sorts each call's texts by length
        for start in range(0, len(ordered), batch_size):
            batch = ordered[start : start + batch_size]
            lengths = [min(len(ids), limit) for ids in tokenizer(batch, add_special_tokens=True)["input_ids"]]
            computed += max(lengths) * len(lengths)
            real += sum(lengths)
    return computed / real


def embed_seconds(model: SentenceTransformer, units: list[list[str]], batch_size: int) -> float:
    started = time.perf_counter()
    for unit in units:
        model.encode(unit, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--sample", type=int, default=768, help="passages embedded per order and round")
    parser.add_argument("--rounds", type=int, default=3)
    add_json_option(parser)
    args = parser.parse_args()
    settings = Settings()
    path = resolve_model(settings.embedding_model, settings, setting="WORKBENCH_EMBEDDING_MODEL")
    model = SentenceTransformer(path, device="cpu")
    texts = texts_of(args.folder)
    batch = settings.embedding_batch_size
    before, after = padded_ratio(model, unit_order(texts), batch), padded_ratio(model, global_order(texts), batch)
    print(f"{args.folder.name}: {len(texts):,} passages, embedding batch {batch}, units of {UNIT}")
    print(f"padded-token ratio: units in corpus order {before:.3f}, one global sort {after:.3f} "
          f"({(1 - after / before) * 100:.1f} % fewer tokens computed)")  # fmt: skip
    sample = random.Random(0).sample(texts, min(args.sample, len(texts)))
    times: dict[str, list[float]] = {"units": [], "global": []}
    embed_seconds(model, unit_order(sample[:64]), batch)  # warm up
    for _ in range(args.rounds):
        times["units"].append(embed_seconds(model, unit_order(sample), batch))
        times["global"].append(embed_seconds(model, global_order(sample), batch))
    rates = {name: len(sample) / statistics.median(seconds) for name, seconds in times.items()}
    print(
        f"embedding rate on {len(sample)} passages, median of {args.rounds} interleaved rounds: units in corpus "
        f"order {rates['units']:.1f}/s, one global sort {rates['global']:.1f}/s "
        f"(x{rates['global'] / rates['units']:.2f})"
    )
    keep(args, {
        "corpus": args.folder.name, "passages": len(texts), "batch": batch, "unit": UNIT, "padded_units": before,
        "padded_global": after, "sample": len(sample), "rounds": args.rounds, "rates": rates,
    })  # fmt: skip


if __name__ == "__main__":
    main()

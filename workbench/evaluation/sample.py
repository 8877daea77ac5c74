"""A quick look at a large BEIR corpus: the judged documents of the chosen queries plus a sample of the rest.

Ingesting SciFact's 5,183 abstracts takes a quarter of an hour on a loaded laptop; an evaluation over its first
50 queries needs only their judged documents and enough others to compete with them. `corpus_sample` writes
that corpus (the judged documents, then `others` drawn at random with a fixed seed) to the data folder once,
and returns the judgments restricted to those queries, named and noted as a sample: with fewer distractors,
first-stage figures read higher than on the whole corpus, so every report says so beside its figures.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from workbench.errors import InputError
from workbench.evaluation.io import Dataset

__all__ = ["corpus_lines", "corpus_sample", "sample_collection"]

_SEED = 0


def corpus_lines(dataset: Dataset) -> int | None:
    """How many passages the dataset's corpus.jsonl holds (BEIR passages are one chunk each); None without one."""
    if dataset.corpus is None:
        return None
    with (dataset.corpus / "corpus.jsonl").open("rb") as corpus:
        return sum(1 for line in corpus if line.strip())


def sample_collection(collection: str, others: int) -> str:
    """The collection a sample goes into, apart from the whole corpus's: `scifact-sample-1000`."""
    return f"{collection}-sample-{others}"


def corpus_sample(dataset: Dataset, others: int, data_dir: Path, max_queries: int | None = None) -> Dataset:
    """The judgments of the first `max_queries` queries (all without it) over a corpus of their judged documents
    and `others` other passages, written under `<data_dir>/samples/` (once; a later call reuses it)."""
    if dataset.corpus is None:
        raise InputError(f"{dataset.name} has no corpus.jsonl to sample: --corpus-sample needs a BEIR folder.")
    if others < 0:
        raise InputError(f"--corpus-sample must be 0 or more other passages; got {others}.")
    chosen = list(dataset.queries)[:max_queries] if max_queries else list(dataset.queries)
    judged = {doc for qid in chosen for doc in dataset.qrels.get(qid, {})}
    source = dataset.corpus / "corpus.jsonl"
    stat = source.stat()
    key = hashlib.sha256(
        json.dumps([str(source.resolve()), stat.st_size, stat.st_mtime_ns, sorted(judged), others]).encode()
    ).hexdigest()[:16]
    folder = Path(data_dir) / "samples" / f"{dataset.name}-{others}-{key}"
    kept, total = _write_sample(source, folder, judged, others)
    note = (
        f"Corpus sample: {kept['judged']:,} judged passages of these {len(chosen)} queries and {kept['others']:,} "
        f"others drawn from the {total:,} of {dataset.name} (seed {_SEED}). With fewer distractors than the whole "
        "corpus, first-stage figures read higher than they will on it: use it for a quick look, not for a decision."
    )
    return Dataset(
        f"{dataset.name} (corpus sample)",
        {qid: dataset.queries[qid] for qid in chosen},
        {qid: dataset.qrels[qid] for qid in chosen},
        folder,
        {qid: g for qid, g in dataset.groups.items() if qid in chosen},
        note=note,
    )


def _write_sample(source: Path, folder: Path, judged: set[str], others: int) -> tuple[dict[str, int], int]:
    """Writes folder/corpus.jsonl (unless a complete one is there) and says what it holds and the corpus size."""
    done = folder / "sample.json"
    if done.is_file():
        facts = json.loads(done.read_text())
        return facts["kept"], facts["total"]
    picked: list[bytes] = []
    reservoir: list[bytes] = []
    draw = random.Random(_SEED)
    total = seen_others = 0
    with source.open("rb") as corpus:
        for line in corpus:
            if not line.strip():
                continue
            total += 1
            try:
                doc_id = str(json.loads(line)["_id"])
            except (ValueError, KeyError, TypeError):
                continue  # the ingest reports a broken line of the whole corpus; the sample leaves it out
            if doc_id in judged:
                picked.append(line)
                continue
            seen_others += 1  # reservoir sampling: every other passage equally likely, in one pass
            if len(reservoir) < others:
                reservoir.append(line)
            elif (slot := draw.randrange(seen_others)) < others:
                reservoir[slot] = line
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "corpus.jsonl").open("wb") as out:
        for line in picked + reservoir:
            out.write(line if line.endswith(b"\n") else line + b"\n")
    kept = {"judged": len(picked), "others": len(reservoir)}
    done.write_text(json.dumps({"kept": kept, "total": total}))
    return kept, total

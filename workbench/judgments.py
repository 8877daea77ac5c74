"""Judgments attached to a collection, so that Explore can mark judged documents and score the query.

A collection's judgments (qrels and the queries they judge) live in `<data_dir>/judgments/<collection>/`.
The demo's are attached when the demo is built; a user attaches others from the Collections page. When the
query typed on Explore is one of the judged queries, `query_figures` gives nDCG@10 and the rank of the first
relevant document before and after reranking.
"""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

from pydantic import BaseModel

from workbench.config import Settings
from workbench.evaluation.io import Qrels, read_qrels, read_queries
from workbench.evaluation.metrics import evaluate
from workbench.evaluation.runs import document_runs
from workbench.inputs import validate_collection_name
from workbench.types import SearchResult
from workbench.vocab import JUDGED_10, NDCG_10

_cache: dict[Path, tuple[float, Judgments]] = {}
_cache_lock = threading.Lock()


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())


class Judgments(BaseModel):
    """Judged queries (id -> text) and their qrels (query id -> document id -> grade)."""

    queries: dict[str, str]
    qrels: Qrels

    def for_query(self, text: str) -> tuple[str, dict[str, int]] | None:
        """The judged query with this text (case and spacing ignored) and its grades, or None."""
        wanted = _normal(text)
        for qid, query in self.queries.items():
            if _normal(query) == wanted and qid in self.qrels:
                return qid, self.qrels[qid]
        return None

    @property
    def query_count(self) -> int:
        return sum(1 for q in self.queries if q in self.qrels)


class QueryFigures(BaseModel):
    """How one judged query scores before and after reranking."""

    query_id: str
    ndcg_before: float
    ndcg_after: float
    first_relevant_before: int | None
    first_relevant_after: int | None
    relevant_judged: int
    judged_before: float = 0.0  # judged@10: the share of the top 10 that has a judgment
    judged_after: float = 0.0


def judgments_folder(settings: Settings, collection: str) -> Path:
    return Path(settings.data_dir) / "judgments" / validate_collection_name(collection)


def attach_judgments(
    settings: Settings, collection: str, qrels: str | Path, queries: str | Path, *, replace: bool = True
) -> Judgments:
    """Check the files (IngestError naming the line of any problem), then keep a copy for the collection."""
    folder = judgments_folder(settings, collection)
    if not replace and (folder / "qrels.tsv").exists():
        return load_judgments(settings, collection) or _read(folder)
    grades = read_qrels(qrels)
    texts = read_queries(queries)
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{g}" for q, docs in grades.items() for d, g in docs.items()]
    (folder / "qrels.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in texts.items() if q in grades), encoding="utf-8"
    )
    return _read(folder)


def detach_judgments(settings: Settings, collection: str) -> None:
    shutil.rmtree(judgments_folder(settings, collection), ignore_errors=True)


def _read(folder: Path) -> Judgments:
    return Judgments(queries=read_queries(folder / "queries.jsonl"), qrels=read_qrels(folder / "qrels.tsv"))


def load_judgments(settings: Settings, collection: str) -> Judgments | None:
    """The collection's judgments, or None when it has none (read once, again when the files change)."""
    folder = judgments_folder(settings, collection)
    path = folder / "qrels.tsv"
    if not path.exists():
        return None
    mtime = path.stat().st_mtime
    with _cache_lock:
        cached = _cache.get(folder)
        if cached and cached[0] == mtime:
            return cached[1]
    judgments = _read(folder)
    with _cache_lock:
        _cache[folder] = (mtime, judgments)
    return judgments


def _first_relevant(run: dict[str, float], grades: dict[str, int]) -> int | None:
    ranked = sorted(run, key=lambda doc: (-run[doc], doc))
    return next((rank for rank, doc in enumerate(ranked, start=1) if grades.get(doc, 0) > 0), None)


def query_figures(result: SearchResult, query_id: str, grades: dict[str, int]) -> QueryFigures:
    """nDCG@10 and the first relevant rank of the result's candidates, in vector and in reranked order."""
    before, after = document_runs(result.candidates)
    qrels = {query_id: grades}
    figures_before = evaluate(qrels, {query_id: before}, max(len(before), 1))[1].get(query_id, {})
    figures_after = evaluate(qrels, {query_id: after}, max(len(after), 1))[1].get(query_id, {})
    return QueryFigures(
        query_id=query_id,
        ndcg_before=figures_before.get(NDCG_10, 0.0),
        ndcg_after=figures_after.get(NDCG_10, 0.0),
        judged_before=figures_before.get(JUDGED_10, 0.0),
        judged_after=figures_after.get(JUDGED_10, 0.0),
        first_relevant_before=_first_relevant(before, grades),
        first_relevant_after=_first_relevant(after, grades),
        relevant_judged=sum(g > 0 for g in grades.values()),
    )

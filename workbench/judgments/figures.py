"""How one judged query scores in a result: nDCG@10, judged@10 and the first relevant rank, before and after
reranking (Explore and Compare show these beside the lists)."""

from __future__ import annotations

from pydantic import BaseModel

from workbench.evaluation.metrics import evaluate, judged_at
from workbench.evaluation.runs import document_runs
from workbench.types import SearchResult
from workbench.vocab import NDCG_10


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
        judged_before=judged_at(qrels, {query_id: before})[1].get(query_id, 0.0),  # grades of 0 count as judged
        judged_after=judged_at(qrels, {query_id: after})[1].get(query_id, 0.0),
        first_relevant_before=_first_relevant(before, grades),
        first_relevant_after=_first_relevant(after, grades),
        relevant_judged=sum(g > 0 for g in grades.values()),
    )

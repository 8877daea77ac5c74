"""Relevance metrics through ir-measures (pytrec_eval underneath), with the names the workbench shows."""

from __future__ import annotations

import ir_measures
from ir_measures import AP, RR, Judged, P, R, nDCG

from workbench.evaluation.io import Qrels, Run
from workbench.vocab import JUDGED_10, MAP_100, MRR_10, NDCG_10, NDCG_10_JUDGED, P_10, recall_at


def measures(k: int) -> dict[str, object]:
    """The workbench's metric names and their ir-measures measures; Recall is taken at the run depth k. Beside
    them: Judged@10 (how much of the top 10 is judged) and nDCG@10 over the judged documents alone, so that a
    figure biased by unjudged documents (counted as not relevant) is never read alone."""
    return {
        NDCG_10: nDCG @ 10,
        MRR_10: RR @ 10,
        recall_at(k): R @ k,
        MAP_100: AP @ 100,
        P_10: P @ 10,
        JUDGED_10: Judged @ 10,
        NDCG_10_JUDGED: nDCG(judged_only=True) @ 10,
    }


def evaluate(qrels: Qrels, run: Run, k: int) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Mean of each metric over the judged queries, and per-query values.

    Judged queries that the run has no documents for count as 0 (trec_eval -c), so a run cannot look better
    by leaving hard queries out.
    """
    named = measures(k)
    by_measure = {str(m): name for name, m in named.items()}
    judged = [qid for qid, judgments in qrels.items() if any(g > 0 for g in judgments.values())]
    per_query: dict[str, dict[str, float]] = {qid: dict.fromkeys(named, 0.0) for qid in judged}
    # pytrec_eval cannot read a query with an empty ranking; such a query scores 0 below anyway.
    run = {str(qid): {str(doc): float(score) for doc, score in docs.items()} for qid, docs in run.items() if docs}
    for metric in ir_measures.iter_calc(list(named.values()), {q: qrels[q] for q in judged}, run):
        if metric.query_id in per_query:
            per_query[metric.query_id][by_measure[str(metric.measure)]] = float(metric.value)
    means = {name: (sum(v[name] for v in per_query.values()) / len(per_query) if per_query else 0.0) for name in named}
    # judged@10 counts every query with a judgment: "nothing here is relevant" (all grades 0) is an answer too
    means[JUDGED_10] = judged_at(qrels, run, 10, over_all=True)[0]
    return means, per_query


def unjudged_at(qrels: Qrels, run: Run, n: int) -> tuple[int, int]:
    """How many of the top n documents (over all queries) have no judgment, and how many were looked at."""
    unjudged = total = 0
    for qid, scores in run.items():
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:n]
        judged = qrels.get(qid, {})
        unjudged += sum(doc not in judged for doc, _ in ranked)
        total += len(ranked)
    return unjudged, total


def judged_at(qrels: Qrels, run: Run, k: int = 10, *, over_all: bool = False) -> tuple[float, dict[str, float]]:
    """ir-measures' Judged@k: the share of each query's top k documents that has a judgment (any grade, 0 too), per
    query, and its mean over the queries the run answers; `over_all`: over every query with a judgment (one the run
    does not answer counts 0)."""
    run = {str(qid): {str(doc): float(score) for doc, score in docs.items()} for qid, docs in run.items() if docs}
    judged_qrels = {q: j for q, j in qrels.items() if q in run and j}
    per_query = {m.query_id: float(m.value) for m in ir_measures.iter_calc([Judged @ k], judged_qrels, run)}
    if over_all:
        asked = [q for q, j in qrels.items() if j]
        return (sum(per_query.get(q, 0.0) for q in asked) / len(asked) if asked else 0.0), per_query
    return (sum(per_query.values()) / len(per_query) if per_query else 0.0), per_query


def ndcg_bounds(qrels: Qrels, run: Run, depth: int = 10) -> tuple[float, float]:
    """Mean nDCG@`depth` over the queries with a relevant judgment, with every unjudged document of a query's top
    `depth` counted not relevant (the standard figure, the low bound) and relevant at the highest grade the
    judgments use (the high bound): what the unjudged documents could make of the figure."""
    judged = {q: j for q, j in qrels.items() if any(g > 0 for g in j.values())}
    if not judged:
        return 0.0, 0.0
    top_grade = max(g for j in judged.values() for g in j.values())
    optimistic: Qrels = {}
    for qid, grades in judged.items():
        ranked = sorted(run.get(qid, {}).items(), key=lambda item: (-item[1], item[0]))[:depth]
        optimistic[qid] = {**grades, **{doc: top_grade for doc, _ in ranked if doc not in grades}}
    measure = nDCG @ depth
    run = {str(qid): {str(doc): float(score) for doc, score in docs.items()} for qid, docs in run.items() if docs}

    def mean(relevance: Qrels) -> float:
        values = {m.query_id: float(m.value) for m in ir_measures.iter_calc([measure], relevance, run)}
        return sum(values.get(q, 0.0) for q in judged) / len(judged)

    return mean(judged), mean(optimistic)

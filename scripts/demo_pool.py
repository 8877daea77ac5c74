"""The demo's judging pool: every document in the top 10 of each pooled first stage (dense, BM25, hybrid by RRF and
each linear fusion at the default weight: `DEMO_POOLED_FIRST_STAGES`) at each offered depth
(k = 10, 20, 50, 100), before and after reranking with each given reranker, for all 50 sample queries. Prints the
pairs that have no judgment in workbench/demo_data/qrels/test.tsv (none, when the judgments are complete), each with
the passage, so that a change to the demo, the embedder or a shipped reranker shows what to grade by reading (2
answers it, 1 related, 0 not relevant).

    .venv/bin/python scripts/demo_pool.py                                     # the default reranker
    .venv/bin/python scripts/demo_pool.py ../shared/models/minilm-l6-scifact-reranker
    RERANKER_BACKEND=torch .venv/bin/python scripts/demo_pool.py ...   # each backend may order near-ties apart

One search at the deepest k per first stage and reranker serves every depth: the candidates at k are the first k of
the deepest search's, with the same scores.
"""

from __future__ import annotations

import sys

from workbench.config import Settings
from workbench.engine import Engine
from workbench.services.demo import demo_dataset, demo_pool_runs, ensure_demo_collection
from workbench.vocab import DEFAULT_RERANKER_CHOICE


def top_ten_with_ties(run: dict[str, float]) -> set[str]:
    """The run's top 10 documents and every document tied with the 10th (trec_eval breaks ties by document id
    one way, other tools the other way: every order must find its top 10 judged)."""
    scores = sorted(run.values(), reverse=True)
    if len(scores) <= 10:
        return set(run)
    tenth = scores[9]
    return {doc for doc, score in run.items() if score >= tenth}


def _pool(engine: Engine, text: str, rerankers: list[str]) -> tuple[set[str], dict[str, str]]:
    """The documents in any top 10 at any depth, and each one's best passage."""
    pool: set[str] = set()
    passages: dict[str, str] = {}
    for model in rerankers or [DEFAULT_RERANKER_CHOICE]:
        for _, _, candidates, before, after in demo_pool_runs(engine, text, model):
            for c in candidates:
                passages.setdefault(str(c.metadata.get("document_id", c.id)), c.text)
            for run in (before, after):  # as the evaluation ranks them
                pool |= top_ten_with_ties(run)
    return pool, passages


def main(rerankers: list[str]) -> int:
    engine = Engine(Settings())
    ensure_demo_collection(engine)
    dataset = demo_dataset()
    missing = pooled = 0
    for qid, text in dataset.queries.items():
        pool, passages = _pool(engine, text, rerankers)
        judged = dataset.qrels.get(qid, {})
        pooled += len(pool)
        for doc in sorted(pool - set(judged)):
            missing += 1
            passage = " ".join(passages.get(doc, "").split())[:600]
            print(f"{qid}\t{doc}\t# {text}\n    {passage}")
    print(f"{pooled} pooled pairs, {missing} without a judgment", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

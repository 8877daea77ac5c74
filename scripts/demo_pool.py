"""The demo's judging pool: every document in the top 10 of dense, BM25 and hybrid candidates (k = 50), before
and after reranking with each given reranker, for all 50 sample queries. Prints the pairs that have no judgment
in workbench/demo_data/qrels/test.tsv (none, when the judgments are complete), so that a change to the demo, the
embedder or a shipped reranker shows what to grade by reading (2 answers it, 1 related, 0 not relevant).

    .venv/bin/python scripts/demo_pool.py                                     # the default reranker
    .venv/bin/python scripts/demo_pool.py ../shared/models/minilm-l6-scifact-reranker
"""

from __future__ import annotations

import sys

from workbench.config import Settings
from workbench.engine import DEFAULT, Engine
from workbench.evaluation.runs import document_runs
from workbench.services.demo import DEMO_COLLECTION, demo_dataset, ensure_demo_collection
from workbench.vocab import RETRIEVAL_MODES


def main(rerankers: list[str]) -> int:
    engine = Engine(Settings())
    ensure_demo_collection(engine)
    dataset = demo_dataset()
    missing = pooled = 0
    for qid, text in dataset.queries.items():
        pool: set[str] = set()
        for model in rerankers or [DEFAULT]:
            for mode in RETRIEVAL_MODES:
                result = engine.search(text, 50, 10, collection=DEMO_COLLECTION, retrieval=mode, reranker=model)
                for run in document_runs(result.candidates):  # before and after, as the evaluation ranks them
                    pool |= {doc for doc, _ in sorted(run.items(), key=lambda item: (-item[1], item[0]))[:10]}
        judged = dataset.qrels.get(qid, {})
        pooled += len(pool)
        for doc in sorted(pool - set(judged)):
            missing += 1
            print(f"{qid}\t{doc}\t# {text}")
    print(f"{pooled} pooled pairs, {missing} without a judgment", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

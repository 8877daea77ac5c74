"""Relevance evaluation: judgments in (BEIR, TREC), metrics before and after reranking out.

`evaluate_dataset` is the one entry point the app and the CLI call; `EvaluationReport` renders and saves
itself (`to_markdown`, `per_query_rows`, `most_hurt`, `most_helped`, `write`).
"""

from workbench.evaluation.depth import depth_curve
from workbench.evaluation.io import Dataset, read_qrels, read_queries, read_trec_run, trec_run_text, write_trec_run
from workbench.evaluation.metrics import evaluate, unjudged_at
from workbench.evaluation.report import PRIMARY, DepthPoint, EvaluationReport, QueryOutcome, RunComparison
from workbench.evaluation.runner import compare_runs, run_evaluation
from workbench.evaluation.runs import document_runs, fold_documents
from workbench.evaluation.service import check_plan, evaluate_dataset, judged_coverage
from workbench.evaluation.significance import (
    Paired,
    paired_comparison,
    paired_t_test,
    randomization_test,
    wins_ties_losses,
)

__all__ = [
    "PRIMARY",
    "Dataset",
    "DepthPoint",
    "EvaluationReport",
    "Paired",
    "QueryOutcome",
    "RunComparison",
    "check_plan",
    "compare_runs",
    "depth_curve",
    "document_runs",
    "evaluate",
    "evaluate_dataset",
    "fold_documents",
    "judged_coverage",
    "paired_comparison",
    "paired_t_test",
    "randomization_test",
    "read_qrels",
    "read_queries",
    "read_trec_run",
    "run_evaluation",
    "trec_run_text",
    "unjudged_at",
    "wins_ties_losses",
    "write_trec_run",
]

"""Relevance evaluation: judgments in (BEIR, TREC), metrics before and after reranking out."""

from workbench.evaluation.io import Dataset, read_qrels, read_queries, read_trec_run, write_trec_run
from workbench.evaluation.metrics import evaluate, unjudged_at
from workbench.evaluation.runner import (
    EvaluationReport,
    RunComparison,
    compare_runs,
    depth_curve,
    markdown_report,
    run_evaluation,
)
from workbench.evaluation.significance import paired_t_test, randomization_test, wins_ties_losses

__all__ = [
    "Dataset",
    "EvaluationReport",
    "RunComparison",
    "compare_runs",
    "depth_curve",
    "evaluate",
    "markdown_report",
    "paired_t_test",
    "randomization_test",
    "read_qrels",
    "read_queries",
    "read_trec_run",
    "run_evaluation",
    "unjudged_at",
    "wins_ties_losses",
    "write_trec_run",
]

"""The verdict as served: what an app gets from a fail-open service under a rerank budget (workbench.serving), as a
figure. Each query's reranking was timed as the service runs it (no cached score); a query whose rerank took longer
than the budget is scored at its first-stage order, the rest at their reranked order; so nDCG@10 as served is the
mean of each query's before or after value, exactly what pytrec_eval gives the run made that way."""

from __future__ import annotations

import numpy as np

from workbench.errors import InputError
from workbench.evaluation.report import EvaluationReport, ServedFigures
from workbench.evaluation.significance import difference
from workbench.inputs import validate_rerank_budget_ms
from workbench.vocab import PRIMARY_METRIC as PRIMARY


def served_scores(report: EvaluationReport, budget_ms: float) -> list[float]:
    """Each query's nDCG@10 as served under `budget_ms`, in the report's order: its first stage's when its rerank
    took longer than the budget, else its reranked one."""
    return [o.before[PRIMARY] if o.rerank_ms > budget_ms else o.after[PRIMARY] for o in report.per_query]  # type: ignore[operator]


def served_figures(report: EvaluationReport, budget_ms: float, concurrency: int = 1) -> ServedFigures:
    """The report's queries as served under `budget_ms` (timed `concurrency` searches at once): see the module.
    Raises InputError when a query's rerank time was not measured (a cached result: evaluate with the cache off, as
    `--rerank-budget-ms` does)."""
    budget_ms = validate_rerank_budget_ms(budget_ms)
    outcomes = report.per_query
    unmeasured = [o.query_id for o in outcomes if o.rerank_ms is None or o.first_stage_ms is None]
    if unmeasured:
        raise InputError(
            f"The rerank time of {len(unmeasured):,} queries (such as '{unmeasured[0][:40]}') was not measured (a "
            "cached result): evaluate with the cache off to see them as served under a budget."
        )
    if not outcomes:
        raise InputError("No judged query was evaluated: there is nothing to serve under a budget.")
    over = [o.rerank_ms > budget_ms for o in outcomes]  # type: ignore[operator]
    before = [o.before[PRIMARY] for o in outcomes]
    after = [o.after[PRIMARY] for o in outcomes]
    served = served_scores(report, budget_ms)
    # end to end as served: the first stage, then the rerank, or the budget where the service stopped waiting
    total = [o.first_stage_ms + min(o.rerank_ms, budget_ms) for o in outcomes]  # type: ignore[operator, type-var]
    return ServedFigures(
        budget_ms=budget_ms,
        concurrency=concurrency,
        queries=len(outcomes),
        served_reranked=len(outcomes) - sum(over),
        share_reranked=(len(outcomes) - sum(over)) / len(outcomes),
        first_stage=float(np.mean(before)),
        always_reranked=float(np.mean(after)),
        as_served=float(np.mean(served)),
        vs_first_stage=difference(before, served),
        vs_always_reranked=difference(after, served),
        p50_ms=float(np.percentile(total, 50)),
        p95_ms=float(np.percentile(total, 95)),
        over_budget=[o.query_id for o, late in zip(outcomes, over, strict=True) if late],
    )


def add_served(report: EvaluationReport, budget_ms: float | None, concurrency: int = 1) -> None:
    """The report's verdict as served under `budget_ms` (`report.served`), when there is a budget and a reranker:
    the one way `eval`, the Evaluate page, the API's experiments, the gate and `tune` add it. The report's searches
    must have been timed with no cache (evaluate with `use_cache=False`), `concurrency` at once."""
    if budget_ms is not None and report.reranker_model:
        report.served = served_figures(report, budget_ms, concurrency)

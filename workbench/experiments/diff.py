"""Run against run: two rankings of the same queries (two experiments, or two configurations run now) compared
query by query. With judgments: the per-query change of a metric, its paired bootstrap interval and randomization
p, wins/ties/losses and judged@10 of each. Without them too: how much the two differ in what people see (the top-1
change rate, overlap@n, Jaccard, RBO and Kendall's tau), the queries where they disagree most listed first."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from workbench.evaluation.agreement import agreement
from workbench.evaluation.io import Qrels, Run
from workbench.evaluation.metrics import evaluate, judged_at
from workbench.evaluation.significance import Difference, wins_ties_losses
from workbench.evaluation.verdict import Direction, verdict
from workbench.vocab import JUDGED_10, PRIMARY_METRIC


class QueryDifference(BaseModel):
    """One query in both runs: its metric in each (None without judgments) and how far the top n lists agree."""

    query_id: str
    query: str
    a: float | None = None
    b: float | None = None
    delta: float | None = None
    top1_changed: bool
    overlap_at_n: float
    jaccard: float
    rbo: float
    kendall_tau: float | None
    top_a: list[str]
    top_b: list[str]


class Spread(BaseModel):
    """The distribution of one agreement figure over the queries."""

    mean: float
    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        if not values:
            return cls(mean=0.0, median=0.0, low=0.0, high=0.0)
        return cls(mean=statistics.fmean(values), median=statistics.median(values), low=min(values), high=max(values))


class Agreements(BaseModel):
    """How much the two runs agree over the whole query set, with or without judgments."""

    top_n: int
    queries: int
    top1_change_rate: float
    top1_change_rate_weighted: float  # weighted by each query's weight (its frequency in a log)
    overlap_at_n: Spread
    jaccard: Spread
    rbo: Spread
    kendall_tau: Spread


class RunDiff(BaseModel):
    """Run b against run a over the same queries (b minus a)."""

    name_a: str
    name_b: str
    metric: str = PRIMARY_METRIC
    judged_queries: int = 0
    a: dict[str, float] = {}
    b: dict[str, float] = {}
    change: Difference | None = None
    direction: Direction | None = None
    wins: int = 0
    ties: int = 0
    losses: int = 0
    judged_at_10_a: float | None = None
    judged_at_10_b: float | None = None
    agreement: Agreements
    per_query: list[QueryDifference]  # the queries where the two disagree most first
    warnings: list[str] = []

    def disagreeing(self) -> list[QueryDifference]:
        """The queries whose top n differ (in documents or order) or whose figure does, most first: none when the
        two runs agree everywhere (never a list of identical rows)."""
        return [r for r in self.per_query if r.rbo < 1 - 1e-9 or r.top1_changed or (r.delta or 0) != 0]

    def words(self) -> str:
        """The comparison in a sentence or two."""
        if self.change is None or self.direction is None:
            return (
                f"No judgments: {self.name_b} changes the top 1 of {self.agreement.top1_change_rate:.0%} of "
                f"{self.agreement.queries} queries against {self.name_a} (mean RBO {self.agreement.rbo.mean:.3f})."
            )
        c = self.change
        figures = (
            f"{self.metric} {c.delta:+.4f} (95 % CI {c.ci_low:+.4f} to {c.ci_high:+.4f}, p = {c.p_value:.4f}, "
            f"{self.judged_queries} queries; judged@10 {self.judged_at_10_a:.0%} / {self.judged_at_10_b:.0%})"
        )
        said = {
            "helps": f"{self.name_b} is better than {self.name_a}",
            "hurts": f"{self.name_b} is worse than {self.name_a}",
            "none": f"No measurable difference between {self.name_b} and {self.name_a}",
            "unknown": f"Too few judgments to tell {self.name_b} from {self.name_a}",
        }
        return f"{said[self.direction]}: {figures}."


def _top(run: Mapping[str, float], n: int) -> list[str]:
    return [doc for doc, _ in sorted(run.items(), key=lambda item: (-item[1], item[0]))[:n]]


def compare_run_pair(
    run_a: Run,
    run_b: Run,
    queries: Mapping[str, str],
    *,
    top_n: int,
    k: int,
    qrels: Qrels | None = None,
    names: tuple[str, str] = ("a", "b"),
    weights: Mapping[str, float] | None = None,
) -> RunDiff:
    """Run b against run a over the queries both answer. `qrels` (optional) adds the judged figures: both runs are
    scored on the same judgments, so the per-query change is b's value minus a's."""
    ids = [qid for qid in queries if qid in run_a and qid in run_b]
    weights = weights or {}
    rows: dict[str, QueryDifference] = {}
    for qid in ids:
        top_a, top_b = _top(run_a[qid], top_n), _top(run_b[qid], top_n)
        agree = agreement(top_a, top_b)
        rows[qid] = QueryDifference(
            query_id=qid, query=queries[qid], top1_changed=top_a[:1] != top_b[:1], overlap_at_n=agree.overlap_at_n,
            jaccard=agree.jaccard, rbo=agree.rbo, kendall_tau=agree.kendall_tau, top_a=top_a, top_b=top_b,
        )  # fmt: skip
    total_weight = sum(weights.get(q, 1.0) for q in ids) or 1.0
    summary = Agreements(
        top_n=top_n,
        queries=len(ids),
        top1_change_rate=sum(r.top1_changed for r in rows.values()) / len(ids) if ids else 0.0,
        top1_change_rate_weighted=sum(weights.get(q, 1.0) for q, r in rows.items() if r.top1_changed) / total_weight,
        overlap_at_n=Spread.of([r.overlap_at_n for r in rows.values()]),
        jaccard=Spread.of([r.jaccard for r in rows.values()]),
        rbo=Spread.of([r.rbo for r in rows.values()]),
        kendall_tau=Spread.of([r.kendall_tau for r in rows.values() if r.kendall_tau is not None]),
    )
    diff = RunDiff(name_a=names[0], name_b=names[1], agreement=summary, per_query=[])
    if qrels:
        _judged(diff, rows, {q: qrels[q] for q in ids if q in qrels}, run_a, run_b, k)
    diff.per_query = sorted(rows.values(), key=lambda r: (r.rbo, -abs(r.delta or 0.0), r.query_id))
    return diff


def _judged(diff: RunDiff, rows: dict[str, QueryDifference], qrels: Qrels, run_a: Run, run_b: Run, k: int) -> None:
    """The judged figures of both runs on the same judgments, into `diff` and its rows."""
    a_run = {q: run_a[q] for q in qrels}
    b_run = {q: run_b[q] for q in qrels}
    a_means, a_per = evaluate(qrels, a_run, k)
    b_means, b_per = evaluate(qrels, b_run, k)
    judged = [q for q in a_per if q in b_per]
    if not judged:
        diff.warnings.append("None of the queries both runs answer has a relevant judgment: no judged figures.")
        return
    a_values = [a_per[q][diff.metric] for q in judged]
    b_values = [b_per[q][diff.metric] for q in judged]
    for q, before, after in zip(judged, a_values, b_values, strict=True):
        rows[q].a, rows[q].b, rows[q].delta = before, after, after - before
    diff.judged_queries = len(judged)
    diff.a, diff.b = a_means, b_means
    said = verdict(a_values, b_values, a_means.get(JUDGED_10, 0.0), b_means.get(JUDGED_10, 0.0), diff.metric)
    diff.change = Difference(delta=said.delta, ci_low=said.ci_low, ci_high=said.ci_high, p_value=said.p_value)
    diff.direction = said.direction
    diff.wins, diff.ties, diff.losses = wins_ties_losses(a_values, b_values)
    diff.judged_at_10_a = judged_at(qrels, a_run, 10)[0]
    diff.judged_at_10_b = judged_at(qrels, b_run, 10)[0]

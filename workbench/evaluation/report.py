"""What an evaluation measured, as an object that renders and saves itself (ranx's report, here):
`to_markdown()`, `per_query_rows()`, `most_hurt()` / `most_helped()`, `write(folder)`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr

from workbench.evaluation.diagnosis import Diagnosis
from workbench.evaluation.io import Qrels, Run, trec_run_text
from workbench.evaluation.preference import PreferenceVerdict
from workbench.evaluation.recommend import DepthPoint, Recommendation
from workbench.evaluation.sequential import SequentialStop
from workbench.evaluation.significance import TIE_TOLERANCE, Difference, Paired, difference
from workbench.evaluation.skip_policy import SkipFigures
from workbench.evaluation.verdict import Verdict
from workbench.fusion import first_stage_name
from workbench.inputs import safe_file_stem
from workbench.vocab import MRR_10
from workbench.vocab import PRIMARY_METRIC as PRIMARY


class DocumentLabel(BaseModel):
    """How a report names a document to a reader: its title and the start of its text."""

    title: str = ""
    snippet: str = ""


class QueryOutcome(BaseModel):
    """One query's metrics before and after reranking."""

    query_id: str
    query: str
    before: dict[str, float]
    after: dict[str, float]
    first_stage_ms: float | None = None  # embedding and first stage, as this search ran (None: a cached result)
    rerank_ms: float | None = None  # reranking, as this search ran (None: a cached result)

    @property
    def delta(self) -> float:
        return self.after[PRIMARY] - self.before[PRIMARY]

    @property
    def change(self) -> str:
        """The change's sign in words, readable without colour: worse, same or better (within the tolerance the
        wins, ties and losses are counted with)."""
        if self.delta < -TIE_TOLERANCE:
            return "▼ worse"
        return "▲ better" if self.delta > TIE_TOLERANCE else "= same"


class RunComparison(Paired):
    """Two runs on the same judgments: both metric sets and a paired test on nDCG@10."""

    name_a: str
    name_b: str
    a: dict[str, float]
    b: dict[str, float]
    queries: int


class ServedFigures(BaseModel):
    """The verdict as an app is served under a rerank budget: each query whose reranking took longer than
    `budget_ms` scored at its first-stage order (what a fail-open service answers), the rest reranked; nDCG@10 as
    served against the first stage and against always reranking (mean differences with their paired bootstrap 95 %
    intervals), the share served reranked, and end-to-end milliseconds as served (first stage plus the rerank, or
    plus the budget where it ran out)."""

    budget_ms: float
    concurrency: int = Field(1, description="searches served at once while each was timed")
    queries: int
    served_reranked: int
    share_reranked: float
    first_stage: float  # nDCG@10
    always_reranked: float
    as_served: float
    vs_first_stage: Difference
    vs_always_reranked: Difference
    p50_ms: float
    p95_ms: float
    over_budget: list[str] = Field(default_factory=list, description="the queries served at their first-stage order")

    def lines(self) -> list[str]:
        """The figures in words, as `eval` prints them and the report's Markdown shows them."""
        first, always = self.vs_first_stage, self.vs_always_reranked
        return [
            f"As served under a rerank budget of {self.budget_ms:g} ms"
            f"{f', {self.concurrency} searches at once' if self.concurrency > 1 else ''}: nDCG@10 {self.as_served:.4f} "
            f"({self.served_reranked} of {self.queries} queries served reranked, {self.share_reranked:.0%}); "
            f"p50 {self.p50_ms:.0f} ms, p95 {self.p95_ms:.0f} ms end to end.",
            f"Against the first stage ({self.first_stage:.4f}): {first.delta:+.4f} "
            f"[{first.ci_low:+.4f}, {first.ci_high:+.4f}], p = {first.p_value:.3g}; against always reranked "
            f"({self.always_reranked:.4f}): {always.delta:+.4f} [{always.ci_low:+.4f}, {always.ci_high:+.4f}], "
            f"p = {always.p_value:.3g}.",
        ]


class GroupFigures(Paired):
    """One group of queries (a `metadata.group` of the queries file): its size, nDCG@10 and MRR@10 before
    and after, wins/ties/losses and the paired randomization p-value."""

    group: str
    queries: int
    before: dict[str, float]
    after: dict[str, float]


class ReportSubject(BaseModel):
    """What an evaluation report is about: the queries, the collection, the models and the plan, and the averages
    before and after. Its fields come first in a report, so a report that is missing fields (an imported one) is
    told of these before its figures."""

    dataset: str
    collection: str
    embedding_model: str
    reranker_model: str | None
    reranker_backend: str | None = None  # what ran the reranker ('torch:cpu', 'onnx:cpu', a service): figures follow it
    scored_on: str | None = None  # where its pairs were scored when not here (WORKBENCH_SCORE_EXECUTOR: Ray's workers)
    score_scale: str | None = None
    retrieval: str = "dense"
    fusion: str | None = None  # hybrid's fusion when the plan named one (None: RRF with the settings' k)
    k: int
    top_n: int
    queries: int
    before: dict[str, float]
    after: dict[str, float]
    metric: str = PRIMARY


class EvaluationReport(Paired, ReportSubject):  # fields: the subject's, the paired test's, then its own
    """Everything one evaluation measured. `before_run` and `after_run` are the TREC runs (not in JSON).

    `warnings` says what makes the figures doubtful (judged documents missing from the collection, retrieved
    documents that are all unjudged): front ends show them beside the figures, never instead of them.
    """

    unjudged_before: int
    unjudged_after: int
    judged_looked_at: int
    seconds: float
    score_cache_hits: int
    per_query: list[QueryOutcome]
    depth: list[DepthPoint] = Field(default_factory=list)
    recommendation: Recommendation | None = None
    diagnosis: Diagnosis | None = None
    depth_timings_reused: bool = False  # the depth curve's rerank times are an earlier run's measurement
    groups: list[GroupFigures] = Field(default_factory=list)
    outside: RunComparison | None = None
    reranked_queries: int | None = None  # with a skip policy: the queries the reranker was called for
    skip: SkipFigures | None = None  # with a skip policy: its figures against always reranking
    sequential: SequentialStop | None = None  # stopped when settled: how many queries decided it, by which rule
    served: ServedFigures | None = None  # with a rerank budget: the verdict as an app is served (evaluation/served.py)
    preference: PreferenceVerdict | None = None  # a blind preference session kept: A is "before", B "after"
    verdict: Verdict | None = None
    latency_p50: dict[str, float] = Field(default_factory=dict, description="ms per stage over the queries run")
    latency_p95: dict[str, float] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    documents: dict[str, DocumentLabel] = Field(
        default_factory=dict, description="title and snippet of each document in the most hurt and helped lists"
    )
    before_run: Run = Field(default_factory=dict, exclude=True)
    after_run: Run = Field(default_factory=dict, exclude=True)
    candidates: dict[str, list[tuple[str, float, float | None]]] = Field(default_factory=dict, exclude=True)
    qrels: Qrels = Field(default_factory=dict, exclude=True)
    _differences: dict[str, Difference] | None = PrivateAttr(None)

    @property
    def file_stem(self) -> str:
        """How the report's files begin (`<stem>.report.md`): the collection's name made safe for a file name."""
        return safe_file_stem(self.collection, "evaluation")

    @property
    def first_stage(self) -> str:
        """The first stage as a plan's key writes it: 'dense', 'hybrid', 'hybrid(minmax 0.7)'."""
        return first_stage_name(self.retrieval, self.fusion)

    def summary(self) -> dict[str, Any]:
        """The figures `workbench eval --json` prints."""
        data: dict[str, Any] = {
            "dataset": self.dataset,
            "collection": self.collection,
            "retrieval": self.retrieval,
            "fusion": self.fusion,
            "k": self.k,
            "top_n": self.top_n,
            "before": self.before,
            "after": self.after,
            "queries": self.queries,
            "p_value": self.p_value,
            "p_value_ttest": self.p_value_ttest,
            "metric": self.metric,
            "wins": self.wins,
            "ties": self.ties,
            "losses": self.losses,
            f"unjudged@{self.top_n}": {
                "before": self.unjudged_before,
                "after": self.unjudged_after,
                "of": self.judged_looked_at,
            },
            "embedding_model": self.embedding_model,
            "reranker_model": self.reranker_model,
            "reranker_backend": self.reranker_backend,
            "scored_on": self.scored_on,
            "seconds": round(self.seconds, 1),
            "score_cache_hits": self.score_cache_hits,
            "warnings": self.warnings,
        }
        if self.verdict is not None:
            data["verdict"] = {**self.verdict.model_dump(), "words": self.verdict.words()}
        if self.depth:
            data["depth"] = [p.model_dump() for p in self.depth]
        if self.recommendation is not None:
            data["recommendation"] = self.recommendation.model_dump()
        if self.diagnosis is not None:
            data["diagnosis"] = {
                **self.diagnosis.model_dump(exclude={"per_query"}), "words": self.diagnosis.words(),
                "most_hurt": {o.query_id: self.signs(o.query_id) for o in self.most_hurt()},
            }  # fmt: skip
        if self.groups:
            data["groups"] = [g.model_dump() for g in self.groups]
        if self.outside:
            data["outside_run"] = self.outside.model_dump()
        return {**data, **self._steps_said()}

    def _steps_said(self) -> dict[str, Any]:
        """The summary's sections of the optional steps that ran (stopping, the skip policy, a rerank budget, a blind
        preference session), each with its words."""
        data: dict[str, Any] = {}
        if self.sequential is not None:
            data["sequential"] = {**self.sequential.model_dump(), "rule": self.sequential.rule,
                                  "words": self.sequential.words()}  # fmt: skip
        if self.skip is not None:
            data["skip_policy"] = {**self.skip.model_dump(), "saved_share": self.skip.saved_share,
                                   "words": self.skip.words()}  # fmt: skip
        if self.served is not None:
            data["as_served"] = {**self.served.model_dump(), "words": " ".join(self.served.lines())}
        if self.preference is not None:
            data["preference"] = {**self.preference.model_dump(), "words": self.preference.lines()}
        return data

    def ranked_outcomes(self) -> list[QueryOutcome]:
        """Queries sorted from most hurt to most helped by reranking."""
        return sorted(self.per_query, key=lambda o: o.delta)

    def most_hurt(self, n: int = 5) -> list[QueryOutcome]:
        """Up to n queries whose nDCG@10 fell most after reranking (only those that fell)."""
        return [o for o in self.ranked_outcomes() if o.delta < 0][:n]

    def most_helped(self, n: int = 5) -> list[QueryOutcome]:
        """Up to n queries whose nDCG@10 rose most after reranking (only those that rose)."""
        return [o for o in reversed(self.ranked_outcomes()) if o.delta > 0][:n]

    @property
    def significant(self) -> bool:
        return self.p_value < 0.05

    def metric_rows(self) -> list[dict[str, Any]]:
        """One row per metric: before, after, change, and the change's paired bootstrap 95 % interval and
        randomization p (None without per-query figures)."""
        changes = self.metric_differences() if self.per_query else {}
        rows = []
        for m, v in self.before.items():
            d = changes.get(m)
            rows.append(
                {
                    "metric": m,
                    "before rerank": v,
                    "after rerank": self.after[m],
                    "change": self.after[m] - v,
                    "ci low": d.ci_low if d else None,
                    "ci high": d.ci_high if d else None,
                    "p": d.p_value if d else None,
                }
            )
        return rows

    def interval_notes(self) -> list[str]:
        """Where a metric's interval and its p-value disagree (one excludes no change, the other does not), why: the
        interval is a bootstrap of the mean change, p a sign-flip test of it, and when few queries change at all the
        test cannot reach a small p (with n changed queries its smallest p is 2 / 2^n)."""
        notes = []
        for row in self.metric_rows():
            if row["p"] is None:
                continue
            excludes_zero = row["ci low"] > 0 or row["ci high"] < 0
            if excludes_zero == (row["p"] < 0.05):
                continue
            m = row["metric"]
            changed = sum(1 for o in self.per_query if abs(o.after[m] - o.before[m]) > 1e-12)
            floor = 2 / 2**changed if changed < 60 else 0.0
            notes.append(
                f"{m}: the 95 % interval {'excludes' if excludes_zero else 'includes'} no change while p = "
                f"{row['p']:.4f}. The interval resamples the queries (bootstrap); p flips the signs of the changes. "
                f"Only {changed} of {len(self.per_query)} queries changed, so the smallest p possible is about "
                f"{floor:.4f}: take the change as not shown."
                if excludes_zero
                else f"{m}: p = {row['p']:.4f} while the 95 % interval includes no change; the two methods differ at "
                "the edge: take the change as not shown."
            )
        return notes

    def metric_differences(self) -> dict[str, Difference]:
        """Each metric's change after reranking over the same queries: mean, paired bootstrap 95 % interval and
        randomization p. Computed once (10,000 resamples each): the page's table and both reports read it."""
        if self._differences is None:
            pairs = [(o.before, o.after) for o in self.per_query]
            self._differences = {
                m: difference([before[m] for before, _ in pairs], [after[m] for _, after in pairs]) for m in self.before
            }
        return self._differences

    def extreme_documents(self) -> set[str]:
        """The documents in the top n lists of the most hurt and most helped queries (what the reports show)."""
        outcomes = [*self.most_hurt(), *self.most_helped()]
        return {doc for o in outcomes for ranked in self.top_lists(o.query_id) for doc, _ in ranked}

    def top_lists(self, query_id: str, n: int | None = None) -> tuple[list[tuple[str, int | None]], ...]:
        """A query's top n documents before and after reranking, each with its grade (None: unjudged)."""
        n = n or self.top_n
        grades = self.qrels.get(query_id, {})
        lists = []
        for run in (self.before_run, self.after_run):
            ranked = sorted(run.get(query_id, {}).items(), key=lambda item: (-item[1], item[0]))[:n]
            lists.append([(doc, grades.get(doc)) for doc, _ in ranked])
        return tuple(lists)

    def per_query_rows(self, changed_only: bool = False) -> list[dict[str, Any]]:
        """One row per query, most hurt first: every metric before and after, the nDCG@10 change and its sign in
        words (`changed_only`: only the queries whose nDCG@10 changed)."""
        return [
            {
                "query_id": o.query_id,
                "query": o.query,
                **{f"before {k}": v for k, v in o.before.items()},
                **{f"after {k}": v for k, v in o.after.items()},
                "delta": o.delta,
                "change": o.change,
            }
            for o in self.ranked_outcomes()
            if not changed_only or o.change != "= same"
        ]

    def to_markdown(self, worst: int = 5) -> str:
        """The evaluation as a Markdown document: settings, metric table, significance, extremes, depth."""
        lines = [
            f"# Evaluation: {self.dataset} on '{self.collection}'",
            "",
            f"- embedder `{self.embedding_model}`, reranker `{self.reranker_model or 'none'}`"
            f"{f' on `{self.reranker_backend}`' if self.reranker_backend else ''}"
            f"{f' (pairs scored by {self.scored_on})' if self.scored_on else ''}, retrieval {self.first_stage}",
            f"- {self.queries} judged queries, k = {self.k} candidates, top n = {self.top_n}",
            f"- {self.seconds:.1f} s; {self.score_cache_hits} scores from the cache",
        ]
        lines += [f"- **warning**: {w}" for w in self.warnings]
        lines += [f"- **stopping rule**: {self.sequential.words()}"] if self.sequential is not None else []
        lines += [f"- **blind preference**: {line}" for line in (self.preference.lines() if self.preference else [])]
        lines += [
            "",
            "| metric | before rerank | after rerank | change | 95 % CI | p |",
            "|---|---:|---:|---:|---|---:|",
        ]
        for r in self.metric_rows():
            interval = f"{r['ci low']:+.4f} to {r['ci high']:+.4f} | {r['p']:.4f}" if r["p"] is not None else " | "
            lines.append(
                f"| {r['metric']} | {r['before rerank']:.4f} | {r['after rerank']:.4f} | {r['change']:+.4f} | "
                f"{interval} |"
            )
        lines += [f"\n{note}" for note in self.interval_notes()]
        if self.latency_p50:
            stages = " · ".join(
                f"{s} {self.latency_p50[s]:.0f} / {self.latency_p95.get(s, 0):.0f}" for s in self.latency_p50
            )
            lines += ["", f"Stage latency per query, ms p50 / p95: {stages}."]
        if self.verdict is not None:
            lines += ["", f"**Verdict**: {self.verdict.words()}"]
        if self.recommendation is not None:
            lines += ["", f"**Recommendation**: {self.recommendation.words}"]
        if self.skip is not None:
            lines += ["", f"**Skip policy**: {self.skip.words()}"]
        if self.served is not None:
            lines += ["", f"**As served**: {' '.join(self.served.lines())}"]
        if self.diagnosis is not None:
            lines += ["", f"**Signs**: {self.diagnosis.words()}"]
        lines += [
            "",
            f"{self.metric}: {self.wins} queries helped, {self.ties} tied, {self.losses} hurt; paired "
            f"randomization test p = {self.p_value:.4f} (paired t-test p = {self.p_value_ttest:.4f}).",
            f"Unjudged in the top {self.top_n}: {self.unjudged_before} before, {self.unjudged_after} after, of "
            f"{self.judged_looked_at} documents.",
        ]
        lines += self._groups_markdown() + self._extremes_markdown(worst) + self._depth_markdown()
        if self.outside:
            o = self.outside
            lines += [
                "",
                "## Outside run",
                "",
                f"`{o.name_a}`: {PRIMARY} {o.a[PRIMARY]:.4f} vs {o.name_b} {o.b[PRIMARY]:.4f} over {o.queries} "
                f"queries; p = {o.p_value:.4f} ({o.wins} / {o.ties} / {o.losses}).",
            ]
        return "\n".join(lines) + "\n"

    def signs(self, query_id: str) -> str:
        """Why the query may have been hurt (truncation, phantom hits, duplicates, nothing found), or ""."""
        found = self.diagnosis.of(query_id) if self.diagnosis is not None else None
        return found.words() if found is not None else ""

    def _groups_markdown(self) -> list[str]:
        if not self.groups:
            return []
        lines = [
            "",
            "## By query group",
            "",
            f"| group | queries | {PRIMARY} before | {PRIMARY} after | {MRR_10} before | {MRR_10} after | "
            "helped / tied / hurt | p |",
            "|---|---:|---:|---:|---:|---:|---|---:|",
        ]
        return lines + [
            f"| {g.group} | {g.queries} | {g.before[PRIMARY]:.4f} | {g.after[PRIMARY]:.4f} | "
            f"{g.before[MRR_10]:.4f} | {g.after[MRR_10]:.4f} | {g.wins} / {g.ties} / {g.losses} | "
            f"{g.p_value:.4f} |"
            for g in self.groups
        ]

    def _extremes_markdown(self, worst: int) -> list[str]:
        lines: list[str] = []
        for heading, rows in (("Most hurt", self.most_hurt(worst)), ("Most helped", self.most_helped(worst))):
            lines += ["", f"## {heading}", ""]
            for o in rows:
                before, after = self.top_lists(o.query_id)
                lines += [
                    f"- `{o.query_id}` {o.query} — {o.before[PRIMARY]:.3f} → {o.after[PRIMARY]:.3f}",
                    f"  - before: {_listed(before)}",
                    f"  - after: {_listed(after)}",
                ]
                if self.signs(o.query_id):
                    lines.append(f"  - signs: {self.signs(o.query_id)}")
            lines += [] if rows else ["None."]
        return lines

    def _depth_markdown(self) -> list[str]:
        if not self.depth:
            return []
        lines = [
            "",
            "## Depth",
            "",
            f"| k | {PRIMARY} before | {PRIMARY} after | 95 % CI | first stage Recall@k (ceiling) | rerank ms p50 / p95"
            f"{' (measured by an earlier run)' if self.depth_timings_reused else ''} | CPU-seconds per 1,000 queries |",
            "|---:|---:|---:|---|---:|---:|---:|",
        ]

        def shown(value: float | None, form: str) -> str:
            return "" if value is None else format(value, form)

        return lines + [
            f"| {p.k} | {p.before[PRIMARY]:.4f} | {p.after[PRIMARY]:.4f} | "
            f"{'' if p.after_ci is None else f'{p.after_ci[0]:.4f} to {p.after_ci[1]:.4f}'} | "
            f"{shown(p.recall_ceiling, '.4f')} | {shown(p.rerank_ms_p50, '.0f')} / {shown(p.rerank_ms_p95, '.0f')} | "
            f"{shown(p.cpu_seconds_per_1000, ',.0f')} |"
            for p in self.depth
        ]

    def write(self, folder: str | Path) -> list[Path]:
        """Both TREC runs, the Markdown report, the summary and per-query figures as JSON, into `folder`."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        stem = self.file_stem
        files = {
            folder / f"{stem}.before.trec": trec_run_text(self.before_run, "vector"),
            folder / f"{stem}.after.trec": trec_run_text(self.after_run, "reranked"),
            folder / f"{stem}.report.md": self.to_markdown(),
            folder / f"{stem}.summary.json": json.dumps(self.summary(), indent=2),
            folder / f"{stem}.per_query.json": json.dumps([o.model_dump() for o in self.per_query], indent=1),
        }
        for path, text in files.items():
            path.write_text(text, encoding="utf-8")
        return list(files)


def _listed(documents: list[tuple[str, int | None]]) -> str:
    """'a (2), b (0), c (unjudged)': a ranked list with grades."""
    return ", ".join(f"{doc} ({'unjudged' if grade is None else grade})" for doc, grade in documents) or "nothing"

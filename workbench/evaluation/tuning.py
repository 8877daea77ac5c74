"""One tuning run: a grid of first stages (dense, BM25, hybrid under named fusions) × k on judged queries, each cell
reranked and scored as `workbench eval` would score its plan, and the cheapest cell that loses nothing measurable.

Scores are shared across cells: a query's cells run one after another, so a pair that several cells rerank is
scored once and read from the score cache by the others. Each cell's report is made by the same function as an
evaluation's (`runner.report_of`), from the same searches, so a cell's figures equal `eval`'s for its plan.

Under a rerank budget (`rerank_budget_ms`), each cell is weighed as a fail-open service serves it: no score is
shared or cached, every cell's searches are timed (`serve_concurrency` queries at once), a query whose rerank took
longer than the budget counts at its first-stage order (`served.served_figures`), and the best and recommended
cells are chosen by nDCG@10 as served; each cell's verdict is then its served run against its first stage.

Cost is measured apart from quality, first, with every cache read bypassed: the first stage of each cell on a sample
of queries (no reranker), and the rerank time at each k on the same sample (the scores it computes are kept, so the
cells do not score those pairs again). A cell's p95 is the sum of the two p95s (an upper bound of the p95 of their
sum); its compute seconds per 1,000 queries are the two medians added.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, computed_field

from workbench.engine import Engine
from workbench.errors import CollectionNotFoundError, InputError
from workbench.evaluation.depth import top_n_points
from workbench.evaluation.io import Dataset
from workbench.evaluation.latency import rerank_time_by_k
from workbench.evaluation.parallel import concurrency_for, in_order, search_each
from workbench.evaluation.recommend import TopNPoint, smallest_sufficient_top_n
from workbench.evaluation.report import EvaluationReport, ServedFigures
from workbench.evaluation.runner import report_of
from workbench.evaluation.served import add_served, served_scores
from workbench.evaluation.service import check_plan, prepare_collection
from workbench.evaluation.significance import Difference, bootstrap_interval, difference
from workbench.evaluation.skip_policy import SkipFigures, skip_advice, skip_search
from workbench.evaluation.tuning_grid import check_grid, chunked_collection
from workbench.fusion import first_stage_name
from workbench.inputs import parse_chunking, validate_serving
from workbench.redact import plain_text
from workbench.types import SearchPlan
from workbench.vocab import (
    DEFAULT_FIRST_STAGES,
    DEFAULT_TUNE_KS,
    NDCG_10,
    ORDER_SCALE,
    TOP_N_SWEEP,
    recall_at,
)

UNION_BLOCK = 16  # queries whose candidates are scored in one model call: padding falls as the block grows
NOTABLE_FALL = 0.005  # a fall of reranked nDCG@10 smaller than this is not worth a finding
Progress = Callable[[int, int], None]


class TuneCell(BaseModel):
    """One cell of the grid: a first stage at one k, its quality after reranking and what it costs."""

    first_stage: str  # as a plan's key writes it: 'dense', 'hybrid', 'hybrid(minmax 0.5)'
    chunking: str | None = None  # 'SIZE/OVERLAP' when the run compares chunkings (each its own collection)
    retrieval: str
    fusion: str | None = None
    k: int
    plan_key: str
    recall_ceiling: float = Field(description="the first stage's Recall@k: what no reranking of these k can pass")
    ndcg_before: float
    ndcg_after: float
    after_ci: tuple[float, float] = Field(description="95 % bootstrap interval of the mean nDCG@10 after reranking")
    vs_best: Difference | None = Field(None, description="nDCG@10 after, against the best cell's, paired by query")
    # the cell's own verdict (reranking against its first stage alone, as `eval` decides it): 'helps', 'hurts',
    # 'none' or 'unknown'; None in runs kept before it was recorded
    reranking_verdict: str | None = None
    reranking_change: Difference | None = Field(None, description="nDCG@10 after reranking against before, paired")
    first_stage_ms_p50: float | None = None
    first_stage_ms_p95: float | None = None
    rerank_ms_p50: float | None = None
    rerank_ms_p95: float | None = None
    top_n: list[TopNPoint] = Field(default_factory=list)
    served: ServedFigures | None = Field(None, description="under a rerank budget: the cell as a service serves it")

    @property
    def quality(self) -> float:
        """What the cell is chosen by: nDCG@10 as served under a rerank budget, else after reranking."""
        return self.served.as_served if self.served is not None else self.ndcg_after

    @computed_field  # type: ignore[prop-decorator]
    @property
    def label(self) -> str:
        """The cell's name: 'hybrid(minmax 0.5) k=20', or 'chunks 500/50 · dense k=20'."""
        return f"{f'chunks {self.chunking} · ' if self.chunking else ''}{self.first_stage} k={self.k}"

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total_ms_p95(self) -> float | None:
        """The first stage's p95 plus the rerank p95 at this k."""
        if self.first_stage_ms_p95 is None:
            return None
        return self.first_stage_ms_p95 + (self.rerank_ms_p95 or 0.0)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def compute_seconds_per_1000(self) -> float | None:
        """Seconds 1,000 queries take at the medians (ms per query × 1,000 / 1,000): what a local model costs."""
        if self.first_stage_ms_p50 is None:
            return None
        return self.first_stage_ms_p50 + (self.rerank_ms_p50 or 0.0)

    @property
    def measurably_below_best(self) -> bool:
        """Whether its nDCG@10 is below the best cell's with the paired interval excluding 0."""
        return self.vs_best is not None and self.vs_best.ci_high < 0


class TuningRun(BaseModel):
    """Every cell of the grid, the best, the one to ship, and where recall and reranked quality part ways."""

    dataset: str
    collection: str
    reranker_model: str | None
    reranker_backend: str | None = None
    queries: int
    first_stages: list[str]
    ks: list[int]
    cells: list[TuneCell]
    best: str
    recommended: str | None
    recommended_top_n: int | None = None
    latency_budget_ms: float | None = None
    rerank_budget_ms: float | None = Field(None, description="each cell weighed as served under this rerank budget")
    serve_concurrency: int = 1
    over_budget: list[str] = Field(default_factory=list)
    findings: list[str] = Field(default_factory=list)
    timing_queries: int
    pairs_scored: int = Field(
        description="pairs the reranker scored, the timing's included (a pair several cells share counts once)"
    )
    pairs_in_cells: int = Field(description="pairs the cells rerank in all: what separate evaluations would score")
    seconds: float
    # skip policies on the recommended cell (rerank only when its first stage's top two are close), searched at the
    # quartiles of its queries' top-two gaps, each against always reranking; and the one advised
    skip: list[SkipFigures] = Field(default_factory=list)
    skip_advice: str | None = None
    scores: dict[str, list[float]] = Field(default_factory=dict, exclude=True)  # each cell's nDCG@10 per query
    served_scores: dict[str, list[float]] = Field(default_factory=dict, exclude=True)  # ... as served, under a budget
    reports: dict[str, EvaluationReport] = Field(default_factory=dict, exclude=True)  # by cell label
    plans: dict[str, SearchPlan] = Field(default_factory=dict, exclude=True)

    def cell(self, label: str) -> TuneCell:
        """The cell of that label."""
        return next(c for c in self.cells if c.label == label)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def words(self) -> str:
        """The recommendation in a sentence or two."""
        best = self.cell(self.best)
        measure = self.measure
        if self.recommended is None:
            return (
                f"No cell keeps the {self.latency_budget_ms:,.0f} ms p95 budget; the best is {best.label} "
                f"({measure} {best.quality:.3f})."
            )
        chosen = self.cell(self.recommended)
        if chosen.reranking_verdict not in (None, "helps"):
            # the advice never outruns the verdict: no "ship" where reranking is not measurably better than the
            # cell's own first stage
            change = chosen.reranking_change
            interval = ""
            if change is not None:
                interval = f" ({measure} {change.delta:+.4f}, 95 % CI {change.ci_low:+.4f} to {change.ci_high:+.4f})"
            how = {
                "hurts": "measurably worse than",
                "unknown": "not known to be running as intended (see its evaluation's checks), so no better than",
            }.get(chosen.reranking_verdict or "", "not measurably better than")
            served = " served under the rerank budget" if self.rerank_budget_ms is not None else ""
            said = (
                f"No cell is advised as better: in {chosen.label}, reranking{served} is {how} the first stage "
                f"alone{interval}. If you rerank for another reason, the cheapest cell not measurably below the best "
                f"({best.label}, {measure} {best.quality:.3f}) is {chosen.label}"
            )
        elif chosen.label == best.label:
            said = f"Ship {chosen.label}: {measure} {chosen.quality:.3f}, the best of {len(self.cells)} cells"
        else:
            assert chosen.vs_best is not None
            said = (
                f"Ship {chosen.label}: {measure} {chosen.quality:.3f}, not measurably below the best, {best.label} "
                f"({best.quality:.3f}; difference {chosen.vs_best.delta:+.3f}, 95 % CI {chosen.vs_best.ci_low:+.3f} "
                f"to {chosen.vs_best.ci_high:+.3f})"
            )
        if chosen.served is not None:
            said += f" ({chosen.served.served_reranked} of {chosen.served.queries} queries served reranked)"
        if chosen.compute_seconds_per_1000 is not None and best.compute_seconds_per_1000:
            said += f", at {chosen.compute_seconds_per_1000 / best.compute_seconds_per_1000:.0%} of its compute"
        said += "."
        if self.recommended_top_n is not None:
            said += f" Keep the top {self.recommended_top_n}."
        if self.over_budget:
            said += f" Left out for a p95 over the {self.latency_budget_ms:,.0f} ms budget: {len(self.over_budget)}."
        if self.skip_advice:
            said += f" {self.skip_advice}"
        return said

    @property
    def measure(self) -> str:
        """What the cells are chosen by, in words: 'nDCG@10', or 'nDCG@10 as served' under a rerank budget."""
        return "nDCG@10 as served" if self.rerank_budget_ms is not None else "nDCG@10"

    def table(self) -> list[dict[str, Any]]:
        """A row per cell, for a table on a page or a terminal (under a rerank budget, with each cell as served)."""
        return [
            {
                "cell": c.label,
                "Recall@k": round(c.recall_ceiling, 4),
                "nDCG@10 before": round(c.ndcg_before, 4),
                "nDCG@10 after": round(c.ndcg_after, 4),
                **_served_columns(c),
                "95 % CI": f"{c.after_ci[0]:.3f} to {c.after_ci[1]:.3f}",
                "vs best": "—" if c.vs_best is None or c.label == self.best else f"{c.vs_best.delta:+.4f}",
                "p95 ms": None if c.total_ms_p95 is None else round(c.total_ms_p95, 1),
                "s / 1,000 queries": None
                if c.compute_seconds_per_1000 is None
                else round(c.compute_seconds_per_1000, 1),
                "": self._mark(c.label),
            }
            for c in self.cells
        ]

    def _mark(self, label: str) -> str:
        """A cell's mark in the table, worded as the sentence above it: "recommended" only when reranking is advised
        (where it is not, the cheapest cell as good as the best is what to run if reranking anyway)."""
        if label == self.recommended:
            advised = self.cell(label).reranking_verdict in (None, "helps")
            return "recommended" if advised else "cheapest as good as the best"
        return "best" if label == self.best else ""

    def _served_lines(self) -> list[str]:
        if self.rerank_budget_ms is None:
            return []
        return [
            f"- each cell as served under a {self.rerank_budget_ms:g} ms rerank budget, {self.serve_concurrency} "
            "searches at once: every search timed, no score cached or shared"
        ]

    def to_markdown(self) -> str:
        """The run as Markdown: the sentence, the table, the findings."""
        rows = self.table()
        head = list(rows[0])
        lines = [
            f"# Tuning: {self.dataset} on '{self.collection}'",
            "",
            f"- reranker `{self.reranker_model or 'none'}`"
            f"{f' on `{self.reranker_backend}`' if self.reranker_backend else ''}; {self.queries} judged queries; "
            f"{len(self.cells)} cells; {self.pairs_scored:,} pairs scored for {self.pairs_in_cells:,} reranked in "
            f"the cells; {self.seconds:.1f} s",
            f"- cost measured with caches bypassed on {self.timing_queries} queries per cell",
            *self._served_lines(),
            "",
            self.words,
            "",
            "| " + " | ".join(head) + " |",
            "| " + " | ".join("---" for _ in head) + " |",
            *("| " + " | ".join(_cell_text(h, r[h]) for h in head) + " |" for r in rows),
        ]
        if self.findings:
            lines += ["", "## Where recall and reranked quality part ways", "", *(f"- {f}" for f in self.findings)]
        return "\n".join(lines) + "\n"


def _served_columns(cell: TuneCell) -> dict[str, Any]:
    """A cell's columns as served under a rerank budget (none without one)."""
    if cell.served is None:
        return {}
    return {
        "nDCG@10 as served": round(cell.served.as_served, 4),
        "served reranked": f"{cell.served.share_reranked:.0%}",
    }


def _cell_text(column: str, value: Any) -> str:
    """A table value as Markdown shows it: figures to 4 places (0.8370 beside 0.8416), times to one."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:,.1f}" if column in {"p95 ms", "s / 1,000 queries"} else f"{value:.4f}"
    return str(value)


def _first_stage_times(engine: Engine, plans: Sequence[SearchPlan], sample: list[str]) -> dict[str, list[float]]:
    """Each plan's first stage (embedding and search, no reranker, caches bypassed) timed on the sample."""
    times: dict[str, list[float]] = {}
    for plan in plans:
        bare = plan.with_(reranker=None)
        if bare.key not in times:
            engine.search(sample[0], bare, max_query_chars=None)  # indexes and models loaded before the clock
            results = [engine.search(q, bare, max_query_chars=None, use_cache=False) for q in sample]
            times[bare.key] = [r.timings.embed_ms + r.timings.search_ms for r in results]
    return times


def tune(
    engine: Engine,
    dataset: Dataset,
    base: SearchPlan,
    *,
    first_stages: Sequence[str] = DEFAULT_FIRST_STAGES,
    ks: Sequence[Any] = DEFAULT_TUNE_KS,
    chunkings: Sequence[Any] = (),
    max_queries: int | None = None,
    latency_budget_ms: float | None = None,
    timing_queries: int = 10,
    progress: Progress | None = None,
    announce: Callable[[str], None] | None = None,
    rerank_budget_ms: float | None = None,
    serve_concurrency: int = 1,
) -> TuningRun:
    """Every cell of first stages × ks on the dataset's judged queries, reranked by the base plan's reranker; the
    best cell by nDCG@10, and the recommended: the cheapest (compute per 1,000 queries) whose nDCG@10 is not
    measurably below the best's (paired 95 % interval includes 0) and whose p95 keeps the budget. Under
    `rerank_budget_ms`, by nDCG@10 as served (see the module), `serve_concurrency` searches at once.

    `chunkings` ('SIZE/OVERLAP', two or more) compare ingest's chunk size and overlap the same way: the dataset's
    corpus is ingested once per chunking (its passages split too) into a collection of its own, each judged by
    document (a document's best chunk), every cell run on each."""
    started = time.perf_counter()
    rerank_budget_ms, serve_concurrency = validate_serving(rerank_budget_ms, serve_concurrency)
    collection = base.collection or engine.settings.collection
    plans = check_grid(first_stages, ks, base.with_(collection=collection), chunkings)
    _, _, max_queries, _ = check_plan(base.k, base.top_n, max_queries)
    reranker = engine.reranker_of(base)  # a missing model fails now, not after the ingest
    sizes = {chunked_collection(collection, c): c for c in map(parse_chunking, chunkings)}
    if sizes and dataset.corpus is None:
        raise InputError(
            "Comparing chunkings ingests the dataset's corpus once per chunking: give a BEIR folder (its corpus.jsonl)."
        )
    for name in dict.fromkeys(p.collection or collection for p in plans):
        if name in sizes:
            _ingest_chunked(engine, dataset, name, sizes[name])
        prepare_collection(engine, dataset, name)
    items = list(dataset.queries.items())[:max_queries] if max_queries else list(dataset.queries.items())
    if not items:
        raise InputError(f"{dataset.name} has no judged query with text to tune on.")
    scored_before = reranker.usage.documents if reranker else 0
    say = announce or (lambda _: None)
    stages = ", ".join(dict.fromkeys(first_stage_name(p.retrieval, p.fusion) for p in plans))
    say(
        f"tuning {len(plans)} cells ({stages} × k {', '.join(str(k) for k in sorted({p.k for p in plans}))}) on "
        f"{len(items):,} queries of {dataset.name}: first the cost of each cell, timed on "
        f"{min(timing_queries, len(items))} queries, then every cell's quality (a bar with the time left)"
    )
    # Timed first, caches bypassed: the scores it computes are kept, so the cells never score those pairs again.
    sample = [text for _, text in items[:timing_queries]]
    stage_times = _first_stage_times(engine, plans, sample)
    rerank_times: dict[tuple[str, int], Any] = {}
    for name in dict.fromkeys(p.collection or collection for p in plans) if reranker else ():
        timed = rerank_time_by_k(engine, sample, base.with_(collection=name), sorted({p.k for p in plans}),
                                 max_query_chars=None)  # fmt: skip
        rerank_times |= {(name, t.k): t for t in timed}
    served = rerank_budget_ms is not None and reranker is not None
    say(
        "timed; now each cell on every query"
        + (f", as served under the {rerank_budget_ms:g} ms rerank budget (every search timed, none cached)" if served
           else "")
    )  # fmt: skip
    shared = reranker is not None and not base.long_documents and engine.settings.cache_max_size > 0 and not served
    warm = _union_scorer(engine, plans) if shared else None
    block = _union_block(engine, plans)
    results = search_each(engine, plans, [text for _, text in items], progress, warm, block,
                          use_cache=not served, workers=serve_concurrency if served else None)  # fmt: skip
    scored = (reranker.usage.documents - scored_before) if reranker else 0
    reports = {
        plan.key: report_of(dataset, plan, items, answered, time.perf_counter() - started)
        for plan, answered in zip(plans, results, strict=True)
    }
    _refuse_unjudged(dataset, collection, list(reports.values()))
    for report in reports.values() if served else ():
        add_served(report, rerank_budget_ms, serve_concurrency)
    chunking = {name: f"{size}/{overlap}" for name, (size, overlap) in sizes.items()}
    cells = [
        _cell(plan, reports[plan.key], stage_times, rerank_times, chunking.get(plan.collection or "")) for plan in plans
    ]
    run = TuningRun(
        dataset=dataset.name, collection=collection, reranker_model=reranker.model_id if reranker else None,
        reranker_backend=reranker.backend if reranker else None, queries=len(items),
        first_stages=list(dict.fromkeys(c.first_stage for c in cells)), ks=sorted({c.k for c in cells}), cells=cells,
        best="", recommended=None, latency_budget_ms=latency_budget_ms, timing_queries=len(sample),
        rerank_budget_ms=rerank_budget_ms if served else None, serve_concurrency=serve_concurrency,
        pairs_scored=scored,
        pairs_in_cells=sum(len(r.candidates) for answered in results for r in answered) if reranker else 0,
        seconds=time.perf_counter() - started, reports={c.label: reports[c.plan_key] for c in cells},
        scores={c.label: [o.after[NDCG_10] for o in reports[c.plan_key].per_query] for c in cells},
        served_scores={c.label: served_scores(reports[c.plan_key], rerank_budget_ms) for c in cells}
        if served and rerank_budget_ms is not None else {},
        plans={c.label: plan for c, plan in zip(cells, plans, strict=True)},
    )  # fmt: skip
    run = decide(run)
    if reranker is not None and run.recommended is not None and reranker.score_scale != ORDER_SCALE:
        chosen = plans.index(run.plans[run.recommended])
        figures = _skip_policies(reports[plans[chosen].key], items, results[chosen])
        run = run.model_copy(update={"skip": figures, "skip_advice": skip_advice(figures)})
    return run


def _refuse_unjudged(dataset: Dataset, collection: str, reports: Sequence[EvaluationReport]) -> None:
    """No recommendation on nothing: when no cell put a single judged document in any query's top n, every nDCG
    is 0 and the judgments do not name the collection's documents."""
    looked = sum(r.judged_looked_at for r in reports)
    if looked and all(r.unjudged_before == r.unjudged_after == r.judged_looked_at for r in reports):
        raise InputError(
            f"No cell put a document judged in {plain_text(dataset.name)[:80]} in any query's top n ({looked:,} "
            f"documents looked at): the judgments do not name the documents of '{plain_text(collection)[:60]}' (their "
            "ids differ), so every nDCG@10 is 0 and no cell can be recommended. Check --collection, or the ids in the "
            "judgments."
        )


def _skip_policies(
    report: EvaluationReport, items: Sequence[tuple[str, str]], answered: Sequence[Any]
) -> list[SkipFigures]:
    """The skip policies of one cell, from its own searches: each query's first-stage top-two gap, its nDCG@10
    reranked and its first stage's."""
    gap_of = {}
    for (qid, _), result in zip(items, answered, strict=True):
        top = [c.vector_score for c in result.candidates[:2]]
        gap_of[qid] = top[0] - top[1] if len(top) == 2 else float("inf")  # one candidate: nothing to reorder
    outcomes = [o for o in report.per_query if o.query_id in gap_of]
    return skip_search(
        [gap_of[o.query_id] for o in outcomes], [o.after[NDCG_10] for o in outcomes],
        [o.before[NDCG_10] for o in outcomes],
    )  # fmt: skip


def _union_block(engine: Engine, plans: Sequence[SearchPlan]) -> int:
    """How many queries' unions are scored together: up to `UNION_BLOCK`, fewer where the score cache could not
    keep them all until the cells read them (every cell's k counted, as if no candidate were shared)."""
    per_query = max(sum(plan.k for plan in plans), 1)
    return max(1, min(UNION_BLOCK, engine.settings.cache_max_size // per_query))


def _union_scorer(engine: Engine, plans: Sequence[SearchPlan]) -> Callable[[Sequence[str]], None]:
    """What scores a block of queries' pairs for every cell at once: the cells' first stages run (no reranker), and
    the union of their candidates is scored, each query's pairs once, all the block's pairs in one call for a local
    model (sorted by length across queries, so batches carry little padding), one request per query at once for a
    service; the cells then read every score from the cache."""
    reranker = engine.reranker_of(plans[0])
    assert reranker is not None
    workers = concurrency_for(engine, plans[0])

    def union(text: str) -> tuple[str, list[str]]:
        seen: dict[str, None] = {}
        query = text
        for plan in plans:
            found = engine.search(text, plan.with_(reranker=None), max_query_chars=None)
            query = found.query  # as the engine checked and trimmed it: the cache's key
            seen |= dict.fromkeys(c.text for c in found.candidates)
        return query, list(seen)

    def warm(texts: Sequence[str]) -> None:
        if reranker.score_scale == ORDER_SCALE:  # an order is of one cell's own list: a union's is nobody's
            return
        unions = [union(text) for text in texts]
        if workers > 1:
            in_order(unions, lambda one: reranker.score(*one), workers)
        else:
            reranker.score_many([(query, doc) for query, docs in unions for doc in docs])

    return warm


def _ingest_chunked(engine: Engine, dataset: Dataset, name: str, chunking: tuple[int, int]) -> None:
    """The dataset's corpus in `name`, chunked as given (passages too), unless it is there already."""
    try:
        if engine.collection_info(name).count > 0:
            return
    except CollectionNotFoundError:
        pass
    assert dataset.corpus is not None
    engine.ingest(dataset.corpus, name, chunk_size=chunking[0], chunk_overlap=chunking[1], split_passages=True)


def _cell(
    plan: SearchPlan,
    report: EvaluationReport,
    stage_times: dict[str, list[float]],
    rerank_times: dict[tuple[str, int], Any],
    chunking: str | None,
) -> TuneCell:
    after = [o.after[NDCG_10] for o in report.per_query]
    stage = stage_times.get(plan.with_(reranker=None).key, [])
    rerank = rerank_times.get((plan.collection or "", plan.k))
    return TuneCell(
        chunking=chunking, first_stage=report.first_stage, retrieval=plan.retrieval, fusion=plan.fusion, k=plan.k,
        plan_key=plan.key,
        recall_ceiling=report.before.get(recall_at(plan.k), 0.0), ndcg_before=report.before[NDCG_10],
        ndcg_after=report.after[NDCG_10], after_ci=bootstrap_interval([0.0] * len(after), after) if after else (0, 0),
        first_stage_ms_p50=float(np.percentile(stage, 50)) if stage else None,
        first_stage_ms_p95=float(np.percentile(stage, 95)) if stage else None,
        rerank_ms_p50=rerank.rerank_ms_p50 if rerank else None, rerank_ms_p95=rerank.rerank_ms_p95 if rerank else None,
        top_n=top_n_points(report, [n for n in TOP_N_SWEEP if n <= plan.k]),
        reranking_verdict=_served_direction(report) if report.served else report.verdict.direction
        if report.verdict else None,
        reranking_change=report.served.vs_first_stage if report.served else Difference(
            delta=report.verdict.delta, ci_low=report.verdict.ci_low, ci_high=report.verdict.ci_high,
            p_value=report.verdict.p_value,
        ) if report.verdict else None,
        served=report.served,
    )  # fmt: skip


def _served_direction(report: EvaluationReport) -> str | None:
    """A cell's verdict as served: its served run against its first stage, by the paired interval ('unknown' while
    its reranker did not run as intended, as the evaluation's verdict says)."""
    if report.served is None or report.verdict is None:
        return None
    if report.verdict.direction == "unknown":
        return "unknown"
    change = report.served.vs_first_stage
    return "helps" if change.ci_low > 0 else "hurts" if change.ci_high < 0 else "none"


def decide(run: TuningRun) -> TuningRun:
    """The run with its best cell, each cell's difference from it, the recommendation (cheapest cell not
    measurably below the best, within the budget), its top n, and the findings."""
    scores, cells = run.scores, run.cells
    chosen_by = run.served_scores or scores  # under a rerank budget, the cells as served
    best = max(cells, key=lambda c: (c.quality, -(c.compute_seconds_per_1000 or 0.0), -c.k))
    cells = [c.model_copy(update={"vs_best": difference(chosen_by[best.label], chosen_by[c.label])}) for c in cells]
    budget = run.latency_budget_ms
    over = [c.label for c in cells if budget is not None and c.total_ms_p95 is not None and c.total_ms_p95 > budget]
    allowed = [c for c in cells if c.label not in over and not c.measurably_below_best]
    chosen = _cheapest_as_good(allowed)
    sufficient = smallest_sufficient_top_n(chosen.top_n) if chosen is not None else None
    top_n = sufficient[0].n if sufficient else None
    return run.model_copy(
        update={
            "cells": cells, "best": best.label, "recommended": chosen.label if chosen else None,
            "recommended_top_n": top_n, "over_budget": over, "findings": findings(cells, scores),
        }
    )  # fmt: skip


COST_NOISE = 0.10  # costs this close (a share of the cheapest's) are one cost: timings on a busy machine move that much


def _cheapest_as_good(allowed: Sequence[TuneCell]) -> TuneCell | None:
    """The cell to ship among those not measurably below the best: the cheapest, where costs within COST_NOISE of
    the cheapest count as the same cost and the highest nDCG@10 among them wins (then the smaller k), so two
    first stages at one cost never recommend the weaker (the rule Evaluate's depth recommendation follows: the
    best quality at the least cost it can tell apart)."""
    if not allowed:
        return None
    cheapest = min(c.compute_seconds_per_1000 or 0.0 for c in allowed)
    near = [c for c in allowed if (c.compute_seconds_per_1000 or 0.0) <= cheapest * (1 + COST_NOISE)]
    return max(near, key=lambda c: (c.quality, -c.k, -(c.compute_seconds_per_1000 or 0.0)))


def findings(cells: list[TuneCell], scores: dict[str, list[float]]) -> list[str]:
    """Where a deeper k (same first stage) or fusion (hybrid against dense or BM25 at the same k) raises the first
    stage's recall while reranked nDCG@10 falls by at least `NOTABLE_FALL`; each with the paired interval of the
    fall, those measurable (the interval below 0) first, then the largest falls."""
    found: list[tuple[bool, float, str]] = []
    for simpler in cells:
        for richer in cells:
            if richer.chunking != simpler.chunking:
                continue
            deeper = richer.first_stage == simpler.first_stage and richer.k > simpler.k
            fused = richer.k == simpler.k and richer.retrieval == "hybrid" and simpler.retrieval != "hybrid"
            if not (deeper or fused) or richer.recall_ceiling <= simpler.recall_ceiling:
                continue
            if simpler.ndcg_after - richer.ndcg_after < NOTABLE_FALL:
                continue
            fall = difference(scores[simpler.label], scores[richer.label])
            measurable = "measurable" if fall.ci_high < 0 else "within the noise"
            kind = "Depth" if deeper else "Fusion"
            words = (
                f"{kind}: {richer.label} raises Recall@k from {simpler.recall_ceiling:.3f} ({simpler.label}) to "
                f"{richer.recall_ceiling:.3f}, and reranked nDCG@10 falls from {simpler.ndcg_after:.3f} to "
                f"{richer.ndcg_after:.3f} ({fall.delta:+.4f}, 95 % CI {fall.ci_low:+.4f} to {fall.ci_high:+.4f}: "
                f"{measurable})."
            )
            found.append((fall.ci_high < 0, fall.delta, words))
    return [words for _, _, words in sorted(found, key=lambda f: (not f[0], f[1]))]

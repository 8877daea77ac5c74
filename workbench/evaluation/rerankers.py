"""Many rerankers side by side on the same candidates and judgments: a row per reranker with its quality (each
metric, judged@10, nDCG@10 and MRR@10 against the first stage and against the best row, with paired bootstrap
intervals and randomization p-values), its latency per query, what it used (tokens, billed units) and what that
costs per 1,000 queries at the price table's prices; and which rows are on the quality-latency Pareto front.

`compare_rerankers` is the one entry point; the CLI (`workbench eval --reranker A --reranker B ...`) and the
Evaluate page both call it. A reranker that fails stops the comparison with its error: no row is ever shown for
a run that did not finish.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation.io import Dataset, Qrels, Run
from workbench.evaluation.metrics import evaluate, judged_at
from workbench.evaluation.parallel import search_all
from workbench.evaluation.runs import document_runs
from workbench.evaluation.service import check_plan, prepare_collection
from workbench.evaluation.significance import Difference, difference
from workbench.models import short_model_name
from workbench.rerankers import Reranker, RerankerUsage, reranker_kind
from workbench.rerankers.served.pricing import DEFAULT_PRICES, Price
from workbench.types import SearchPlan
from workbench.vocab import MRR_10, NDCG_10

COMPARED = (NDCG_10, MRR_10)  # the metrics compared against the first stage and the best row
Progress = Callable[[int, int], None]


class RerankerRow(BaseModel):
    """One reranker's figures on the comparison's candidates and judgments."""

    reranker: str
    name: str
    kind: str
    backend: str = ""  # what ran it ('torch:cpu', 'onnx:cpu', a service): the same model on two backends is two rows
    score_scale: str
    metrics: dict[str, float]
    judged_at_10: float
    vs_first_stage: dict[str, Difference]
    vs_best: dict[str, Difference] = Field(default_factory=dict)
    latency_ms_p50: float | None
    latency_ms_p95: float | None
    timed_queries: int = Field(description="queries whose scores were all computed now (none from a cache)")
    pairs_per_second: float | None
    usage: RerankerUsage
    tokens_per_query: float
    billed_units_per_query: float
    cost_per_1000_queries: float | None = Field(None, description="US dollars; None: no per-query price (local)")
    compute_seconds_per_1000_queries: float | None = Field(
        None, description="rerank seconds 1,000 queries take at this run's mean (what a local model costs)"
    )
    price: str | None = None
    pareto: bool = False


class CheapestChoice(BaseModel):
    """Which reranker to ship on cost: the cheapest row whose nDCG@10 is not measurably below the best's (its
    paired 95 % interval against the best includes 0) and whose p95 fits the latency budget."""

    best: str
    chosen: str | None  # None: no row fits the budget
    as_good: list[str]  # the rows not measurably below the best
    budget_ms: float | None
    by: str  # what "cheapest" was measured by: dollars, or rerank time where a row has no price
    words: str


class RerankerComparison(BaseModel):
    """Every reranker's row beside the first stage's figures; `best` names the row with the highest nDCG@10."""

    dataset: str
    collection: str
    retrieval: str
    k: int
    top_n: int
    queries: int
    first_stage: dict[str, float]
    first_stage_judged_at_10: float
    rows: list[RerankerRow]
    best: str
    seconds: float

    def with_prices(self, prices: dict[str, Price]) -> RerankerComparison:
        """The same comparison with costs from another price table (no model runs)."""
        rows = [row.model_copy(update=_cost(row, prices)) for row in self.rows]
        return self.model_copy(update={"rows": rows})

    def cheapest(self, budget_ms: float | None = None) -> CheapestChoice:
        """The cheapest reranker as good as the best (see `CheapestChoice`), within `budget_ms` at p95 when given."""
        best = next(r for r in self.rows if r.reranker == self.best)
        as_good = [
            r for r in self.rows
            if r.reranker == self.best or ((d := r.vs_best.get(NDCG_10)) is not None and d.ci_low <= 0 <= d.ci_high)
        ]  # fmt: skip
        fits = [
            r for r in as_good if budget_ms is None or (r.latency_ms_p95 is not None and r.latency_ms_p95 <= budget_ms)
        ]
        priced = all(r.cost_per_1000_queries is not None for r in fits)
        by = "US$ per 1,000 queries" if fits and priced else "rerank ms per query (p95)"

        def cost(row: RerankerRow) -> float:
            if priced:
                return row.cost_per_1000_queries or 0.0
            return row.latency_ms_p95 if row.latency_ms_p95 is not None else float("inf")

        chosen = min(fits, key=cost) if fits else None
        budget = f" within the budget of {budget_ms:.0f} ms p95" if budget_ms is not None else ""
        if chosen is None:
            words = f"No reranker as good as the best ({best.name}) fits{budget}."
        elif chosen is best:
            words = f"{best.name} is the best, and the cheapest of those as good as it{budget} (by {by})."
        else:
            words = (
                f"{chosen.name} is the cheapest{budget} (by {by}) of the rerankers whose nDCG@10 is not measurably "
                f"below the best's ({best.name}: its paired 95 % interval against it includes 0)."
            )
        return CheapestChoice(
            best=best.name, chosen=chosen.name if chosen else None, as_good=[r.name for r in as_good],
            budget_ms=budget_ms, by=by, words=words,
        )  # fmt: skip

    def table(self) -> list[dict[str, Any]]:
        """One flat row per reranker (first stage first), for a table or a CSV."""
        out: list[dict[str, Any]] = [
            {
                "reranker": "first stage (no reranker)",
                NDCG_10: self.first_stage[NDCG_10],
                MRR_10: self.first_stage[MRR_10],
                "judged@10": self.first_stage_judged_at_10,
            }
        ]
        for row in self.rows:
            flat: dict[str, Any] = {
                "reranker": row.name,
                "backend": row.backend,
                NDCG_10: row.metrics[NDCG_10],
                MRR_10: row.metrics[MRR_10],
                "judged@10": row.judged_at_10,
            }
            for metric in COMPARED:
                first = row.vs_first_stage[metric]
                flat[f"{metric} vs first stage"] = f"{first.delta:+.4f} [{first.ci_low:+.4f}, {first.ci_high:+.4f}]"
                flat[f"{metric} p vs first stage"] = first.p_value
                best = row.vs_best.get(metric)
                flat[f"{metric} vs best"] = (
                    "best" if best is None else f"{best.delta:+.4f} [{best.ci_low:+.4f}, {best.ci_high:+.4f}]"
                )
                flat[f"{metric} p vs best"] = None if best is None else best.p_value
            flat.update(
                {
                    "latency ms p50": row.latency_ms_p50,
                    "latency ms p95": row.latency_ms_p95,
                    "pairs/s": row.pairs_per_second,
                    "tokens / query": row.tokens_per_query,
                    "billed units / query": row.billed_units_per_query,
                    "$ / 1,000 queries": row.cost_per_1000_queries,
                    "rerank s / 1,000 queries": row.compute_seconds_per_1000_queries,
                    "price": row.price,
                    "Pareto front": row.pareto,
                    "id": row.reranker,
                    "scale": row.score_scale,
                }
            )
            out.append(flat)
        return out

    def to_markdown(self, budget_ms: float | None = None) -> str:
        """The comparison as a Markdown table with its settings, then which reranker to ship on cost."""
        lines = [
            f"# Rerankers on {self.dataset} / '{self.collection}'",
            "",
            f"{self.queries} judged queries, {self.retrieval} candidates, k = {self.k}, top n = {self.top_n}; "
            f"first stage nDCG@10 {self.first_stage[NDCG_10]:.4f}, MRR@10 {self.first_stage[MRR_10]:.4f}, "
            f"judged@10 {self.first_stage_judged_at_10:.0%}.",
            "",
            "| reranker | backend | nDCG@10 (vs first stage, 95 % CI, p) | MRR@10 | judged@10 | p50 / p95 ms | pairs/s "
            "| $ / 1,000 queries | Pareto |",
            "|---|---|---|---:|---:|---:|---:|---:|---|",
        ]
        for row in self.rows:
            d = row.vs_first_stage[NDCG_10]
            latency = "cached" if row.latency_ms_p50 is None else f"{row.latency_ms_p50:.0f} / {row.latency_ms_p95:.0f}"
            cost = "—" if row.cost_per_1000_queries is None else f"{row.cost_per_1000_queries:.2f}"
            speed = "—" if row.pairs_per_second is None else f"{row.pairs_per_second:.1f}"
            lines.append(
                f"| {row.name} | {row.backend} | {row.metrics[NDCG_10]:.4f} ({d.delta:+.4f} [{d.ci_low:+.4f}, "
                f"{d.ci_high:+.4f}], "
                f"p = {d.p_value:.4f}) | {row.metrics[MRR_10]:.4f} | {row.judged_at_10:.0%} | {latency} | {speed} | "
                f"{cost} | {'yes' if row.pareto else ''} |"
            )
        lines += ["", self.cheapest(budget_ms).words]
        return "\n".join(lines) + "\n"


def _cost(row: RerankerRow, prices: dict[str, Price]) -> dict[str, Any]:
    price = prices.get(row.kind)
    if price is None or not row.usage.requests:  # local, or every score came from the cache: nothing was billed
        return {"cost_per_1000_queries": None, "price": None}
    per_query = RerankerUsage(tokens=round(row.tokens_per_query * 1000), billed_units=row.billed_units_per_query * 1000)
    return {
        "cost_per_1000_queries": price.cost(per_query),
        "price": f"${price.usd:g} per {price.per:,} {price.unit} ({price.read})",
    }


class _Measured(BaseModel):
    """One reranker's run over the queries, before it becomes a row."""

    means: dict[str, float]
    per_query: dict[str, dict[str, float]]
    judged: float
    latencies: list[float]
    pairs: int
    usage: RerankerUsage


def _against(
    base: dict[str, dict[str, float]], other: dict[str, dict[str, float]], queries: list[str]
) -> dict[str, Difference]:
    """`other` against `base` on each compared metric, query by query."""
    return {m: difference([base[q][m] for q in queries], [other[q][m] for q in queries]) for m in COMPARED}


def _used(before: RerankerUsage, after: RerankerUsage) -> RerankerUsage:
    return RerankerUsage(
        requests=after.requests - before.requests,
        documents=after.documents - before.documents,
        tokens=after.tokens - before.tokens,
        billed_units=after.billed_units - before.billed_units,
    )


def pareto_front(points: Sequence[tuple[float, float]]) -> list[bool]:
    """For (quality, latency) points: True where no other point is at least as good on both and better on one."""
    front = []
    for i, (quality, latency) in enumerate(points):
        dominated = any(
            q >= quality and lat <= latency and (q > quality or lat < latency)
            for j, (q, lat) in enumerate(points)
            if j != i
        )
        front.append(not dominated)
    return front


def compare_rerankers(
    engine: Engine,
    dataset: Dataset,
    plan: SearchPlan,
    rerankers: Sequence[str],
    *,
    max_queries: int | None = None,
    prices: dict[str, Price] | None = None,
    ingest_missing: bool = True,
    progress: Progress | None = None,
    ingest_progress: Progress | None = None,
    ingest_announce: Callable[[str], None] | None = None,
) -> RerankerComparison:
    """Each reranker on the first stage's candidates for every judged query (the same candidates for all): the
    plan's collection, first stage, k and top n, with each reranker in turn (the plan's own is not used). A
    missing collection is ingested first,
    as `evaluate_dataset` does (`ingest_announce` hears the estimate, `ingest_progress` the chunks)."""
    started = time.perf_counter()
    base = plan.with_(reranker=None)
    collection, k, top_n = base.collection or engine.settings.collection, base.k, base.top_n
    _, _, max_queries, _ = check_plan(k, top_n, max_queries)
    models = _checked_models(engine, rerankers)
    ids = list(models)
    prepare_collection(
        engine, dataset, collection, ingest_missing=ingest_missing, ingest_progress=ingest_progress,
        ingest_announce=ingest_announce,
    )  # fmt: skip
    items = list(dataset.queries.items())[:max_queries] if max_queries else list(dataset.queries.items())
    qrels = {qid: dataset.qrels[qid] for qid, _ in items}
    total, done = len(items) * (len(ids) + 1), [0]

    def tick() -> None:
        done[0] += 1
        if progress:
            progress(done[0], total)

    first: Run = {}
    for qid, text in items:
        result = engine.search(text, base, max_query_chars=None)  # evaluation scores the whole query text
        first[qid], _ = document_runs(result.candidates)
        tick()
    first_means, first_per = evaluate(qrels, first, k)
    measured = {rid: _measure(engine, models[rid], base.with_(reranker=rid), items, qrels, tick) for rid in ids}
    queries = list(first_per)
    best = max(ids, key=lambda rid: (measured[rid].means[NDCG_10], -ids.index(rid)))
    rows = [
        _row(rid, models[rid], measured[rid], first_per, measured[best].per_query if rid != best else None,
             queries, len(items), prices or DEFAULT_PRICES)
        for rid in ids
    ]  # fmt: skip
    timed_rows = [r for r in rows if r.latency_ms_p50 is not None]
    front = pareto_front([(r.metrics[NDCG_10], r.latency_ms_p95 or 0.0) for r in timed_rows])
    on_front = {r.reranker for r, flag in zip(timed_rows, front, strict=True) if flag}
    return RerankerComparison(
        dataset=dataset.name,
        collection=collection,
        retrieval=base.retrieval,
        k=k,
        top_n=top_n,
        queries=len(queries),
        first_stage=first_means,
        first_stage_judged_at_10=judged_at(qrels, first, 10)[0],
        rows=[r.model_copy(update={"pareto": r.reranker in on_front}) for r in rows],
        best=best,
        seconds=time.perf_counter() - started,
    )


def _checked_models(engine: Engine, rerankers: Sequence[str]) -> dict[str, Reranker]:
    """Each named reranker, loaded (a missing model or an unreachable service fails now, before any query)."""
    ids = list(dict.fromkeys(r.strip() for r in rerankers if r and r.strip()))
    if len(ids) < 2:
        raise InputError("Name two or more rerankers to compare them side by side.")
    models = {rid: engine.reranker(rid) for rid in ids}
    missing = [rid for rid, model in models.items() if model is None]
    if missing:
        raise InputError(f"'{missing[0]}' is no reranker: name a model, a folder, a service URL or a hosted model.")
    return {rid: model for rid, model in models.items() if model is not None}


TIMED_WHEN_CACHED = 5  # queries timed anew when every score of a comparison came from a cache


def _measure(
    engine: Engine,
    model: Reranker,
    plan: SearchPlan,
    items: list[tuple[str, str]],
    qrels: Qrels,
    tick: Callable[[], None],
) -> _Measured:
    """One reranker over the queries: its run's metrics, judged@10, the rerank times of the searches that ran the
    model for every pair (no cached scores), the pairs those scored, and what the reranker reports it used."""
    before = model.usage
    run: Run = {}
    latencies: list[float] = []
    pairs = 0
    results = search_all(engine, plan, [text for _, text in items], lambda done, total: tick())
    for (qid, _), result in zip(items, results, strict=True):
        _, run[qid] = document_runs(result.candidates)
        if not result.cache.result_cached and result.cache.score_hits == 0 and result.candidates:
            latencies.append(result.timings.rerank_ms)
            pairs += len(result.candidates)
    if not latencies:  # every score came from a cache (the score store keeps them across runs): time a few anew
        for _, text in items[:TIMED_WHEN_CACHED]:
            timed = engine.search(text, plan, max_query_chars=None, use_cache=False)
            if timed.candidates:
                latencies.append(timed.timings.rerank_ms)
                pairs += len(timed.candidates)
    means, per_query = evaluate(qrels, run, plan.k)
    return _Measured(
        means=means, per_query=per_query, judged=judged_at(qrels, run, 10)[0], latencies=latencies, pairs=pairs,
        usage=_used(before, model.usage),
    )  # fmt: skip


def _row(
    rid: str,
    model: Reranker,
    m: _Measured,
    first_per: dict[str, dict[str, float]],
    best_per: dict[str, dict[str, float]] | None,
    queries: list[str],
    asked: int,
    prices: dict[str, Price],
) -> RerankerRow:
    """One reranker's row: metrics, paired tests against the first stage and the best, speed, usage and cost."""
    seconds = sum(m.latencies) / 1000
    row = RerankerRow(
        reranker=rid,
        name=short_model_name(rid),
        kind=reranker_kind(rid).name,
        backend=model.backend,
        score_scale=model.score_scale,
        metrics=m.means,
        judged_at_10=m.judged,
        vs_first_stage=_against(first_per, m.per_query, queries),
        vs_best={} if best_per is None else _against(best_per, m.per_query, queries),
        latency_ms_p50=float(np.percentile(m.latencies, 50)) if m.latencies else None,
        latency_ms_p95=float(np.percentile(m.latencies, 95)) if m.latencies else None,
        timed_queries=len(m.latencies),
        pairs_per_second=m.pairs / seconds if seconds > 0 else None,
        compute_seconds_per_1000_queries=seconds / len(m.latencies) * 1000 if m.latencies else None,
        usage=m.usage,
        tokens_per_query=m.usage.tokens / asked if asked else 0.0,
        billed_units_per_query=m.usage.billed_units / asked if asked else 0.0,
    )
    return row.model_copy(update=_cost(row, prices))

"""Long documents: FirstP against MaxP and SumP on judged queries. Per query, how much of its candidates the reranker
never reads under FirstP; per strategy, reranked nDCG@10 against FirstP's (paired), on how many queries the top n
changed, and what it costs (windows scored per query, rerank time with the caches bypassed).

Each strategy's figures come from the same report function as `workbench eval --long-documents ...`, over the same
candidates (the first stage runs once per query and plan, its results cached)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel, Field, computed_field

from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation.diagnosis import CUT_SHOWN
from workbench.evaluation.io import Dataset
from workbench.evaluation.parallel import search_each
from workbench.evaluation.runner import report_of
from workbench.evaluation.service import check_plan, prepare_collection
from workbench.evaluation.significance import Difference, difference
from workbench.passages import parse_long_documents
from workbench.types import SearchPlan, SearchResult
from workbench.vocab import NDCG_10

DEFAULT_STRATEGIES = ("firstp", "maxp", "sump")


class UnreadUnderFirstP(BaseModel):
    """One query's candidates as FirstP reads them: the mean share of their tokens never read, and how many lose
    at least a tenth."""

    query_id: str
    query: str
    unread_share: float
    cut_passages: int


class StrategyFigures(BaseModel):
    """One strategy on the query set."""

    strategy: str
    ndcg_after: float
    vs_firstp: Difference
    top_n_changed: int = Field(description="queries whose reranked top n (as a set) differs from FirstP's")
    windows_per_query: float = Field(description="passages or windows the reranker scored per query")
    rerank_ms_p50: float | None = None


class LongDocumentComparison(BaseModel):
    """FirstP and the other strategies side by side."""

    dataset: str
    collection: str
    reranker_model: str
    k: int
    top_n: int
    queries: int
    unread: list[UnreadUnderFirstP]
    strategies: list[StrategyFigures]
    timing_queries: int
    seconds: float

    @computed_field  # type: ignore[prop-decorator]
    @property
    def words(self) -> str:
        """What the comparison says, in two sentences."""
        cut = [u for u in self.unread if u.cut_passages]
        mean_unread = float(np.mean([u.unread_share for u in self.unread])) if self.unread else 0.0
        said = (
            f"Under FirstP the reranker never reads {mean_unread:.0%} of the candidates' tokens on average; "
            f"{len(cut)} of {self.queries} queries have a candidate cut by at least {CUT_SHOWN:.0%}."
        )
        for row in self.strategies:
            if row.strategy == "firstp":
                continue
            measurable = row.vs_firstp.ci_low > 0 or row.vs_firstp.ci_high < 0
            said += (
                f" {row.strategy}: nDCG@10 {row.ndcg_after:.4f} ({row.vs_firstp.delta:+.4f} against FirstP, 95 % CI "
                f"{row.vs_firstp.ci_low:+.4f} to {row.vs_firstp.ci_high:+.4f}: "
                f"{'measurable' if measurable else 'not measurable'}), top {self.top_n} changed on "
                f"{row.top_n_changed} queries, {row.windows_per_query:.1f} windows scored per query."
            )
        return said

    def to_markdown(self, worst: int = 10) -> str:
        """The comparison as Markdown, with the `worst` queries by unread share."""
        lines = [
            f"# Long documents: {self.dataset} on '{self.collection}'",
            "",
            f"- reranker `{self.reranker_model}`; {self.queries} judged queries; k = {self.k}, top n = {self.top_n}; "
            f"rerank time measured with the caches bypassed on {self.timing_queries} queries",
            "",
            self.words,
            "",
            "| strategy | nDCG@10 | vs FirstP [95 % CI] | top n changed | windows / query | rerank ms p50 |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for row in self.strategies:
            d = row.vs_firstp
            ms = "—" if row.rerank_ms_p50 is None else f"{row.rerank_ms_p50:,.0f}"
            lines.append(
                f"| {row.strategy} | {row.ndcg_after:.4f} | {d.delta:+.4f} [{d.ci_low:+.4f}, {d.ci_high:+.4f}] | "
                f"{row.top_n_changed} | {row.windows_per_query:.1f} | {ms} |"
            )
        least = [u for u in sorted(self.unread, key=lambda u: -u.unread_share) if u.unread_share > 0][:worst]
        heading = "Queries whose candidates FirstP reads least:" if least else "FirstP reads every candidate whole."
        lines += ["", heading, ""]
        for u in least:
            lines.append(f"- {u.query_id}: {u.unread_share:.1%} unread, {u.cut_passages} passages cut — {u.query[:80]}")
        return "\n".join(lines) + "\n"


def _top_set(result: SearchResult) -> frozenset[str]:
    return frozenset(row.id for row in result.reranked)


def compare_long_documents(
    engine: Engine,
    dataset: Dataset,
    plan: SearchPlan,
    strategies: Sequence[str] = DEFAULT_STRATEGIES,
    *,
    max_queries: int | None = None,
    timing_queries: int = 5,
    progress: Callable[[int, int], None] | None = None,
) -> LongDocumentComparison:
    """FirstP and each strategy on the dataset's judged queries with `plan`'s first stage, k, top n and reranker."""
    started = time.perf_counter()
    specs = list(dict.fromkeys(["firstp", *(parse_long_documents(s).spec for s in strategies)]))
    _, _, max_queries, _ = check_plan(plan.k, plan.top_n, max_queries)
    reranker = engine.reranker_of(plan)
    if reranker is None:
        raise InputError("Long-document strategies are the reranker's: this plan reranks nothing.")
    if not hasattr(reranker, "cut_shares"):
        raise InputError(
            f"'{reranker.model_id}' is a service: its tokenizer is not the workbench's, so its documents cannot be cut "
            "into windows here."
        )
    collection = plan.collection or engine.settings.collection
    prepare_collection(engine, dataset, collection)
    plans = [plan.with_(collection=collection, long_documents=spec) for spec in specs]
    items = list(dataset.queries.items())[:max_queries] if max_queries else list(dataset.queries.items())
    results = search_each(engine, plans, [text for _, text in items], progress)
    reports = [report_of(dataset, p, items, answered, 0.0) for p, answered in zip(plans, results, strict=True)]
    firstp = [o.after[NDCG_10] for o in reports[0].per_query]
    unread = []
    for (qid, text), result in zip(items, results[0], strict=True):
        shares = reranker.cut_shares(text, [c.text for c in result.candidates]) if result.candidates else []
        unread.append(
            UnreadUnderFirstP(
                query_id=qid, query=text, unread_share=float(np.mean(shares)) if shares else 0.0,
                cut_passages=sum(share >= CUT_SHOWN for share in shares),
            )
        )  # fmt: skip
    sample = [text for _, text in items[:timing_queries]]
    rows = []
    for spec, p, answered, report in zip(specs, plans, results, reports, strict=True):
        timed = [engine.search(q, p, max_query_chars=None, use_cache=False).timings.rerank_ms for q in sample]
        rows.append(
            StrategyFigures(
                strategy=spec, ndcg_after=report.after[NDCG_10],
                vs_firstp=difference(firstp, [o.after[NDCG_10] for o in report.per_query]),
                top_n_changed=sum(_top_set(a) != _top_set(b) for a, b in zip(results[0], answered, strict=True)),
                windows_per_query=float(np.mean([r.windows_scored or len(r.candidates) for r in answered])),
                rerank_ms_p50=float(np.median(timed)) if timed else None,
            )
        )  # fmt: skip
    return LongDocumentComparison(
        dataset=dataset.name, collection=collection, reranker_model=reranker.model_id, k=plan.k, top_n=plan.top_n,
        queries=len(items), unread=unread, strategies=rows, timing_queries=len(sample),
        seconds=time.perf_counter() - started,
    )  # fmt: skip

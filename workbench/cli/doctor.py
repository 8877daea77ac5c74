"""`workbench doctor`: what this machine is, what `auto` runs the reranker on here with the figures the choice
rests on (measured once per model and machine, and kept), each backend's speed against the machine's measured
ceiling, with `--parity COLLECTION` the audit that holds every backend to fp32 torch, and with `--checks COLLECTION`
the run checks that say whether the reranker runs as intended at all."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import get_args

from workbench.cli.common import ProgressBar, settings_from, shown, warn
from workbench.cli.plans import plan_from
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation.io import Dataset
from workbench.evaluation.parity import audit_parity
from workbench.evaluation.sanity import CheckName
from workbench.evaluation.service import Listeners, check_plan, evaluate_dataset
from workbench.models import is_cross_encoder, resolve_model, short_model_name
from workbench.rerankers.discovery import discover_rerankers, is_local_cross_encoder
from workbench.rerankers.factory import reranker_backend_choice, split_backend
from workbench.rerankers.local.ceiling import CeilingRow, against_ceiling, measure_peak, model_shape
from workbench.rerankers.local.machine import BackendChoice
from workbench.services.backend_bench import bench, bench_table
from workbench.services.demo import DEMO_COLLECTION
from workbench.services.evaluations import EvaluationRequest, ready_evaluation
from workbench.types import SearchPlan
from workbench.vocab import PARITY_K, PARITY_TOLERANCE


def _refuse_unused(args: argparse.Namespace) -> None:
    """An option that only the audit (--parity) or the checks (--checks) read is refused without them, never
    passed over in silence."""
    given = {
        "--dataset": args.dataset is not None, "-k": args.k is not None, "-n": args.n is not None,
        "--max-queries": args.max_queries is not None,
    }  # fmt: skip
    parity_only = {
        "--served": bool(args.served),
        "--tolerance": args.tolerance != PARITY_TOLERANCE,
        "--no-keep": args.no_keep,
    }
    bench_only = {"--lengths": args.lengths is not None, "--backends": args.backends is not None,
                  "--pairs": args.pairs is not None}  # fmt: skip
    if args.bench is None and any(bench_only.values()):
        raise InputError(f"{', '.join(o for o, used in bench_only.items() if used)} go(es) with --bench.")
    if args.bench is not None and (args.parity or args.checks):
        raise InputError("Ask for one of --bench, --parity and --checks at a time.")
    if not args.parity and not args.checks:
        named = [option for option, used in {**given, **parity_only}.items() if used]
        if named:
            raise InputError(f"{', '.join(named)} go(es) with --parity COLLECTION or --checks COLLECTION.")
    if args.checks:
        named = [option for option, used in parity_only.items() if used]
        if named:
            raise InputError(f"{', '.join(named)} go(es) with --parity, not --checks.")


def cmd_doctor(args: argparse.Namespace) -> int:
    settings = settings_from(args, reranker_model=args.reranker)
    if args.parity and args.checks:
        raise InputError("Ask for one of --parity and --checks at a time.")
    _refuse_unused(args)
    if args.bench is not None:
        return _bench(args, settings)
    if args.parity:
        return _parity(args)
    if args.checks:
        return _checks(args)
    model = settings.reranker_model
    measured = reranker_backend_choice(settings, recalibrate=args.recalibrate, progress=warn)
    if measured is None:
        print(shown(f"The reranker {model} is a service: it has no local backend to choose."))
        return 0
    facts, choice = measured
    again = choice.measured_busy_then_quiet_now() if choice is not None else None
    if again:  # speeds kept from a busy machine are not this machine's
        warn(again)
        facts, choice = reranker_backend_choice(settings, recalibrate=True, progress=warn) or measured
    ceiling = _ceiling(model, settings, choice) if choice is not None else []
    if args.json:
        body = {
            "machine": facts.model_dump(), "choice": choice.model_dump(mode="json") if choice else None,
            "peak": measure_peak().model_dump() if choice else None, "ceiling": [row.model_dump() for row in ceiling],
        }  # fmt: skip
        print(shown(json.dumps(body, indent=2)))
        return 0
    flags = ", ".join(facts.flags) or "none of note"
    print(shown(f"machine: {facts.cpu} ({facts.arch}); flags {flags}; int8 configuration {facts.int8_config}"))
    print(shown(f"GPU: {facts.gpu or 'none in use'}"))
    print(shown(f"reranker: {model} (RERANKER_BACKEND={settings.reranker_backend})"))
    if choice is None:
        print("auto → torch in half precision on the GPU (no calibration there)")
        return 0
    print(shown(choice.summary()))
    used = choice.chosen if settings.reranker_backend == "auto" else settings.reranker_backend
    print(shown(f"runs on: {used}; measured {choice.measured_at:%Y-%m-%d %H:%M} UTC in {choice.seconds:.1f} s"))
    peak = measure_peak()
    print(
        shown(
            f"this machine's peak per core: fp32 {peak.fp32_gflops_per_core:.0f} GFLOP/s, int8 "
            f"{peak.int8_gops_per_core:.0f} GOP/s ({peak.how})"
        )
    )
    for row in ceiling:
        print(shown(f"  {row.words()}"))
    return 0


def _ceiling(model: str, settings: Settings, choice: BackendChoice) -> list[CeilingRow]:
    """Each timed backend's speed on the calibration pairs against this machine's measured peak."""
    import torch

    folder = resolve_model(split_backend(model)[0], settings, setting="RERANKER_MODEL")
    shape, peak, cores = model_shape(folder), measure_peak(), torch.get_num_threads()
    return [
        against_ceiling(f.backend, 50_000 / f.ms_per_50_pairs, cores, shape, f.tokens_per_pair, peak)
        for f in choice.figures
        if f.tokens_per_pair > 0 and f.ms_per_50_pairs > 0
    ]


def _judged(args: argparse.Namespace, collection: str) -> tuple[Engine, Dataset, SearchPlan]:
    """The engine, the collection's judged queries and the plan `--parity` and `--checks` run."""
    settings = settings_from(args, reranker_model=args.reranker)
    k = PARITY_K if args.k is None else args.k
    top_n = args.n if args.n is not None else min(10, k) if isinstance(k, int) and k > 0 else 10
    check_plan(k, top_n, args.max_queries)
    engine = Engine(settings)
    demo = collection == DEMO_COLLECTION and not args.dataset
    request = EvaluationRequest(demo=demo, beir=args.dataset, collection=collection)
    dataset = ready_evaluation(engine, request).dataset
    return (
        engine,
        dataset,
        plan_from(args, engine, collection=collection, k=k, top_n=top_n, reranker=settings.reranker_model),
    )


def _checks(args: argparse.Namespace) -> int:
    """The run checks of the reranker as it runs here, on the collection's judged queries: each that fired, named,
    or that none did; exit 3 when one fired."""
    engine, dataset, plan = _judged(args, args.checks)
    with ProgressBar("queries", unit="query") as bar:
        report = evaluate_dataset(
            engine, dataset, plan, max_queries=args.max_queries or 50, listeners=Listeners(progress=bar)
        )
    fired = report.verdict.not_as_intended if report.verdict is not None else []
    if args.json:
        print(shown(json.dumps({
            "reranker": report.reranker_model, "backend": report.reranker_backend, "queries": report.queries,
            "checks": [check.model_dump() for check in fired],
        }, indent=2)))  # fmt: skip
        return 3 if fired else 0
    print(shown(f"reranker: {report.reranker_model} ({report.reranker_backend}), {report.queries} queries of "
                f"{dataset.name} on '{plan.collection}', k = {plan.k}, top n = {plan.top_n}"))  # fmt: skip
    for check in fired:
        print(shown(f"run check '{check.name}' fired on {check.queries} of {check.checked} queries: {check.words}"))
    if fired:
        print("The reranker did not run as intended: no verdict about the model holds until this is fixed.")
        return 3
    print(f"none of the run checks fired ({', '.join(get_args(CheckName))}).")
    return 0


def _parity(args: argparse.Namespace) -> int:
    """The parity audit on the named collection's judged queries; its verdicts kept for `auto` unless --no-keep."""
    engine, dataset, plan = _judged(args, args.parity)
    audit = audit_parity(
        engine, dataset, plan, served=args.served or (), max_queries=args.max_queries, tolerance=args.tolerance,
        keep=not args.no_keep, progress=warn,
    )  # fmt: skip
    if args.json:
        print(shown(audit.model_dump_json(indent=2)))
        return 0
    for line in audit.lines():
        print(shown(line))
    if not audit.judged:
        warn("no judgments for these queries: τ, set changes and batch-mates only; nothing kept for auto")
    return 0


def _bench_models(named: list[str], settings: Settings) -> list[tuple[str, str]]:
    """The cross-encoders to time: those named (each resolved as RERANKER_MODEL is), or every local one found."""
    if not named:
        found = [(c.id, str(c.path)) for c in discover_rerankers(settings) if is_local_cross_encoder(c)]
        if not found:
            raise InputError("No local cross-encoder to time: name a folder, or set WORKBENCH_MODELS_DIR.")
        return found
    models = []
    for model_id in named:
        folder = resolve_model(model_id, settings, setting="--bench")
        if not is_cross_encoder(Path(folder)):
            raise InputError(f"{short_model_name(model_id)} is not a cross-encoder: the bench times those.")
        models.append((short_model_name(model_id), folder))
    return models


def _bench(args: argparse.Namespace, settings: Settings) -> int:
    """`doctor --bench`: each local cross-encoder on each backend here at fixed lengths (a table, or --json)."""
    report = bench(
        _bench_models(args.bench, settings), settings=settings, backends=args.backends,
        lengths=args.lengths, max_pairs=args.pairs, say=warn,
    )  # fmt: skip
    if args.json:
        print(shown(report.model_dump_json(indent=2)))
        return 0
    for line in bench_table(report):
        print(shown(line))
    return 0

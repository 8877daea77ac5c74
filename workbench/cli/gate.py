"""`workbench gate`: a candidate configuration against a baseline on judged queries, decided as CI needs it
(exit 0 ship, 1 no-ship, 3 inconclusive; 2 is an error), with the decision as JSON and JUnit XML."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbench.cli.common import ProgressBar, print_json, settings_from, shown, warn, writable_file
from workbench.cli.plans import evaluation_from, plan_from, stopping_from
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.experiments import open_experiment_store
from workbench.experiments.gate import Budgets, GateDecision, run_gate
from workbench.preferences.gate import decide_on_preferences
from workbench.rerankers.factory import on_backend
from workbench.services.backend_audit import audit_first_if_it_repays
from workbench.services.evaluations import ready_evaluation
from workbench.services.preferences import preferences_for_gate
from workbench.types import SearchPlan


def cmd_gate(args: argparse.Namespace) -> int:
    writable_file(args.junit, "--junit", "the gate did not run", "the decision")
    writable_file(args.json_out, "--json-out", "the gate did not run", "the decision")
    settings = settings_from(args)
    if args.preferences:
        return _report(args, _on_preferences(settings, args))
    if args.candidates and args.retrieval not in (None, "dense"):
        raise InputError("With --candidates the first stage is the file's: leave out --retrieval.")
    engine = Engine(settings)
    ready = ready_evaluation(engine, evaluation_from(args), warn=warn, query_set=False)  # the gate keeps the set
    dataset = ready.dataset
    candidate = _candidate(engine, args, ready.collection)
    baseline = _baseline(engine, args, candidate)
    if candidate.reranks:  # faster backends never audited here: checked first when this run repays it
        queries = min(len(dataset.queries), args.max_queries or len(dataset.queries))
        audit_first_if_it_repays(engine, queries * candidate.k, warn, reranker=candidate.reranker)
    query_set = open_experiment_store(settings).query_set(args.query_set) if args.query_set else None
    budgets = Budgets(
        max_latency_ms=args.max_latency_ms, max_rerank_pairs=args.max_rerank_pairs,
        rerank_budget_ms=args.rerank_budget_ms, serve_concurrency=args.serve_concurrency,
    )  # fmt: skip
    with ProgressBar("queries", unit="query") as bar:
        decision = run_gate(
            engine, dataset, candidate, source=dataset.name, baseline=baseline, budgets=budgets, query_set=query_set,
            max_queries=args.max_queries, progress=bar,
            sequential=stopping_from(args),
        )  # fmt: skip
    return _report(args, decision)


def _on_preferences(settings: Settings, args: argparse.Namespace) -> GateDecision:
    """The decision on a blind preference session; the options that configure a run have no place beside it."""
    named = [o for o in ("dataset", "candidate_experiment", "reranker", "baseline", "query_set") if getattr(args, o)]
    if named:
        raise InputError(f"--preferences decides on people's choices alone: leave out --{named[0].replace('_', '-')}.")
    return decide_on_preferences(*preferences_for_gate(Engine(settings), args.preferences))


def _report(args: argparse.Namespace, decision: GateDecision) -> int:
    """The decision written where asked and printed; its exit code."""
    if args.junit:
        Path(args.junit).write_text(decision.to_junit(), encoding="utf-8")
    if args.json_out:
        Path(args.json_out).write_text(decision.model_dump_json(indent=2), encoding="utf-8")
    if args.json:
        print_json(decision)
    else:
        print(shown(f"{decision.outcome.upper()} (exit {decision.exit_code}): {decision.reason}"))
        print(shown(f"candidate {decision.candidate} (experiment {decision.candidate_experiment})"))
        print(shown(f"baseline {decision.baseline}"))
        if decision.stopping:
            print(shown(f"stopping rule: {decision.stopping}"))
    sys.stdout.flush()
    return decision.exit_code


def _candidate(engine: Engine, args: argparse.Namespace, collection: str) -> SearchPlan:
    """The candidate on the readied `collection`: the options' plan, or a kept experiment's (`workbench tune` keeps
    its recommended cell)."""
    if not args.candidate_experiment:
        return plan_from(args, engine, collection=collection)
    named = [o for o in ("retrieval", "fusion", "k", "n", "reranker", "backend") if getattr(args, o, None)]
    if named or args.no_rerank or args.candidates:
        shown_options = ", ".join(f"--{o}" if len(o) > 1 else f"-{o}" for o in named) or "--no-rerank/--candidates"
        raise InputError(f"--candidate-experiment is the whole candidate: leave out {shown_options}.")
    plan = open_experiment_store(engine.settings).get(args.candidate_experiment).plan
    if plan.collection != collection:
        raise InputError(f"Experiment {args.candidate_experiment} ran on '{plan.collection}', not on '{collection}'.")
    return plan


def _baseline(engine: Engine, args: argparse.Namespace, candidate: SearchPlan) -> SearchPlan | str | None:
    """None (the candidate's first stage), an experiment id, or another plan from the --baseline-* options."""
    other = {
        "retrieval": args.baseline_retrieval, "k": args.baseline_k, "top_n": args.baseline_n,
        "reranker": args.baseline_reranker,
    }  # fmt: skip
    if any(value is not None for value in other.values()):
        if args.baseline not in (None, "first-stage"):
            raise InputError("Name one baseline: --baseline EXPERIMENT, or the --baseline-* options, not both.")
        given = {name: value for name, value in other.items() if value is not None}
        if given.get("reranker") in ("none", ""):
            given["reranker"] = None
        elif given.get("reranker") and args.backend:  # both sides on one backend, as Compare runs them
            given["reranker"] = on_backend(given["reranker"], args.backend)
        return candidate.with_(**given)
    if args.baseline in (None, "first-stage"):
        return None
    open_experiment_store(engine.settings).get(args.baseline)  # a wrong id fails before any query runs
    return args.baseline

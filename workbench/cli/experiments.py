"""`workbench experiments`, `workbench query-sets` and `workbench gate`: kept evaluations, named query sets, and
the ship gate for CI."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from workbench.cli.common import ProgressBar, print_json, settings_from, shown, store_options, warn
from workbench.cli.evaluate import judged_queries
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation.html_report import save_report
from workbench.experiments import (
    Experiment,
    diff_experiments,
    export_experiment,
    history_query_set,
    import_experiment,
    judged_query_set,
    open_experiment_store,
    read_query_set,
    reproduced,
    run_again,
)
from workbench.experiments.gate import Budgets, run_gate
from workbench.services.demo import DEMO_COLLECTION, ensure_demo_collection
from workbench.services.sessions import open_session_store
from workbench.vocab import DEFAULT_RERANKER_CHOICE, PRIMARY_METRIC, RETRIEVAL_MODES, spoken


def _store(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    return open_experiment_store(settings_from(args))


def _line(experiment: Experiment) -> str:
    row = experiment.summary()
    verdict = f" · {row.verdict}" if row.verdict else ""
    name = f" {experiment.name!r}" if experiment.name else ""
    return (
        f"{experiment.id}  {row.created_at.isoformat(timespec='seconds')}{name}  {row.configuration}  "
        f"[{row.query_set}, {row.queries} queries]  {row.metric} {row.before:.4f} → {row.after:.4f}{verdict}"
    )


def _cmd_list(args: argparse.Namespace) -> int:
    found = _store(args).list(collection=args.collection, limit=args.limit)
    if args.json:
        print(json.dumps([e.summary().model_dump(mode="json") for e in found], indent=2))
    elif not found:
        print("No experiments yet: `workbench eval demo` keeps one.")
    for experiment in [] if args.json else found:
        print(shown(_line(experiment)))
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    experiment = _store(args).get(args.id)
    report = experiment.evaluation()
    if args.report:
        files = save_report(report, args.report)
        warn(f"report written to {Path(args.report)} ({len(files)} files)")
    if args.json:
        print_json(experiment.view())
        return 0
    print(shown(_line(experiment)))
    if experiment.notes:
        print(shown(f"notes: {experiment.notes}"))
    print(shown(report.to_markdown()))
    return 0


def _cmd_diff(args: argparse.Namespace) -> int:
    store = _store(args)
    diff = diff_experiments(store.get(args.first), store.get(args.second))
    if args.json:
        print_json(diff)
        return 0
    print(shown(diff.words()))
    a = diff.agreement
    print(
        shown(
            f"top 1 changed for {a.top1_change_rate:.0%} of {a.queries} queries; overlap@{a.top_n} mean "
            f"{a.overlap_at_n.mean:.3f}; RBO mean {a.rbo.mean:.3f}; Kendall τ mean {a.kendall_tau.mean:.3f}"
        )
    )
    for warning in diff.warnings:
        warn(f"warning: {warning}")
    print("Where they disagree most:")
    for row in diff.per_query[: args.show]:
        delta = "" if row.delta is None else f" · {PRIMARY_METRIC} {row.a:.3f} → {row.b:.3f}"
        print(shown(f"  {row.query_id}  RBO {row.rbo:.3f}{delta}  {row.query[:80]}"))
    return 0


def _cmd_delete(args: argparse.Namespace) -> int:
    _store(args).delete(args.id)
    print(f"deleted experiment {args.id}")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    text = export_experiment(_store(args).get(args.id))
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        warn(f"experiment {args.id} written to {args.output}")
    else:
        print(text)
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.is_file():
        raise InputError(f"No experiment file at {path.name}.")
    experiment = import_experiment(Engine(settings_from(args)), path.read_bytes())
    print(shown(f"imported {_line(experiment)}"))
    return 0


def _cmd_rerun(args: argparse.Namespace) -> int:
    engine = Engine(settings_from(args))
    first = open_experiment_store(engine.settings).get(args.id)
    with ProgressBar("queries", unit="query") as bar:
        again = run_again(engine, first, progress=bar)
    same, changed = reproduced(first, again)
    print(shown(_line(again)))
    if same:
        print("The same figures to the last digit.")
    else:
        why = ", ".join(changed) if changed else "no input (see the two manifests: the machine or a library version)"
        print(shown(f"The figures differ; what changed: {why}."))
    return 0


def _cmd_note(args: argparse.Namespace) -> int:
    store = _store(args)
    experiment = store.get(args.id)
    changes = {
        "name": args.name if args.name is not None else experiment.name,
        "tags": args.tag if args.tag is not None else experiment.tags,
        "notes": args.notes if args.notes is not None else experiment.notes,
    }
    store.save(Experiment(**{**experiment.model_dump(), **changes}))
    print(shown(f"kept {args.id}: name {changes['name']!r}, tags {', '.join(changes['tags']) or 'none'}"))
    return 0


def _cmd_set_add(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    if args.file:
        query_set = read_query_set(args.name, args.file)
    elif args.from_session:
        view = open_session_store(settings).get(args.from_session)
        query_set = history_query_set(args.name, [t.text for t in view.turns if t.role in {"query", "user"}])
    else:
        dataset, _ = judged_queries(args, settings)
        query_set = judged_query_set(args.name, dataset)
    open_experiment_store(settings).save_query_set(query_set)
    print(shown(f"query set '{query_set.name}': {len(query_set.queries)} queries ({query_set.source})"))
    return 0


def _cmd_set_list(args: argparse.Namespace) -> int:
    store = _store(args)
    names = store.query_set_names()
    if not names:
        print("No query sets yet: `workbench query-sets add NAME FILE` keeps one.")
    for name in names:
        query_set = store.query_set(name)
        print(shown(f"{name}  {len(query_set.queries)} queries  ({query_set.source})"))
    return 0


def _cmd_set_show(args: argparse.Namespace) -> int:
    query_set = _store(args).query_set(args.name)
    if args.json:
        print_json(query_set)
        return 0
    for item in query_set.queries:
        print(shown(f"{item.id}\t{item.weight:g}\t{item.text}"))
    return 0


def _cmd_set_delete(args: argparse.Namespace) -> int:
    _store(args).delete_query_set(args.name)
    print(f"deleted query set {args.name}")
    return 0


def _cmd_gate(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    dataset, demo = judged_queries(args, settings)
    engine = Engine(settings)
    if demo and args.collection == DEMO_COLLECTION:
        ensure_demo_collection(engine)
    candidate = engine.plan(
        collection=args.collection, retrieval=args.retrieval, k=args.k, top_n=args.n,
        reranker=None if args.no_rerank else DEFAULT_RERANKER_CHOICE,
    )  # fmt: skip
    baseline = _baseline(engine, args, candidate)
    query_set = open_experiment_store(settings).query_set(args.query_set) if args.query_set else None
    budgets = Budgets(max_latency_ms=args.max_latency_ms, max_rerank_pairs=args.max_rerank_pairs)
    with ProgressBar("queries", unit="query") as bar:
        decision = run_gate(
            engine, dataset, candidate, source=dataset.name, baseline=baseline, budgets=budgets, query_set=query_set,
            max_queries=args.max_queries, progress=bar,
        )  # fmt: skip
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
    sys.stdout.flush()
    return decision.exit_code


def _baseline(engine: Engine, args: argparse.Namespace, candidate):  # type: ignore[no-untyped-def]
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
        return candidate.with_(**given)
    if args.baseline in (None, "first-stage"):
        return None
    open_experiment_store(engine.settings).get(args.baseline)  # a wrong id fails before any query runs
    return args.baseline


def _dataset_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dataset", nargs="?", help="a BEIR folder, or `demo` (its judgments)")
    parser.add_argument("--collection", help="the collection (default for `demo`: the demo collection)")
    parser.add_argument("--split", default="test", help="qrels split of a BEIR folder (default test)")
    parser.add_argument("--qrels", help="a qrels file (BEIR TSV or TREC)")
    parser.add_argument("--queries", help="a queries file (BEIR jsonl or id<TAB>text) with --qrels")


def add_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _experiment_commands(commands)
    _query_set_commands(commands)
    _gate_command(commands)


def _experiment_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    experiments = commands.add_parser("experiments", help="kept evaluations: list, show, diff, rerun, export")
    verbs = experiments.add_subparsers(dest="verb", required=True)
    listed = verbs.add_parser("list", help="the kept experiments, newest first")
    listed.add_argument("--collection")
    listed.add_argument("--limit", type=int, default=50)
    listed.add_argument("--json", action="store_true")
    listed.set_defaults(handler=_cmd_list)
    show = verbs.add_parser("show", help="one experiment's report")
    show.add_argument("id")
    show.add_argument("--json", action="store_true")
    show.add_argument("--report", metavar="DIR", help="write its TREC runs and HTML/Markdown verdict report")
    show.set_defaults(handler=_cmd_show)
    diff = verbs.add_parser("diff", help="the second experiment against the first, query by query")
    diff.add_argument("first")
    diff.add_argument("second")
    diff.add_argument("--show", type=int, default=10, help="queries listed where they disagree most")
    diff.add_argument("--json", action="store_true")
    diff.set_defaults(handler=_cmd_diff)
    for verb, handler, text in (
        ("delete", _cmd_delete, "remove an experiment"),
        ("rerun", _cmd_rerun, "run its exact plan on its exact queries and judgments again"),
    ):
        parser = verbs.add_parser(verb, help=text)
        parser.add_argument("id")
        parser.set_defaults(handler=handler)
    export = verbs.add_parser("export", help="one experiment as one JSON file")
    export.add_argument("id")
    export.add_argument("-o", "--output", help="the file (default: standard output)")
    export.set_defaults(handler=_cmd_export)
    imported = verbs.add_parser("import", help="keep an exported experiment here")
    imported.add_argument("file")
    imported.set_defaults(handler=_cmd_import)
    note = verbs.add_parser("note", help="name, tag or annotate an experiment")
    note.add_argument("id")
    note.add_argument("--name")
    note.add_argument("--tag", action="append", help="repeat for several (replaces its tags)")
    note.add_argument("--notes")
    note.set_defaults(handler=_cmd_note)
    for parser in (listed, show, diff, export, imported, note, *(verbs.choices[v] for v in ("delete", "rerun"))):
        store_options(parser)


def _query_set_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    sets = commands.add_parser("query-sets", help="named, saved query sets")
    verbs = sets.add_subparsers(dest="verb", required=True)
    add = verbs.add_parser("add", help="keep a query set: from a file, judged queries, or a session's history")
    add.add_argument("name")
    add.add_argument("--file", help="one query a line, CSV (query[,id,weight]) or JSONL ({text, _id, weight})")
    add.add_argument("--from-session", metavar="ID", help="the queries of a kept session (the app's: app:<user>)")
    _dataset_options(add)
    add.set_defaults(handler=_cmd_set_add)
    listed = verbs.add_parser("list")
    listed.set_defaults(handler=_cmd_set_list)
    show = verbs.add_parser("show")
    show.add_argument("name")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=_cmd_set_show)
    delete = verbs.add_parser("delete")
    delete.add_argument("name")
    delete.set_defaults(handler=_cmd_set_delete)
    for parser in (add, listed, show, delete):
        store_options(parser)


def _gate_command(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    gate = commands.add_parser(
        "gate",
        help="ship or not: a candidate configuration against a baseline; exit 0 ship, 1 no-ship, 3 inconclusive",
    )
    _dataset_options(gate)
    gate.add_argument("--retrieval", help=f"the candidate's first stage: {spoken(RETRIEVAL_MODES)}")
    gate.add_argument("--reranker", metavar="ID", help="the candidate's reranker (default: RERANKER_MODEL)")
    gate.add_argument("--no-rerank", action="store_true", help="the candidate does not rerank")
    gate.add_argument("--backend", help="the candidate reranker's backend")
    gate.add_argument("-k", type=int, help="candidates per query (default: RERANKER_K_RETRIEVE)")
    gate.add_argument("-n", type=int, help="top n after reranking (default: RERANKER_K_RETURN)")
    gate.add_argument(
        "--baseline",
        help="first-stage (default: the candidate's own first stage, no reranker), or a kept experiment's id",
    )
    gate.add_argument("--baseline-retrieval", help="a baseline configuration: the candidate's, with this first stage")
    gate.add_argument("--baseline-reranker", help="... with this reranker (`none` for none)")
    gate.add_argument("--baseline-k", type=int, help="... with this k")
    gate.add_argument("--baseline-n", type=int, help="... with this top n")
    gate.add_argument("--query-set", help="a kept query set (its queries, judged by the dataset)")
    gate.add_argument("--max-queries", type=int, help="only the first N judged queries")
    gate.add_argument("--max-latency-ms", type=float, help="budget: p95 of a search's total time")
    gate.add_argument("--max-rerank-pairs", type=int, help="budget: documents reranked per query")
    gate.add_argument("--junit", metavar="FILE", help="write the decision as JUnit XML")
    gate.add_argument("--json-out", metavar="FILE", help="write the decision as JSON")
    gate.add_argument("--json", action="store_true", help="print the decision as JSON")
    store_options(gate)
    gate.set_defaults(handler=_cmd_gate)

"""`workbench experiments`, `workbench query-sets` and `workbench gate`: kept evaluations, named query sets, and
the ship gate for CI."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from workbench.cli.common import ProgressBar, print_json, settings_from, shown, warn, writable_file, writable_folder
from workbench.cli.plans import evaluation_from, plan_from_spec
from workbench.clicks.logs import read_click_log
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation.html_report import save_report
from workbench.experiments import (
    Experiment,
    ExperimentStore,
    RunDiff,
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
from workbench.experiments.log_sample import log_query_set
from workbench.inputs import read_user_file
from workbench.judgments import judged_queries as judged_texts
from workbench.services.comparisons import QuerySetComparison, compare_over_query_set
from workbench.services.evaluations import judged_queries_of
from workbench.services.sessions import open_session_store
from workbench.vocab import MAX_EXPORT_BYTES, PRIMARY_METRIC


def _store(args: argparse.Namespace) -> ExperimentStore:
    return open_experiment_store(settings_from(args))


def _line(experiment: Experiment) -> str:
    row = experiment.summary()
    verdict = f" · {row.verdict}" if row.verdict else ""
    name = f" {experiment.name!r}" if experiment.name else ""
    return (
        f"{experiment.id}  {row.created_at.isoformat(timespec='seconds')}{name}  {row.configuration}  "
        f"[{row.query_set}, {row.queries} queries]  {row.metric} {row.before:.4f} → {row.after:.4f}{verdict}"
    )


def cmd_list(args: argparse.Namespace) -> int:
    found = _store(args).list(collection=args.collection, limit=args.limit)
    if args.json:
        print(json.dumps([e.summary().model_dump(mode="json") for e in found], indent=2))
    elif not found:
        print("No experiments yet: `workbench eval demo` keeps one.")
    for experiment in [] if args.json else found:
        print(shown(_line(experiment)))
    if found.unreadable:
        warn(found.unreadable_words())
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    writable_folder(args.report, "--report", "nothing was written")
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


def cmd_diff(args: argparse.Namespace) -> int:
    store = _store(args)
    return _print_diff(diff_experiments(store.get(args.first), store.get(args.second)), args)


def cmd_set_compare(args: argparse.Namespace) -> int:
    engine = Engine(settings_from(args))
    first = plan_from_spec(engine, args.a, "--a", args.collection)
    second = plan_from_spec(engine, args.b, "--b", args.collection)
    request = QuerySetComparison(
        args.name, first, second, candidates=args.candidates, corpus=args.corpus,
        # a side starts from the candidates unless its spec names collection=
        on_candidates=(not _names_collection(args.a), not _names_collection(args.b)),
        # the judgments are the collection's whose documents the candidates name (--collection), else B's
        judgments_of=(args.collection if args.candidates else second.collection) if args.judged else None,
        judged=args.judged,
    )  # fmt: skip
    with ProgressBar("searches", unit="search") as bar:
        diff, _ = compare_over_query_set(engine, request, warn=warn, progress=bar)
    return _print_diff(diff, args)


def _names_collection(spec: str) -> bool:
    """Whether a --a/--b spec names its own collection (`collection=...`)."""
    return any(part.partition("=")[0].strip() == "collection" for part in (spec or "").split(","))


def _print_diff(diff: RunDiff, args: argparse.Namespace) -> int:
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
    differing = diff.disagreeing()
    if not differing:
        print(f"They agree on every one of the {a.queries} queries: the same top {a.top_n} in the same order.")
        return 0
    print("Where they disagree most:")
    for row in differing[: args.show]:
        delta = "" if row.delta is None else f" · {PRIMARY_METRIC} {row.a:.3f} → {row.b:.3f}"
        print(shown(f"  {row.query_id}  RBO {row.rbo:.3f}{delta}  {row.query[:80]}"))
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    _store(args).delete(args.id)
    print(f"deleted experiment {args.id}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    writable_file(args.output, "--output", "nothing was written")
    text = export_experiment(_store(args).get(args.id))
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        warn(f"experiment {args.id} written to {args.output}")
    else:
        print(text)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    data = read_user_file(Path(args.file), "experiment file", MAX_EXPORT_BYTES)
    experiment = import_experiment(Engine(settings_from(args)), data)
    print(shown(f"imported {_line(experiment)}"))
    return 0


def cmd_rerun(args: argparse.Namespace) -> int:
    engine = Engine(settings_from(args))  # the plan is the experiment's own
    first = open_experiment_store(engine.settings).get(args.id)
    with ProgressBar("queries", unit="query") as bar:
        again = run_again(engine, first, backend=args.backend, progress=bar)
    same, changed = reproduced(first, again)
    print(shown(_line(again)))
    if same and changed:  # another backend (or embedder) can give the same figures: say what differed anyway
        print(shown(f"The same figures to the last digit, though {', '.join(changed)} differed."))
    elif same:
        print("The same figures to the last digit.")
    else:
        why = ", ".join(changed) if changed else "no input (see the two manifests: the machine or a library version)"
        print(shown(f"The figures differ; what changed: {why}."))
    return 0


def cmd_note(args: argparse.Namespace) -> int:
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


def cmd_set_add(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    given = [name for name, value in (("--file", args.file), ("--from-log", args.from_log),
             ("--from-session", args.from_session), ("a dataset", args.dataset)) if value]  # fmt: skip
    if len(given) > 1:
        raise InputError(f"A query set comes from one source; got {' and '.join(given)}: keep one.")
    log_only = [name for name, value in (("--events", args.events), ("--sample", args.sample), ("--size", args.size),
                ("--seed", args.seed)) if value is not None]  # fmt: skip
    if log_only and not args.from_log:
        raise InputError(f"{', '.join(log_only)} go(es) with --from-log (a click log's queries).")
    if args.file:
        query_set = read_query_set(args.name, args.file)
    elif args.from_log:
        log = read_click_log(args.from_log, args.events)
        judged = judged_texts(settings, args.collection) if args.collection else {}
        query_set = log_query_set(
            args.name, log.impressions, sample=args.sample or "top", size=50 if args.size is None else args.size,
            seed=args.seed or 0, judged=judged,
            source=log.source,
        )  # fmt: skip
    elif args.from_session:
        view = open_session_store(settings).get(args.from_session)
        query_set = history_query_set(args.name, [t.text for t in view.turns if t.role in {"query", "user"}])
    else:
        dataset, _ = judged_queries_of(settings, evaluation_from(args))
        query_set = judged_query_set(args.name, dataset)
    open_experiment_store(settings).save_query_set(query_set)
    print(shown(f"query set '{query_set.name}': {len(query_set.queries)} queries ({query_set.source})"))
    return 0


def cmd_set_list(args: argparse.Namespace) -> int:
    store = _store(args)
    names = store.query_set_names()
    if not names:
        print("No query sets yet: `workbench query-sets add NAME FILE` keeps one.")
    for name in names:
        query_set = store.query_set(name)
        print(shown(f"{name}  {len(query_set.queries)} queries  ({query_set.source})"))
    return 0


def cmd_set_show(args: argparse.Namespace) -> int:
    query_set = _store(args).query_set(args.name)
    if args.json:
        print_json(query_set)
        return 0
    for item in query_set.queries:
        print(shown(f"{item.id}\t{item.weight:g}\t{item.text}"))
    return 0


def cmd_set_delete(args: argparse.Namespace) -> int:
    _store(args).delete_query_set(args.name)
    print(f"deleted query set {args.name}")
    return 0

"""`workbench judge` and `workbench judgments export|import|agreement`: grades with their rater, over the same
service the app, the HTTP API and the MCP server use."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbench.cli.common import print_json, settings_from, shown
from workbench.cli.plans import plan_from
from workbench.clicks.grades import import_clicks
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.judgments import (
    export_judgments,
    export_queries,
    import_judgments,
    judge,
    judgments_agreement,
)
from workbench.judgments.llm import judge_collection
from workbench.vocab import GRADE_SCALE


def cmd_judge(args: argparse.Namespace) -> int:
    rating = judge(
        Engine(settings_from(args)), args.collection, args.doc, args.grade, query=args.query,
        query_id=args.query_id, rater=args.rater,
    )  # fmt: skip
    if args.json:
        print_json(rating)
    else:
        print(
            shown(
                f"{rating.rater} graded {rating.doc_id} {rating.grade} ({GRADE_SCALE[rating.grade]}) for query "
                f'{rating.query_id} "{rating.query}"; its grade now: {rating.current_grade} '
                f"({rating.ratings_of_pair} ratings of this pair)"
            )
        )
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    text = export_judgments(settings, args.collection, args.format, args.policy)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    queries = output.with_name(output.stem + ".queries.jsonl")
    queries.write_text(export_queries(settings, args.collection), encoding="utf-8")
    print(shown(f"wrote {output} and its queries, {queries}"))
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    engine = Engine(settings_from(args))
    imported = import_judgments(engine, args.collection, args.qrels, args.queries, rater=args.rater)
    pairs = sum(len(docs) for docs in imported.qrels.values())
    print(shown(f"imported {pairs} grades of {imported.query_count} queries into '{args.collection}'"))
    return 0


def cmd_clicks(args: argparse.Namespace) -> int:
    cuts = None
    if args.cuts is not None:
        try:
            cuts = tuple(float(c) for c in args.cuts.replace(",", " ").split())
        except ValueError:
            raise InputError(f"--cuts takes three numbers ('0.5,1,2'); got {args.cuts[:40]!r}.") from None
    imported = import_clicks(
        Engine(settings_from(args)), args.collection, args.log, events=args.events, model=args.model,
        min_impressions=args.min_impressions, cuts=cuts, save=not args.dry_run,
    )  # fmt: skip
    if args.json:
        print_json(imported)
    else:
        print(shown(imported.summary()))
    return 0


def cmd_agreement(args: argparse.Namespace) -> int:
    weights = None if args.weights == "none" else args.weights
    agreement = judgments_agreement(settings_from(args), args.collection, weights)
    if args.json:
        print_json(agreement)
        return 0
    print(shown(agreement.to_markdown()))
    for d in agreement.disagreements[: args.show]:
        grades = ", ".join(f"{rater} {grade}" for rater, grade in d.grades.items())
        print(shown(f"  {d.query_id}  {d.doc_id}: {grades}"))
    return 0


def cmd_llm(args: argparse.Namespace) -> int:
    engine = Engine(settings_from(args))
    run = judge_collection(
        engine, plan_from(args, engine), max_queries=args.max_queries, limit=args.limit, check=args.check,
        token_budget=args.token_budget,
    )  # fmt: skip
    if args.json:
        print_json(run, masked=True)
        return 0
    for g in run.grades:
        said = f"{g.grade} {GRADE_SCALE[g.grade]}: {g.reason}" if g.grade is not None else f"no grade: {g.error}"
        checked = "  (people graded it too)" if g.graded_by_people else ""
        print(shown(f"  {g.query_id}  {g.doc_id}  {said}{checked}"))
    print(shown(run.summary()))
    for line in run.agreement_lines():
        print(shown(line))
    if run.stopped:
        print(shown(f"stopped: {run.stopped}"))
    if run.settle:
        print(shown(run.settle))
    return 0

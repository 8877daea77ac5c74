"""`workbench judge` and `workbench judgments export|import|agreement`: grades with their rater, over the same
service the app, the HTTP API and the MCP server use."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbench.cli.common import print_json, settings_from, shown, store_options
from workbench.engine import Engine
from workbench.judgments import (
    EXPORT_FORMATS,
    export_judgments,
    export_queries,
    import_judgments,
    judge,
    judgments_agreement,
)
from workbench.judgments.llm import judge_collection
from workbench.vocab import DEFAULT_JUDGE_CHECK, DEFAULT_JUDGE_LIMIT, DEFAULT_RATER, GRADE_SCALE, RETRIEVAL_MODES

_SCALE = ", ".join(f"{grade} {label}" for grade, label in GRADE_SCALE.items())


def _cmd_judge(args: argparse.Namespace) -> int:
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


def _cmd_export(args: argparse.Namespace) -> int:
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


def _cmd_import(args: argparse.Namespace) -> int:
    engine = Engine(settings_from(args))
    imported = import_judgments(engine, args.collection, args.qrels, args.queries, rater=args.rater)
    pairs = sum(len(docs) for docs in imported.qrels.values())
    print(shown(f"imported {pairs} grades of {imported.query_count} queries into '{args.collection}'"))
    return 0


def _cmd_agreement(args: argparse.Namespace) -> int:
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


def _cmd_llm(args: argparse.Namespace) -> int:
    run = judge_collection(
        Engine(settings_from(args)), args.collection, k=args.k, top_n=args.top_n, retrieval=args.retrieval,
        max_queries=args.max_queries, limit=args.limit, check=args.check,
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
    return 0


def add_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    judge_parser = commands.add_parser("judge", help=f"grade one document for a query ({_SCALE})")
    judge_parser.add_argument("collection", help="the collection the document is in")
    which = judge_parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--query", help="the query's text (a judged query with the same text is reused)")
    which.add_argument("--query-id", help="the id of a judged query")
    judge_parser.add_argument("--doc", required=True, metavar="ID", help="the document's id")
    judge_parser.add_argument("--grade", required=True, help=_SCALE)
    judge_parser.add_argument("--rater", default=DEFAULT_RATER, help=f"who grades (default: {DEFAULT_RATER})")
    judge_parser.add_argument("--json", action="store_true", help="print the rating as JSON")
    store_options(judge_parser)
    judge_parser.set_defaults(handler=_cmd_judge)

    judgments = commands.add_parser("judgments", help="export, import and compare raters' judgments")
    verbs = judgments.add_subparsers(dest="verb", required=True, help="export, import or agreement")
    export = verbs.add_parser("export", help="the current grades as TREC or BEIR qrels, or every grade as JSON lines")
    export.add_argument("collection", help="the collection whose judgments to export")
    export.add_argument("--format", choices=EXPORT_FORMATS, default="trec", help="trec, beir or history (default trec)")
    export.add_argument("--policy", help="latest, majority or rater:NAME (default: WORKBENCH_JUDGMENT_POLICY)")
    export.add_argument("--output", "-o", help="a file (its queries go beside it); default: standard output")
    export.set_defaults(handler=_cmd_export)
    imported = verbs.add_parser("import", help="add a qrels file's grades (BEIR TSV or TREC) and its queries")
    imported.add_argument("collection", help="the collection the grades are for")
    imported.add_argument("--qrels", required=True, help="BEIR qrels TSV or TREC qrels")
    imported.add_argument("--queries", required=True, help="BEIR queries.jsonl or id<TAB>text")
    imported.add_argument("--rater", help="the rater to record (default: 'imported <file name>')")
    store_options(imported)
    imported.set_defaults(handler=_cmd_import)
    agreement = verbs.add_parser("agreement", help="Cohen's and Fleiss' kappa where raters overlap")
    agreement.add_argument("collection", help="the collection whose raters to compare")
    agreement.add_argument(
        "--weights", choices=("quadratic", "linear", "none"), default="quadratic", help="Cohen's kappa weights"
    )
    agreement.add_argument("--show", type=int, default=20, help="disagreements to list (default 20)")
    agreement.add_argument("--json", action="store_true", help="print the agreement as JSON")
    agreement.set_defaults(handler=_cmd_agreement)
    llm = verbs.add_parser(
        "llm",
        help="grade the judging queue with the LLM judge (WORKBENCH_JUDGE_MODEL, WORKBENCH_JUDGE_URL, OPENAI_API_KEY)",
    )
    llm.add_argument("collection", help="the collection whose judged queries to evaluate and whose queue to grade")
    llm.add_argument(
        "--limit", type=int, default=DEFAULT_JUDGE_LIMIT, help="queue documents to grade (default %(default)s)"
    )
    llm.add_argument(
        "--check", type=int, default=DEFAULT_JUDGE_CHECK,
        help="pairs people graded that the judge grades too, to measure its agreement (default %(default)s)",
    )  # fmt: skip
    llm.add_argument("--k", type=int, default=50, help="first-stage candidates (default 50)")
    llm.add_argument("--top-n", type=int, default=10, help="the top n the queue is drawn from (default 10)")
    llm.add_argument("--retrieval", choices=RETRIEVAL_MODES, help="first stage (default: WORKBENCH_RETRIEVAL)")
    llm.add_argument("--max-queries", type=int, help="evaluate at most this many judged queries")
    llm.add_argument("--json", action="store_true", help="print the run as JSON")
    store_options(llm)
    llm.set_defaults(handler=_cmd_llm)

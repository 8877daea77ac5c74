"""The arguments of `workbench judgments` commands (handlers in workbench.cli.judgments, imported on use)."""

from __future__ import annotations

import argparse

from workbench.cli.parsers.common import fusion_option, store_options
from workbench.vocab import (
    CLICK_MODELS,
    DEFAULT_JUDGE_CHECK,
    DEFAULT_JUDGE_LIMIT,
    DEFAULT_MIN_IMPRESSIONS,
    DEFAULT_RATER,
    GRADE_SCALE,
    JUDGMENT_EXPORT_FORMATS,
    RETRIEVAL_MODES,
)

_SCALE = ", ".join(f"{grade} {label}" for grade, label in GRADE_SCALE.items())


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
    judge_parser.set_defaults(handler="workbench.cli.judgments:cmd_judge")

    judgments = commands.add_parser("judgments", help="export, import and compare raters' judgments")
    verbs = judgments.add_subparsers(dest="verb", required=True, help="export, import or agreement")
    export = verbs.add_parser("export", help="the current grades as TREC or BEIR qrels, or every grade as JSON lines")
    export.add_argument("collection", help="the collection whose judgments to export")
    export.add_argument(
        "--format", choices=JUDGMENT_EXPORT_FORMATS, default="trec", help="trec, beir or history (default trec)"
    )
    export.add_argument("--policy", help="latest, majority or rater:NAME (default: WORKBENCH_JUDGMENT_POLICY)")
    export.add_argument("--output", "-o", help="a file (its queries go beside it); default: standard output")
    export.set_defaults(handler="workbench.cli.judgments:cmd_export")
    imported = verbs.add_parser("import", help="add a qrels file's grades (BEIR TSV or TREC) and its queries")
    imported.add_argument("collection", help="the collection the grades are for")
    imported.add_argument("--qrels", required=True, help="BEIR qrels TSV or TREC qrels")
    imported.add_argument("--queries", required=True, help="BEIR queries.jsonl or id<TAB>text")
    imported.add_argument("--rater", help="the rater to record (default: 'imported <file name>')")
    store_options(imported)
    imported.set_defaults(handler="workbench.cli.judgments:cmd_import")
    clicks = verbs.add_parser(
        "clicks", help="grades from a click log (UBI 1.0, or CSV/JSON lines) by a click model, with their agreement"
    )
    clicks.add_argument(
        "log", help="the log: UBI queries (and events), or CSV/JSON lines of query, shown, clicked, session, time"
    )
    clicks.add_argument("--collection", required=True, help="the collection whose documents the log shows")
    clicks.add_argument("--events", help="UBI events, when they are in a file of their own")
    clicks.add_argument("--model", choices=CLICK_MODELS, default="coec", help="COEC or the position-based model (EM)")
    clicks.add_argument(
        "--min-impressions", type=int, default=DEFAULT_MIN_IMPRESSIONS,
        help="keep the grade of a pair shown at least this often (default %(default)s)",
    )  # fmt: skip
    clicks.add_argument("--cuts", help="the estimates at which grades 1, 2 and 3 begin (default: by model)")
    clicks.add_argument("--dry-run", action="store_true", help="read, fit and compare, but keep nothing")
    clicks.add_argument("--json", action="store_true", help="print the import as JSON")
    store_options(clicks)
    clicks.set_defaults(handler="workbench.cli.judgments:cmd_clicks")
    agreement = verbs.add_parser("agreement", help="Cohen's and Fleiss' kappa where raters overlap")
    agreement.add_argument("collection", help="the collection whose raters to compare")
    agreement.add_argument(
        "--weights", choices=("quadratic", "linear", "none"), default="quadratic", help="Cohen's kappa weights"
    )
    agreement.add_argument("--show", type=int, default=20, help="disagreements to list (default 20)")
    agreement.add_argument("--json", action="store_true", help="print the agreement as JSON")
    agreement.set_defaults(handler="workbench.cli.judgments:cmd_agreement")
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
    llm.add_argument("-k", "--k", type=int, help="first-stage candidates (default: RERANKER_K_RETRIEVE)")
    llm.add_argument(
        "-n", "--top-n", dest="n", type=int, help="the top n the queue is drawn from (default: RERANKER_K_RETURN)"
    )
    llm.add_argument("--retrieval", choices=RETRIEVAL_MODES, help="first stage (default: WORKBENCH_RETRIEVAL)")
    fusion_option(llm)
    llm.add_argument("--max-queries", type=int, help="evaluate at most this many judged queries")
    llm.add_argument(
        "--token-budget", type=int, metavar="TOKENS",
        help="grade to the decision: rounds of the heaviest pairs until the verdict is settled, --limit pairs are "
        "graded, or this many tokens are spent",
    )  # fmt: skip
    llm.add_argument("--json", action="store_true", help="print the run as JSON")
    store_options(llm)
    llm.set_defaults(handler="workbench.cli.judgments:cmd_llm")

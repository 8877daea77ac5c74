"""The arguments of `workbench preferences` (handlers in workbench.cli.preferences, imported on use)."""

from __future__ import annotations

import argparse

from workbench.cli.parsers.common import store_options
from workbench.vocab import DEFAULT_RATER


def add_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = commands.add_parser(
        "preferences", help="blind side-by-side preferences: which of two configurations' lists answers better"
    )
    verbs = parser.add_subparsers(dest="verb", required=True, help="start, next, choose, undo, verdict, keep or list")
    start = verbs.add_parser("start", help="a new session: two configurations over a query set, sides hidden")
    start.add_argument("--collection", help="the collection (default: WORKBENCH_COLLECTION)")
    start.add_argument("--a", default="", help="configuration A: NAME=VALUE,... (retrieval, k, n, reranker, backend)")
    start.add_argument("--b", default="", help="configuration B, e.g. reranker=none or retrieval=hybrid")
    source = start.add_mutually_exclusive_group(required=True)
    source.add_argument("--query-set", help="a kept query set's queries")
    source.add_argument("--judged", metavar="COLLECTION", help="the judged queries of a collection")
    source.add_argument("--query", action="append", help="a query typed (repeat for more)")
    start.add_argument("--name", default="", help="the session's name")
    start.add_argument("--seed", type=int, help="the seed that draws each query's sides (default: random, kept)")
    start.add_argument("--json", action="store_true", help="print the session as JSON")
    store_options(start)
    start.set_defaults(handler="workbench.cli.preferences:cmd_start")

    shown = verbs.add_parser("next", help="the next query's two lists, blind (left and right, no names or scores)")
    shown.add_argument("session", help="the session's id")
    shown.add_argument("--rater", default=DEFAULT_RATER, help=f"who chooses (default: {DEFAULT_RATER})")
    shown.add_argument("--json", action="store_true", help="print the pair as JSON")
    shown.set_defaults(handler="workbench.cli.preferences:cmd_next")

    choose = verbs.add_parser("choose", help="say which side answers the query better: left, same, right or skip")
    choose.add_argument("session", help="the session's id")
    choose.add_argument("query_id", help="the query's id, as `next` showed it")
    choose.add_argument("choice", choices=("left", "same", "right", "skip"), help="the side as it was shown")
    choose.add_argument("--rater", default=DEFAULT_RATER, help=f"who chooses (default: {DEFAULT_RATER})")
    choose.add_argument("--key", help="an idempotency key: a retry with the same key adds nothing")
    choose.set_defaults(handler="workbench.cli.preferences:cmd_choose")

    undo = verbs.add_parser("undo", help="take back the rater's last choice in the session")
    undo.add_argument("session", help="the session's id")
    undo.add_argument("--rater", default=DEFAULT_RATER, help=f"whose choice (default: {DEFAULT_RATER})")
    undo.set_defaults(handler="workbench.cli.preferences:cmd_undo")

    verdict = verbs.add_parser("verdict", help="B's share of the decisive queries, its interval and sign test")
    verdict.add_argument("session", help="the session's id")
    verdict.add_argument("--json", action="store_true", help="print the verdict as JSON")
    verdict.set_defaults(handler="workbench.cli.preferences:cmd_verdict")

    keep = verbs.add_parser("keep", help="keep the session as an experiment (listed, diffed, exported; gate reads it)")
    keep.add_argument("session", help="the session's id")
    keep.add_argument("--name", default="", help="the experiment's name (default: the session's)")
    keep.add_argument("--tag", action="append", default=[], help="a tag (repeat for more)")
    keep.set_defaults(handler="workbench.cli.preferences:cmd_keep")

    listed = verbs.add_parser("list", help="the preference sessions, newest first")
    listed.add_argument("--json", action="store_true", help="print them as JSON")
    listed.set_defaults(handler="workbench.cli.preferences:cmd_list")

"""The arguments of `workbench cache` (handlers in workbench.cli.cache, imported on use)."""

from __future__ import annotations

import argparse


def add_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cache = commands.add_parser(
        "cache", help="the pair scores kept across runs (scores.sqlite3 in the data folder): show or clear them"
    )
    verbs = cache.add_subparsers(dest="verb", required=True, help="what to do with the kept scores")
    shown = verbs.add_parser("show", help="how many scores are kept, per reranker fingerprint")
    shown.add_argument("--json", action="store_true", help="print the counts as JSON")
    shown.set_defaults(handler="workbench.cli.cache:cmd_show")
    cleared = verbs.add_parser("clear", help="remove the kept scores (every one, or one fingerprint's)")
    cleared.add_argument(
        "--reranker", metavar="FINGERPRINT", help="only this fingerprint's scores (as `show` names it)"
    )
    cleared.set_defaults(handler="workbench.cli.cache:cmd_clear")

"""The `workbench` command line: ingest, query, collections, delete, demo, eval, experiments, query-sets, gate,
explain, judge, judgments, app and postgres.

Errors print one line starting `error:` (secrets masked, no traceback) and exit with 2.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap

from workbench.cli import collections, doctor, evaluate, experiments, explain, gate, judgments, servers
from workbench.cli.collections import format_result
from workbench.errors import error_message, is_expected

__all__ = ["build_parser", "format_result", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, one sub-command per verb."""
    parser = argparse.ArgumentParser(
        prog="workbench",
        description="Rerank Workbench: vector search beside cross-encoder reranking.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=textwrap.dedent(
            """
            examples:
              workbench ingest ../shared/data/cranfield --collection cran
              workbench query "boundary layer in hypersonic flow" --collection cran -k 50 -n 10
              workbench collections
            """
        ),
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for module in (collections, doctor, evaluate, experiments, gate, explain, judgments, servers):
        module.add_commands(commands)
    collections.add_store_comparison(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `workbench` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        print("interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    except Exception as exc:  # never a traceback for users; WORKBENCH_DEBUG=1 shows it
        if os.environ.get("WORKBENCH_DEBUG") and not is_expected(exc):
            raise
        hint = "" if is_expected(exc) else " (WORKBENCH_DEBUG=1 shows where)"
        print(f"error: {error_message(exc)}{hint}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""The `workbench` argument parser: every command's arguments, and its handler as `module:function`.

Building the parser imports argparse and the vocabulary only; `workbench.cli.main` imports a command's module
when that command runs, so `workbench --help` starts without loading models, stores or the evaluation stack.
"""

from __future__ import annotations

import argparse
import textwrap
from typing import NoReturn

from workbench.cli.parsers import (
    cache,
    collections,
    doctor,
    evaluate,
    experiments,
    explain,
    gate,
    judgments,
    preferences,
    servers,
)

__all__ = ["build_parser"]


class OneLineParser(argparse.ArgumentParser):
    """argparse, saying a bad argument in one line (as every other refusal is said) instead of the usage and then
    the error; `--help` still prints the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, one sub-command per verb."""
    parser = OneLineParser(
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
    for module in (collections, doctor, evaluate, experiments, gate, explain, judgments, preferences, servers, cache):
        module.add_commands(commands)
    collections.add_store_comparison(commands)
    return parser

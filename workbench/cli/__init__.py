"""The `workbench` command line: ingest, query, collections, delete, demo, eval, experiments, query-sets, gate,
explain, judge, judgments, app and postgres.

Errors print one line starting `error:` (secrets masked, no traceback) and exit with 2. A command's module is
imported when the command runs (see `workbench.cli.parsers`).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

from workbench.cli.parsers import build_parser
from workbench.errors import error_message, is_expected

__all__ = ["build_parser", "main"]


def command_handler(reference: str) -> Callable[[Any], int | None]:
    """The function a parser names as `module:function`, its module imported now."""
    module, name = reference.split(":")
    handler: Callable[[Any], int | None] = getattr(importlib.import_module(module), name)
    return handler


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `workbench` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(command_handler(args.handler)(args) or 0)
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

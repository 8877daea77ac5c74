"""How long `workbench` commands spend importing modules before they do anything (issue: a CLI that starts fast).

Runs each command under `python -X importtime` in a fresh process, several times, and prints the median and the
smallest total of the imports the command made (Python's own start-up excluded), with the five slowest top-level
modules of the fastest run. Run it on an idle machine:

    .venv/bin/python bench/cli_imports.py [--repeat 7] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

from _output import add_json_option, keep

COMMANDS = (["--help"], ["collections"], ["eval", "--help"], ["query", "--help"])
_STARTUP = {"site", "encodings", "_frozen_importlib_external", "zipimport", "codecs", "io", "abc", "_signal"}


def import_seconds(argv: list[str], env: dict[str, str]) -> tuple[float, list[tuple[float, str]]]:
    """Seconds of imports `workbench ARGV` made, and its top-level modules by their cumulative time."""
    code = f"import sys; from workbench.cli import main; sys.argv = ['workbench', *{argv!r}]; main({argv!r})"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, env=env, check=False
    )
    modules: list[tuple[float, str]] = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2:
            continue
        _, cumulative, name = line.split("|")
        if name.startswith("  ") or not cumulative.strip().isdigit() or name.strip() in _STARTUP:
            continue  # nested (counted in its parent), the header, or the interpreter's own start-up
        modules.append((int(cumulative) / 1e6, name.strip()))
    return sum(seconds for seconds, _ in modules), sorted(modules, reverse=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--data-dir", help="the data folder `collections` lists (default: an empty one)")
    add_json_option(parser)
    args = parser.parse_args()
    env = dict(os.environ, WORKBENCH_CONFIG="", WORKBENCH_DATA_DIR=args.data_dir or tempfile.mkdtemp())
    figures = {}
    for argv in COMMANDS:
        runs = [import_seconds(argv, env) for _ in range(args.repeat)]
        totals = [total for total, _ in runs]
        fastest = min(runs)[1][:5]
        print(
            f"workbench {' '.join(argv):<14} imports: median {statistics.median(totals):.3f} s, "
            f"min {min(totals):.3f} s  (slowest: {', '.join(f'{n} {s:.3f}' for s, n in fastest)})"
        )
        figures[" ".join(argv)] = {
            "median": statistics.median(totals), "min": min(totals), "slowest": {n: s for s, n in fastest},
        }  # fmt: skip
    keep(args, {"repeat": args.repeat, "data_dir": "given" if args.data_dir else "empty", "commands": figures})


if __name__ == "__main__":
    main()

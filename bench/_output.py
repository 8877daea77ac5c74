"""What every bench shares: `--json FILE` keeps the figures it prints, for `scripts/bench_figures.py` to write into
the README and docs/performance.md (so that no figure there is copied by hand)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", type=Path, help="also write the figures to this file (JSON)")


def keep(args: argparse.Namespace, figures: dict[str, Any]) -> None:
    """Write `figures` to the `--json` file, when one was named."""
    if getattr(args, "json", None):
        args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

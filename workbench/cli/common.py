"""What every command shares: store options, settings from arguments, a progress bar, safe printing."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from workbench.config import Settings
from workbench.redact import plain_text, redact_text


def store_options(parser: argparse.ArgumentParser) -> None:
    """--store, --persist-dir and --url, on every command that opens a store."""
    group = parser.add_argument_group("store")
    group.add_argument(
        "--store", choices=["chroma", "qdrant", "pgvector"], help="vector store (default: WORKBENCH_STORE)"
    )
    group.add_argument("--persist-dir", help="folder of an embedded store (default: WORKBENCH_PERSIST_DIR)")
    group.add_argument("--url", help="a Chroma or Qdrant server URL, or a postgresql:// URL for pgvector")


def settings_from(args: argparse.Namespace) -> Settings:
    """The settings, with the command's store and reranker options over the environment and workbench.toml."""
    overrides: dict[str, Any] = {}
    if getattr(args, "store", None):
        overrides["store"] = args.store
    if getattr(args, "persist_dir", None):
        overrides["persist_dir"] = Path(args.persist_dir)
    if getattr(args, "url", None):
        store = overrides.get("store") or Settings().store
        overrides[{"chroma": "chroma_url", "qdrant": "qdrant_url", "pgvector": "pg_url"}[store]] = args.url
    if getattr(args, "reranker", None):
        overrides["reranker_model"] = args.reranker
    if getattr(args, "backend", None):
        overrides["reranker_backend"] = args.backend
    return Settings(**overrides)


def shown(text: Any) -> str:
    """Text safe for a terminal: control characters (escape sequences) removed, secrets masked."""
    return redact_text(plain_text(str(text)))


def warn(text: str) -> None:
    print(shown(text), file=sys.stderr)


class ProgressBar:
    """A tqdm bar on stderr, opened on the first update so that early errors print alone."""

    def __init__(self, description: str, unit: str = "chunk") -> None:
        self.description = description
        self.unit = unit
        self._bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        from tqdm import tqdm

        if self._bar is None:
            self._bar = tqdm(total=total, desc=self.description, unit=self.unit, file=sys.stderr, dynamic_ncols=True)
        if self._bar.total != total:
            self._bar.total = total
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

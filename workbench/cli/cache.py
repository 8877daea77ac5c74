"""`workbench cache`: the pair scores kept across runs and processes (`rerankers.scores.score_store`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from workbench.cli.common import settings_from, shown
from workbench.errors import InputError, WorkbenchError
from workbench.rerankers.scores.score_store import SCORE_STORE_FILE, open_score_store
from workbench.stores.kept import kept_location
from workbench.stores.postgres import is_postgres_url


def _store(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    settings = settings_from(args)
    store = open_score_store(settings)
    if store is None:
        raise InputError("The score store is off (WORKBENCH_SCORE_STORE=0, or CACHE_MAX_SIZE=0): nothing is kept.")
    return settings, store


def cmd_show(args: argparse.Namespace) -> int:
    settings, store = _store(args)
    counts = store.counts()
    path = Path(settings.data_dir) / SCORE_STORE_FILE
    if args.json:
        print(json.dumps({"file": str(path), "bytes": path.stat().st_size if path.exists() else 0, "scores": counts}))
        return 0
    size = path.stat().st_size / 1e6 if path.exists() else 0.0
    print(shown(f"{sum(counts.values()):,} pair scores kept in {path} ({size:.1f} MB, at most {store.max_rows:,})"))
    for fingerprint, count in counts.items():
        print(shown(f"  {count:>10,}  {fingerprint}"))
    return 0


def cmd_clear(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    try:
        _, store = _store(args)
    except WorkbenchError as exc:
        target, _ = kept_location(settings, SCORE_STORE_FILE)
        if is_postgres_url(target) or not Path(target).exists() or "locked by another process" in str(exc):
            raise  # a store in use is never removed under its user
        return _remove_damaged(Path(target), exc)
    removed = store.clear(args.reranker)
    print(shown(f"{removed:,} pair scores removed" + (f" of {args.reranker}" if args.reranker else "")))
    return 0


def _remove_damaged(path: Path, why: WorkbenchError) -> int:
    """A score store that cannot be opened (damaged, not a database, another table) is removed whole, with its
    journal files: it holds only scores, which are computed again."""
    removed = 0
    for part in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if part.is_file():
            removed += part.stat().st_size
            part.unlink()
    print(shown(f"{why} Removed it ({removed / 1e6:.1f} MB): scores are computed again and kept in a new store."))
    return 0

"""What every command shares: store options, settings from arguments, a progress bar, safe printing (`shown`)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from workbench.config import Settings
from workbench.errors import InputError
from workbench.redact import shown
from workbench.vocab import STORES

__all__ = ["ProgressBar", "settings_from", "shown", "warn", "writable_file", "writable_folder"]


def settings_from(args: argparse.Namespace, **overrides: Any) -> Settings:
    """The settings, with the command's store options over the environment and workbench.toml. A command's
    reranker and backend are its plan's (`cli.plans.plan_from`), not the settings', except where a command
    configures the process itself (`overrides`: the reranker `doctor` checks)."""
    overrides = {name: value for name, value in overrides.items() if value}
    if getattr(args, "store", None):
        overrides["store"] = args.store
    if getattr(args, "allow_partial", False):
        overrides["allow_partial"] = True
    if getattr(args, "allow_same_lineage_judge", False):
        overrides["allow_same_lineage_judge"] = True
    if getattr(args, "persist_dir", None):
        overrides["persist_dir"] = Path(args.persist_dir)
    if getattr(args, "url", None):
        store = overrides.get("store") or Settings().store
        overrides[STORES[store].url_field] = args.url
    return Settings(**overrides)


def warn(text: str) -> None:
    print(shown(text), file=sys.stderr)


class ProgressBar:
    """A tqdm bar on stderr, opened on the first update so that early errors print alone."""

    def __init__(self, description: str, unit: str = "chunk") -> None:
        self.description = description
        self.unit = unit
        self._bar: Any = None
        self._finished = False

    def __call__(self, done: int, total: int) -> None:
        from tqdm import tqdm

        if self._finished:
            return
        if self._bar is None:
            self._bar = tqdm(total=total, desc=self.description, unit=self.unit, file=sys.stderr, dynamic_ncols=True)
        if self._bar.total != total:
            self._bar.total = total
        self._bar.update(done - self._bar.n)
        if done >= total:  # closed now, so that its time and rate are the work's, not the whole command's
            self._finished = True
            self._bar.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def print_json(model: BaseModel, *, masked: bool = False) -> None:
    """A result as JSON on stdout: strict JSON (a value that is not a finite number is null, never NaN or
    Infinity, which JSON parsers refuse), text as written; `masked` also masks what looks like a secret (for
    what a remote service answered)."""
    text = model.model_dump_json(indent=2)
    print(shown(text) if masked else text)


def writable_file(path: str | None, option: str, outcome: str, what: str = "the file") -> None:
    """InputError now, before a run of minutes, when the file `option` names could not be written after it: its
    folder is missing or not writable, it is a folder, or it is a file that cannot be written. `outcome` says what
    did not happen ("the gate did not run"); `what` names what would have been written."""
    if not path:
        return
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir() or not folder.is_dir() or not os.access(folder, os.W_OK):
        raise InputError(f"{option} {shown(path)[:200]}: cannot write {what} there (no such folder, a folder of "
                         f"that name, or not writable): {outcome}.")  # fmt: skip
    if target.exists() and not os.access(target, os.W_OK):
        raise InputError(f"{option} {shown(path)[:200]}: the file is not writable: {outcome}.")


def writable_folder(path: str | None, option: str, outcome: str) -> None:
    """InputError now when the folder `option` names could not take files: a file of that name, a parent that is
    missing, or a folder that is not writable."""
    if not path:
        return
    target = Path(path).absolute()
    existing = next(p for p in (target, *target.parents) if p.exists())  # the folders below it are made
    if not existing.is_dir():
        where = "" if existing == target else f" ({shown(str(existing))[:200]} is a file)"
        raise InputError(f"{option} {shown(path)[:200]} cannot be a folder{where}: name a folder ({outcome}).")
    if not os.access(existing, os.W_OK):
        raise InputError(f"{option} {shown(path)[:200]} is not writable ({outcome}).")

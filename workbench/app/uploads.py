"""Uploaded files, kept inside a folder of their own under safe base names (a multipart file name such as
'../../x' or '/etc/cron.d/x' is reduced to 'x'), and server paths checked against the allowed roots."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from workbench.config import Settings
from workbench.inputs import check_data_path, safe_upload_name
from workbench.types import IngestProblem


def save_uploads(
    files: Iterable[Any], folder: Path, suffixes: Sequence[str] | None = None
) -> tuple[list[Path], list[IngestProblem]]:
    """Write each upload into `folder` under a safe, distinct name; files with other suffixes are refused."""
    saved: list[Path] = []
    problems: list[IngestProblem] = []
    used: set[str] = set()
    for upload in files:
        name = safe_upload_name(upload.name)
        if suffixes is not None and Path(name).suffix.lower() not in suffixes:
            problems.append(IngestProblem(name=name, reason=f"unsupported type (use {', '.join(suffixes)})"))
            continue
        stem, suffix = Path(name).stem, Path(name).suffix
        candidate, copy = name, 2
        while candidate.lower() in used:
            candidate, copy = f"{stem} ({copy}){suffix}", copy + 1
        used.add(candidate.lower())
        target = folder / candidate
        if target.resolve().parent != folder.resolve():  # never, by construction; kept as a guard
            problems.append(IngestProblem(name=name, reason="not a plain file name"))
            continue
        target.write_bytes(upload.getvalue())
        saved.append(target)
    return saved, problems


def save_upload(upload: Any, folder: Path) -> Path:
    """One upload, saved under its safe name inside `folder`."""
    target = folder / safe_upload_name(upload.name)
    target.write_bytes(upload.getvalue())
    return target


def server_path(text: str, settings: Settings, what: str = "path") -> Path:
    """A path typed in the app, refused unless it lies in WORKBENCH_DATA_ROOTS (default: the data folder
    and the demo)."""
    return check_data_path(text, settings.data_root_paths(), what)


def beir_folders(settings: Settings, depth: int = 2) -> list[Path]:
    """BEIR folders (queries.jsonl and qrels/) inside the allowed roots, for the Evaluate page's presets."""
    found: list[Path] = []
    for root in settings.data_root_paths():
        root = root.expanduser()
        if not root.is_dir():
            continue
        candidates = [root, *root.glob("*"), *(root.glob("*/*") if depth > 1 else [])]
        for folder in candidates:
            if folder.is_dir() and (folder / "queries.jsonl").is_file() and (folder / "qrels").is_dir():
                found.append(folder.resolve())
    return sorted(set(found))

"""Where the workbench finds its own files: the settings file, the user's data folder, the packaged demo.

Plain path logic with no imports from the rest of the package, so that every layer can use it.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

PACKAGE_DIR = Path(__file__).resolve().parent
APP_NAME = "rerank-workbench"
CONFIG_FILE_NAME = "workbench.toml"


def config_file() -> Path | None:
    """The settings file: the one WORKBENCH_CONFIG names (WORKBENCH_CONFIG="" turns the file off), else
    `workbench.toml` in the current folder when there is one."""
    named = os.environ.get("WORKBENCH_CONFIG")
    if named is not None:
        return Path(named).expanduser() if named else None
    default = Path(CONFIG_FILE_NAME)
    return default if default.is_file() else None


def config_stamp() -> str:
    """What changes when the settings file does (its path, size and modification time): a running app builds a new
    engine when it changes, so a collection added to `workbench.toml` is seen without a restart."""
    path = config_file()
    if path is None:
        return ""
    try:
        stat = path.stat()
    except OSError:
        return f"{path}:missing"
    return f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"


def user_data_dir() -> Path:
    """The data folder when no settings file names one: the user's data folder for this application
    (`~/.local/share/rerank-workbench` on Linux), never the current folder."""
    return platformdirs.user_data_path(APP_NAME)


def demo_dir() -> Path:
    """The demo folder: WORKBENCH_DEMO_DIR, else the copy inside the package."""
    named = os.environ.get("WORKBENCH_DEMO_DIR")
    return Path(named) if named else PACKAGE_DIR / "demo_data"


def user_cache_dir() -> Path:
    """What the workbench learns about this machine, shared by every data folder on it (ingest rates, measured
    reranker backends): WORKBENCH_CACHE_DIR, else the user's cache folder (`~/.cache/rerank-workbench`)."""
    named = os.environ.get("WORKBENCH_CACHE_DIR")
    return Path(named).expanduser() if named else platformdirs.user_cache_path(APP_NAME)

"""The Streamlit workbench, shipped inside the package: `workbench app` runs `ENTRY_SCRIPT` with the options
below (the one place they are set; there is no .streamlit folder to find). Importing this package does not
import Streamlit."""

from __future__ import annotations

from pathlib import Path

APP_DIR = Path(__file__).resolve().parent
ENTRY_SCRIPT = APP_DIR / "main.py"
VIEWS_DIR = APP_DIR / "views"  # not "pages": that name switches Streamlit to its older multipage mode
STATIC_DIR = APP_DIR / "static"

STREAMLIT_OPTIONS: dict[str, str] = {
    "theme.base": "light",
    "theme.primaryColor": "#4f46e5",
    "theme.backgroundColor": "#ffffff",
    "theme.secondaryBackgroundColor": "#f4f5fb",
    "theme.textColor": "#1f2333",
    "client.showErrorDetails": "none",
    "client.toolbarMode": "minimal",
    "server.headless": "true",
    "server.runOnSave": "false",
    # Watching files is for development; in use it floods the log ("Inotify queue overflowed").
    "server.fileWatcherType": "none",
    "server.maxUploadSize": "200",
    "browser.gatherUsageStats": "false",
}


def streamlit_flags() -> list[str]:
    """STREAMLIT_OPTIONS as `streamlit run` flags."""
    flags: list[str] = []
    for key, value in STREAMLIT_OPTIONS.items():
        flags += [f"--{key}", value]
    return flags

"""The Streamlit workbench, shipped inside the package. `main.run()` is the app; `pages/` holds its pages, each a
module with a `run()` that Streamlit runs as a page file. `ENTRY_SCRIPT` is the file `workbench app` hands to
`streamlit run`: it sits in the package's root, beside the `.streamlit/config.toml` that holds the app's options,
and away from `pages/` (a `pages/` folder beside an entry script switches Streamlit to its older multipage mode).
Importing this package does not import Streamlit."""

from __future__ import annotations

from pathlib import Path

from workbench.paths import PACKAGE_DIR

APP_DIR = Path(__file__).resolve().parent
ENTRY_SCRIPT = PACKAGE_DIR / "streamlit_app.py"
STREAMLIT_CONFIG = PACKAGE_DIR / ".streamlit" / "config.toml"
PAGES_DIR = APP_DIR / "pages"
STATIC_DIR = APP_DIR / "static"

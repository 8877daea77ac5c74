"""Rerank Workbench from a checkout: `streamlit run app.py` (the options are in .streamlit/config.toml; the data
folder and models are named in workbench.toml). The app itself is in the package, `workbench/app/`."""

from workbench.app.main import run

run()

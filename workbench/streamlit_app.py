"""The installed package's Streamlit entry script: `workbench app` runs `streamlit run` on this file, whose
folder holds the app's `.streamlit/config.toml`. In a checkout, `streamlit run app.py` does the same."""

from workbench.app.main import run

run()

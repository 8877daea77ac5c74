"""`streamlit run app.py` from the checkout, as a Streamlit user starts an app (and as hosting services do): the
checkout's workbench.toml names the models in ../shared and the data folder, .streamlit/config.toml the options.
The data folder is moved to a temp folder here, so the test leaves the checkout as it was."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.browser.conftest import chromium_page
from tests.conftest import free_port, running

pytestmark = [pytest.mark.browser, pytest.mark.live_server]
REPO = Path(__file__).resolve().parents[2]


def test_streamlit_run_app_py_serves_explore_with_the_checkouts_settings(
    tmp_path: Path, real_reranker_dir: Path
) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"WORKBENCH_CONFIG", "WORKBENCH_DATA_DIR"}}
    env.update({"WORKBENCH_DATA_DIR": str(tmp_path / "data"), "HF_HUB_OFFLINE": "1"})
    url = f"http://127.0.0.1:{port}"
    requests: list[str] = []
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)]
    with (
        running(command, f"{url}/_stcore/health", tmp_path / "streamlit.log", env=env, cwd=REPO),
        chromium_page(url, requests) as page,
    ):
        page.get_by_role("heading", name="Explore", exact=True).first.wait_for()
        page.get_by_text(real_reranker_dir.name, exact=True).first.wait_for()  # the reranker workbench.toml names
        box = page.get_by_label("Query", exact=True)
        box.fill("how many vacation days do I get per year")
        box.press("Enter")
        page.get_by_text("Reranked · top 10").first.wait_for()
        assert page.locator("[data-testid='stException']").count() == 0
    output = (tmp_path / "streamlit.log").read_text(errors="replace")
    assert "Traceback" not in output, output[-3000:]
    assert (tmp_path / "data" / "chroma").is_dir()  # the demo was built where the settings say
    assert {urlsplit(r).hostname for r in requests} == {"127.0.0.1"}

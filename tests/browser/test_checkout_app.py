"""`streamlit run app.py` from the checkout, as a Streamlit user starts an app (and as hosting services do): the
checkout's workbench.toml names the models in ../shared and the data folder, .streamlit/config.toml the options.
The data folder is moved to a temp folder here, so the test leaves the checkout as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.browser.conftest import chromium_page
from tests.conftest import free_port, wait_for_http

pytestmark = pytest.mark.browser
REPO = Path(__file__).resolve().parents[2]


def test_streamlit_run_app_py_serves_explore_with_the_checkouts_settings(
    tmp_path: Path, real_reranker_dir: Path
) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"WORKBENCH_CONFIG", "WORKBENCH_DATA_DIR"}}
    env.update({"WORKBENCH_DATA_DIR": str(tmp_path / "data"), "HF_HUB_OFFLINE": "1"})
    log = open(tmp_path / "streamlit.log", "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    requests: list[str] = []
    try:
        wait_for_http(f"{url}/_stcore/health", timeout=120, process=process)
        with chromium_page(url, requests) as page:
            page.get_by_role("heading", name="Explore", exact=True).first.wait_for()
            page.get_by_text(real_reranker_dir.name, exact=True).first.wait_for()  # the reranker workbench.toml names
            box = page.get_by_label("Query", exact=True)
            box.fill("how many vacation days do I get per year")
            box.press("Enter")
            page.get_by_text("Reranked · top 10").first.wait_for()
            assert page.locator("[data-testid='stException']").count() == 0
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
    output = (tmp_path / "streamlit.log").read_text(errors="replace")
    assert "Traceback" not in output, output[-3000:]
    assert (tmp_path / "data" / "chroma").is_dir()  # the demo was built where the settings say
    assert {urlsplit(r).hostname for r in requests} == {"127.0.0.1"}

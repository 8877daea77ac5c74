"""The Experiments page in a real browser: three runs of one configuration make a trend, two experiments are put
side by side, and a shared link (`?experiment=ID`) opened in a fresh browser context shows the same figures."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import pytest

from tests.browser.conftest import chromium_page
from tests.conftest import free_port, running
from workbench.cli import main
from workbench.config import Settings
from workbench.experiments import open_experiment_store

pytestmark = [pytest.mark.browser, pytest.mark.live_server]


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory, real_reranker_dir: Path) -> dict:
    """A data folder with four experiments the CLI kept: three runs of dense k=50 (one with notes) and BM25."""
    data = tmp_path_factory.mktemp("experiments-browser")
    env = {
        "WORKBENCH_CONFIG": "",
        "WORKBENCH_DATA_DIR": str(data),
        "WORKBENCH_MODELS_DIR": str(real_reranker_dir.parent),
        "RERANKER_MODEL": real_reranker_dir.name,
        "HF_HUB_OFFLINE": "1",
    }
    ids = []
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        for arguments in (
            ["--name", "monday"],
            ["--name", "tuesday", "--notes", "after the re-ingest"],
            ["--name", "wednesday"],
            ["--retrieval", "bm25", "--name", "bm25 candidates"],
        ):
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                assert main(["eval", "demo", "--max-queries", "5", "--json", *arguments]) == 0
            ids.append(json.loads(printed.getvalue())["experiment"])
        store = open_experiment_store(Settings())
        experiments = [store.get(i) for i in ids]
    return {"data": data, "env": env, "ids": ids, "experiments": experiments}


@pytest.fixture(scope="module")
def app_url(kept: dict):
    from workbench.cli.servers import app_command

    port = free_port()
    data = kept["data"]
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, **kept["env"]}
    with running(app_command(port, "127.0.0.1"), f"{url}/_stcore/health", data / "streamlit.log", env=env, cwd=data):
        yield url
    text = (data / "streamlit.log").read_text(errors="replace")
    assert "Traceback" not in text, text[-3000:]


def test_trend_diff_and_a_shared_link(app_url: str, kept: dict) -> None:
    requests: list[str] = []
    monday, tuesday, _, bm25 = kept["experiments"]
    with chromium_page(f"{app_url}/experiments", requests) as page:
        page.get_by_role("heading", name="Experiments", exact=True).first.wait_for()
        page.get_by_text("Kept (4 experiments)").first.wait_for()
        # the trend: the configuration with three runs is chosen first; its chart draws three reranked points
        trend = page.locator("[data-testid='stSelectbox']").filter(has_text="Trend of a configuration").first
        trend.wait_for()
        assert trend.locator("input").first.get_attribute("value") == f"{monday.configuration} (3 runs)"
        traces = page.locator("[data-testid='stPlotlyChart']").first.locator(".scatterlayer .trace")
        traces.nth(1).wait_for()
        assert traces.count() == 2  # the first stage and reranked
        assert traces.nth(1).locator("path.point").count() == 3  # one point a run
        # two side by side: the newest (B) against the one before (A)
        page.get_by_text("Where they disagree most").first.wait_for()
        page.get_by_text("top 1 changed").first.wait_for()
        assert page.locator("[data-testid='stException']").count() == 0
    # the shared link, in a browser context that has never seen the app
    link = f"{app_url}/experiments?experiment={tuesday.id}"
    with chromium_page(link, []) as fresh:
        fresh.get_by_role("heading", name=f"Experiment {tuesday.id}: tuesday").first.wait_for()
        fresh.get_by_text("after the re-ingest").first.wait_for()
        metric = fresh.locator("[data-testid='stMetric']").filter(has_text="ndcg@10 after").first
        metric.wait_for()
        assert f"{tuesday.figure():.4f}" in metric.inner_text()
        assert fresh.locator("[data-testid='stException']").count() == 0
    assert all(r.startswith(app_url) or r.startswith("data:") for r in requests), [
        r for r in requests if not r.startswith(app_url)
    ][:5]
    assert bm25.configuration != monday.configuration


def test_a_crafted_link_and_marked_up_fields_fetch_nothing(app_url: str, kept: dict, tmp_path: Path) -> None:
    """Issue 36, item 3: an id in the link and a name, tags and notes holding Markdown images render as text, so
    opening them makes the browser fetch nothing from any host but the app's."""
    from workbench.experiments import export_experiment, import_experiment

    image = "![x](http://example.com/pixel.png)"
    marked = kept["experiments"][0].model_copy(
        update={"id": "00000000beef", "name": f"n {image}", "tags": [image], "notes": f"see {image} <img src=x>"}
    )
    with pytest.MonkeyPatch.context() as patch:
        for name, value in kept["env"].items():
            patch.setenv(name, value)
        from workbench.engine import Engine

        import_experiment(Engine(Settings()), export_experiment(marked))
    for link in (f"{app_url}/experiments?experiment={image}", f"{app_url}/experiments?experiment=00000000beef"):
        requests: list[str] = []
        with chromium_page(link, requests) as page:
            page.get_by_role("heading", name="Experiments", exact=True).first.wait_for()
            if "beef" in link:
                page.get_by_text("Experiment 00000000beef").first.wait_for()
                page.get_by_text("<img src=x>").first.wait_for()  # the notes, shown as text
            else:
                page.get_by_text("12 hex digits").first.wait_for()
            page.wait_for_timeout(1_000)
            assert page.locator("[data-testid='stException']").count() == 0
            assert page.locator("img[src*='example.com']").count() == 0
        elsewhere = [r for r in requests if not (r.startswith("http://127.0.0.1") or r.startswith("data:"))]
        assert not elsewhere, elsewhere[:5]

"""The verdict report opens in Chromium from a file, draws its Plotly charts and requests nothing: every URL it
asks for is the file itself (plotly.js is inside it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.conftest import chromium_page
from workbench.config import Settings
from workbench.engine import Engine
from workbench.evaluation import evaluate_dataset
from workbench.evaluation.html_report import save_report
from workbench.services.demo import DEMO_COLLECTION, demo_dataset, ensure_demo_collection

pytestmark = pytest.mark.browser


def test_the_html_report_is_self_contained(tmp_path: Path, tiny_models: dict[str, Path]) -> None:
    engine = Engine(
        Settings(
            data_dir=tmp_path / "data",
            embedding_model=str(tiny_models["embedder"]),
            reranker_model=str(tiny_models["reranker"]),
            offline=True,
        )
    )
    ensure_demo_collection(engine)
    report = evaluate_dataset(engine, demo_dataset(), DEMO_COLLECTION, k=20, top_n=10, depth=[10, 20])
    written = save_report(report, tmp_path / "out")
    page_file = tmp_path / "out" / "demo.report.html"
    assert page_file in written and (tmp_path / "out" / "demo.report.md").exists()
    requests: list[str] = []
    with chromium_page(page_file.as_uri(), requests) as page:
        page.wait_for_selector(".js-plotly-plot")
        page.wait_for_timeout(500)
        assert page.locator(".js-plotly-plot").count() == 3  # per-query deltas, depth, stage latency
        text = page.inner_text("body")
        assert report.verdict is not None and report.verdict.words() in text
        assert "95 % CI (paired bootstrap)" in text and "judged@10" in text
        most_hurt = report.most_hurt()
        if most_hurt:
            assert most_hurt[0].query in text and "before reranking" in text
    assert requests and all(url == page_file.as_uri() for url in requests), requests

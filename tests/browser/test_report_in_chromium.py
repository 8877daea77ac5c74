"""The verdict report opens in Chromium from a file, draws its SVG charts and requests nothing: every URL it asks
for is the file itself. It is under 1 MB, its first screen holds the verdict, every axis label reads as the number
it marks and lies inside its chart (checked in the rendered SVG), and documents are listed by title and snippet."""

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
    report = evaluate_dataset(
        engine, demo_dataset(), engine.plan(collection=DEMO_COLLECTION, k=20, top_n=10), depth=[10, 20]
    )
    written = save_report(report, tmp_path / "out")
    page_file = tmp_path / "out" / "demo.report.html"
    assert page_file in written and (tmp_path / "out" / "demo.report.md").exists()
    assert page_file.stat().st_size < 1_000_000
    requests: list[str] = []
    with chromium_page(page_file.as_uri(), requests) as page:
        page.set_viewport_size({"width": 1280, "height": 800})  # a laptop
        page.wait_for_selector("figure svg")
        assert page.locator("figure svg").count() == 4  # per-query change, depth quality and time, stage latency
        verdict = page.locator(".verdict").bounding_box()
        assert verdict is not None and verdict["y"] + verdict["height"] < 800  # on the first screen
        text = page.inner_text("body")
        assert report.verdict is not None and report.verdict.words() in text
        assert "95 % CI (paired bootstrap)" in text and "judged@10" in text
        for chart in page.locator("figure svg").all():
            box = chart.bounding_box()
            labels = chart.locator("text.tick.y").all()
            assert len(labels) >= 2
            for label in labels:
                float(label.text_content().replace("−", "-").replace(",", ""))  # a number, whole
                inner = label.bounding_box()
                assert box is not None and inner is not None and inner["x"] >= box["x"] - 0.5  # not clipped
            title = chart.locator("text.axis-title").last.bounding_box()  # the y axis title, left of its ticks
            assert title is not None
            assert title["x"] + title["width"] <= min(label.bounding_box()["x"] for label in labels) + 0.5
        most_hurt = report.most_hurt()
        if most_hurt:
            assert most_hurt[0].query in text and "before reranking" in text
        titles = {label.title for label in report.documents.values() if label.title}
        assert titles and any(title in text for title in titles)  # documents by title, not only by id
    assert requests and all(url == page_file.as_uri() for url in requests), requests

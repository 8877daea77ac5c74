"""Issue 69, item 1: the first picture tells the truth. Each screenshot in the README and the docs is made by
`scripts/screenshots.sh` from the app in Chromium, and the figures the page showed are kept beside it
(docs/screenshots/figures.json); here they are recomputed from the demo as it is now, so a change of the demo's
judgments or of the default reranker that leaves a picture saying something else fails until the pictures are made
again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.engine import Engine
from workbench.evaluation.metrics import evaluate
from workbench.evaluation.runs import document_runs
from workbench.judgments.figures import query_figures
from workbench.judgments.service import load_judgments
from workbench.services.demo import demo_dataset

SHOTS = Path(__file__).resolve().parents[1] / "docs" / "screenshots"
pytestmark = pytest.mark.slow


def _shown(name: str) -> dict:
    figures = json.loads((SHOTS / "figures.json").read_text(encoding="utf-8"))
    assert (SHOTS / name).is_file() and name in figures, f"{name}: run scripts/screenshots.sh"
    return figures[name]


def test_the_explore_picture_shows_the_demo_query_as_the_app_shows_it_now(demo_engine: Engine) -> None:
    shown = _shown("explore.png")
    result = demo_engine.search(shown["query"], demo_engine.plan(collection="demo", k=shown["k"], top_n=shown["top_n"]))
    judgments = load_judgments(demo_engine.settings, "demo")
    assert judgments is not None
    match = judgments.for_query(shown["query"])
    assert match is not None
    figures = query_figures(result, *match)
    now = (round(figures.ndcg_after, 3), round(figures.ndcg_before, 3))
    assert now == (shown["ndcg@10 after"], shown["ndcg@10 before"]), (
        f"docs/screenshots/explore.png shows nDCG@10 {shown['ndcg@10 after']} (first stage "
        f"{shown['ndcg@10 before']}); the app shows {now[0]} ({now[1]}) now: run scripts/screenshots.sh"
    )


def test_the_evaluate_picture_shows_the_demo_judgments_as_they_are_now(demo_engine: Engine) -> None:
    """The first stage's nDCG@10 over the demo's 50 queries (what "after − change" is on the page) and the
    count of documents looked at, recomputed without the reranker."""
    shown = _shown("evaluate.png")
    dataset = demo_dataset("test", demo_engine.settings)
    plan = demo_engine.plan(collection="demo", k=shown["k"], top_n=shown["top_n"], reranker=None)
    items = list(dataset.queries.items())[: shown["queries"]]
    run = {qid: document_runs(demo_engine.search(text, plan).candidates)[0] for qid, text in items}
    qrels = {qid: dataset.qrels.get(qid, {}) for qid, _ in items}
    before = evaluate(qrels, run, shown["k"])[0]["ndcg@10"]
    assert round(shown["ndcg@10 after"] - shown["change"], 4) == pytest.approx(round(before, 4), abs=1.5e-4), (
        f"docs/screenshots/evaluate.png shows nDCG@10 before {shown['ndcg@10 after'] - shown['change']:.4f}; the "
        f"demo gives {before:.4f} now: run scripts/screenshots.sh"
    )
    assert shown["of"] == shown["queries"] * shown["top_n"]

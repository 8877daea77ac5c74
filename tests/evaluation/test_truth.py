"""Numbers a user reads must be right: dense retrieval with the real all-MiniLM-L6-v2 reproduces the
reference nDCG@10 on the shared collections (SciFact: 0.645, MTEB; Cranfield: 0.382, shared/models README)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.config import Settings
from workbench.engine import Engine
from workbench.evaluation import Dataset, run_evaluation

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("name", "reference"), [("cranfield", 0.382), ("scifact", 0.645)])
def test_dense_ndcg_matches_the_reference(shared_dir: Path, tmp_path: Path, name: str, reference: float) -> None:
    engine = Engine(Settings(persist_dir=tmp_path, reranker_model="none", offline=True))
    dataset = Dataset.from_beir(shared_dir / "data" / name)
    engine.ingest(dataset.corpus, name)
    report = run_evaluation(engine, dataset, name, k=100, top_n=10, reranker=None)
    assert report.queries == len(dataset.queries)
    assert report.before["ndcg@10"] == pytest.approx(reference, abs=0.005)

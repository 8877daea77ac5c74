"""Numbers a user reads must be right: on the shared collections, dense retrieval with the real
all-MiniLM-L6-v2 and BM25 reproduce their reference nDCG@10 (SciFact: dense 0.645 from MTEB, BM25 0.679 from
Anserini's flat index; Cranfield: dense 0.382 and BM25 0.352, the shared collections' local references). Cranfield
embeds on torch (the default), SciFact's 5,183 abstracts on the OpenVINO fp32 embedding backend (its vectors held to
torch's within 1e-5 by tests/test_embeddings.py), so each backend reproduces a published figure."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from workbench.config import Settings
from workbench.engine import Engine
from workbench.evaluation import Dataset, run_evaluation

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True, scope="module")
def _lowest_cpu_priority() -> None:
    """On a worker of their own (tests/scheduling.py), these tests take only the CPU the rest of the suite
    leaves idle; the references below, SciFact's ~29 TFLOP of fp32 and Cranfield's 1,400 abstracts on torch, are
    given the machine alone (`whole_machine`: the other worker pauses between its tests while they run)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.nice(19)


EMBEDDING_BACKENDS = {"cranfield": "torch", "scifact": "openvino"}
REFERENCES = {
    # name: (dense nDCG@10, tolerance), (BM25 nDCG@10, tolerance)
    "cranfield": ((0.382, 0.005), (0.352, 0.005)),
    "scifact": ((0.645, 0.005), (0.679, 0.01)),
}


@pytest.mark.timeout(2400)  # SciFact: 5,183 abstracts through the real embedder on two cores
@pytest.mark.whole_machine  # the other worker pauses: minutes of embedding that no sharing makes cheaper
@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_dense_and_bm25_match_their_references(shared_dir: Path, tmp_path: Path, name: str) -> None:
    engine = Engine(
        Settings(data_dir=tmp_path, reranker_model="none", offline=True, embedding_backend=EMBEDDING_BACKENDS[name])
    )
    dataset = Dataset.from_beir(shared_dir / "data" / name)
    started = time.perf_counter()
    engine.ingest(dataset.corpus, name)
    print(f"{name}: ingested in {time.perf_counter() - started:.0f} s on {EMBEDDING_BACKENDS[name]}")
    (dense_ref, dense_tol), (bm25_ref, bm25_tol) = REFERENCES[name]
    dense = run_evaluation(engine, dataset, engine.plan(collection=name, k=100, top_n=10, reranker=None))
    assert dense.queries == len(dataset.queries)
    assert dense.before["ndcg@10"] == pytest.approx(dense_ref, abs=dense_tol)
    bm25 = run_evaluation(
        engine, dataset, engine.plan(collection=name, k=100, top_n=10, reranker=None, retrieval="bm25")
    )
    assert bm25.retrieval == "bm25" and bm25.before["ndcg@10"] == pytest.approx(bm25_ref, abs=bm25_tol)

"""One contract, every store: Chroma embedded, a real Chroma server, Qdrant local and in memory."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from workbench.errors import CollectionNotFoundError, InputError, StoreConnectionError
from workbench.stores import ChromaBackend, QdrantBackend, StoreBackend
from workbench.types import Chunk

DIM = 8


def _unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return vector / np.linalg.norm(vector)


CHUNKS = [
    Chunk(
        id=f"doc{i}::0",
        text=f"text number {i}",
        metadata={"topic": "even" if i % 2 == 0 else "odd", "page": i, "content_hash": f"h{i}"},
    )
    for i in range(12)
]
VECTORS = np.stack([_unit(i) for i in range(12)])


@pytest.fixture(params=["chroma", "chroma-server", "qdrant", "qdrant-memory"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> StoreBackend:
    if request.param == "chroma":
        return ChromaBackend(path=tmp_path / "chroma")
    if request.param == "chroma-server":
        return ChromaBackend(url=request.getfixturevalue("chroma_server"))
    if request.param == "qdrant":
        backend = QdrantBackend(path=tmp_path / "qdrant")
        request.addfinalizer(backend.close)
        return backend
    return QdrantBackend(path=":memory:")


@pytest.fixture
def filled(backend: StoreBackend, request: pytest.FixtureRequest):
    name = f"contract-{request.node.callspec.id}-{threading.get_ident() % 1000}"
    if backend.exists(name):
        backend.delete(name)
    collection = backend.create(name, embedding_model="test-model", dimension=DIM)
    collection.upsert(CHUNKS, VECTORS)
    yield collection
    if backend.exists(name):
        backend.delete(name)


def test_scores_are_cosine_similarity_best_first(filled) -> None:
    query = _unit(3) * 0.7 + _unit(5) * 0.3
    query /= np.linalg.norm(query)
    hits = filled.search(query, 5)
    expected = sorted(((float(VECTORS[i] @ query), i) for i in range(12)), reverse=True)[:5]
    assert [h.id for h in hits] == [f"doc{i}::0" for _, i in expected]
    assert [h.score for h in hits] == pytest.approx([s for s, _ in expected], abs=1e-4)
    assert hits[0].text == "text number 3" and hits[0].metadata["page"] == 3


def test_equality_filters_on_one_and_several_keys(filled) -> None:
    hits = filled.search(_unit(0), 12, {"topic": "odd"})
    assert hits and all(h.metadata["topic"] == "odd" for h in hits) and len(hits) == 6
    hits = filled.search(_unit(0), 12, {"topic": "even", "page": 4})
    assert [h.id for h in hits] == ["doc4::0"]
    assert filled.search(_unit(0), 5, {"topic": "none"}) == []


def test_info_count_browse_and_hashes(filled) -> None:
    info = filled.info()
    assert (info.count, info.embedding_model, info.dimension) == (12, "test-model", DIM)
    page = filled.browse(offset=0, limit=5)
    assert len(page) == 5 and len({c.id for c in filled.browse(0, 12)}) == 12
    assert filled.content_hashes(["doc1::0", "absent::0"]) == {"doc1::0": "h1"}


def test_upsert_replaces_by_id(filled) -> None:
    filled.upsert(
        [Chunk(id="doc1::0", text="replaced", metadata={"topic": "odd", "content_hash": "new"})], VECTORS[1:2]
    )
    assert filled.count() == 12
    assert filled.content_hashes(["doc1::0"]) == {"doc1::0": "new"}
    assert filled.search(VECTORS[1], 1)[0].text == "replaced"


def test_unknown_collection_is_a_clear_error(backend: StoreBackend) -> None:
    with pytest.raises(CollectionNotFoundError, match="'missing-one' not found"):
        backend.get("missing-one")
    with pytest.raises(CollectionNotFoundError):
        backend.delete("missing-one")


def test_invalid_collection_names_are_refused(backend: StoreBackend) -> None:
    with pytest.raises(InputError, match="not allowed"):
        backend.create("a", embedding_model="m", dimension=DIM)


def test_unreachable_servers_raise_connection_errors() -> None:
    from tests.conftest import free_port

    port = free_port()
    with pytest.raises(StoreConnectionError):
        ChromaBackend(url=f"http://127.0.0.1:{port}")
    with pytest.raises(ConnectionError):
        QdrantBackend(url=f"http://127.0.0.1:{port}").list_collections()

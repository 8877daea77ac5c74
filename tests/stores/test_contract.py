"""One contract, every store: the same chunks and vectors in Chroma (embedded and a real server), Qdrant
(local and in memory), pgvector on a real PostgreSQL, and a LangChain in-memory store must give the same
ids, the same cosine scores (within 1e-4), the same filter semantics and the same bookkeeping."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from workbench.errors import CollectionNotFoundError, InputError
from workbench.stores import ChromaBackend, QdrantBackend, StoreBackend
from workbench.stores.base import ORIGIN_KEY, Collection
from workbench.stores.langchain import LangChainCollection
from workbench.types import Chunk

pytestmark = pytest.mark.live_server

DIM = 8
_names = itertools.count()


def _unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return vector / np.linalg.norm(vector)


CHUNKS = [
    Chunk(
        id=f"doc{i}::0",
        text=f"text number {i}",
        metadata={
            "topic": "even" if i % 2 == 0 else "odd",
            "page": i,
            "content_hash": f"h{i}",
            ORIGIN_KEY: f"file{i % 3}",
        },
    )
    for i in range(12)
]
VECTORS = np.stack([_unit(i) for i in range(12)])


class LookupEmbeddings(Embeddings):
    """Texts to fixed vectors: the chunk texts map to VECTORS, queries to whatever the test registered."""

    def __init__(self) -> None:
        self.table = {c.text: v for c, v in zip(CHUNKS, VECTORS, strict=True)}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.table[text].tolist()


class LangChainBackend(StoreBackend):
    """In-memory LangChain stores as a backend, so the contract suite can create and delete them."""

    kind = "langchain"

    def __init__(self) -> None:
        self.location = "InMemoryVectorStore"
        self.embeddings = LookupEmbeddings()
        self._stores: dict[str, LangChainCollection] = {}

    def list_collections(self):  # type: ignore[no-untyped-def]
        return [c.info() for c in self._stores.values()]

    def get(self, name: str) -> Collection:
        if name not in self._stores:
            raise CollectionNotFoundError(name, "langchain", list(self._stores))
        return self._stores[name]

    def create(self, name: str, *, embedding_model: str, dimension: int) -> Collection:
        from langchain_core.vectorstores import InMemoryVectorStore

        from workbench.stores.base import check_collection_name

        check_collection_name(name)
        return self._stores.setdefault(
            name, LangChainCollection(InMemoryVectorStore(self.embeddings), name, embedding_model)
        )

    def delete(self, name: str) -> None:
        self.get(name)
        del self._stores[name]


STORES = ["chroma", "chroma-server", "qdrant", "qdrant-memory", "pgvector", "langchain"]


@pytest.fixture(params=STORES)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> StoreBackend:
    kind = request.param
    if kind == "chroma":
        return ChromaBackend(path=tmp_path / "chroma")
    if kind == "chroma-server":
        return ChromaBackend(url=request.getfixturevalue("chroma_server"))
    if kind == "qdrant":
        backend = QdrantBackend(path=tmp_path / "qdrant")
        request.addfinalizer(backend.close)
        return backend
    if kind == "qdrant-memory":
        return QdrantBackend(path=":memory:")
    if kind == "pgvector":
        from workbench.stores.pgvector import PgVectorBackend

        return PgVectorBackend(request.getfixturevalue("postgres_url"), schema=f"contract_{next(_names)}")
    backend = LangChainBackend()
    backend.embeddings.table.update({f"query-{i}": _unit(i) for i in range(40)})
    return backend


@pytest.fixture
def filled(backend: StoreBackend):
    name = f"contract-{next(_names)}"
    collection = backend.create(name, embedding_model="test-model", dimension=DIM)
    collection.upsert(CHUNKS, None if collection.embeds_documents else VECTORS)
    yield collection
    if backend.exists(name):
        backend.delete(name)


QUERIES: dict[str, np.ndarray] = {}


def search(collection: Collection, vector: np.ndarray, k: int, filters: dict | None = None):  # type: ignore[no-untyped-def]
    """Search by vector on every store: LangChain stores get the vector's registered query text."""
    key = f"query-adhoc-{len(QUERIES)}"
    QUERIES[key] = vector
    embeddings = getattr(getattr(collection, "vector_store", None), "embedding", None)
    if embeddings is not None:
        embeddings.table[key] = vector
    return collection.search(k, filters, vector=vector, text=key)


def test_scores_are_cosine_similarity_best_first(filled: Collection) -> None:
    query = _unit(3) * 0.7 + _unit(5) * 0.3
    query /= np.linalg.norm(query)
    hits = search(filled, query, 5)
    expected = sorted(((float(VECTORS[i] @ query), i) for i in range(12)), reverse=True)[:5]
    assert [h.id for h in hits] == [f"doc{i}::0" for _, i in expected]
    assert [h.score for h in hits] == pytest.approx([s for s, _ in expected], abs=1e-4)
    assert hits[0].text == "text number 3" and hits[0].metadata["page"] == 3


def test_equality_filters_on_one_and_several_keys(filled: Collection) -> None:
    hits = search(filled, _unit(0), 12, {"topic": "odd"})
    assert len(hits) == 6 and all(h.metadata["topic"] == "odd" for h in hits)
    assert [h.id for h in search(filled, _unit(0), 12, {"topic": "even", "page": 4})] == ["doc4::0"]
    assert search(filled, _unit(0), 5, {"topic": "none"}) == []
    assert search(filled, _unit(0), 5, {"page": 99}) == []
    # a number is not its text: the typing rule makes filters numbers before they reach a store
    assert search(filled, _unit(0), 5, {"page": "4"}) == []


def test_info_count_browse_and_hashes(filled: Collection) -> None:
    info = filled.info()
    assert (info.count, info.embedding_model) == (12, "test-model")
    assert info.store == filled.store
    page = filled.browse(offset=0, limit=5)
    assert len(page) == 5 and len({c.id for c in filled.browse(0, 12)}) == 12
    assert {c.id for c in filled.browse(10, 5)} <= {c.id for c in CHUNKS} and len(filled.browse(10, 5)) == 2
    assert filled.content_hashes(["doc1::0", "absent::0"]) == {"doc1::0": "h1"}


def test_stored_chunks_by_origin_and_delete(filled: Collection) -> None:
    by_origin = filled.stored_chunks(["file1"])
    assert by_origin == {f"doc{i}::0": f"h{i}" for i in range(12) if i % 3 == 1}
    assert set(filled.stored_chunks(["file2"], ["doc0::0"])) == {"doc0::0", "doc2::0", "doc5::0", "doc8::0", "doc11::0"}
    filled.delete_chunks(["doc1::0", "doc4::0", "never-stored"])
    assert filled.count() == 10
    assert filled.stored_chunks(["file1"]) == {"doc7::0": "h7", "doc10::0": "h10"}
    assert "doc1::0" not in {h.id for h in search(filled, VECTORS[1], 12)}


def test_upsert_replaces_by_id(filled: Collection) -> None:
    replaced = Chunk(id="doc1::0", text="text number 1", metadata={"topic": "odd", "content_hash": "new"})
    filled.upsert([replaced], None if filled.embeds_documents else VECTORS[1:2])
    assert filled.count() == 12
    assert filled.content_hashes(["doc1::0"]) == {"doc1::0": "new"}


def test_vectors_read_back_what_was_stored(filled: Collection) -> None:
    ids, matrix = filled.vectors()
    stored = dict(zip(ids, matrix, strict=True))
    assert set(stored) == {c.id for c in CHUNKS}
    for i, chunk in enumerate(CHUNKS):
        assert float(stored[chunk.id] @ VECTORS[i]) == pytest.approx(1.0, abs=1e-4)


def test_unknown_collection_is_a_clear_error(backend: StoreBackend) -> None:
    with pytest.raises(CollectionNotFoundError, match="'missing-one' not found"):
        backend.get("missing-one")
    with pytest.raises(CollectionNotFoundError):
        backend.delete("missing-one")


def test_invalid_collection_names_are_refused(backend: StoreBackend) -> None:
    with pytest.raises(InputError, match="not allowed"):
        backend.create("a", embedding_model="m", dimension=DIM)


def test_a_store_that_needs_a_vector_says_so(filled: Collection) -> None:
    if filled.embeds_queries:
        with pytest.raises(InputError, match="pass text="):
            filled.search(3, vector=_unit(1))
    else:
        with pytest.raises(InputError, match="pass vector="):
            filled.search(3, text="a query")

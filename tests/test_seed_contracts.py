"""The design documents' contracts, each on what it must return and how it fails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.vectorstores import InMemoryVectorStore

from workbench import RetrievalService, RetrievedChunk, retrieve_chunks, retrieve_top_docs
from workbench.config import Settings
from workbench.embeddings import EmbedderAsLangChain, SentenceTransformerEmbedder
from workbench.engine import Engine
from workbench.errors import InputError, StoreConnectionError
from workbench.stores import StoreConfig, StoreRegistry

LONG_TEXT = "Heat shields protect capsules during re-entry. " * 30


@pytest.fixture(scope="module")
def minilm_langchain() -> EmbedderAsLangChain:
    """A real sentence-transformers model seen as LangChain embeddings (stands in for OpenAIEmbeddings)."""
    return EmbedderAsLangChain(
        SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2", Settings(offline=True))
    )


@pytest.fixture
def chroma_folder(tmp_path: Path, corpus_dir: Path, tiny_models: dict[str, Path]) -> Path:
    folder = tmp_path / "chroma_store"
    Engine(Settings(persist_dir=folder, offline=True)).ingest(corpus_dir, "nature_docs")
    return folder


@pytest.fixture
def contract_settings(monkeypatch: pytest.MonkeyPatch, tiny_models: dict[str, Path]) -> None:
    """retrieve_top_docs reads the reranker from the process settings; point them at the tiny model."""
    from workbench import config

    monkeypatch.setenv("RERANKER_MODEL", str(tiny_models["reranker"]))
    config.get_settings.cache_clear()
    yield
    config.get_settings.cache_clear()


# retrieve_top_docs ---------------------------------------------------------------------------------------------
def test_retrieve_top_docs_returns_top_n_texts_joined_by_newlines(
    chroma_folder: Path, minilm_langchain: EmbedderAsLangChain, contract_settings: None
) -> None:
    text = retrieve_top_docs("nature_docs", minilm_langchain, str(chroma_folder), "volcano eruptions", k=6, top_n=3)
    lines = text.split("\n")
    assert len(lines) == 3
    corpus = "\n".join(p.read_text() for p in (chroma_folder.parent / "corpus").iterdir())
    assert all(line in " ".join(corpus.split()) for line in lines)


def test_retrieve_top_docs_reports_nothing_found(
    tmp_path: Path, minilm_langchain: EmbedderAsLangChain, contract_settings: None
) -> None:
    folder = tmp_path / "empty_store"
    Engine(Settings(persist_dir=folder, offline=True)).registry.create(
        "empty_docs", embedding_model="sentence-transformers/all-MiniLM-L6-v2", dimension=384
    )
    assert retrieve_top_docs("empty_docs", minilm_langchain, str(folder), "anything") == "No relevant documents found."


@pytest.mark.parametrize(
    ("collection", "query", "k", "top_n"),
    [("no_such_docs", "q", 10, 3), ("nature_docs", "", 10, 3), ("nature_docs", "q", 10, 11)],
)
def test_retrieve_top_docs_never_raises(
    chroma_folder: Path,
    minilm_langchain: EmbedderAsLangChain,
    contract_settings: None,
    collection: str,
    query: str,
    k: int,
    top_n: int,
) -> None:
    text = retrieve_top_docs(collection, minilm_langchain, str(chroma_folder), query, k=k, top_n=top_n)
    assert text.startswith("Error retrieving from collection:")


def test_retrieve_top_docs_missing_folder(minilm_langchain: EmbedderAsLangChain, tmp_path: Path) -> None:
    text = retrieve_top_docs("x_docs", minilm_langchain, str(tmp_path / "absent"), "q")
    assert text.startswith("Error retrieving from collection:") and "absent" in text


# retrieve_chunks on Qdrant ---------------------------------------------------------------------------------------
@pytest.fixture
def qdrant_engine(tmp_path: Path, tiny_settings: Settings, corpus_dir: Path) -> Engine:
    settings = tiny_settings.model_copy(update={"store": "qdrant", "persist_dir": tmp_path / "qdrant"})
    engine = Engine(settings)
    (corpus_dir / "long.txt").write_text(LONG_TEXT)
    engine.ingest(corpus_dir, "marp-documents", chunk_size=2000, chunk_overlap=0)
    yield engine
    engine.registry.backend().close()


def test_retrieve_chunks_fields_trim_and_dedupe(qdrant_engine: Engine) -> None:
    chunks = retrieve_chunks("herons", top_k=20, collection="marp-documents", engine=qdrant_engine)
    assert chunks and all(isinstance(c, RetrievedChunk) for c in chunks)
    texts = [c.text for c in chunks]
    assert len(texts) == len(set(texts))
    assert max(len(t) for t in texts) == 800
    guide = next(c for c in chunks if c.document_id == "guide.md#2")
    assert (guide.title, guide.page, guide.chunk_index) == ("Field Guide", 2, 0)
    assert guide.source_url == guide.url == "https://example.test/guide#rivers"
    assert [c.score for c in chunks] == sorted((c.score for c in chunks), reverse=True)


def test_retrieve_chunks_filters_and_empty_result(qdrant_engine: Engine) -> None:
    only = retrieve_chunks("anything", {"source": "facts.csv"}, 5, collection="marp-documents", engine=qdrant_engine)
    assert {c.document_id for c in only} == {"facts.csv#1", "facts.csv#2"}
    assert retrieve_chunks("anything", {"section": "Nowhere"}, collection="marp-documents", engine=qdrant_engine) == []


@pytest.mark.parametrize("top_k", [0, 21, -1])
def test_retrieve_chunks_top_k_range(qdrant_engine: Engine, top_k: int) -> None:
    with pytest.raises(InputError, match="top_k"):
        retrieve_chunks("q", top_k=top_k, collection="marp-documents", engine=qdrant_engine)


def test_retrieve_chunks_raises_when_qdrant_is_unreachable(tiny_settings: Settings) -> None:
    from tests.conftest import free_port

    settings = tiny_settings.model_copy(update={"store": "qdrant", "qdrant_url": f"http://127.0.0.1:{free_port()}"})
    with pytest.raises(StoreConnectionError) as caught:
        retrieve_chunks("q", collection="docs", engine=Engine(settings))
    assert isinstance(caught.value, ConnectionError)


# RetrievalService ------------------------------------------------------------------------------------------------
@pytest.fixture
def lc_store(minilm_langchain: EmbedderAsLangChain) -> InMemoryVectorStore:
    store = InMemoryVectorStore(minilm_langchain)
    store.add_texts(
        ["The notice period is one month.", "Holiday is 27 days a year.", "Laptops are replaced every four years."],
        metadatas=[{"section": "notice"}, {"section": "holiday"}, {"section": "it"}],
        ids=["n", "h", "l"],
    )
    return store


def test_service_methods_over_a_langchain_store(lc_store: InMemoryVectorStore) -> None:
    service = RetrievalService(lc_store)
    content, artifact = service.retrieve("how long is the notice period?", k=2)
    assert [a["rank"] for a in artifact] == [1, 2]
    assert artifact[0] == {"rank": 1, "content": "The notice period is one month.", "metadata": {"section": "notice"}}
    assert content.startswith("The notice period is one month.")
    scored = service.retrieve_with_scores("how many holiday days?", k=3)
    assert scored[0]["content"] == "Holiday is 27 days a year."
    assert [s["score"] for s in scored] == sorted((s["score"] for s in scored), reverse=True)
    assert set(scored[0]) == {"rank", "content", "metadata", "score"}
    text = service.retrieve_as_string("laptop replacement", k=2, separator=" | ")
    assert text.split(" | ")[0] == "Laptops are replaced every four years." and text.count(" | ") == 1


def test_service_tool_returns_content_and_artifact(lc_store: InMemoryVectorStore) -> None:
    tool = RetrievalService(lc_store).create_tool("search_policies", "Search the policies.")
    assert tool.name == "search_policies" and tool.response_format == "content_and_artifact"
    message = tool.invoke(
        {"type": "tool_call", "id": "call-1", "name": "search_policies", "args": {"query": "holiday allowance", "k": 1}}
    )
    assert isinstance(message, ToolMessage)
    assert message.content == "Holiday is 27 days a year."
    assert message.artifact[0]["metadata"] == {"section": "holiday"}


def test_service_over_a_workbench_collection_with_reranking(
    tiny_engine: Engine, corpus_dir: Path, tiny_models: dict[str, Path]
) -> None:
    tiny_engine.ingest(corpus_dir, "nature")
    collection = tiny_engine.registry.get("nature")
    service = RetrievalService(collection, reranker=str(tiny_models["reranker"]), candidates=6)
    rows = service.retrieve_with_scores("rivers", k=3)
    assert len(rows) == 3 and [r["rank"] for r in rows] == [1, 2, 3]


def test_service_rejects_bad_input(lc_store: InMemoryVectorStore) -> None:
    with pytest.raises(InputError):
        RetrievalService(lc_store).retrieve("   ")
    with pytest.raises(InputError):
        RetrievalService(lc_store).retrieve("q", k=0)


def test_registry_gives_the_service_its_store(tmp_path: Path, tiny_models: dict[str, Path], corpus_dir: Path) -> None:
    settings = Settings(persist_dir=tmp_path / "s", embedding_model=str(tiny_models["embedder"]), offline=True)
    Engine(settings).ingest(corpus_dir, "hr-docs")
    registry = StoreRegistry(settings)
    registry.register("hr", StoreConfig(kind="chroma", collection="hr-docs", persist_dir=str(tmp_path / "s")))
    rows = RetrievalService(registry.get("hr")).retrieve_with_scores("bees", k=2)
    assert len(rows) == 2


class _ScriptedChatModel(GenericFakeChatModel):
    """A chat model that says what it is told, in order, and takes tools (so a ReAct agent can be built on it)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> _ScriptedChatModel:
        return self


def _tool_call(args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "search_policies", "args": args, "id": call_id}])


def test_a_langgraph_agent_hears_bad_tool_values_as_messages(lc_store: InMemoryVectorStore) -> None:
    """Inside langgraph's ReAct agent, k out of range, an empty query and an unknown argument come back to the
    model as error messages naming the problem; the agent goes on, and a good call after them works."""
    from langgraph.prebuilt import create_react_agent

    tool = RetrievalService(lc_store).create_tool("search_policies", "Search the policies.")
    schema = tool.tool_call_schema.model_json_schema()
    assert schema["properties"]["k"]["maximum"] == 20 and schema["properties"]["k"]["minimum"] == 1
    assert "1-512 characters" in schema["properties"]["query"]["description"]
    script = iter(
        [
            _tool_call({"query": "holiday", "k": 300}, "c1"),
            _tool_call({"query": "   ", "k": 2}, "c2"),
            _tool_call({"query": "holiday", "depth": 2}, "c3"),
            _tool_call({"query": "holiday allowance", "k": 1}, "c4"),
            AIMessage(content="Holiday is 27 days a year."),
        ]
    )
    agent = create_react_agent(_ScriptedChatModel(messages=script), [tool])
    messages = agent.invoke({"messages": [("user", "how much holiday do I get?")]})["messages"]
    answers = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    assert "k" in answers["c1"].content and "less than or equal to 20" in answers["c1"].content
    assert "empty" in answers["c2"].content and answers["c2"].status == "error"
    assert "depth" in answers["c3"].content
    assert answers["c4"].content == "Holiday is 27 days a year." and answers["c4"].status == "success"
    assert messages[-1].content == "Holiday is 27 days a year."

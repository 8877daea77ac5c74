from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from workbench.config import Settings
from workbench.embeddings import EmbedderAsLangChain, LangChainEmbedder, SentenceTransformerEmbedder, create_embedder
from workbench.errors import ConfigError


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2", Settings(offline=True))


def test_real_minilm_makes_unit_vectors_of_384(minilm: SentenceTransformerEmbedder) -> None:
    vectors = minilm.embed_documents(["a cat sat on the mat", "stock markets fell sharply"])
    assert vectors.shape == (2, 384) and minilm.dimension == 384
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    query = minilm.embed_query("a kitten resting on a rug")
    assert float(vectors[0] @ query) > float(vectors[1] @ query)


def test_langchain_adapter_round_trips_a_real_model(minilm: SentenceTransformerEmbedder) -> None:
    wrapped = LangChainEmbedder(EmbedderAsLangChain(minilm), model_id="wrapped-minilm")
    texts = ["herons wade in shallow water", "glaciers carve valleys"]
    assert np.allclose(wrapped.embed_documents(texts), minilm.embed_documents(texts), atol=1e-5)
    assert np.allclose(wrapped.embed_query("rivers"), minilm.embed_query("rivers"), atol=1e-5)
    assert wrapped.dimension == 384 and wrapped.model_id == "wrapped-minilm"


def test_langchain_adapter_rejects_objects_that_are_not_embeddings() -> None:
    with pytest.raises(ConfigError, match="not a LangChain Embeddings"):
        LangChainEmbedder(object())


def test_openai_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        create_embedder("openai:text-embedding-3-small", Settings())


def test_openai_model_ids_build_langchain_openai_embeddings(monkeypatch: pytest.MonkeyPatch) -> None:
    # No network here: this checks the wiring (which class, which model), not a call to OpenAI.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    embedder = create_embedder("openai:text-embedding-3-small", Settings())
    assert isinstance(embedder, LangChainEmbedder)
    assert type(embedder.embeddings).__name__ == "OpenAIEmbeddings"
    assert embedder.embeddings.model == "text-embedding-3-small"
    assert embedder.model_id == "openai:text-embedding-3-small"


def test_tiny_embedder_from_a_folder(tiny_models: dict[str, Path]) -> None:
    embedder = create_embedder(str(tiny_models["embedder"]), Settings(offline=True))
    assert embedder.embed_documents(["x", "y"]).shape == (2, 32)

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from workbench.config import Settings
from workbench.embeddings import (
    EmbedderAsLangChain,
    LangChainEmbedder,
    SentenceTransformerEmbedder,
    create_embedder,
    openvino_export,
)
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


def test_the_openvino_backend_gives_torchs_vectors_and_exports_once(
    minilm: SentenceTransformerEmbedder, tiny_models: dict[str, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """WORKBENCH_EMBEDDING_BACKEND=openvino: sentence-transformers' own OpenVINO backend in fp32, held to the same
    library's torch model (the reference) on the real all-MiniLM-L6-v2 and a tiny one; the export is made once and
    made again when the model's files change."""
    texts = ["a cat sat on the mat", "stock markets fell sharply " * 40, "herons wade in shallow water"]
    real = SentenceTransformerEmbedder(
        "sentence-transformers/all-MiniLM-L6-v2",
        Settings(offline=True, embedding_backend="openvino", exports_dir=tmp_path / "exports"),
    )
    assert real.backend == "openvino" and real.dimension == 384 and real.max_seq_length == minilm.max_seq_length
    assert np.abs(real.embed_documents(texts) - minilm.embed_documents(texts)).max() < 1e-5
    assert np.abs(real.embed_query("kittens") - minilm.embed_query("kittens")).max() < 1e-5

    model = tmp_path / "tiny-embedder"
    shutil.copytree(tiny_models["embedder"], model)
    settings = Settings(offline=True, exports_dir=tmp_path / "exports")
    on = settings.model_copy(update={"embedding_backend": "openvino"})
    reference = create_embedder(str(model), settings).embed_documents(texts)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="workbench.embeddings"):
        assert np.abs(create_embedder(str(model), on).embed_documents(texts) - reference).max() < 1e-5
        folder = openvino_export(str(model), tmp_path / "exports")  # as a new process asks: the one on disk
    exported = [r.getMessage() for r in caplog.records if "Exporting" in r.getMessage()]
    assert len(exported) == 1 and "tiny-embedder" in exported[0], exported
    assert folder.parent == tmp_path / "exports" and (folder / "openvino" / "openvino_model.xml").is_file()

    config = model / "config_sentence_transformers.json"  # a changed model: its export is made again
    config.write_text(config.read_text() + " ", encoding="utf-8")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="workbench.embeddings"):
        again = openvino_export(str(model), tmp_path / "exports")
    assert again != folder and any("Exporting" in r.getMessage() for r in caplog.records)


def test_a_wrong_embedding_backend_is_one_line(tiny_models: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_EMBEDDING_BACKEND", "onnx")
    with pytest.raises(ValidationError) as caught:
        Settings()
    assert "embedding_backend" in str(caught.value) and "'torch' or 'openvino'" in str(caught.value)
    monkeypatch.delenv("WORKBENCH_EMBEDDING_BACKEND")
    on_gpu = Settings(offline=True, embedding_backend="openvino", embedding_device="cuda")
    with pytest.raises(ConfigError, match="openvino runs on the CPU, not WORKBENCH_EMBEDDING_DEVICE=cuda"):
        create_embedder(str(tiny_models["embedder"]), on_gpu)

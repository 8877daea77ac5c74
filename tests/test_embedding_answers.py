"""Issue 36, item 7: a remote embedder's answers are checked like a remote reranker's. A local server speaks
OpenAI's `/embeddings` well and in each bad way; every vector kept is the one its own `index` names, and every
bad answer is one line naming the service (no numpy, Chroma or client words, no traceback), within the deadline."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from tests.rerank_apis import EMBEDDING_CASES, Behaviour, RerankApis, text_vector
from workbench.config import Settings
from workbench.embeddings import EmbeddingService
from workbench.errors import ModelError

pytestmark = pytest.mark.live_server

TEXTS = ["parental leave", "how do I claim mileage", "bike to work", "a fourth, longer passage of text"]


@pytest.fixture(scope="module")
def server():  # type: ignore[no-untyped-def]
    with RerankApis(Behaviour(key="")) as apis:
        yield apis


def _service(server: RerankApis, case: str, tmp_path: Path, **settings: object) -> EmbeddingService:
    given = Settings(data_dir=tmp_path, rerank_retries=0, **settings)  # type: ignore[arg-type]
    return EmbeddingService(f"{server.base}/embed/{case}", given)


def _expected(texts: list[str]) -> np.ndarray:
    vectors = np.asarray([text_vector(t) for t in texts], dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_vectors_are_placed_by_their_index_not_by_their_position(server: RerankApis, tmp_path: Path) -> None:
    good = _service(server, "good", tmp_path)
    assert good.model_id == f"{server.base}/embed/good#fake-embedder"  # the model the server lists
    reverse = _service(server, "reverse", tmp_path)
    expected = _expected(TEXTS)
    assert np.allclose(good.embed_documents(TEXTS), expected)
    assert np.allclose(reverse.embed_documents(TEXTS), expected)  # answered last first: each still its own
    assert good.dimension == 4


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("zero", "a vector of zero length for text 0"),
        ("ragged", "vectors of [2, 4] numbers"),
        ("too-many", "5 vectors for 4 texts sent"),
        ("too-few", "3 vectors for 4 texts sent"),
        ("base64", "text (base64?) as the vector of text 0"),
        ("null", "null as the vector of text 0"),
        ("index-repeated", "text 0 twice"),
        ("no-index", "index null for 4 texts sent"),
        ("string-number", "not a number"),
        ("nan", "'NaN' where a number belongs"),
        ("html", "did not answer with JSON"),
    ],
)
def test_a_bad_answer_is_one_line_naming_the_service(server: RerankApis, tmp_path: Path, case: str, words: str) -> None:
    assert case in EMBEDDING_CASES or case in {"nan", "html"}
    service = _service(server, case, tmp_path)
    with pytest.raises(ModelError) as failed:
        service.embed_documents(TEXTS)
    message = str(failed.value)
    assert words in message and "The embedding service for 'fake-embedder'" in message, message
    assert "\n" not in message and "Traceback" not in message and "AxisError" not in message


def test_a_trickling_service_is_cut_off_at_its_deadline(server: RerankApis, tmp_path: Path) -> None:
    service = _service(server, "trickle", tmp_path, rerank_timeout=4)
    started = time.monotonic()
    with pytest.raises(ModelError, match="did not answer within 4 s"):
        service.embed_documents(TEXTS[:1])
    assert time.monotonic() - started < 4 + 2 + 1  # the deadline, one trickled byte, and the call itself

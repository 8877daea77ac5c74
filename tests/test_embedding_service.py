"""A real embedding service: Infinity (from .venv-infinity, as the reranker tests start it) serving the shipped
all-MiniLM-L6-v2 offline over OpenAI's `/embeddings`, called through langchain-openai. Its vectors equal the
local model's, a collection records the served model that made it, a different query embedder is refused, and a
token never shows in an id or a message."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conftest import free_port, running
from tests.live_servers import INFINITY
from workbench.config import Settings
from workbench.embeddings import EmbeddingService, SentenceTransformerEmbedder
from workbench.engine import Engine
from workbench.errors import ConfigError, ModelError
from workbench.models import resolve_model
from workbench.services.demo import DEMO_COLLECTION, demo_dataset, ensure_demo_collection

pytestmark = [pytest.mark.slow, pytest.mark.live_server]
LOCAL = "sentence-transformers/all-MiniLM-L6-v2"
TOKEN = "emb-s3cret-token"


@pytest.fixture(scope="module")
def infinity_embedder(tmp_path_factory: pytest.TempPathFactory):
    """Infinity serving the local all-MiniLM-L6-v2 folder as `all-MiniLM-L6-v2`, with an API key; yields its URL."""
    if not INFINITY.exists():
        pytest.fail(f"Infinity is missing at {INFINITY}: run `bash scripts/setup.sh --test`.")
    folder = resolve_model(LOCAL, Settings(offline=True), setting="WORKBENCH_EMBEDDING_MODEL")
    port = free_port()
    home = tmp_path_factory.mktemp("infinity-embed")
    command = [
        str(INFINITY), "v2", "--model-id", folder, "--served-model-name", "all-MiniLM-L6-v2", "--host", "127.0.0.1",
        "--port", str(port), "--engine", "torch", "--device", "cpu", "--api-key", TOKEN,
    ]  # fmt: skip
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(home), "INFINITY_ANONYMOUS_USAGE_STATS": "0"}
    url = f"http://127.0.0.1:{port}"
    with running(command, f"{url}/health", home / "infinity.log", env=env, timeout=180):
        yield url


def _settings(tmp_path: Path, **more: object) -> Settings:
    return Settings(persist_dir=tmp_path / "store", data_dir=tmp_path / "data", offline=True, **more)  # type: ignore[arg-type]


def test_served_vectors_equal_the_local_models(infinity_embedder: str, tmp_path: Path) -> None:
    settings = _settings(tmp_path, embedding_api_key=TOKEN, embedding_batch_size=16, embedding_concurrency=4)
    remote = EmbeddingService(infinity_embedder, settings)
    assert remote.model_id == f"{infinity_embedder}#all-MiniLM-L6-v2"  # the model the server lists
    local = SentenceTransformerEmbedder(LOCAL, settings)
    texts = list(demo_dataset().queries.values()) + [d.text for d in _demo_passages()]
    served, here = remote.embed_documents(texts), local.embed_documents(texts)
    assert served.shape == here.shape == (len(texts), 384) and len(texts) > 16 * 4  # several batches at once
    assert float(np.abs(served - here).max()) < 1e-5
    assert float(np.abs(remote.embed_query(texts[0]) - local.embed_query(texts[0])).max()) < 1e-5


def _demo_passages():  # type: ignore[no-untyped-def]
    from workbench.loaders import load_path
    from workbench.paths import demo_dir

    return load_path(demo_dir() / "docs").documents[:40]


def test_a_collection_records_the_served_model_and_refuses_another_embedder(
    infinity_embedder: str, tmp_path: Path
) -> None:
    token_url = infinity_embedder.replace("http://", f"http://:{TOKEN}@")
    engine = Engine(_settings(tmp_path, embedding_model=token_url, reranker_model="none"))
    info = ensure_demo_collection(engine)
    assert info.embedding_model == f"{infinity_embedder}#all-MiniLM-L6-v2" and TOKEN not in str(info)
    served = engine.search("how many vacation days do I get", engine.plan(collection=DEMO_COLLECTION, k=20, top_n=10))
    local = Engine(_settings(tmp_path / "local", reranker_model="none"))
    ensure_demo_collection(local)
    mine = local.search("how many vacation days do I get", local.plan(collection=DEMO_COLLECTION, k=20, top_n=10))
    assert [c.id for c in served.candidates] == [c.id for c in mine.candidates]
    # fresh engines query it through the recorded service: the token from the settings, or in the configured URL
    for fresh in ({"embedding_api_key": TOKEN}, {"embedding_model": token_url}):
        again = Engine(_settings(tmp_path, reranker_model="none", **fresh))
        assert [c.id for c in again.search("vacation", again.plan(collection=DEMO_COLLECTION, k=5, top_n=5)).candidates]
    # an engine whose embedder is another model is refused, naming both
    other = Engine(_settings(tmp_path, reranker_model="none"), embedder=local.embedder())
    with pytest.raises(ConfigError, match=r"was embedded with 'http://127\.0\.0\.1:\d+#all-MiniLM-L6-v2'.*"
                       r"'sentence-transformers/all-MiniLM-L6-v2'"):  # fmt: skip
        other.search("vacation", other.plan(collection=DEMO_COLLECTION, k=5, top_n=5))


def test_a_wrong_token_and_a_down_server_say_so_without_the_secret(infinity_embedder: str, tmp_path: Path) -> None:
    wrong = EmbeddingService(
        f"{infinity_embedder}#all-MiniLM-L6-v2", _settings(tmp_path, embedding_api_key="wrong-" + TOKEN)
    )
    with pytest.raises(ModelError) as refused:
        wrong.embed_documents(["a passage"])
    assert "wrong-" + TOKEN not in str(refused.value) and "all-MiniLM-L6-v2" in str(refused.value)
    down = f"http://:{TOKEN}@127.0.0.1:{free_port()}"
    with pytest.raises(ModelError, match="cannot be reached") as unreachable:
        EmbeddingService(down, _settings(tmp_path))
    assert TOKEN not in str(unreachable.value)

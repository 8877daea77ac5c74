"""Secrets never shown on any surface; seed code that opened a Chroma folder itself can call the contracts;
a local Qdrant leaves no noise at exit; `collections` on a mistyped folder creates nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import free_port
from workbench.app import ENTRY_SCRIPT
from workbench.cli import main
from workbench.config import Settings
from workbench.engine import Engine
from workbench.redact import redact_text, redact_url

SECRETS = ("S3cretPw", "tok-9f8e7d", "key-5a4b3c")


def _clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret} leaked in: {text[:500]}"


def test_the_redaction_functions() -> None:
    assert (
        redact_url("http://admin:S3cretPw@host:8000/x?token=tok-9f8e7d&x=1") == "http://***@host:8000/x?token=***&x=1"
    )
    _clean(redact_text("failed: https://u:S3cretPw@h/ Authorization: Bearer tok-9f8e7d api_key=key-5a4b3c"))
    assert redact_text("Filters take key=value") == "Filters take key=value"


@pytest.mark.live_server
def test_every_surface_masks_store_credentials(
    chroma_server: str,
    tiny_models: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A Chroma server named with user info and a token in its URL: the CLI (text, JSON, errors), the engine's
    errors, the app's sidebar and Collections table, and a server that is down."""
    port = chroma_server.rsplit(":", 1)[1]
    url = f"http://admin:S3cretPw@127.0.0.1:{port}/?token=tok-9f8e7d"
    for name, value in {
        "WORKBENCH_CHROMA_URL": url,
        "WORKBENCH_EMBEDDING_MODEL": str(tiny_models["embedder"]),
        "RERANKER_MODEL": str(tiny_models["reranker"]),
        "WORKBENCH_DATA_DIR": str(tmp_path / "data"),
    }.items():
        monkeypatch.setenv(name, value)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("Kestrels hover over fields.")
    assert main(["ingest", str(folder), "--collection", "secret-test"]) == 0
    assert main(["collections", "--json"]) == 0
    assert main(["collections"]) == 0
    assert main(["query", "kestrels", "--collection", "secret-test", "--json"]) == 0
    assert main(["query", "kestrels", "--collection", "absent-one"]) == 2
    captured = capsys.readouterr()
    _clean(captured.out + captured.err)
    assert f"127.0.0.1:{port}" in captured.out and "***@" in captured.out

    from workbench.errors import CollectionNotFoundError

    with pytest.raises(CollectionNotFoundError) as caught:
        Engine(Settings()).search("q", Engine(Settings()).plan(collection="absent-two"))
    _clean(str(caught.value))

    from workbench.app.state import engine_resource

    engine_resource.clear()
    try:
        at = AppTest.from_file(str(ENTRY_SCRIPT), default_timeout=120)
        at.run()
        at.switch_page("app/pages/collections.py").run()
        texts = [str(d.value.to_dict()) for d in at.dataframe] + [c.value for c in at.caption]
        texts += [str(getattr(c, "help", "")) for c in at.sidebar.caption]
        assert any(f"127.0.0.1:{port}" in t for t in texts)
        _clean(" ".join(texts))
    finally:
        engine_resource.clear()

    down = f"http://admin:S3cretPw@127.0.0.1:{free_port()}/?token=tok-9f8e7d"
    monkeypatch.setenv("WORKBENCH_CHROMA_URL", down)
    assert main(["collections"]) == 2
    err = capsys.readouterr().err
    _clean(err)
    assert "WORKBENCH_STORE_TIMEOUT" in err


def test_secrets_in_settings_are_not_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_API_TOKEN", "tok-9f8e7d")
    monkeypatch.setenv("WORKBENCH_APP_PASSWORD", "S3cretPw")
    settings = Settings()
    _clean(repr(settings) + str(settings.model_dump()))
    assert settings.api_token is not None and settings.api_token.get_secret_value() == "tok-9f8e7d"


def test_contract_after_seed_code_opened_the_folder_itself(tmp_path: Path, tiny_models: dict[str, Path]) -> None:
    """Seed 000's own usage in one process: `chromadb.PersistentClient(path)`, a collection filled by hand, then
    `retrieve_top_docs` on the same folder."""
    script = f"""
import os
os.environ["WORKBENCH_CONFIG"] = ""
os.environ["RERANKER_MODEL"] = {str(tiny_models["reranker"])!r}
os.environ["HF_HUB_OFFLINE"] = "1"
import chromadb
from workbench import retrieve_top_docs
from workbench.embeddings import EmbedderAsLangChain, SentenceTransformerEmbedder
from workbench.config import Settings
embeddings = EmbedderAsLangChain(SentenceTransformerEmbedder({str(tiny_models["embedder"])!r}, Settings(offline=True)))
client = chromadb.PersistentClient(path="./chroma_store")
docs = ["Derivatives derive their value from an underlying asset.", "Bonds pay a coupon.", "Swaps exchange flows."]
collection = client.get_or_create_collection("finance_docs", metadata={{"hnsw:space": "cosine"}})
collection.add(ids=["a", "b", "c"], documents=docs, embeddings=embeddings.embed_documents(docs))
print(retrieve_top_docs("finance_docs", embeddings, "./chroma_store", "what is a derivative", k=3, top_n=2))
client2 = chromadb.PersistentClient(path="./chroma_store")  # and seed code opening it again afterwards
print("count", client2.get_collection("finance_docs").count())
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert not lines[0].startswith("Error") and len(lines) == 3 and lines[-1] == "count 3"


def test_local_qdrant_leaves_no_noise_at_exit(tmp_path: Path) -> None:
    script = f"""
from workbench.stores import QdrantBackend


backend = QdrantBackend(path={str(tmp_path / "q")!r})
backend.create("quiet", embedding_model="m", dimension=4)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Exception ignored" not in done.stderr, done.stderr


def test_collections_on_a_mistyped_folder_creates_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    typo = tmp_path / "chromma"
    assert main(["collections", "--persist-dir", str(typo)]) == 0
    assert "No collections in" in capsys.readouterr().out
    assert not typo.exists()
    assert main(["query", "x", "--collection", "demo", "--persist-dir", str(typo)]) == 2
    assert "'demo' not found" in capsys.readouterr().err and not typo.exists()
    assert main(["collections", "--persist-dir", str(typo), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from workbench.config import Settings
from workbench.stores import StoreConfig, StoreRegistry
from workbench.stores.langchain import LangChainCollection


def test_names_map_to_their_store_settings(tmp_path: Path) -> None:
    registry = StoreRegistry(Settings(persist_dir=tmp_path / "default"))
    registry.register("hr", StoreConfig(kind="qdrant", collection="hr-docs", persist_dir=str(tmp_path / "q")))
    registry.create("hr", embedding_model="m", dimension=4)
    registry.create("plain", embedding_model="m", dimension=4)
    assert registry.get("hr").store == "qdrant" and registry.get("hr").name == "hr-docs"
    assert registry.get("plain").store == "chroma"
    assert {c.name for c in registry.list()} == {"hr", "plain"}
    registry.delete("hr")
    registry.backend("hr").close()


def test_lazy_cached_and_thread_safe(tmp_path: Path) -> None:
    registry = StoreRegistry(Settings(persist_dir=tmp_path))
    registry.create("shared", embedding_model="m", dimension=4)
    registry._collections.clear()  # forget the handle so every thread races to open it
    with ThreadPoolExecutor(max_workers=8) as pool:
        handles = list(pool.map(lambda _: registry.get("shared"), range(32)))
    assert all(h is handles[0] for h in handles)


def test_langchain_vector_stores_register_by_name() -> None:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_texts(["alpha beta", "gamma delta"], metadatas=[{"k": 1}, {"k": 2}], ids=["a", "b"])
    registry = StoreRegistry(Settings())
    registry.register_langchain("lc", store)
    collection = registry.get("lc")
    assert isinstance(collection, LangChainCollection) and collection.count() == 2
    hits = collection.search(2, text="alpha beta")
    assert hits[0].id == "a" and hits[0].score >= hits[1].score
    assert [h.id for h in collection.search(2, {"k": 2}, text="alpha beta")] == ["b"]

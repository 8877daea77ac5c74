"""Issue 52: a running app sees a changed workbench.toml. A collection attached in the settings file while the app
runs appears in its collection picker on the next rerun, without a restart."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from workbench.app import ENTRY_SCRIPT
from workbench.config import Settings
from workbench.engine import Engine


def test_a_collection_added_to_the_settings_file_appears_without_a_restart(
    tmp_path: Path, tiny_models: dict[str, Path], corpus_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.app.state import engine_resource

    elsewhere = tmp_path / "elsewhere"
    Engine(Settings(persist_dir=elsewhere, embedding_model=str(tiny_models["embedder"]), reranker_model="none",
                    offline=True)).ingest(corpus_dir, "field-notes")  # fmt: skip
    config = tmp_path / "workbench.toml"
    config.write_text(f'data_dir = "{tmp_path / "data"}"\noffline = true\n', encoding="utf-8")
    monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
    monkeypatch.setenv("WORKBENCH_EMBEDDING_MODEL", str(tiny_models["embedder"]))
    monkeypatch.setenv("RERANKER_MODEL", str(tiny_models["reranker"]))
    engine_resource.clear()
    try:
        at = AppTest.from_file(str(ENTRY_SCRIPT), default_timeout=180)
        at.run()
        assert not at.exception, at.exception
        assert "field-notes" not in at.sidebar.selectbox(key="w.collection").options
        config.write_text(
            config.read_text() + f'\n[collections.field-notes]\nstore = "chroma"\npersist_dir = "{elsewhere}"\n',
            encoding="utf-8",
        )
        at.run()  # the next rerun: no restart
        assert not at.exception, at.exception
        assert "field-notes" in at.sidebar.selectbox(key="w.collection").options
    finally:
        engine_resource.clear()

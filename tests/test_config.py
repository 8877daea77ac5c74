from __future__ import annotations

from pathlib import Path

import pytest

from workbench.config import Settings
from workbench.errors import ConfigError


def test_defaults_follow_the_product_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "RERANKER_MODEL",
        "RERANKER_DEVICE",
        "RERANKER_K_RETRIEVE",
        "RERANKER_K_RETURN",
        "CACHE_TTL",
        "CACHE_MAX_SIZE",
        "WORKBENCH_EMBEDDING_MODEL",
        "WORKBENCH_STORE",
    ):
        monkeypatch.delenv(name, raising=False)
    settings = Settings()
    assert settings.reranker_model == "cross-encoder/ms-marco-MiniLM-L-6-v2"
    assert settings.reranker_device == "auto"
    assert (settings.k_retrieve, settings.k_return) == (50, 10)
    assert (settings.cache_ttl, settings.cache_max_size) == (3600, 10000)
    assert settings.embedding_model == "sentence-transformers/all-MiniLM-L6-v2"
    assert settings.store == "chroma"


def test_environment_sets_every_contract_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RERANKER_MODEL", "some/reranker")
    monkeypatch.setenv("RERANKER_DEVICE", "cpu")
    monkeypatch.setenv("RERANKER_K_RETRIEVE", "40")
    monkeypatch.setenv("RERANKER_K_RETURN", "7")
    monkeypatch.setenv("CACHE_TTL", "60")
    monkeypatch.setenv("CACHE_MAX_SIZE", "12")
    monkeypatch.setenv("WORKBENCH_STORE", "qdrant")
    monkeypatch.setenv("WORKBENCH_QDRANT_URL", "http://127.0.0.1:6333")
    monkeypatch.setenv("WORKBENCH_COLLECTION", "docs")
    s = Settings()
    assert (s.reranker_model, s.reranker_device, s.k_retrieve, s.k_return) == ("some/reranker", "cpu", 40, 7)
    assert (s.cache_ttl, s.cache_max_size) == (60, 12)
    assert (s.store, s.qdrant_url, s.collection) == ("qdrant", "http://127.0.0.1:6333", "docs")
    assert s.store_location == "http://127.0.0.1:6333"


def test_arguments_beat_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RERANKER_K_RETRIEVE", "40")
    assert Settings(k_retrieve=9).k_retrieve == 9


def test_toml_file_is_read_below_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "workbench.toml"
    config.write_text('reranker_model = "./models/rr"\nk_return = 4\ncollection = "handbook"\n')
    monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
    monkeypatch.setenv("WORKBENCH_COLLECTION", "from-env")
    s = Settings()
    assert s.reranker_model == str((tmp_path / "models" / "rr").resolve())
    assert s.k_return == 4
    assert s.collection == "from-env"


def test_missing_or_broken_toml_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_CONFIG", str(tmp_path / "nope.toml"))
    with pytest.raises(ConfigError, match="does not exist"):
        Settings()
    bad = tmp_path / "bad.toml"
    bad.write_text("k_return = = 3")
    monkeypatch.setenv("WORKBENCH_CONFIG", str(bad))
    with pytest.raises(ConfigError, match="not valid TOML"):
        Settings()


def test_out_of_range_values_are_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RERANKER_K_RETRIEVE", "0")
    with pytest.raises(ValueError, match="k_retrieve"):
        Settings()


def test_reranker_none_disables_reranking() -> None:
    assert not Settings(reranker_model="none").reranker_enabled
    assert Settings(reranker_model="x/y").reranker_enabled


def test_relative_folders_in_the_toml_follow_the_file_not_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "workbench.toml").write_text(
        'data_dir = "data"\nmodels_dir = "../models"\nreranker_model = "org/hub-id"\n'
        '[collections.hr]\nstore = "qdrant"\npersist_dir = "stores/hr"\n'
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv("WORKBENCH_DATA_DIR", raising=False)
    monkeypatch.setenv("WORKBENCH_CONFIG", str(checkout / "workbench.toml"))
    s = Settings()
    assert Path(s.data_dir) == checkout / "data"
    assert s.model_dirs() == [(tmp_path / "models").resolve()]
    assert s.reranker_model == "org/hub-id"  # a hub id is not a path
    assert s.collections["hr"]["persist_dir"] == str(checkout / "stores" / "hr")


def test_without_a_settings_file_the_data_folder_is_the_users_never_the_current_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WORKBENCH_DATA_DIR", raising=False)
    monkeypatch.delenv("WORKBENCH_CONFIG", raising=False)  # and no ./workbench.toml here
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert Path(Settings().data_dir) == tmp_path / "xdg" / "rerank-workbench"


@pytest.mark.parametrize("events", ["", "off", "jsonl:events.jsonl", "amqp://guest:guest@127.0.0.1:5672/%2F"])
def test_the_event_sinks_there_are_are_taken(events: str) -> None:
    assert Settings(events=events).events == (events or None)


@pytest.mark.parametrize("events", ["kafka://broker:9092", "events.jsonl", "http://sink"])
def test_an_event_sink_of_no_known_form_is_refused(events: str) -> None:
    with pytest.raises(ValueError, match="is not a sink"):
        Settings(events=events)

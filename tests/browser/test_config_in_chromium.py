"""Issue 52 in Chromium: a collection attached in `workbench.toml` while `workbench app` runs appears in the
sidebar's collection picker on the next page load, without a restart (it did not, until the app was restarted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.conftest import app_server, chromium_page, no_exception, on_page
from workbench.config import Settings
from workbench.engine import Engine

pytestmark = pytest.mark.browser


def _options(page) -> list[str]:
    """The collection picker's options, read from its open list (then closed again)."""
    picker = page.locator("[data-testid='stSidebar'] [data-testid='stSelectbox']").first
    picker.click()
    listbox = page.get_by_role("listbox").first
    listbox.wait_for()
    names = [o.inner_text().strip() for o in listbox.get_by_role("option").all()]
    page.keyboard.press("Escape")
    return names


def test_a_collection_attached_in_the_settings_file_appears_in_the_running_app(
    tmp_path_factory: pytest.TempPathFactory, real_reranker_dir: Path, corpus_dir: Path
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    Engine(Settings(persist_dir=elsewhere, reranker_model="none", offline=True)).ingest(corpus_dir, "field-notes")
    config = tmp_path_factory.mktemp("config") / "workbench.toml"
    config.write_text("offline = true\n", encoding="utf-8")
    with (
        app_server(tmp_path_factory, real_reranker_dir, "config", {"WORKBENCH_CONFIG": str(config)}) as (url, _, _),
        chromium_page(url, []) as page,
    ):
        on_page(page, "Explore")
        assert "demo" in _options(page) and "field-notes" not in _options(page)
        config.write_text(
            config.read_text() + f'\n[collections.field-notes]\nstore = "chroma"\npersist_dir = "{elsewhere}"\n',
            encoding="utf-8",
        )
        page.reload()
        on_page(page, "Explore")
        assert "field-notes" in _options(page)
        no_exception(page)

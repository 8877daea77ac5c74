"""Debian's Chromium driven by Playwright (never `playwright install`), for every browser test."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port, running

CHROMIUM = "/usr/bin/chromium"


@contextmanager
def chromium_page(url: str, requests: list[str]) -> Iterator[Any]:
    """A headless Chromium page opened at `url`; every URL it requests is appended to `requests`."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium is missing at {CHROMIUM}: run `bash scripts/setup.sh --browser`.")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-quic",
                "--no-first-run",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        context = browser.new_context(viewport={"width": 1500, "height": 1000})
        context.on("request", lambda request: requests.append(request.url))
        page = context.new_page()
        page.set_default_timeout(180_000)
        page.goto(url)
        try:
            yield page
        finally:
            browser.close()


@contextmanager
def app_server(
    tmp_path_factory: pytest.TempPathFactory, reranker_dir: Path, name: str, extra_env: dict[str, str] | None = None
) -> Iterator[tuple[str, Path, Path]]:
    """`workbench app` as a user starts it, on a free port and a fresh data folder (the demo collection is built on
    first start): its URL, data folder and upload root. The server's log may hold no traceback."""
    from workbench.cli.servers import APP_ENVIRONMENT, app_command

    port = free_port()
    data = tmp_path_factory.mktemp(f"{name}-data")
    allowed = tmp_path_factory.mktemp(f"{name}-allowed")
    env = {
        **os.environ,
        "WORKBENCH_CONFIG": "",
        "WORKBENCH_DATA_DIR": str(data),
        "WORKBENCH_DATA_ROOTS": str(allowed),
        "WORKBENCH_MODELS_DIR": str(reranker_dir.parent),
        "RERANKER_MODEL": reranker_dir.name,
        "HF_HUB_OFFLINE": "1",
        **APP_ENVIRONMENT,
        **(extra_env or {}),
    }
    url = f"http://127.0.0.1:{port}"
    try:
        with running(
            app_command(port, "127.0.0.1"), f"{url}/_stcore/health", data / "streamlit.log", env=env, cwd=data
        ):
            yield url, data, allowed
    finally:
        text = (data / "streamlit.log").read_text(errors="replace")
        assert "Inotify" not in text and "Traceback" not in text, text[-3000:]


def no_exception(page) -> None:
    assert page.locator("[data-testid='stException']").count() == 0


def shown(page, text, exact: bool = False) -> None:
    """Wait for a text to appear. The first match is enough: Streamlit may render the same words twice (a
    caption and a table, the page being left and the page arriving), and strict mode would fail on that."""
    page.get_by_text(text, exact=exact).first.wait_for()


def on_page(page, heading: str) -> None:
    """Wait for a page's own heading (matched exactly, so no heading on the previous page satisfies it)."""
    page.get_by_role("heading", name=heading, exact=True).first.wait_for()


def choose(page, label: str, option: str) -> None:
    """Pick an option of a select box by typing it (the list is virtualised)."""
    picker = page.get_by_label(label, exact=True).first
    picker.click()
    picker.press_sequentially(option, delay=50)
    page.wait_for_timeout(500)
    picker.press("Enter")


def set_slider(page, name: str, target: int) -> None:
    """Move a slider by keyboard until it shows the target: a key press that lands while a rerun repaints the
    page can be lost, so the slider's own value is read back after every press."""
    for _ in range(40):
        slider = page.get_by_role("slider", name=name)
        value = int(slider.get_attribute("aria-valuetext") or slider.input_value())
        if value == target:
            return
        slider.focus()
        if abs(value - target) >= 20:  # a page key moves a tenth of the range (k's: 20); the value is read back
            slider.press("PageDown" if value > target else "PageUp")
        else:
            slider.press("ArrowLeft" if value > target else "ArrowRight")
        page.wait_for_timeout(250)
    raise AssertionError(f"the slider {name!r} never reached {target}")


def settled(page) -> None:
    """Wait until no element is stale: while a rerun paints, the previous run's elements (the previous query's
    cards among them) stay in the page marked `data-stale`, and a click on one of them is lost or lands wrong."""
    page.wait_for_function("() => document.querySelectorAll('[data-stale=\"true\"]').length === 0")


def reranked_cards(page, count: int) -> None:
    """Wait until the reranked list shows `count` grade controls, none stale. The first-stage preview paints
    before the reranker answers, with no grade controls; its spinner may not have appeared yet when its
    disappearance is first looked for, so the result itself is waited for."""
    from playwright.sync_api import expect

    controls = page.locator("[class*='st-key-grade-reranked-'][data-stale='false']")
    expect(controls).to_have_count(count, timeout=180_000)
    settled(page)


def grade_button(page, where: str, grade: str, card: int = 0):
    """The `grade` button of a card's grade control in list `where` (Explore's `first` and `reranked`,
    Evaluate's `queue`), found by the control's key rather than by its place among every grade button."""
    controls = page.locator(f"[class*='st-key-grade-{where}-'][data-stale='false']")
    return controls.nth(card).get_by_role("radio", name=grade, exact=True)


def click_until(page, click, appeared, failure_shot: str, pause_ms: int = 0) -> None:
    """`click()`, then `appeared()` (which waits, and raises when its result does not come), up to 3 times: a
    click that lands while the previous rerun is still painting can be lost. The page is kept on a last failure."""
    for attempt in range(3):
        click()
        try:
            appeared()
            return
        except Exception:
            if attempt == 2:
                page.screenshot(path=str(Path(tempfile.gettempdir()) / failure_shot))
                raise
            page.wait_for_timeout(pause_ms)

"""Debian's Chromium driven by Playwright (never `playwright install`), for every browser test."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

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

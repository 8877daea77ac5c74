"""A search whose rerank progress moves a bar on the page, batch by batch. The model reports from its batcher's
thread, and only the page's script thread may draw, so the search runs beside the script, which polls."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import streamlit as st

from workbench.types import SearchResult, spoken_duration

Progress = Callable[[int, int], None]
_POLL_SECONDS = 0.05


@contextmanager
def transient_progress(text: str = "") -> Iterator[Any]:
    """A progress bar for the work inside, removed when the work ends, however it ends: no full bar stays under a
    finished table."""
    bar = st.progress(0.0, text=text)
    try:
        yield bar
    finally:
        bar.empty()


def bar_with_time_left(bar: Any, unit: str) -> Progress:
    """A progress callback that moves `bar` and says how long the rest takes at the pace so far: "12 of 50
    queries · about 40 s left" (from the second step on: one step says little about the pace)."""
    started = time.monotonic()

    def advanced(done: int, total: int) -> None:
        text = f"{done:,} of {total:,} {unit}"
        if 1 < done < total:
            left = (time.monotonic() - started) / done * (total - done)
            text += f" · about {spoken_duration(left)} left"
        bar.progress(done / max(total, 1), text=text)

    return advanced


def search_with_progress(
    search: Callable[[Progress | None], SearchResult],
    bar: Any | None,
    label: str = "Reranking",
    first_use: str | None = None,
) -> SearchResult:
    """`search(progress)`'s result; with a `bar` (st.progress), the bar follows the rerank as it goes:
    "<label>: 32 of 50 candidates scored", and says `first_use` (what a first use of the model waits for:
    `Engine.first_use`) until the first batch is scored."""
    if bar is None:
        return search(None)
    if first_use:
        bar.progress(0.0, text=first_use)
    advance = {"scored": 0, "total": 0}

    def heard(scored: int, total: int) -> None:
        advance.update(scored=scored, total=total)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="page-search") as pool:
        running = pool.submit(search, heard)
        shown = -1
        while not running.done():
            time.sleep(_POLL_SECONDS)
            if advance["total"] and advance["scored"] != shown:
                shown = advance["scored"]
                bar.progress(shown / advance["total"], text=f"{label}: {shown} of {advance['total']} candidates scored")
        return running.result()

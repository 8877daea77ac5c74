"""What the routes share: the app's state and running engine work in a thread under the query timeout."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import anyio
from fastapi import Request

from workbench.errors import QueryTimeoutError


def state_of(request: Request) -> Any:
    """The app's engine, settings, event sink and session store."""
    return request.app.state.wb


async def run_bounded(request: Request, function: Callable[[], Any]) -> Any:
    """Run engine work in a worker thread, at most WORKBENCH_QUERY_TIMEOUT seconds (504 after that)."""
    state = state_of(request)
    timeout = state.settings.query_timeout
    try:
        return await asyncio.wait_for(anyio.to_thread.run_sync(function, abandon_on_cancel=True), timeout)
    except TimeoutError as exc:
        raise QueryTimeoutError(
            f"The search took longer than {timeout:g} s (WORKBENCH_QUERY_TIMEOUT); try a smaller k or raise the limit."
        ) from exc

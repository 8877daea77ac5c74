"""A front end that stays up keeps what its warm-up loaded out of later full garbage collections (`workbench.heap`):
the API's, the MCP server's and the app's warm-ups end in `gc.freeze()`, so a full collection inside a search served
under a rerank budget walks only what requests made since, not the loaded libraries and models."""

from __future__ import annotations

import gc
import time
import weakref
from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient

from workbench.api.app import create_app
from workbench.config import Settings
from workbench.engine import Engine
from workbench.heap import freeze_what_is_loaded, thaw
from workbench.mcp import build_server
from workbench.mcp_tools import add_tools
from workbench.rerankers.local.backends import measure_backends_in_background, set_auto_auditor


def _frozen(thing: object) -> bool:
    """Whether a tracked object sits in the permanent generation (gc.get_objects() lists generations 0-2 only)."""
    return gc.is_tracked(thing) and not any(o is thing for o in gc.get_objects())


@pytest.fixture
def unfrozen() -> Iterator[None]:
    thaw()
    yield
    thaw()  # the test process's objects go back to the collector's care
    measure_backends_in_background(False)
    set_auto_auditor(None)


class _Node:
    """A tracked object that can refer to itself (a cycle) and be watched by a weak reference."""

    me: object = None


def test_freezing_keeps_what_is_alive_out_of_collections_and_frees_garbage_first(unfrozen: None) -> None:
    kept = {"loaded": [1, 2]}
    garbage = _Node()
    garbage.me = garbage  # a cycle nothing refers to: freed by the collection before the freeze, never kept
    watched = weakref.ref(garbage)
    del garbage
    frozen = freeze_what_is_loaded()
    assert frozen > 0 and gc.get_freeze_count() > 0 and _frozen(kept) and watched() is None
    assert len(gc.get_objects()) < frozen / 10  # what a full collection walks now: a small share of what there is
    later = {"made": ["after the first warm-up"]}
    assert freeze_what_is_loaded() == 0 and not _frozen(later)  # once a process: a later warm-up freezes nothing


def test_the_api_the_app_and_mcp_freeze_what_their_warm_up_loaded(tiny_settings: Settings, unfrozen: None) -> None:
    settings = tiny_settings.model_copy(update={"reranker_backend": "torch"})
    before_api = {"made": ["before the API's warm-up"]}
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        deadline = time.monotonic() + 120
        while client.get("/health").json()["status"] == "starting" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert client.get("/health").json()["status"] == "ready"
        assert _frozen(before_api) and _frozen(client.app.state.wb.engine.embedder())

    thaw()
    engine = Engine(settings)
    before_app = {"made": ["before the app's warm-up"]}
    engine.warm_in_background()
    assert _soon(lambda: _frozen(before_app)) and _frozen(engine.reranker())

    thaw()
    server, mcp_engine = build_server(settings, tools=False), Engine(settings)
    before_mcp = {"made": ["before the MCP server's warm-up"]}
    add_tools(server, settings, mcp_engine, stays_up=True)  # what `workbench mcp` does
    assert _soon(lambda: _frozen(before_mcp)) and _frozen(mcp_engine.embedder())


def _soon(condition: Callable[[], bool], seconds: float = 120) -> bool:
    """Whether `condition` holds within `seconds` (a warm-up runs in a thread of its own)."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()

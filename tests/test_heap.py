"""A front end that stays up keeps what its warm-up loaded out of later full garbage collections (`workbench.heap`):
the API's, the MCP server's and the app's warm-ups end in `gc.freeze()`, so a full collection inside a search served
under a rerank budget walks only what requests made since, not the loaded libraries and models."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from workbench.api.app import create_app
from workbench.config import Settings
from workbench.engine import Engine
from workbench.heap import freeze_what_is_loaded
from workbench.mcp import build_server
from workbench.mcp_tools import add_tools
from workbench.rerankers.local.backends import measure_backends_in_background, set_auto_auditor


def _frozen(thing: object) -> bool:
    """Whether a tracked object sits in the permanent generation (gc.get_objects() lists generations 0-2 only)."""
    return gc.is_tracked(thing) and not any(o is thing for o in gc.get_objects())


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # the test process's objects go back to the collector's care
    measure_backends_in_background(False)
    set_auto_auditor(None)


def test_freezing_keeps_what_is_alive_out_of_collections_and_frees_garbage_first(unfrozen: None) -> None:
    kept = {"loaded": [1, 2]}
    garbage: list[object] = []
    garbage.append(garbage)  # a cycle nothing refers to: freed by the collection before the freeze, never kept
    del garbage
    frozen = freeze_what_is_loaded()
    assert frozen == gc.get_freeze_count() > 0 and _frozen(kept)
    assert not [o for o in gc.get_objects() if isinstance(o, list) and len(o) == 1 and o[0] is o]
    assert len(gc.get_objects()) < frozen / 10  # what a full collection walks now: a small share of what there is


def test_the_api_the_app_and_mcp_freeze_what_their_warm_up_loaded(tiny_settings: Settings, unfrozen: None) -> None:
    settings = tiny_settings.model_copy(update={"reranker_backend": "torch"})
    before_api = {"made": ["before the API's warm-up"]}
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        deadline = time.monotonic() + 120
        while client.get("/health").json()["status"] == "starting" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert client.get("/health").json()["status"] == "ready"
        assert _frozen(before_api) and _frozen(client.app.state.wb.engine.embedder())

    gc.unfreeze()
    engine = Engine(settings)
    before_app = {"made": ["before the app's warm-up"]}
    engine.warm_in_background()
    _join_warm_up()
    assert _frozen(before_app) and _frozen(engine.reranker())

    gc.unfreeze()
    server, mcp_engine = build_server(settings, tools=False), Engine(settings)
    before_mcp = {"made": ["before the MCP server's warm-up"]}
    add_tools(server, settings, mcp_engine, stays_up=True)  # what `workbench mcp` does
    _join_warm_up()
    assert _frozen(before_mcp) and _frozen(mcp_engine.embedder())


def _join_warm_up() -> None:
    warming = [t for t in threading.enumerate() if t.name == "workbench-warm-up"]
    assert warming, "no warm-up started"
    for thread in warming:
        thread.join(timeout=120)

"""Stores that are down, never answer or go away mid-query give a StoreConnectionError naming the URL (with
its secrets masked) and the timeout setting, within the timeout, and hold no lock that stalls other users."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import free_port
from workbench.errors import StoreConnectionError, StoreError
from workbench.stores import ChromaBackend, QdrantBackend

pytestmark = pytest.mark.live_server


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    server.close()


def test_unreachable_servers_raise_connection_errors() -> None:
    port = free_port()
    with pytest.raises(StoreConnectionError, match=f"127.0.0.1:{port}") as chroma:
        ChromaBackend(url=f"http://127.0.0.1:{port}")
    assert "WORKBENCH_STORE_TIMEOUT" in str(chroma.value)
    with pytest.raises(ConnectionError):
        QdrantBackend(url=f"http://127.0.0.1:{port}")


@pytest.mark.parametrize("store", [ChromaBackend, QdrantBackend])
def test_a_server_that_never_answers_fails_within_the_timeout(silent_server: int, store: type) -> None:
    started = time.monotonic()
    with pytest.raises(StoreConnectionError) as caught:
        store(url=f"http://127.0.0.1:{silent_server}", timeout=1.5)
    assert time.monotonic() - started < 15
    message = str(caught.value)
    assert f"127.0.0.1:{silent_server}" in message and "WORKBENCH_STORE_TIMEOUT" in message


def test_a_hanging_server_does_not_stall_other_chroma_users(silent_server: int, tmp_path: Path) -> None:
    errors: list[Exception] = []

    def hang() -> None:
        try:
            ChromaBackend(url=f"http://127.0.0.1:{silent_server}", timeout=5)
        except StoreConnectionError as exc:
            errors.append(exc)

    thread = threading.Thread(target=hang)
    thread.start()
    time.sleep(0.3)
    started = time.monotonic()
    ChromaBackend(path=tmp_path / "local").list_collections()  # must not wait for the hanging one
    assert time.monotonic() - started < 4
    thread.join()
    assert errors


def test_credentials_in_urls_are_never_shown() -> None:
    port = free_port()
    for store, url in (
        (ChromaBackend, f"http://admin:S3cret@127.0.0.1:{port}/?token=tok123"),
        (QdrantBackend, f"http://127.0.0.1:{port}/?api_key=key123"),
    ):
        with pytest.raises(StoreConnectionError) as caught:
            store(url=url, timeout=1)
        message = str(caught.value)
        assert "S3cret" not in message and "tok123" not in message and "key123" not in message
        assert f"127.0.0.1:{port}" in message


def test_a_server_stopped_mid_session_is_a_connection_error(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.conftest import wait_for_http

    chroma = str(Path(sys.executable).parent / "chroma")
    port = free_port()
    process = subprocess.Popen(
        [chroma, "run", "--path", str(tmp_path / "data"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_http(f"http://127.0.0.1:{port}/api/v2/heartbeat", process=process)
        backend = ChromaBackend(url=f"http://127.0.0.1:{port}", timeout=3)
        collection = backend.create("going-away", embedding_model="m", dimension=4)
        assert collection.search(3, vector=np.ones(4, dtype=np.float32)) == []
    finally:
        process.terminate()
        process.wait(timeout=20)
    with pytest.raises(StoreConnectionError, match=f"127.0.0.1:{port}") as caught:
        collection.search(3, vector=np.ones(4, dtype=np.float32))
    assert "search 'going-away'" in str(caught.value)
    with pytest.raises(StoreError):
        collection.count()

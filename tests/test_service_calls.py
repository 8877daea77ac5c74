"""A service's connection closed before any answer (a kept-alive connection the server closed as a request went out
on it: what stopped a two-hour SmolLM2 run here after 2,342 pairs) is asked again on a new connection, up to the
retries; a service that never answers is still one clear line."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from workbench.errors import ModelError
from workbench.service_calls import REPLICA_ERRORS, ServiceCaller, ServiceWords

WORDS = ServiceWords("The reranker", "RERANKER_MODEL", "set the key", "WORKBENCH_RERANK_TIMEOUT")
ANSWER = {"results": [{"index": 0, "relevance_score": 0.5}]}


@contextmanager
def closing_server(drops: int, status: int = 200) -> Iterator[tuple[str, list[int]]]:
    """A server on a free port that reads each request and closes its first `drops` connections without a word,
    then answers every request with ANSWER (or, with another `status`, an error); yields its URL and the count of
    requests it read."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    read: list[int] = [0]
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(5)
                request = b""
                while b"\r\n\r\n" not in request:
                    request += connection.recv(65536)
                head, _, rest = request.partition(b"\r\n\r\n")
                length = next(
                    (int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")), 0
                )
                while len(rest) < length:
                    rest += connection.recv(65536)
                read[0] += 1
                if read[0] <= drops:
                    continue  # closed without an answer
                body = json.dumps(ANSWER if status == 200 else {"message": "broken"}).encode()
                connection.sendall(f"HTTP/1.1 {status} X\r\n".encode() + b"Content-Type: application/json\r\n"
                                   b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n"
                                   + body)  # fmt: skip

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/rerank", read
    finally:
        stop.set()
        thread.join(5)
        listener.close()


@pytest.mark.live_server
def test_a_connection_closed_without_an_answer_is_asked_again_on_a_new_one() -> None:
    with closing_server(drops=2) as (url, read):
        caller = ServiceCaller([url], [None], WORDS, timeout=5, retries=3)
        assert caller.post({"query": "q", "documents": ["d"]}) == ANSWER
        assert read[0] == 3 and caller.taken_out == 0


@pytest.mark.live_server
def test_a_service_that_always_closes_without_an_answer_is_one_clear_line_after_the_retries() -> None:
    with closing_server(drops=100) as (url, read):
        caller = ServiceCaller([url], [None], WORDS, timeout=5, retries=2)
        with pytest.raises(ModelError) as caught:
            caller.post({"query": "q", "documents": ["d"]})
    said = str(caught.value)
    assert read[0] == 3 and "\n" not in said and "Traceback" not in said
    assert said.startswith("The reranker at http://127.0.0.1:") and "cannot be reached" in said, said


@pytest.mark.live_server
def test_a_pooled_replica_that_closes_the_new_connection_too_is_taken_out_and_the_other_answers() -> None:
    """In a pool, a replica asked again on a new connection that closes that one too is down (a server stopping
    mid-run): it is left out, and the request goes to the replica that answers."""
    with closing_server(drops=100) as (down, down_read), closing_server(drops=0) as (up, up_read):
        caller = ServiceCaller([down, up], [None, None], WORDS, timeout=5, retries=3)
        answers = [caller.post({"query": "q", "documents": ["d"]}) for _ in range(4)]
    assert answers == [ANSWER] * 4
    assert caller.taken_out == 1 and down_read[0] == 2 and up_read[0] == 4


@pytest.mark.live_server
def test_a_pooled_replica_that_answers_errors_again_and_again_is_left_out_like_one_down() -> None:
    """The circuit per replica: a replica answering 500 on every request is left out of the turn after
    REPLICA_ERRORS in a row (said in the log), and every request is answered by the replica that works."""
    with closing_server(drops=0, status=500) as (broken, broken_read), closing_server(drops=0) as (up, up_read):
        caller = ServiceCaller([broken, up], [None, None], WORDS, timeout=5, retries=3)
        answers = [caller.post({"query": "q", "documents": ["d"]}) for _ in range(8)]
    assert answers == [ANSWER] * 8
    assert broken_read[0] == REPLICA_ERRORS and caller.taken_out == 1 and up_read[0] == 8

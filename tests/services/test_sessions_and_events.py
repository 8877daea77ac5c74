"""Session memory in SQLite and PostgreSQL (over HTTP, from many clients at once, across restarts), and
RetrievalCompleted events to a file and to a real RabbitMQ, including a broker killed mid-run."""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tests.conftest import wait_until
from tests.live_servers import ApiServer, Rabbit, api_env
from workbench.config import Settings
from workbench.errors import InputError, StoreError
from workbench.services.events import ROUTING_KEY, AmqpSink, JsonlSink, RetrievalCompleted, open_sink
from workbench.services.sessions import PostgresSessionStore, SqliteSessionStore, open_session_store
from workbench.vocab import EVENTS_EXCHANGE

pytestmark = pytest.mark.live_server


@pytest.fixture(params=["sqlite", "postgresql"])
def session_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "sessions.sqlite3")
    return request.getfixturevalue("postgres_url")


def _store(target: str, **kwargs: object):  # type: ignore[no-untyped-def]
    if target.startswith("postgresql://"):
        return PostgresSessionStore(target, schema=f"s{abs(hash(target + str(time.time()))) % 10**8}", **kwargs)
    return SqliteSessionStore(target, **kwargs)


def test_a_turn_id_stores_a_retried_turn_once_in_either_store(session_db: str) -> None:
    store = _store(session_db)
    session = f"idem-{uuid.uuid4().hex[:8]}"
    for _ in range(3):
        view = store.add_turn(session, "user", "hello", {"a": 1}, turn_id="turn-1")
    assert view.total_turns == 1
    assert store.add_turn(session, "assistant", "hi", turn_id="turn-2").total_turns == 2
    assert store.add_turn(session, "assistant", "hi").total_turns == 3
    assert store.add_turn(f"{session}-other", "user", "hello", turn_id="turn-1").total_turns == 1  # keys per session


def test_turns_come_back_recent_and_in_order_with_the_summary(session_db: str) -> None:
    store = _store(session_db, recent_limit=3)
    for i in range(5):
        view = store.add_turn("chat-1", "user" if i % 2 == 0 else "assistant", f"turn {i}", {"i": i})
    assert [t.text for t in view.turns] == ["turn 2", "turn 3", "turn 4"] and view.total_turns == 5
    assert [t.text for t in store.get("chat-1", limit=10).turns] == [f"turn {i}" for i in range(5)]
    assert store.add_turn("chat-1", "user", "last", return_limit=1).turns[0].text == "last"
    store.set_summary("chat-1", "The user asked five things.")
    assert store.get("chat-1").summary == "The user asked five things."
    assert store.get("another").turns == [] and store.get("another").summary is None
    assert store.delete("chat-1") == 6 and store.get("chat-1").total_turns == 0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.add_turn("", "user", "x"), "session_id"),
        (lambda s: s.add_turn("a/b", "user", "x"), "session_id"),
        (lambda s: s.add_turn("ok", "", "x"), "role"),
        (lambda s: s.add_turn("ok", "user", ""), "text"),
        (lambda s: s.add_turn("ok", "user", "x", {"big": "y" * 20000}), "meta"),
        (lambda s: s.add_turn("ok", "user", "x", {"nan": float("nan")}), "meta"),
        (lambda s: s.get("ok", limit=0), "limit"),
        (lambda s: s.set_summary("ok", "s" * 40000), "summary"),
    ],
)
def test_bad_session_inputs(tmp_path: Path, call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match=message):
        call(SqliteSessionStore(tmp_path / "s.sqlite3"))


def test_old_turns_expire_after_the_ttl(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "s.sqlite3", ttl_days=1)
    store.add_turn("t", "user", "recent")
    with store._connection() as db:
        old = (datetime.now(UTC) - timedelta(days=3)).isoformat()
        db.execute(
            "INSERT INTO turns (session_id, role, text, meta, created_at) VALUES ('t','user','old','{}',?)", (old,)
        )
    assert [t.text for t in store.get("t").turns] == ["recent"]


def test_an_unreachable_postgresql_is_a_store_error_without_the_password() -> None:
    from tests.conftest import free_port

    with pytest.raises(StoreError) as caught:
        PostgresSessionStore(f"postgresql://wb:hunter2@127.0.0.1:{free_port()}/db", timeout=1)
    assert "hunter2" not in str(caught.value) and "unreachable" in str(caught.value)


def test_eight_clients_writing_over_http_lose_nothing_and_keep_order(served_data: Settings, session_db: str) -> None:
    settings = served_data.model_copy(update={"data_dir": Path(served_data.data_dir)})
    server = ApiServer(Path(settings.data_dir), api_env(settings, WORKBENCH_SESSION_DB=session_db))
    try:
        server.wait_ready()

        def client(n: int) -> None:
            with httpx.Client(base_url=server.url, timeout=60) as c:
                for i in range(25):
                    response = c.post(
                        "/session/turn",
                        json={
                            "session_id": f"user-{n % 4}",
                            "role": "user",
                            "text": f"client {n} turn {i}",
                            "meta": {"n": n, "i": i},
                        },
                    )
                    assert response.status_code == 200

        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(client, range(8)))
        with httpx.Client(base_url=server.url, timeout=60) as c:
            for session in range(4):
                view = c.get(f"/session/user-{session}", params={"limit": 200}).json()
                assert view["total_turns"] == 50 and len(view["turns"]) == 50
                for n in (session, session + 4):  # each client's own turns stay in the order it sent them
                    own = [t["meta"]["i"] for t in view["turns"] if t["meta"]["n"] == n]
                    assert own == list(range(25))
            c.post("/session/summary", json={"session_id": "user-0", "summary": "fifty turns"})
    finally:
        server.stop()
    restarted = ApiServer(Path(settings.data_dir), api_env(settings, WORKBENCH_SESSION_DB=session_db))
    try:
        restarted.wait_ready()
        with httpx.Client(base_url=restarted.url, timeout=60) as c:
            view = c.get("/session/user-0").json()
            assert view["summary"] == "fifty turns" and view["total_turns"] == 50 and len(view["turns"]) == 10
            assert c.delete("/session/user-0").json()["deleted_turns"] == 50
    finally:
        restarted.stop()


def test_events_to_a_jsonl_file(tmp_path: Path) -> None:
    path = tmp_path / "events" / "retrieval.jsonl"
    sink = open_sink(Settings(events=f"jsonl:{path}"))
    assert isinstance(sink, JsonlSink)
    for i in range(5):
        sink.publish(RetrievalCompleted.of(f"query {i}", 5, i, f"trace-{i}"))
    sink.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [e["payload"]["trace_id"] for e in lines] == [f"trace-{i}" for i in range(5)]
    assert set(lines[0]) == {"eventType", "eventId", "timestamp", "source", "version", "payload"}
    assert set(lines[0]["payload"]) == {"query", "top_k", "result_count", "executed_at", "trace_id"}


def _consume(rabbit: Rabbit, queue: str, expected: int, timeout: float = 30) -> list[dict]:
    import pika

    received: list[dict] = []
    connection = pika.BlockingConnection(pika.URLParameters(rabbit.url))
    channel = connection.channel()
    deadline = time.monotonic() + timeout
    while len(received) < expected and time.monotonic() < deadline:
        method, _, body = channel.basic_get(queue, auto_ack=True)
        if method is None:
            time.sleep(0.1)
            continue
        received.append(json.loads(body))
    connection.close()
    return received


def _bind(rabbit: Rabbit, queue: str) -> None:
    import pika

    connection = pika.BlockingConnection(pika.URLParameters(rabbit.url))
    channel = connection.channel()
    channel.exchange_declare(EVENTS_EXCHANGE, exchange_type="topic", durable=True)
    channel.queue_declare(queue, durable=True)
    channel.queue_bind(queue, EVENTS_EXCHANGE, ROUTING_KEY)
    connection.close()


def test_searches_over_http_publish_to_rabbitmq(served_data: Settings, rabbit: Rabbit) -> None:
    _bind(rabbit, "test-http-events")
    server = ApiServer(Path(served_data.data_dir), api_env(served_data, WORKBENCH_EVENTS=rabbit.url))
    try:
        server.wait_ready()
        with httpx.Client(base_url=server.url, timeout=60) as c:
            for i in range(3):
                c.post("/search", json={"query": f"pension question {i}", "top_k": 2}, headers={"X-Trace-Id": f"t-{i}"})
        events = _consume(rabbit, "test-http-events", 3)
    finally:
        log = server.stop()
    assert sorted(e["payload"]["trace_id"] for e in events) == ["t-0", "t-1", "t-2"]
    assert all(e["eventType"] == "RetrievalCompleted" and e["payload"]["top_k"] == 2 for e in events)
    assert "guest:guest" not in log


def test_clicks_arrive_through_the_events_queue(served_data: Settings, rabbit: Rabbit) -> None:
    """With WORKBENCH_EVENTS on RabbitMQ, serve consumes click messages ({impression_id, id}, routing key
    interleaving.click): a click on a served result is logged like POST /clicks; one on an impression it never served
    and one that is not JSON are refused and said once each, never credited."""
    import pika

    from workbench.clicks.queue import CLICK_ROUTING_KEY

    server = ApiServer(Path(served_data.data_dir), api_env(served_data, WORKBENCH_EVENTS=rabbit.url))
    log_file = Path(served_data.data_dir) / "interleaving" / "log.jsonl"
    try:
        server.wait_ready()
        with httpx.Client(base_url=server.url, timeout=60) as c:
            answer = c.post("/search", json={"query": "pension question", "top_k": 3, "interleave": True}).json()
        impression, clicked = answer["impression_id"], answer["results"][1]["id"]
        connection = pika.BlockingConnection(pika.URLParameters(rabbit.url))
        channel = connection.channel()
        channel.exchange_declare(EVENTS_EXCHANGE, exchange_type="topic", durable=True)
        for body in (
            json.dumps({"impression_id": "imp-never-served", "id": clicked}),
            b"not json",
            json.dumps({"impression_id": impression, "id": clicked}),
        ):
            channel.basic_publish(EVENTS_EXCHANGE, CLICK_ROUTING_KEY, body)
        connection.close()
        deadline = time.monotonic() + 30
        mine: list[dict] = []
        while time.monotonic() < deadline and not any(r["type"] == "click" for r in mine):
            time.sleep(0.2)
            lines = log_file.read_text().splitlines() if log_file.exists() else []
            mine = [r for r in map(json.loads, lines) if r.get("impression_id") == impression]
    finally:
        log = server.stop()
    assert [(r["type"], r.get("id")) for r in mine] == [("impression", None), ("click", clicked)]
    assert "clicks: a message was refused (ImpressionNotFoundError)" in log
    assert "clicks: a message was refused (JSONDecodeError)" in log
    assert "Traceback" not in log and "guest:guest" not in log


def test_a_broker_killed_mid_run_loses_no_search_and_no_buffered_event(tmp_path: Path) -> None:
    broker = Rabbit().start()
    try:
        _bind(broker, "test-kill")
        sink = AmqpSink(broker.url, buffer_size=500, timeout=2, retry_seconds=0.3)
        for i in range(20):
            sink.publish(RetrievalCompleted.of(f"before {i}", 5, 5, f"before-{i}"))
        deadline = time.monotonic() + 30
        while sink.stats()["published"] < 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        broker.kill()
        started = time.perf_counter()
        for i in range(100):  # while the broker is down: publish only buffers, it never waits for delivery
            sink.publish(RetrievalCompleted.of(f"during {i}", 5, 5, f"during-{i}"))
        # had publish waited for a delivery, 100 of them would take at least one connect timeout (2 s) each
        assert time.perf_counter() - started < 2
        wait_until(lambda: sink.stats()["connected"] is False and sink.stats()["buffered"] == 100, timeout=30)
        broker.start()
        # a restarted broker on a loaded 2-core machine can take a minute or more before the buffer drains
        wait_until(lambda: sink.stats()["buffered"] == 0, timeout=240)
        sink.close()
        events = _consume(broker, "test-kill", 120)
        ids = {e["payload"]["trace_id"] for e in events}
        assert {f"before-{i}" for i in range(20)} <= ids and {f"during-{i}" for i in range(100)} <= ids
        assert sink.stats()["dropped"] == 0
    finally:
        broker.stop()


def test_an_event_no_queue_is_bound_for_stays_buffered_until_one_is() -> None:
    """RabbitMQ confirms a message that reached no queue as if it were queued (as after a restart, before the
    queues' bindings are back): published as mandatory, such an event stays buffered, the warning says why, and
    it arrives once a queue is bound. The warning is heard on the sink's own logger (an earlier test in the same
    worker may leave a parent logger not propagating, which caplog's root handler would not hear)."""
    said: list[str] = []

    class Heard(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    heard, events_log = Heard(logging.WARNING), logging.getLogger("workbench.services.events")
    events_log.addHandler(heard)
    broker = Rabbit().start()
    try:
        sink = AmqpSink(broker.url, buffer_size=50, timeout=2, retry_seconds=0.3)
        for i in range(3):
            sink.publish(RetrievalCompleted.of(f"unbound {i}", 5, 5, f"unbound-{i}"))
        wait_until(lambda: sink.stats()["failures"] >= 2, timeout=30)
        assert sink.stats()["buffered"] == 3 and sink.stats()["published"] == 0
        assert any(f"no queue is bound to exchange '{EVENTS_EXCHANGE}'" in line for line in said), said
        _bind(broker, "test-unbound")
        wait_until(lambda: sink.stats()["buffered"] == 0, timeout=30)
        sink.close()
        ids = {e["payload"]["trace_id"] for e in _consume(broker, "test-unbound", 3)}
        assert ids == {"unbound-0", "unbound-1", "unbound-2"}
        assert sink.stats()["dropped"] == 0
    finally:
        events_log.removeHandler(heard)
        broker.stop()


def test_the_buffer_bound_is_what_a_long_outage_can_lose(tmp_path: Path) -> None:
    from tests.conftest import free_port

    sink = AmqpSink(f"amqp://guest:guest@127.0.0.1:{free_port()}/%2F", buffer_size=10, timeout=1, retry_seconds=0.2)
    for i in range(25):
        sink.publish(RetrievalCompleted.of(f"q {i}", 5, 1, f"t-{i}"))
    stats = sink.stats()
    assert stats["dropped"] == 15 and stats["buffered"] == 10
    sink.close(timeout=0.5)


def test_session_store_is_one_per_location(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    assert open_session_store(settings) is open_session_store(settings)


def test_clicks_from_the_queue_keep_online_tests_apart_and_refuse_hostile_messages(
    served_data: Settings, rabbit: Rabbit
) -> None:
    """Issue 51 on the consumer: two online tests served by one server (the reranked list as B, then as A against
    BM25) get their clicks through RabbitMQ, and each is analysed on its own with its roles as served (the reranked
    side wins every impression in both, so B wins the first and loses the second); hostile messages between them
    (control characters, a megabyte id, deep JSON, invalid UTF-8, a JSON list) are each refused, never credited,
    and the consumer goes on."""
    import pika

    from workbench.clicks.online import analyse_interleaving_log, online_test_id
    from workbench.clicks.queue import CLICK_ROUTING_KEY

    server = ApiServer(Path(served_data.data_dir), api_env(served_data, WORKBENCH_EVENTS=rabbit.url))
    log_file = Path(served_data.data_dir) / "interleaving" / "log.jsonl"
    queries = ["pension question", "how do I claim expenses", "laptop lost", "parental leave rules"] * 2
    clicks: list[tuple[str, str]] = []
    tests: dict[str, str] = {}
    try:
        server.wait_ready()
        with httpx.Client(base_url=server.url, timeout=60) as c:
            for role, against in (("B", None), ("A", {"retrieval": "bm25"})):
                for query in queries:
                    body = {"query": query, "top_k": 5, "k": 9, "interleave": True}
                    answer = c.post("/search", json=body | ({"against": against} if against else {})).json()
                    teams = answer["teams"]
                    tests[role] = online_test_id("demo", teams["A"], teams["B"])
                    reranked = next(r for r in answer["results"] if r["team"] == role)
                    clicks.append((answer["impression_id"], reranked["id"]))
        hostile = [
            json.dumps({"impression_id": "imp\x1b[31m\x00", "id": "d\r\nx"}).encode(),
            json.dumps({"impression_id": "i" * 1_000_000, "id": "d"}).encode(),
            b"[" * 100_000 + b"]" * 100_000,
            b"\xff\xfe{not utf-8",
            json.dumps([clicks[0][0], clicks[0][1]]).encode(),
        ]
        connection = pika.BlockingConnection(pika.URLParameters(rabbit.url))
        channel = connection.channel()
        channel.exchange_declare(EVENTS_EXCHANGE, exchange_type="topic", durable=True)
        for number, (impression, clicked) in enumerate(clicks):
            if number < len(hostile):  # each hostile message between two good ones
                channel.basic_publish(EVENTS_EXCHANGE, CLICK_ROUTING_KEY, hostile[number])
            channel.basic_publish(
                EVENTS_EXCHANGE, CLICK_ROUTING_KEY, json.dumps({"impression_id": impression, "id": clicked})
            )
        connection.close()
        served = {impression for impression, _ in clicks}

        def logged_clicks() -> list[dict]:
            lines = log_file.read_text().splitlines() if log_file.exists() else []
            return [r for r in map(json.loads, lines) if r["type"] == "click" and r["impression_id"] in served]

        wait_until(lambda: len(logged_clicks()) == len(clicks), timeout=60)
    finally:
        log = server.stop()
    assert sorted((r["impression_id"], r["id"]) for r in logged_clicks()) == sorted(clicks)
    first, second = (analyse_interleaving_log(log_file, test=tests[role]) for role in ("B", "A"))
    assert (first.wins, first.losses, first.direction) == (len(queries), 0, "helps")
    assert (second.wins, second.losses, second.direction) == (0, len(queries), "hurts")
    assert "→" in first.b and "bm25" in second.b and second.a == first.b  # the reranked side, A in the second
    refused = sorted(set(re.findall(r"clicks: a message was refused \((\w+)\)", log)))
    # one line per kind: control characters and the megabyte id are InputError, the list ValueError, the nesting
    # RecursionError, the bytes that are not UTF-8 JSONDecodeError; the list named a real click and was not credited
    assert refused == ["InputError", "JSONDecodeError", "RecursionError", "ValueError"]
    assert "Traceback" not in log and "\x1b[31m" not in log and "i" * 1000 not in log

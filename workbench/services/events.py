"""RetrievalCompleted events (seed 002) to the sink WORKBENCH_EVENTS names: unset = off; `jsonl:PATH` = one
JSON line per event appended to a file; `amqp://user:pass@host:5672/vhost` = a RabbitMQ topic exchange
(`workbench.events`, routing key `retrieval.completed`).

Publishing never slows or fails a search: `publish` only puts the event in a bounded in-memory buffer
(WORKBENCH_EVENTS_BUFFER, 1000); a background thread delivers it, with publisher confirms for AMQP, and
keeps retrying while the broker is down (one warning per outage). When the buffer is full the oldest event is
dropped and counted. An event leaves the buffer only once the broker confirmed it into a queue (published as
mandatory: an event no queue is bound for stays buffered, and the warning says so), so a broker killed mid-run
loses nothing the buffer held; after a reconnect an event may arrive twice (consumers dedupe by `eventId`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
import uuid
from collections import deque
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from workbench.config import Settings
from workbench.errors import ConfigError, exception_chain
from workbench.extras import require_extra
from workbench.redact import redact_text, redact_url
from workbench.vocab import EVENTS_EXCHANGE

log = logging.getLogger("workbench.services.events")
ROUTING_KEY = "retrieval.completed"
SOURCE = "rerank-workbench"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class RetrievalPayload(BaseModel):
    """Seed 002's payload; a search served fail-open adds why (`rerank_fallback`, absent otherwise)."""

    query: str
    top_k: int
    result_count: int
    executed_at: str
    trace_id: str
    rerank_fallback: str | None = None


class RetrievalCompleted(BaseModel):
    """Seed 002's event, exactly its fields (written without empty ones: the payload's `rerank_fallback` appears
    only on a search served fail-open)."""

    eventType: Literal["RetrievalCompleted"] = "RetrievalCompleted"
    eventId: str = Field(default_factory=lambda: str(uuid.uuid4()))
    timestamp: str = Field(default_factory=_now)
    source: str = SOURCE
    version: str = "1.0"
    payload: RetrievalPayload

    @classmethod
    def of(
        cls, query: str, top_k: int, result_count: int, trace_id: str, rerank_fallback: str | None = None
    ) -> RetrievalCompleted:
        return cls(
            payload=RetrievalPayload(
                query=query, top_k=top_k, result_count=result_count, executed_at=_now(), trace_id=trace_id,
                rerank_fallback=rerank_fallback,
            )
        )  # fmt: skip

    def as_json(self) -> str:
        """The event as it is sent: no empty field (the seed's shape, plus a fallback's reason)."""
        return self.model_dump_json(exclude_none=True)


STALLED_AFTER = 2.0  # seconds a delivery may take before /health stops saying "connected"


class EventSink(Protocol):
    """Where events go. `publish` returns at once; `stats` says what happened to them."""

    description: str

    def publish(self, event: RetrievalCompleted) -> None: ...

    def stats(self) -> dict[str, Any]: ...

    def close(self, timeout: float = 5.0) -> None: ...


class NullSink:
    """No events: WORKBENCH_EVENTS is unset, or names a sink that cannot work (`problem` says why)."""

    description = "off"

    def __init__(self, problem: str | None = None) -> None:
        self.problem = problem

    def publish(self, event: RetrievalCompleted) -> None:
        return None

    def stats(self) -> dict[str, Any]:
        return {"sink": "off", **({"problem": self.problem} if self.problem else {})}

    def close(self, timeout: float = 5.0) -> None:
        return None


class _BufferedSink:
    """A bounded buffer and one delivery thread; subclasses deliver a batch or raise."""

    description = "?"

    def __init__(self, buffer_size: int = 1000, retry_seconds: float = 1.0) -> None:
        self._buffer: deque[RetrievalCompleted] = deque()
        self._limit = max(buffer_size, 1)
        self._retry = retry_seconds
        self._lock = threading.Condition()
        self._closing = False
        self.published = 0
        self.dropped = 0
        self.failures = 0
        self._down_since: float | None = None
        self._delivering_since: float | None = None
        self._thread = threading.Thread(target=self._deliver_forever, name="workbench-events", daemon=True)
        self._thread.start()

    def publish(self, event: RetrievalCompleted) -> None:
        with self._lock:
            if len(self._buffer) >= self._limit:
                self._buffer.popleft()
                self.dropped += 1
            self._buffer.append(event)
            self._lock.notify()

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "sink": self.description,
                "published": self.published,
                "buffered": len(self._buffer),
                "dropped": self.dropped,
                "failures": self.failures,
                "connected": self._down_since is None and not self._stalled(),
            }

    def _stalled(self) -> bool:
        """A delivery has been under way for over STALLED_AFTER seconds (a broker that takes the connection and
        never answers): not connected, whatever the last outcome was."""
        started = self._delivering_since
        return started is not None and time.monotonic() - started > STALLED_AFTER

    def _deliver(self, events: list[RetrievalCompleted]) -> None:
        raise NotImplementedError

    def _disconnect(self) -> None:
        """Forget the connection after a failure."""

    def _deliver_forever(self) -> None:
        while True:
            with self._lock:
                while not self._buffer and not self._closing:
                    self._lock.wait()
                if self._closing and not self._buffer:
                    return
                batch = list(self._buffer)[:100]
                self._delivering_since = time.monotonic()
            try:
                self._deliver(batch)
            except Exception as exc:  # the broker is down or refused: keep the events, try again later
                with self._lock:
                    self._delivering_since = None
                    self.failures += 1
                    first = self._down_since is None
                    if first:
                        self._down_since = time.monotonic()
                if first:
                    log.warning(
                        "events: cannot deliver to %s (WORKBENCH_EVENTS): %s; buffering and retrying",
                        self.description,
                        _reason(exc),
                    )
                self._disconnect()
                with self._lock:
                    if self._closing:
                        return
                    self._lock.wait(self._retry)
                continue
            with self._lock:
                self._delivering_since = None
                if self._down_since is not None:
                    log.warning("events: %s is back; delivering the buffered events", self.description)
                self._down_since = None
                delivered = {e.eventId for e in batch}
                kept = [e for e in self._buffer if e.eventId not in delivered]
                self._buffer.clear()
                self._buffer.extend(kept)
                self.published += len(batch)

    def close(self, timeout: float = 5.0) -> None:
        """Deliver what is buffered (waiting at most `timeout`), then stop."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._buffer and self._down_since is None and time.monotonic() < deadline:
                self._lock.wait(0.05)
            self._closing = True
            self._lock.notify_all()
        self._thread.join(timeout=max(deadline - time.monotonic(), 0.1))
        self._disconnect()


class JsonlSink(_BufferedSink):
    """Events appended to a file, one JSON object per line."""

    def __init__(self, path: str | Path, buffer_size: int = 1000) -> None:
        self.path = Path(path)
        self.description = f"jsonl:{self.path}"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        super().__init__(buffer_size)

    def _deliver(self, events: list[RetrievalCompleted]) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write("".join(e.as_json() + "\n" for e in events))


class AmqpSink(_BufferedSink):
    """Events published to a RabbitMQ topic exchange with publisher confirms (pika, one connection, own thread)."""

    def __init__(self, url: str, buffer_size: int = 1000, timeout: float = 5.0, retry_seconds: float = 1.0) -> None:
        require_extra("events", "WORKBENCH_EVENTS=amqp://… (events to RabbitMQ)")
        # pika logs every failed attempt with a traceback; the sink says once per outage what is wrong
        logging.getLogger("pika").setLevel(logging.CRITICAL)
        self.url = url
        self.description = redact_url(url)
        self._timeout = timeout
        self._connection: Any = None
        self._channel: Any = None
        super().__init__(buffer_size, retry_seconds)

    def _connect(self) -> Any:
        import pika

        if self._channel is not None and self._channel.is_open:
            return self._channel
        parameters = pika.URLParameters(self.url)
        parameters.socket_timeout = self._timeout
        parameters.blocked_connection_timeout = self._timeout
        parameters.connection_attempts = 1
        self._connection = pika.BlockingConnection(parameters)
        self._channel = self._connection.channel()
        self._channel.exchange_declare(EVENTS_EXCHANGE, exchange_type="topic", durable=True)
        self._channel.confirm_delivery()
        return self._channel

    def _deliver(self, events: list[RetrievalCompleted]) -> None:
        import pika

        channel = self._connect()
        for event in events:
            try:
                channel.basic_publish(
                    EVENTS_EXCHANGE,
                    ROUTING_KEY,
                    event.as_json().encode("utf-8"),
                    properties=pika.BasicProperties(
                        content_type="application/json", delivery_mode=2, message_id=event.eventId,
                        type=event.eventType,
                    ),
                    # RabbitMQ confirms a message that reached no queue as readily as a queued one: mandatory has
                    # it returned instead, so the event stays buffered (a broker just restarted can take
                    # connections before its queues' bindings are back).
                    mandatory=True,
                )  # fmt: skip
            except pika.exceptions.UnroutableError as exc:
                raise ConnectionError(
                    f"no queue is bound to exchange '{EVENTS_EXCHANGE}' for routing key '{ROUTING_KEY}' (the broker "
                    "would drop the event): bind a queue to receive events"
                ) from exc

    def _disconnect(self) -> None:
        connection, self._connection, self._channel = self._connection, None, None
        if connection is not None:
            with contextlib.suppress(Exception):  # already gone
                connection.close()


def _reason(exc: BaseException) -> str:
    """An exception's words, or its type and what it wraps when it has none (pika's often have none)."""
    words = " ".join(str(exc).split())
    if not words:
        inner = next((link for link in exception_chain(exc)[1:] if str(link).strip()), None)
        words = f"{type(exc).__name__}: {inner}" if inner is not None else type(exc).__name__
    return redact_text(words[:300])


def open_sink(settings: Settings) -> EventSink:
    """The sink WORKBENCH_EVENTS names (off when unset). A sink that cannot be opened (a folder that cannot be
    created) leaves the service running without events, with one warning naming the setting; so does a broker that
    is down, whose sink keeps the events and retries."""
    target = (settings.events or "").strip()
    if not target or target.lower() == "off":
        return NullSink()
    if target.startswith("jsonl:"):
        try:
            return JsonlSink(target.removeprefix("jsonl:"), settings.events_buffer)
        except OSError as exc:
            problem = (
                f"WORKBENCH_EVENTS={redact_url(target)} cannot be opened ({exc.strerror or _reason(exc)}): events are "
                "off; set it to a file in a folder this process can write, or unset it."
            )
            log.warning("events: %s", problem)
            return NullSink(problem)
    if target.startswith(("amqp://", "amqps://")):
        return AmqpSink(target, settings.events_buffer, timeout=settings.store_timeout)
    raise ConfigError(  # Settings refuse any other form; this is for a Settings built without validation
        f"WORKBENCH_EVENTS='{redact_url(target)}' is not a sink: use jsonl:PATH or amqp://user:pass@host:5672/vhost."
    )


def read_jsonl_events(path: str | Path) -> list[dict[str, Any]]:
    """The events a JsonlSink wrote (for tests and tools)."""
    path = Path(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

"""Clicks from the events queue: when WORKBENCH_EVENTS names a RabbitMQ broker, `workbench serve` also consumes the
queue `workbench.clicks`, bound to the events exchange (`workbench.events`) for the routing key
`interleaving.click`. A message is JSON `{"impression_id": ..., "id": ...}`, the same as POST /clicks takes, and
is checked the same way: a click on an impression the server did not serve, or on a result it did not show, is
refused, counted and logged (once per kind), never credited. Every message is acknowledged once handled, so a
refused one is not redelivered forever; a broker that is down is retried.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from workbench.clicks.online import InterleavingLog
from workbench.config import Settings
from workbench.errors import WorkbenchError
from workbench.redact import redact_url
from workbench.vocab import EVENTS_EXCHANGE

CLICK_QUEUE = "workbench.clicks"
CLICK_ROUTING_KEY = "interleaving.click"
log = logging.getLogger("workbench.clicks.queue")


class ClickConsumer:
    """Consumes click messages in a thread of its own and hands each to `take(impression_id, id)`."""

    def __init__(self, url: str, take: Callable[[str, str], Any], retry_seconds: float = 1.0) -> None:
        self.url = url
        self.description = redact_url(url)
        self._take = take
        self._retry = retry_seconds
        self._stop = threading.Event()
        self.taken = 0
        self.refused: Counter[str] = Counter()
        self._thread = threading.Thread(target=self._consume_forever, name="workbench-clicks", daemon=True)
        self._thread.start()

    def _consume_forever(self) -> None:
        import pika

        warned = False
        while not self._stop.is_set():
            connection = None
            try:
                parameters = pika.URLParameters(self.url)
                parameters.connection_attempts = 1
                connection = pika.BlockingConnection(parameters)
                channel = connection.channel()
                channel.exchange_declare(EVENTS_EXCHANGE, exchange_type="topic", durable=True)
                channel.queue_declare(CLICK_QUEUE, durable=True)
                channel.queue_bind(CLICK_QUEUE, EVENTS_EXCHANGE, routing_key=CLICK_ROUTING_KEY)
                warned = False
                for method, _, body in channel.consume(CLICK_QUEUE, inactivity_timeout=0.5):
                    if self._stop.is_set():
                        break
                    if method is None:
                        continue
                    self._handle(body)
                    channel.basic_ack(method.delivery_tag)
            except Exception as exc:  # the broker is down or went away: try again
                if not warned:
                    log.warning("clicks: cannot consume from %s: %s; retrying", self.description, type(exc).__name__)
                    warned = True
                self._stop.wait(self._retry)
            finally:
                if connection is not None:
                    with contextlib.suppress(Exception):
                        connection.close()

    def _handle(self, body: bytes) -> None:
        try:
            message = json.loads(body)
            if not isinstance(message, dict):
                raise ValueError("not a JSON object")
            self._take(str(message.get("impression_id", "")), str(message.get("id", "")))
            self.taken += 1
        except (ValueError, RecursionError, WorkbenchError) as exc:
            kind = type(exc).__name__
            if not self.refused[kind]:
                log.warning("clicks: a message was refused (%s): %s", kind, str(exc)[:200])
            self.refused[kind] += 1

    def close(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)


def open_click_consumer(settings: Settings, interleaving: InterleavingLog) -> ClickConsumer | None:
    """A consumer of click messages when WORKBENCH_EVENTS names a RabbitMQ broker (amqp:// or amqps://), else None."""
    target = (settings.events or "").strip()
    if not target.startswith(("amqp://", "amqps://")):
        return None
    return ClickConsumer(target, interleaving.click)

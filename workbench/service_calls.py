"""Calling a JSON service over HTTP the one way every remote kind does (reranker servers, hosted rerank APIs,
embedding servers): replicas asked in turn, each with its own token; one deadline for each try (a service that
trickles its answer is cut off there, not at each read); retries with exponential backoff on 429 and 5xx (a
Retry-After header is honoured), and on the next replica when one is down; redirects refused; the answer parsed
as JSON with NaN and Infinity refused; failures as `ModelError`s that name the redacted URL and the setting to
change, never the token.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx

from workbench.errors import ConfigError, ModelError, is_connection_problem
from workbench.redact import plain_text, redact_text, redact_url, register_secret

_BACKOFF = 0.5  # seconds before the first retry; doubled each time
_MAX_WAIT = 30.0
REPLICA_REST = 30.0  # seconds a replica that did not answer is left out of the turn
REPLICA_ERRORS = 3  # errors (5xx) in a row from one replica before it is left out of the turn like one down
log = logging.getLogger("workbench.services")


class InvalidAnswer(ValueError):
    """An answer in the right shape whose content cannot be right: a number that is not one, an index out of
    range or repeated, a vector of the wrong width."""


def finite_number(value: Any, what: str) -> float:
    """A JSON number as a finite float; booleans, strings and null are not numbers."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidAnswer(f"{plain_text(json.dumps(value))[:40]} as {what}, which is not a number")
    if not math.isfinite(value):
        raise InvalidAnswer(f"{value} as {what}")
    return float(value)


def _no_constant(name: str) -> float:
    raise InvalidAnswer(f"'{name}' where a number belongs (not JSON)")


@dataclass(frozen=True)
class ServiceWords:
    """How failures name the service and what the user can change: `noun` ("The reranker"), the setting that
    names its URL, the fix for a refused token, and the setting of its deadline."""

    noun: str
    setting: str
    auth_fix: str
    timeout_setting: str


class ServiceCaller:
    """Sends JSON to one service (or to its replicas in turn), POST by default, and returns the parsed answer.
    `headers` are sent with every request (a search service's own; their secret values are registered, so no
    message shows them)."""

    def __init__(
        self,
        urls: list[str],
        tokens: list[str | None],
        words: ServiceWords,
        *,
        timeout: float,
        retries: int,
        method: str = "POST",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.urls = list(urls)
        self.tokens = list(tokens)
        for token in self.tokens:
            if token:
                register_secret(token)
        self.words = words
        self.timeout = timeout
        self.retries = retries
        self.shown_url = ", ".join(redact_url(u) for u in self.urls)
        self._turn = itertools.count()
        self._turn_lock = threading.Lock()
        self._resting: dict[int, float] = {}  # replica -> when it may be asked again (time.monotonic())
        self.taken_out = 0  # how many times a replica was left out for not answering, or answering errors
        self._errors: dict[int, int] = {}  # replica -> errors (5xx) it answered in a row
        self.method = method
        for value in (headers or {}).values():
            register_secret(value)
        sent = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}
        self.client = httpx.Client(timeout=timeout, headers=sent, follow_redirects=False)

    def headers(self, replica: int = 0) -> dict[str, str]:
        """The replica's own token as a bearer header (none when it has none)."""
        token = self.tokens[replica] if replica < len(self.tokens) else None
        return {"Authorization": f"Bearer {token}"} if token else {}

    def _next_replica(self) -> int:
        """The next replica in turn that is not resting; when every one is, the one back soonest."""
        with self._turn_lock:
            now = time.monotonic()
            for _ in range(len(self.urls)):
                replica = next(self._turn) % len(self.urls)
                if self._resting.get(replica, 0.0) <= now:
                    return replica
            return min(range(len(self.urls)), key=lambda r: self._resting.get(r, 0.0))

    def _take_out(self, replica: int, exc: Exception) -> bool:
        """A replica that could not be reached, or did not answer in time, left out of the turn for
        `REPLICA_REST` seconds, so no later request waits on it; whether another replica is there to take its
        batch."""
        if len(self.urls) < 2:
            return False
        with self._turn_lock:
            self._resting[replica] = time.monotonic() + REPLICA_REST
            self.taken_out += 1
            live = sum(until <= time.monotonic() for r, until in self._resting.items() if r != replica)
            live += len(self.urls) - len(self._resting)
        log.warning(
            "%s replica %s did not answer (%s): left out for %g s; its requests go to the other replicas",
            self.words.noun, redact_url(self.urls[replica]), type(exc).__name__, REPLICA_REST,
        )  # fmt: skip
        return live > 0

    def _answered(self, replica: int, status: int) -> None:
        """Count a replica's error answers in a row: after `REPLICA_ERRORS` (5xx, not 429's "busy") it is left out
        of the turn for `REPLICA_REST` seconds, as one down is (the rest of a pool answer); any other answer
        clears its count."""
        if status < 500 or len(self.urls) < 2:
            with self._turn_lock:
                self._errors.pop(replica, None)
            return
        with self._turn_lock:
            self._errors[replica] = self._errors.get(replica, 0) + 1
            if self._errors[replica] < REPLICA_ERRORS:
                return
            self._errors[replica] = 0
            self._resting[replica] = time.monotonic() + REPLICA_REST
            self.taken_out += 1
        log.warning(
            "%s replica %s answered %d errors in a row (the last %d): left out for %g s; its requests go to the "
            "other replicas", self.words.noun, redact_url(self.urls[replica]), REPLICA_ERRORS, status, REPLICA_REST,
        )  # fmt: skip

    def _send(self, replica: int, body: Any, params: dict[str, Any] | None = None) -> httpx.Response:
        """One try, at `replica`: the whole answer read within `timeout` seconds (httpx alone times each read, so a
        service sending a byte a second would hold the call for as long as it liked)."""
        until = time.monotonic() + self.timeout
        sent = {"json": body} if self.method != "GET" else {}
        with self.client.stream(
            self.method, self.urls[replica], params=params, headers=self.headers(replica), **sent
        ) as response:
            received = bytearray()
            for chunk in response.iter_bytes():
                received += chunk
                if time.monotonic() > until:
                    raise httpx.ReadTimeout(f"the answer was still arriving after {self.timeout:g} s")
        return httpx.Response(response.status_code, headers=response.headers, content=bytes(received))

    def post(self, body: Any, params: dict[str, Any] | None = None) -> Any:
        """The service's JSON answer to `body` (and query `params`); ModelError when it cannot be had,
        InvalidAnswer when it holds NaN or Infinity."""
        wait = _BACKOFF
        failovers = 0
        attempt = 0
        again: int | None = None  # the replica whose connection closed without an answer, asked once more
        while True:
            replica = self._next_replica() if again is None else again
            try:
                response = self._send(replica, body, params)
            except httpx.HTTPError as exc:
                # A connection closed before any answer is most often a kept-alive one the server closed as this
                # request went out on it (servers close idle ones after a few seconds): nothing was answered, so the
                # same replica is asked again on a new connection, not taken out for it. In a pool, a replica that
                # closes the new connection too is down (stopping, say), and is taken out like one refused.
                closed = isinstance(exc, httpx.RemoteProtocolError)
                if closed and not (len(self.urls) > 1 and again == replica) and attempt < self.retries:
                    attempt += 1
                    again = replica
                    log.info(
                        "%s at %s closed the connection without an answer (%s): asked again", self.words.noun,
                        redact_url(self.urls[replica]), redact_text(" ".join(str(exc).split())[:120]),
                    )  # fmt: skip
                    continue
                again = None
                if self._take_out(replica, exc) and failovers < len(self.urls) - 1:
                    failovers += 1  # a replica down or hung: the next live one takes its request, at no retry's cost
                    continue
                if len(self.urls) > 1 and attempt < self.retries:
                    attempt += 1
                    continue
                raise self.unreachable(exc) from exc
            self._answered(replica, response.status_code)
            busy = response.status_code == 429 or response.status_code >= 500
            if busy and attempt < self.retries:
                time.sleep(min(_retry_after(response) or wait, _MAX_WAIT))
                wait *= 2
                attempt += 1
                continue
            if response.status_code >= 400:
                raise self._refused(response, attempt)
            if response.is_redirect:
                moved = redact_url(plain_text(response.headers.get("location", ""))[:200]) or "no location"
                raise ModelError(
                    f"{self.words.noun} at {self.shown_url} answered {response.status_code}, a redirect to {moved}: "
                    f"set {self.words.setting} to the URL it moved to (redirects are not followed)."
                )
            try:
                return json.loads(response.content, parse_constant=_no_constant)
            except InvalidAnswer:
                raise
            except RecursionError as exc:
                raise InvalidAnswer("JSON nested too deeply to read") from exc
            except ValueError as exc:
                raise ModelError(
                    f"{self.words.noun} at {self.shown_url} did not answer with JSON (status {response.status_code}). "
                    f"Check {self.words.setting}."
                ) from exc

    def unreachable(self, exc: Exception) -> ModelError:
        """The error for a service that could not be reached, or did not answer in time."""
        reason = redact_text(" ".join(str(exc).split())[:200]) or type(exc).__name__
        if isinstance(exc, httpx.TimeoutException):
            return ModelError(
                f"{self.words.noun} at {self.shown_url} did not answer within {self.timeout:g} s "
                f"({type(exc).__name__}). Check that it is running and not overloaded, or raise "
                f"{self.words.timeout_setting}."
            )
        where = "cannot be reached" if is_connection_problem(exc) else "failed"
        return ModelError(
            f"{self.words.noun} at {self.shown_url} {where} ({reason}). Check that it is running and that "
            f"{self.words.setting} names the right URL."
        )

    def _refused(self, response: httpx.Response, attempt: int) -> ModelError:
        detail = redact_text(" ".join(response.text.split())[:300])
        if "Traceback (most recent call last)" in response.text or 'File "' in response.text:
            detail = "a traceback of its own (not shown here: see the service's log)"
        if response.status_code in {401, 403}:
            return ModelError(
                f"{self.words.noun} at {self.shown_url} refused the request ({response.status_code}): "
                f"{self.words.auth_fix}."
            )
        tried = f" after {attempt + 1} tries" if attempt else ""
        return ModelError(
            f"{self.words.noun} at {self.shown_url} answered {response.status_code}{tried}: "
            f"{detail or 'no detail'}. Check {self.words.setting}."
        )

    def close(self) -> None:
        self.client.close()


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return max(float(response.headers.get("retry-after", "")), 0.0)
    except ValueError:
        return None


@dataclass(frozen=True)
class ServiceAddress:
    """A service URL taken apart: the URL to call, the token its user info carried, and the id it goes by (the URL
    as given, without user info, secret parameters masked)."""

    url: httpx.URL
    token: str | None
    public_id: str


def service_address(given: str, route: str, setting: str = "RERANKER_MODEL", prefix: str = "") -> ServiceAddress:
    """A service's URL to call (with `route` added to its path unless it ends with it, before any query string)
    and the token its user info carries (`http://user:TOKEN@host`, or `http://TOKEN@host`), taken out of it;
    `prefix` (`tei+`) goes before the public id. A URL without a host, with a port out of range or another scheme
    is a ConfigError naming `setting`."""
    shown = redact_url(plain_text(given))[:200]
    try:
        url = httpx.URL(given)
        port = url.port
    except (httpx.InvalidURL, ValueError) as exc:
        raise ConfigError(f"{setting} '{shown}' is not a URL ({exc}).") from exc
    if url.scheme not in {"http", "https"}:
        raise ConfigError(f"{setting} '{shown}': a reranker service is reached over http:// or https://.")
    if not url.host:
        raise ConfigError(f"{setting} '{shown}' names no host: write it as http://HOST:PORT.")
    if port is not None and not 0 < port < 65536:
        raise ConfigError(f"{setting} '{shown}' names port {port}: a port is 1 to 65535.")
    bare = url.copy_with(username=None, password=None)
    path = url.path.rstrip("/")
    called = bare.copy_with(path=path if path.endswith(route) else path + route)
    public = prefix + redact_url(str(bare.copy_with(path=path or "/"))).rstrip("/")
    return ServiceAddress(called, url.password or url.username or None, public)

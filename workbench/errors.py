"""The exceptions the engine raises, one hierarchy, each message something a user can act on.

WorkbenchError
├── InputError               a query, k, top_n, filter or file name the engine cannot take
├── CollectionNotFoundError  no collection of that name in the configured store
├── ExperimentNotFoundError  no kept experiment (query set, preference session) of that id or name
├── ImpressionNotFoundError  a click on an interleaved impression the server did not serve (or has forgotten)
├── ModelError               a model that cannot be loaded or run (broken folder, unreachable service)
│   └── ModelNotFoundError   a model id that resolves to no local folder and no reachable hub
├── StoreError               the vector store failed
│   └── StoreConnectionError the store's server is down, refused or did not answer in time
├── IngestError              a file or folder that cannot be read or ingested
├── ConfigError              settings that contradict each other or name nothing usable
└── QueryTimeoutError        a search that took longer than WORKBENCH_QUERY_TIMEOUT

Messages name what to change (a setting, a file, a value) and never carry secrets or temp paths.

`ERROR_STATUS` is the one table from an error to what a front end answers: `error_status` gives the HTTP status
(the API), `error_message` the words (the app, the CLI, the API, the MCP tools); every front end calls these two.
"""

from __future__ import annotations

import socket
from typing import Final

from pydantic import ValidationError

from workbench.redact import hide_paths, shown
from workbench.vocab import STORES


class WorkbenchError(Exception):
    """Base class of every error the engine raises on purpose."""


class InputError(WorkbenchError, ValueError):
    """A query or a parameter outside what the engine accepts."""


class CollectionNotFoundError(WorkbenchError, LookupError):
    """The named collection does not exist in the store."""

    def __init__(self, name: str, store: str, available: list[str] | None = None, *, advice: str = "") -> None:
        """`advice`, when given, replaces the hint to ingest (an attached source is not the workbench's to fill)."""
        self.name = name
        self.store = store
        self.available = available or []
        self.advice = advice
        if advice:
            super().__init__(f"Collection '{name}' not found in {store}. {advice}")
            return
        hint = f" Available: {', '.join(sorted(self.available))}." if self.available else " The store is empty."
        kind = store.split(" ", 1)[0]
        where = f" --store {kind}" if kind in STORES else ""
        super().__init__(
            f"Collection '{name}' not found in {store}.{hint} "
            f"Create it with `workbench ingest PATH --collection {name}{where}`"
            + (
                ", or copy it from another store with `workbench compare-stores ... --copy-from STORE`."
                if where
                else "."
            )
        )


class ExperimentNotFoundError(WorkbenchError, LookupError):
    """No kept experiment has that id, no query set that name, or no preference session that id."""


class ImpressionNotFoundError(WorkbenchError, LookupError):
    """A click names an interleaved impression this server did not serve, or no longer remembers."""


class JobNotFoundError(WorkbenchError, LookupError):
    """A job id this process does not hold."""


class BusyError(WorkbenchError):
    """Too much work is already waiting: ask again later."""


class ModelError(WorkbenchError):
    """A model folder that cannot be loaded, a device it cannot run on, or a model service that fails."""


class ModelNotFoundError(ModelError):
    """A model id could not be resolved to a folder and the hub is unreachable or offline."""

    def __init__(self, model_id: str, looked_in: list[str], setting: str, reason: str = "") -> None:
        self.model_id = model_id
        self.looked_in = looked_in
        self.setting = setting
        places = "; ".join(looked_in) if looked_in else "nowhere"
        why = f" ({reason})" if reason else ""
        super().__init__(
            f"Model '{model_id}' was not found locally and could not be fetched from the hub{why}. "
            f"Looked in: {places}. Put the model folder in one of those places, set WORKBENCH_MODELS_DIR to a "
            f"folder that contains it, or set {setting} to a model folder."
        )


class StoreError(WorkbenchError):
    """The vector store failed: unreachable server, locked local folder, bad response."""


class StoreConnectionError(StoreError, ConnectionError):
    """The store's server cannot be reached (refused, timed out, wrong URL)."""


class IngestError(WorkbenchError):
    """A file or folder could not be read or ingested."""


class ConfigError(WorkbenchError):
    """Settings that are invalid or contradict each other."""


class QueryTimeoutError(WorkbenchError, TimeoutError):
    """A search did not finish within the query timeout."""


_CONNECTION_TYPE_NAMES = frozenset(
    {
        "ConnectError",
        "ConnectTimeout",
        "ReadTimeout",
        "WriteTimeout",
        "PoolTimeout",
        "TimeoutException",
        "RemoteProtocolError",
        "NetworkError",
        "ReadError",
        "WriteError",
        "ConnectionError",
        "ConnectionRefusedError",
        "ConnectionResetError",
        "OperationalError",  # psycopg: the server closed the connection or cannot be reached
        "InterfaceError",
        "ConnectionTimeout",
        "AMQPConnectionError",
    }
)
_CONNECTION_PHRASES = (
    "could not connect",
    "connection refused",
    "timed out",
    "connection reset",
    "unreachable",
    "terminating connection",
    "server closed the connection",
    "the connection is lost",
)


def exception_chain(exc: BaseException) -> list[BaseException]:
    """The exception and those it wraps (cause, context, a client's `source`), outermost first."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 12:
        seen.append(current)
        current = current.__cause__ or current.__context__ or getattr(current, "source", None)
    return seen


def is_connection_problem(exc: BaseException) -> bool:
    """True when an exception (or one it wraps) says the server could not be reached or did not answer."""
    for link in exception_chain(exc):
        if isinstance(link, ConnectionError | TimeoutError | socket.timeout):
            return True
        if any(kind.__name__ in _CONNECTION_TYPE_NAMES for kind in type(link).__mro__):
            return True
        if any(phrase in str(link).lower() for phrase in _CONNECTION_PHRASES):
            return True
    return False


# The one error -> status table, most specific first. A status of 503 says the service cannot do it as
# configured (a model, a store, a setting); 4xx says the request itself is wrong.
ERROR_STATUS: Final[tuple[tuple[type[BaseException], int], ...]] = (
    (InputError, 422),
    (IngestError, 422),
    (CollectionNotFoundError, 404),
    (ExperimentNotFoundError, 404),
    (ImpressionNotFoundError, 404),
    (JobNotFoundError, 404),
    (BusyError, 429),
    (QueryTimeoutError, 504),
    (ModelError, 503),
    (StoreError, 503),
    (ConfigError, 503),
    (ValidationError, 503),  # settings that do not validate (an environment variable out of range)
    (WorkbenchError, 500),
)
UNEXPECTED_STATUS: Final = 500
EXPECTED_ERRORS: Final = (WorkbenchError, ValidationError)  # raised on purpose (or settings that do not validate)


def error_status(exc: BaseException) -> int:
    """The HTTP status an error answers with (500 only for what the workbench did not expect)."""
    return next((status for kind, status in ERROR_STATUS if isinstance(exc, kind)), UNEXPECTED_STATUS)


def is_expected(exc: BaseException) -> bool:
    """True for the errors the workbench raises on purpose (and settings that do not validate)."""
    return isinstance(exc, EXPECTED_ERRORS)


def error_message(exc: BaseException, *, remote: bool = False) -> str:
    """The words a user sees for an error: the workbench's own message, secrets masked, no traceback.

    Settings that do not validate name each setting and its problem. For a `remote` user (an API or MCP client)
    the server's own paths are hidden, and an unexpected error names only its type.
    """
    if isinstance(exc, WorkbenchError):
        return hide_paths(shown(exc)) if remote else shown(exc)
    if isinstance(exc, ValidationError):
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return shown(f"invalid setting: {problems}")
    if remote:
        return f"Unexpected error ({type(exc).__name__}); see the server log."
    return shown(f"Unexpected error ({type(exc).__name__}): {exc}")

"""The exceptions the engine raises, one hierarchy, each message something a user can act on.

WorkbenchError
├── InputError               a query, k, top_n or filter the engine cannot take
├── CollectionNotFoundError  no collection of that name in the configured store
├── ModelNotFoundError       a model id that resolves to no local folder and no reachable hub
├── StoreError               the vector store failed or cannot be reached
├── IngestError              a file or folder that cannot be read or ingested
└── ConfigError              settings that contradict each other or name nothing usable
"""

from __future__ import annotations


class WorkbenchError(Exception):
    """Base class of every error the engine raises on purpose."""


class InputError(WorkbenchError, ValueError):
    """A query or a parameter outside what the engine accepts."""


class CollectionNotFoundError(WorkbenchError, LookupError):
    """The named collection does not exist in the store."""

    def __init__(self, name: str, store: str, available: list[str] | None = None) -> None:
        self.name = name
        self.store = store
        self.available = available or []
        hint = f" Available: {', '.join(sorted(self.available))}." if self.available else " The store is empty."
        super().__init__(
            f"Collection '{name}' not found in {store}.{hint} "
            f"Create it with `workbench ingest PATH --collection {name}`."
        )


class ModelNotFoundError(WorkbenchError):
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

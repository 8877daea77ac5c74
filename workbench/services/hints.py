"""Why a search found nothing, in words a user can act on: a filter on a key no chunk has, or on a value of the
wrong type, names the collection's keys and the kind of value each holds. The app and the CLI both use it."""

from __future__ import annotations

from typing import Any

from workbench.engine import Engine
from workbench.types import Metadata

SAMPLE = 500  # chunks read to learn a collection's metadata keys


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "numbers"
    return "text"


def metadata_keys(engine: Engine, collection: str, sample: int = SAMPLE) -> dict[str, set[str]]:
    """The metadata keys of (the first `sample` chunks of) a collection and the kinds of value each holds."""
    keys: dict[str, set[str]] = {}
    for chunk in engine.browse(collection, 0, sample):
        for key, value in chunk.metadata.items():
            keys.setdefault(key, set()).add(_kind(value))
    return keys


def no_match_hint(engine: Engine, collection: str, filters: Metadata) -> str:
    """Why nothing matched these filters: unknown keys or values of another kind, with the keys that exist."""
    keys = metadata_keys(engine, collection)
    listed = ", ".join(f"{k} ({' or '.join(sorted(v))})" for k, v in sorted(keys.items()))
    unknown = [k for k in filters if k not in keys]
    if unknown:
        names = ", ".join(f"'{k}'" for k in unknown)
        return f"No chunk of '{collection}' has {names}. Its keys are: {listed}."
    mismatched = [
        f"'{k}' holds {' or '.join(sorted(keys[k]))}, not {_kind(v)}"
        for k, v in filters.items()
        if _kind(v) not in keys[k]
    ]
    if mismatched:
        return f"{'; '.join(mismatched)}. Its keys are: {listed}."
    return "No chunk has all of these values together: try other words or loosen the filters."

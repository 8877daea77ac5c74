"""The demo collection: a fictional company's handbook (data/demo), built into the default store on first use."""

from __future__ import annotations

import json
import os
from pathlib import Path

from workbench.engine import Engine
from workbench.errors import CollectionNotFoundError, IngestError
from workbench.ingest import ProgressCallback
from workbench.types import CollectionInfo

DEMO_COLLECTION = "demo"


def demo_dir() -> Path:
    """The demo corpus folder: WORKBENCH_DEMO_DIR, else data/demo beside the package."""
    named = os.environ.get("WORKBENCH_DEMO_DIR")
    return Path(named) if named else Path(__file__).resolve().parents[1] / "data" / "demo"


def sample_queries() -> list[str]:
    """The demo's sample queries, in file order."""
    path = demo_dir() / "queries.jsonl"
    if not path.exists():
        return []
    return [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def ensure_demo_collection(
    engine: Engine, name: str = DEMO_COLLECTION, progress: ProgressCallback | None = None
) -> CollectionInfo:
    """Build the demo collection if it is missing or incomplete; return its info. Offline, idempotent."""
    docs = demo_dir() / "docs"
    if not docs.is_dir():
        raise IngestError(f"The demo corpus is missing: no folder at {docs}. Set WORKBENCH_DEMO_DIR to its folder.")
    try:
        info = engine.collection_info(name)
    except CollectionNotFoundError:
        info = None
    if info is None or info.count == 0:
        engine.ingest(docs, name, progress=progress)
        info = engine.collection_info(name)
    return info

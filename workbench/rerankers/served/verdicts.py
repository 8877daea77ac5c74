"""What the last parity audit said of each served copy of a reranker (`workbench doctor --parity ... --served ID`),
kept beside the exports: an evaluation of that copy reads it (its **served** run check), and a search served under
a rerank budget serves the first stage's order instead of an unfaithful copy's (`workbench.serving`)."""

from __future__ import annotations

import functools
import hashlib
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel


class ServedVerdict(BaseModel):
    """A served copy's verdict from the last parity audit that took it: against which local model, and why not."""

    served: str  # as shown: a URL without its secrets
    model: str
    faithful: bool
    reasons: list[str]
    measured_at: datetime

    def words(self) -> str:
        """Why the served copy's figures are not about the model it serves."""
        return (
            f"the served copy {self.served} disagrees with its local reference {self.model} (parity audit of "
            f"{self.measured_at:%Y-%m-%d}: {'; '.join(self.reasons)}), so its figures are about how it is served"
        )


def served_file(exports_dir: str | Path) -> Path:
    """Where the served copies' verdicts are kept."""
    return Path(exports_dir) / "served-audits.json"


def served_key(reranker_id: str) -> str:
    """A served id as a key: hashed, so a token in its URL is never written down."""
    return hashlib.sha256(reranker_id.encode()).hexdigest()[:32]


def served_verdict(exports_dir: str | Path, reranker_id: str) -> ServedVerdict | None:
    """The kept verdict of the last parity audit that took `reranker_id` as a served copy, or None. Every search
    served under a budget asks: the file is read again only when it changed (its size and time)."""
    path = served_file(exports_dir)
    try:
        stat = path.stat()
    except OSError:
        return None
    found = _kept_verdicts(str(path), stat.st_mtime_ns, stat.st_size).get(served_key(reranker_id))
    try:
        return ServedVerdict.model_validate(found) if found is not None else None
    except ValueError:
        return None


@functools.lru_cache(maxsize=8)
def _kept_verdicts(path: str, mtime_ns: int, size: int) -> dict[str, Any]:
    """The verdicts file as it was at (`mtime_ns`, `size`): a dict, empty when unreadable."""
    try:
        kept = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return kept if isinstance(kept, dict) else {}

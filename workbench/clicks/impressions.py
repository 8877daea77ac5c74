"""The one impression type: a result list as a user saw it (the query, the ids shown in order, the ids clicked), and,
when `workbench serve` interleaved it, the id clicks name and the team that put each result there. Click logs, the
click models, team-draft interleaving and the online test's log all speak it.

`json_records` is the one JSON-lines reader of the click logs and the interleaving log: a line that is not a JSON
object stops the read with its line number.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.errors import InputError
from workbench.vocab import MAX_CLICK_LOG_ROWS


@dataclass(frozen=True)
class Impression:
    """One result list as a user saw it: the query, the ids shown in order, the ids clicked (a subset of those
    shown), the session and the time as given; for a served interleaved list, its `id` and, position by position,
    the team (A or B) that put each result there."""

    query: str
    shown: tuple[str, ...]
    clicked: frozenset[str] = field(default_factory=frozenset)
    session: str = ""
    time: str = ""
    id: str = ""
    teams: tuple[str, ...] = ()

    def team_of(self) -> dict[str, str]:
        """Each shown id's team (an interleaved impression; empty otherwise)."""
        return dict(zip(self.shown, self.teams, strict=True)) if self.teams else {}


def session_count(impressions: Sequence[Impression]) -> int:
    """Distinct sessions of the impressions (one without a session is a session of its own)."""
    named = {i.session for i in impressions if i.session}
    return len(named) + sum(1 for i in impressions if not i.session)


def json_records(text: str, name: str, max_lines: int = MAX_CLICK_LOG_ROWS * 4) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of each non-blank line of a JSON-lines text; a line that is not a JSON object, or more
    than `max_lines` lines, stops the read naming the file (and the line)."""
    for number, line in enumerate(text.splitlines(), start=1):
        if number > max_lines:
            raise InputError(f"{name} has more than {max_lines:,} lines.")
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            raise InputError(f"{name}, line {number}: not a JSON object.") from None
        if not isinstance(record, dict):
            raise InputError(f"{name}, line {number}: not a JSON object.")
        yield number, record

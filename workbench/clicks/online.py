"""An online test served: `/search` with `interleave` answers one team-draft list of the plan's first-stage order
(team A) and its reranked order (team B), or of the plan (A) and another plan given beside it (B), each result
labelled with its team and the response with an impression id; `/clicks` takes the clicks on it. Impressions and
clicks are appended to one JSON-lines log in the data folder (`interleaving/log.jsonl`), which `workbench
interleaving analyse` reads.

A click must name an impression this server served (it remembers the last MAX_REMEMBERED_IMPRESSIONS) and a
result that impression showed; anything else is refused, so a log never credits a result nobody saw.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from cachetools import LRUCache
from pydantic import BaseModel

from workbench.clicks.impressions import Impression, json_records
from workbench.clicks.interleaving import InterleavingAnalysis, Outcome, analyse, credit, team_draft
from workbench.config import Settings
from workbench.errors import ImpressionNotFoundError, InputError
from workbench.fusion import first_stage_name
from workbench.inputs import decode_text, read_user_file, validate_doc_id
from workbench.redact import plain_text, public_name
from workbench.types import SearchPlan, SearchResult
from workbench.vocab import MAX_CLICK_LOG_BYTES

MAX_REMEMBERED_IMPRESSIONS = 100_000
_IMPRESSION_ID_CHARS = 64


def interleaving_log_path(settings: Settings) -> Path:
    """Where `workbench serve` logs interleaved impressions and their clicks."""
    return Path(settings.data_dir) / "interleaving" / "log.jsonl"


def first_stage_order(result: SearchResult) -> list[str]:
    """The candidates' ids in the first stage's order."""
    return [c.id for c in sorted(result.candidates, key=lambda c: c.vector_rank)]


def final_order(result: SearchResult) -> list[str]:
    """The order a plan shows: reranked when it reranks, else the first stage's."""
    return [c.id for c in sorted(result.candidates, key=lambda c: c.rerank_rank)]


def plan_label(plan: SearchPlan, result: SearchResult, *, reranked: bool = True) -> str:
    """A team in words: its first stage and k, and the reranker when its order is the reranked one."""
    first = f"{first_stage_name(result.retrieval, result.fusion)} k={plan.k}"
    if not reranked or result.reranker_model is None:
        return f"{first} (first stage)"
    return f"{first} → {public_name(result.reranker_model)}"  # a model's name, never a server's folder


def online_test_id(collection: str, a: str, b: str) -> str:
    """The online test an impression belongs to: one collection, ranking A against ranking B, in those roles (an
    impression of B against A belongs to another test). Stable across servers and restarts."""
    digest = hashlib.blake2b(json.dumps([collection, a, b]).encode(), digest_size=6).hexdigest()
    return f"t-{digest}"


@dataclass(frozen=True)
class OnlineTest:
    """One online test: a collection, ranking A (the control) against ranking B, each named as `plan_label` words it."""

    collection: str
    a: str
    b: str

    @property
    def id(self) -> str:
        return online_test_id(self.collection, self.a, self.b)


class ClickReceipt(BaseModel):
    """A click taken: the impression, the result, its team."""

    impression_id: str
    id: str
    team: str
    clicks_on_impression: int


class InterleavingLog:
    """The log of served impressions and their clicks; safe to use from many threads."""

    def __init__(self, settings: Settings) -> None:
        self.path = interleaving_log_path(settings)
        self._lock = threading.Lock()
        self._served: LRUCache[str, Impression] = LRUCache(MAX_REMEMBERED_IMPRESSIONS)
        self._rng = np.random.default_rng()

    def _append(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")

    def serve(
        self, collection: str, query: str, a: tuple[str, list[str]], b: tuple[str, list[str]], length: int
    ) -> tuple[Impression, OnlineTest]:
        """Team-draft interleave ranking A and ranking B (each `(label, ids in order)`), cut at `length`, and log
        the impression; it is returned with its online test."""
        with self._lock:
            merged = team_draft(a[1], b[1], self._rng, length, query=query)
        served = replace(merged, id=f"imp-{uuid.uuid4().hex}", time=_now())
        test = OnlineTest(collection, a[0], b[0])
        with self._lock:
            self._served[served.id] = served
            self._append({
                "type": "impression", "time": served.time, "impression_id": served.id, "test": test.id,
                "collection": collection, "query": query, "ids": list(served.shown), "teams": list(served.teams),
                "a": test.a, "b": test.b,
            })  # fmt: skip
        return served, test

    def click(self, impression_id: str, result_id: str) -> ClickReceipt:
        """Log a click on a result of a served impression."""
        impression_id = plain_text(str(impression_id or "")).strip()
        if not impression_id or len(impression_id) > _IMPRESSION_ID_CHARS:
            raise InputError(f"impression_id is the id /search answered (1-{_IMPRESSION_ID_CHARS} characters).")
        result_id = validate_doc_id(result_id)
        with self._lock:
            served = self._served.get(impression_id)
            if served is None:
                raise ImpressionNotFoundError(
                    f"No impression '{impression_id[:_IMPRESSION_ID_CHARS]}' was served by this server (or it is "
                    f"older than its last {MAX_REMEMBERED_IMPRESSIONS:,}): send the impression_id /search answered."
                )
            if result_id not in served.shown:
                raise InputError(
                    f"The impression '{impression_id}' did not show '{plain_text(result_id)[:80]}': a click must name "
                    "the id of one of its results."
                )
            served = replace(served, clicked=served.clicked | {result_id})
            self._served[impression_id] = served  # its clicks live with it, forgotten with it
            self._append({"type": "click", "time": _now(), "impression_id": impression_id, "id": result_id})
        return ClickReceipt(
            impression_id=impression_id, id=result_id, team=served.team_of()[result_id],
            clicks_on_impression=len(served.clicked),
        )  # fmt: skip


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _records(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    if not path.exists():
        raise InputError(f"No interleaving log at {path.name}: `workbench serve` writes it when /search interleaves.")
    yield from json_records(
        decode_text(read_user_file(path, "interleaving log", MAX_CLICK_LOG_BYTES), path.name), path.name
    )


def _impression(record: dict[str, Any], where: str) -> tuple[OnlineTest, str, Impression]:
    """(its online test, the test's id as logged, the impression as served) of a logged impression."""
    ids, teams = record.get("ids"), record.get("teams")
    if not isinstance(ids, list) or not isinstance(teams, list) or len(ids) != len(teams):
        raise InputError(f"{where}: an impression needs ids and teams of one length.")
    if any(t not in ("A", "B") for t in teams):
        raise InputError(f"{where}: a team is A or B.")
    collection, a, b = (plain_text(str(record.get(key, default))) for key, default in
                        (("collection", ""), ("a", "A"), ("b", "B")))  # fmt: skip
    test = OnlineTest(collection, a, b)
    served = Impression(
        query=plain_text(str(record.get("query", ""))), shown=tuple(map(str, ids)), teams=tuple(teams),
        id=str(record.get("impression_id")), time=str(record.get("time", "")),
    )  # fmt: skip
    return test, str(record.get("test") or test.id), served  # logs written before tests were named have no id


def _online_tests(path: Path, collection: str | None) -> tuple[dict[str, OnlineTest], dict[str, dict[str, Impression]]]:
    """Each online test of a log (of `collection`, when named) by id, and its impressions by id, clicks in."""
    tests: dict[str, OnlineTest] = {}
    served: dict[str, dict[str, Impression]] = {}
    clicks: dict[str, set[str]] = {}
    for number, record in _records(path):
        kind = record.get("type")
        if kind == "impression":
            test, test_id, impression = _impression(record, f"{path.name}, line {number}")
            if collection is not None and test.collection != collection:
                continue
            tests.setdefault(test_id, test)
            served.setdefault(test_id, {})[impression.id] = impression
        elif kind == "click":
            clicks.setdefault(str(record.get("impression_id")), set()).add(str(record.get("id")))
        else:
            raise InputError(f"{path.name}, line {number}: the type is impression or click.")
    for impressions in served.values():
        for key, impression in impressions.items():
            impressions[key] = replace(impression, clicked=frozenset(clicks.get(key, ())))
    return tests, served


def analyse_interleaving_log(
    path: str | Path, collection: str | None = None, test: str | None = None
) -> InterleavingAnalysis:
    """Wins, ties and losses of ranking B against ranking A over the impressions of one online test in a log, with
    B's preference, its interval and the verdict. Tests are never pooled: a log that holds several (of one
    collection, when named) needs `test`, and the refusal lists them."""
    path = Path(path)
    tests, served = _online_tests(path, collection)
    where = f" of '{plain_text(collection)[:80]}'" if collection else ""
    if not tests:
        raise InputError(f"{path.name} holds no interleaved impression{where}.")
    if test is not None and test not in tests:
        raise InputError(
            f"{path.name} holds no online test '{plain_text(test)[:40]}'{where}: {_listed(tests, served)}."
        )
    if test is None and len(tests) > 1:
        raise InputError(
            f"{path.name} holds {len(tests)} online tests{where}; they are never pooled: name one with --test "
            f"({_listed(tests, served)})."
        )
    chosen = test or next(iter(tests))
    outcomes: list[Outcome] = [credit(impression) for impression in served[chosen].values()]
    return analyse(outcomes, a=tests[chosen].a, b=tests[chosen].b)


def _listed(tests: dict[str, OnlineTest], served: dict[str, dict[str, Impression]]) -> str:
    return "; ".join(
        f"{key}: {t.collection}, {t.a} against {t.b}, {len(served[key]):,} impressions" for key, t in tests.items()
    )

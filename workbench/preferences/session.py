"""A blind preference session: two search plans, a list of queries and a seed; for each query the two top n lists
are shown side by side, A on the left or the right as the seed draws it, and a person says which answers the
query better. What was shown and every choice are kept (never overwritten): the session is its provenance."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from workbench.errors import InputError
from workbench.evaluation.preference import Preferred
from workbench.experiments.query_sets import QueryItem
from workbench.experiments.record import new_id
from workbench.inputs import validate_experiment_id
from workbench.redact import plain_text, public_name
from workbench.types import CheckedModel, SearchPlan
from workbench.vocab import MAX_NAME_CHARS, MAX_QUERY_SET_QUERIES

Choice = Literal["left", "same", "right", "skip"]
CHOICES: tuple[Choice, ...] = ("left", "same", "right", "skip")
UNDO = "undo"  # the row an undo appends: it takes back the rater's last choice in the session


class PreferenceSession(CheckedModel):
    """What a blind session compares: configuration A (`first`) and B (`second`) over `queries`, the sides drawn
    per query from `seed`, and whose judgments (if any) say which list has the higher nDCG@10."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=new_id)
    name: str = ""
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    first: SearchPlan
    second: SearchPlan
    queries: list[QueryItem]
    query_source: str = ""
    judgments_of: str | None = None
    seed: int = 0

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return validate_experiment_id(value)

    @field_validator("name", "query_source")
    @classmethod
    def _label(cls, value: str) -> str:
        value = plain_text(value).strip()
        if len(value) > MAX_NAME_CHARS:
            raise InputError(f"A preference session's name is at most {MAX_NAME_CHARS} characters; got {len(value)}.")
        return value

    @model_validator(mode="after")
    def _queries(self) -> PreferenceSession:
        if not self.queries:
            raise InputError("A preference session needs at least one query.")
        if len(self.queries) > MAX_QUERY_SET_QUERIES:
            raise InputError(f"A preference session takes at most {MAX_QUERY_SET_QUERIES:,} queries.")
        ids = [q.id for q in self.queries]
        if len(set(ids)) != len(ids):
            raise InputError("A preference session's query ids must be unique.")
        return self

    @property
    def title(self) -> str:
        return self.name or f"{self.first.key} vs {self.second.key}"

    def a_on_left(self, query_id: str) -> bool:
        """Whether A is shown on the left for this query: a fair coin drawn from the seed and the query's id, the
        same on every machine and every reload."""
        digest = hashlib.sha256(f"{self.seed}\x00{query_id}".encode("utf-8", "surrogatepass")).digest()
        return digest[0] % 2 == 0

    def shared(self) -> PreferenceSession:
        """The session as it leaves this machine (an API answer, an export): a reranker that is a folder named by
        the folder's name, never where it sits on this server; a URL without its secrets."""
        plans = {
            side: plan.with_(reranker=public_name(plan.reranker)) if plan.reranks else plan
            for side, plan in (("first", self.first), ("second", self.second))
        }
        return self.model_copy(update=plans)

    def text_of(self, query_id: str) -> str:
        for item in self.queries:
            if item.id == query_id:
                return item.text
        raise InputError(f"The preference session {self.id} has no query '{plain_text(query_id)[:60]}'.")


class ShownLists(BaseModel):
    """The two top n lists one query showed (document ids in order), as they were first shown: kept so the
    verdict can say which had the higher nDCG@10, and so identical lists are ties without asking."""

    query_id: str
    a: list[str]
    b: list[str]

    @property
    def identical(self) -> bool:
        return self.a == self.b


class ChoiceRow(BaseModel):
    """One thing a rater did in a session: a choice between the sides as shown (`left`, `same`, `right`, `skip`)
    or an undo, with the side A was on, who, when, and the request's key (a retry with the same key adds nothing)."""

    session_id: str
    query_id: str
    rater: str
    choice: str
    a_side: Literal["left", "right"]
    created_at: datetime
    request_key: str

    @property
    def preferred(self) -> Preferred | None:
        """The configuration the choice prefers (`tie` for same; None for a skip)."""
        if self.choice == "same":
            return "tie"
        if self.choice in ("left", "right"):
            return "a" if self.choice == self.a_side else "b"
        return None


def standing_choices(rows: list[ChoiceRow]) -> dict[tuple[str, str], ChoiceRow]:
    """Each (query, rater)'s choice that stands, from the rows oldest first: an undo takes back that rater's last
    choice still standing (whatever its query), and a later choice on a query replaces an earlier one (two
    browsers choosing the same query count it once)."""
    taken: dict[str, list[ChoiceRow]] = {}
    for row in rows:
        history = taken.setdefault(row.rater, [])
        if row.choice == UNDO:
            if history:
                history.pop()
        else:
            history.append(row)
    standing: dict[tuple[str, str], ChoiceRow] = {}
    for history in taken.values():
        for row in history:  # oldest first: the latest of a query stands
            standing[(row.query_id, row.rater)] = row
    return standing

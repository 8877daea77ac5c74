"""The experiments store: every experiment and every named query set, beside the judgments.

SQLite in the data folder (`experiments.sqlite3`, WAL) by default; PostgreSQL (tables `experiments` and
`query_sets` in the workbench's schema) when WORKBENCH_SESSION_DB is a `postgresql://` URL, where the judgments
and sessions are. An experiment is kept whole as one JSON document, with the columns a listing needs beside it.
"""

from __future__ import annotations

import json
import logging
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from workbench.config import Settings
from workbench.errors import ExperimentNotFoundError, InputError
from workbench.experiments.query_sets import QuerySet
from workbench.experiments.record import Experiment
from workbench.redact import plain_text
from workbench.stores.kept import KeptStore, OnePerLocation, PostgresTables, SqliteFile, open_kept
from workbench.types import input_error
from workbench.vocab import DEFAULT_STORE_TIMEOUT

_COLUMNS = "id, name, collection, configuration, created_at, body"
log = logging.getLogger("workbench.experiments")


class ExperimentList(list[Experiment]):
    """Kept experiments, newest first; `unreadable` names the rows that could not be read as an experiment
    (their id and why), which a listing skips instead of failing."""

    def __init__(self, experiments: list[Experiment], unreadable: list[tuple[str, str]]) -> None:
        super().__init__(experiments)
        self.unreadable = unreadable

    def unreadable_words(self) -> str:
        """One line naming the rows skipped ('' when none was)."""
        if not self.unreadable:
            return ""
        named = "; ".join(f"{shown_id(i)} ({why})" for i, why in self.unreadable[:5])
        more = f" and {len(self.unreadable) - 5} more" if len(self.unreadable) > 5 else ""
        return (
            f"{len(self.unreadable)} kept experiment(s) could not be read and are left out: {named}{more}. "
            "`workbench experiments delete ID` removes one."
        )


def shown_id(experiment_id: str) -> str:
    """An id as read from the store, safe to print: quoted, control characters out, at most 40 characters."""
    return json.dumps(plain_text(str(experiment_id))[:40])


class ExperimentStore(KeptStore, ABC):
    """Experiments and query sets; safe to use from many threads."""

    store_name = "the experiments store"

    def save(self, experiment: Experiment) -> Experiment:
        """Keep an experiment (a new one, or new name, tags or notes for one kept before)."""
        with self._errors("save an experiment"):
            self._upsert(experiment)
        return experiment

    def get(self, experiment_id: str) -> Experiment:
        """The experiment with this id; ExperimentNotFoundError naming it otherwise."""
        with self._errors("read an experiment"):
            body = self._body(experiment_id)
        if body is None:
            raise ExperimentNotFoundError(
                f"No experiment has the id {shown_id(experiment_id)}: `workbench experiments list` lists them."
            )
        try:
            return Experiment.model_validate_json(body)
        except (ValidationError, ValueError) as exc:
            raise InputError(
                f"The kept experiment {shown_id(experiment_id)} cannot be read ({_why(exc)}): "
                "`workbench experiments delete` removes it."
            ) from None

    def list(
        self, *, collection: str | None = None, configuration: str | None = None, limit: int = 200
    ) -> ExperimentList:
        """Experiments, newest first, optionally of one collection or one configuration (a plan's key); a row
        that cannot be read is left out and named in the list's `unreadable`."""
        with self._errors("list experiments"):
            rows = self._bodies(collection, configuration, max(1, limit))
        experiments, unreadable = [], []
        for experiment_id, body in rows:
            try:
                experiments.append(Experiment.model_validate_json(body))
            except (ValidationError, ValueError) as exc:
                unreadable.append((experiment_id, _why(exc)))
        if unreadable:
            log.warning("%s", ExperimentList([], unreadable).unreadable_words())
        return ExperimentList(experiments, unreadable)

    def delete(self, experiment_id: str) -> None:
        """Remove an experiment by its id, without reading it (so one that cannot be read can be removed);
        ExperimentNotFoundError when there is none with this id."""
        with self._errors("delete an experiment"):
            found = self._body(experiment_id) is not None
        if not found:
            raise ExperimentNotFoundError(
                f"No experiment has the id {shown_id(experiment_id)}: `workbench experiments list` lists them."
            )
        with self._errors("delete an experiment"):
            self._delete(experiment_id)

    def save_query_set(self, query_set: QuerySet) -> QuerySet:
        """Keep a named query set (replacing one of the same name)."""
        with self._errors("save a query set"):
            self._upsert_set(query_set.name, query_set.model_dump_json())
        return query_set

    def query_set(self, name: str) -> QuerySet:
        """The query set of this name; InputError naming it otherwise."""
        with self._errors("read a query set"):
            body = self._set_body(name)
        if body is None:
            known = ", ".join(self.query_set_names()[:10]) or "none yet"
            raise ExperimentNotFoundError(f"No query set is named {json.dumps(name[:80])} (kept: {known}).")
        return QuerySet.model_validate_json(body)

    def query_set_names(self) -> list[str]:
        with self._errors("list query sets"):
            return self._set_names()

    def delete_query_set(self, name: str) -> None:
        self.query_set(name)
        with self._errors("delete a query set"):
            self._delete_set(name)

    @abstractmethod
    def _upsert(self, experiment: Experiment) -> None: ...

    @abstractmethod
    def _body(self, experiment_id: str) -> str | None: ...

    @abstractmethod
    def _bodies(self, collection: str | None, configuration: str | None, limit: int) -> list[tuple[str, str]]: ...

    @abstractmethod
    def _delete(self, experiment_id: str) -> None: ...

    @abstractmethod
    def _upsert_set(self, name: str, body: str) -> None: ...

    @abstractmethod
    def _set_body(self, name: str) -> str | None: ...

    @abstractmethod
    def _set_names(self) -> list[str]: ...

    @abstractmethod
    def _delete_set(self, name: str) -> None: ...


def _why(exc: Exception) -> str:
    return plain_text(str(input_error(exc) if isinstance(exc, ValidationError) else exc))[:120]


def _values(experiment: Experiment, at: Any) -> tuple[Any, ...]:
    return (
        experiment.id,
        experiment.name,
        experiment.plan.collection or "",
        experiment.configuration,
        at,
        experiment.model_dump_json(),
    )


def _where(collection: str | None, configuration: str | None, mark: str) -> tuple[str, list[Any]]:
    clauses, values = [], []
    for column, value in (("collection", collection), ("configuration", configuration)):
        if value is not None:
            clauses.append(f"{column} = {mark}")
            values.append(value)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), values


_UPSERT = (
    "INSERT INTO {table} ({columns}) VALUES ({marks}) ON CONFLICT (id) DO UPDATE SET name = excluded.name, "
    "body = excluded.body"
)
_UPSERT_SET = "INSERT INTO {table} (name, body) VALUES ({p}, {p}) ON CONFLICT (name) DO UPDATE SET body = excluded.body"


class SqliteExperimentStore(SqliteFile, ExperimentStore):
    """Experiments in one SQLite file (WAL, busy timeout), one connection per thread."""

    def __init__(self, path: str | Path) -> None:
        with self._errors("create its tables"):
            self._open_file(path)
        with self._errors("create its tables"), self._connection() as db:
            db.executescript(
                """
                CREATE TABLE IF NOT EXISTS experiments (
                    id TEXT PRIMARY KEY, name TEXT NOT NULL, collection TEXT NOT NULL, configuration TEXT NOT NULL,
                    created_at TEXT NOT NULL, body TEXT NOT NULL);
                CREATE INDEX IF NOT EXISTS experiments_by_time ON experiments (created_at);
                CREATE TABLE IF NOT EXISTS query_sets (name TEXT PRIMARY KEY, body TEXT NOT NULL);
                """
            )

    def _upsert(self, experiment: Experiment) -> None:
        statement = _UPSERT.format(table="experiments", columns=_COLUMNS, marks=", ".join("?" * 6))
        with self._connection() as db:
            db.execute(statement, _values(experiment, experiment.created_at.isoformat()))

    def _body(self, experiment_id: str) -> str | None:
        with self._connection() as db:
            found = db.execute("SELECT body FROM experiments WHERE id = ?", (experiment_id,)).fetchone()
        return found[0] if found else None

    def _bodies(self, collection: str | None, configuration: str | None, limit: int) -> list[tuple[str, str]]:
        where, values = _where(collection, configuration, "?")
        with self._connection() as db:
            found = db.execute(
                f"SELECT id, body FROM experiments{where} ORDER BY created_at DESC, id LIMIT ?", (*values, limit)
            )
            return [(row[0], row[1]) for row in found.fetchall()]

    def _delete(self, experiment_id: str) -> None:
        with self._connection() as db:
            db.execute("DELETE FROM experiments WHERE id = ?", (experiment_id,))

    def _upsert_set(self, name: str, body: str) -> None:
        with self._connection() as db:
            db.execute(_UPSERT_SET.format(table="query_sets", p="?"), (name, body))

    def _set_body(self, name: str) -> str | None:
        with self._connection() as db:
            found = db.execute("SELECT body FROM query_sets WHERE name = ?", (name,)).fetchone()
        return found[0] if found else None

    def _set_names(self) -> list[str]:
        with self._connection() as db:
            return [row[0] for row in db.execute("SELECT name FROM query_sets ORDER BY name")]

    def _delete_set(self, name: str) -> None:
        with self._connection() as db:
            db.execute("DELETE FROM query_sets WHERE name = ?", (name,))


class PostgresExperimentStore(PostgresTables, ExperimentStore):
    """Experiments in PostgreSQL (tables `experiments` and `query_sets` in a schema)."""

    def __init__(self, url: str, *, schema: str = "workbench", timeout: float = DEFAULT_STORE_TIMEOUT) -> None:
        self._open_pool(url, schema, timeout)
        self._create_tables(
            f"CREATE TABLE IF NOT EXISTS {self._schema}.experiments (id text PRIMARY KEY, name text NOT NULL, "
            "collection text NOT NULL, configuration text NOT NULL, created_at timestamptz NOT NULL, "
            "body text NOT NULL)",
            f"CREATE INDEX IF NOT EXISTS experiments_by_time ON {self._schema}.experiments (created_at)",
            f"CREATE TABLE IF NOT EXISTS {self._schema}.query_sets (name text PRIMARY KEY, body text NOT NULL)",
        )

    def _upsert(self, experiment: Experiment) -> None:
        table = f"{self._schema}.experiments"
        with self._cursor() as cur:
            cur.execute(
                _UPSERT.format(table=table, columns=_COLUMNS, marks=", ".join(["%s"] * 6)),
                _values(experiment, experiment.created_at),
            )

    def _body(self, experiment_id: str) -> str | None:
        with self._cursor() as cur:
            cur.execute(f"SELECT body FROM {self._schema}.experiments WHERE id = %s", [experiment_id])
            found = cur.fetchone()
        return found[0] if found else None

    def _bodies(self, collection: str | None, configuration: str | None, limit: int) -> list[tuple[str, str]]:
        where, values = _where(collection, configuration, "%s")
        with self._cursor() as cur:
            cur.execute(
                f"SELECT id, body FROM {self._schema}.experiments{where} ORDER BY created_at DESC, id LIMIT %s",
                [*values, limit],
            )
            return [(row[0], row[1]) for row in cur.fetchall()]

    def _delete(self, experiment_id: str) -> None:
        with self._cursor() as cur:
            cur.execute(f"DELETE FROM {self._schema}.experiments WHERE id = %s", [experiment_id])

    def _upsert_set(self, name: str, body: str) -> None:
        with self._cursor() as cur:
            cur.execute(_UPSERT_SET.format(table=f"{self._schema}.query_sets", p="%s"), [name, body])

    def _set_body(self, name: str) -> str | None:
        with self._cursor() as cur:
            cur.execute(f"SELECT body FROM {self._schema}.query_sets WHERE name = %s", [name])
            found = cur.fetchone()
        return found[0] if found else None

    def _set_names(self) -> list[str]:
        with self._cursor() as cur:
            cur.execute(f"SELECT name FROM {self._schema}.query_sets ORDER BY name")
            return [row[0] for row in cur.fetchall()]

    def _delete_set(self, name: str) -> None:
        with self._cursor() as cur:
            cur.execute(f"DELETE FROM {self._schema}.query_sets WHERE name = %s", [name])


_stores: OnePerLocation[ExperimentStore] = OnePerLocation()


def open_experiment_store(settings: Settings) -> ExperimentStore:
    """The experiments store the settings name (one per location per process): PostgreSQL when
    WORKBENCH_SESSION_DB is a postgresql:// URL, else `experiments.sqlite3` in the data folder."""
    return open_kept(
        _stores, settings, "experiments.sqlite3", postgres=PostgresExperimentStore, sqlite=SqliteExperimentStore
    )

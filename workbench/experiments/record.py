"""An experiment: one evaluation, kept. What was asked (the search plan, the query set and the judgments as they
were, each with a checksum), what was measured (the report, per-query figures, both TREC runs) and what ran it
(a manifest of versions, the machine, the reranker's fingerprint and backend, the embedder)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import sys
import uuid
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator

from workbench.errors import InputError
from workbench.evaluation.io import Dataset, Qrels, Run
from workbench.evaluation.preference import PreferenceVerdict
from workbench.evaluation.report import EvaluationReport, ServedFigures
from workbench.evaluation.verdict import Verdict
from workbench.inputs import validate_experiment_id
from workbench.redact import plain_text, public_name
from workbench.types import CheckedModel, SearchPlan, input_error
from workbench.vocab import MAX_EXPERIMENT_NOTES, MAX_EXPERIMENT_TAGS, MAX_NAME_CHARS, PRIMARY_METRIC

_PACKAGES = ("torch", "sentence-transformers", "transformers", "chromadb", "qdrant-client", "ir-measures", "numpy")


def checksum(value: Any) -> str:
    """A short, stable hash of a JSON-able value (keys sorted): equal inputs, equal checksums."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def new_id() -> str:
    """An experiment id: 12 hex digits, random (safe in a URL, a file name and a shell)."""
    return uuid.uuid4().hex[:12]


class QuerySetUsed(BaseModel):
    """The queries an experiment ran: the set's name, how many, and the checksum of their ids and texts."""

    name: str
    queries: int
    checksum: str


class JudgmentsUsed(BaseModel):
    """The judgments an experiment was scored on, as they were then: where they came from, how many, a checksum."""

    source: str
    queries: int
    judgments: int
    checksum: str


class Manifest(BaseModel):
    """What ran the experiment: versions, the machine, and the models as they were."""

    workbench: str
    python: str
    platform: str
    machine: str
    cpus: int
    packages: dict[str, str]
    embedder: str
    reranker_fingerprint: str | None = None
    reranker_backend: str | None = None
    collection_chunks: int | None = None
    source: str | None = None  # the first stage's kind and place, and who wrote it ("qdrant /srv/q · LangChain")
    source_mapping: str | None = None  # checksum of its [collections.<name>] table (layout, keys, URL, template)

    @classmethod
    def here(
        cls,
        *,
        embedder: str,
        reranker_fingerprint: str | None,
        reranker_backend: str | None,
        collection_chunks: int | None,
        source: str | None = None,
        source_mapping: str | None = None,
    ) -> Manifest:
        """This process's manifest."""
        packages = {}
        for name in _PACKAGES:
            try:
                packages[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                continue
        try:
            version = metadata.version("rerank-workbench")
        except metadata.PackageNotFoundError:
            version = "unknown"
        return cls(
            workbench=version,
            python=sys.version.split()[0],
            platform=platform.platform(terse=True),
            machine=platform.machine(),
            cpus=os.cpu_count() or 1,
            packages=packages,
            embedder=embedder,
            reranker_fingerprint=reranker_fingerprint,
            reranker_backend=reranker_backend,
            collection_chunks=collection_chunks,
            source=source,
            source_mapping=source_mapping,
        )


def _label(value: str, what: str) -> str:
    value = plain_text(value).strip()
    if len(value) > MAX_NAME_CHARS:
        raise InputError(f"An experiment's {what} is at most {MAX_NAME_CHARS} characters; got {len(value)}.")
    return value


class Experiment(CheckedModel):
    """One evaluation, kept: the plan, the query set and judgments it used, the report, both runs, the manifest;
    and a name, tags and notes a person gives it."""

    id: str = Field(default_factory=new_id)
    name: str = ""
    tags: list[str] = Field(default_factory=list)
    notes: str = ""
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    plan: SearchPlan
    query_set: QuerySetUsed
    judgments: JudgmentsUsed
    manifest: Manifest
    report: dict[str, Any]
    queries: dict[str, str]
    qrels: Qrels
    before_run: Run
    after_run: Run

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return validate_experiment_id(value)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _label(value, "name")

    @field_validator("report")
    @classmethod
    def _report(cls, value: dict[str, Any]) -> dict[str, Any]:
        """The report must read as the report an evaluation makes, every figure a finite number."""
        try:
            EvaluationReport.model_validate(value)
        except ValidationError as exc:
            raise InputError(f"report.{str(input_error(exc))[:160]}") from None
        _finite(value, "report")
        return value

    @field_validator("before_run", "after_run")
    @classmethod
    def _run(cls, value: Run) -> Run:
        _finite(value, "run")
        return value

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: list[str]) -> list[str]:
        tags = sorted({_label(tag, "tag") for tag in value if tag and tag.strip()})
        if len(tags) > MAX_EXPERIMENT_TAGS:
            raise InputError(f"An experiment takes at most {MAX_EXPERIMENT_TAGS} tags; got {len(tags)}.")
        return tags

    @field_validator("notes")
    @classmethod
    def _notes(cls, value: str) -> str:
        value = plain_text(value)
        if len(value) > MAX_EXPERIMENT_NOTES:
            raise InputError(f"An experiment's notes are at most {MAX_EXPERIMENT_NOTES} characters; got {len(value)}.")
        return value

    @property
    def title(self) -> str:
        """Its name, or its plan's key when it has none."""
        return self.name or self.plan.key

    @property
    def configuration(self) -> str:
        """The configuration it measured, by the plan's key (the trend chart groups experiments by it)."""
        return self.plan.key

    def evaluation(self) -> EvaluationReport:
        """The report as it was measured, with its runs and judgments (so every view and download works)."""
        report = EvaluationReport.model_validate(self.report)
        report.before_run, report.after_run, report.qrels = self.before_run, self.after_run, self.qrels
        return report

    def dataset(self) -> Dataset:
        """The query set and judgments it used, as they were: what "run again" runs."""
        return Dataset(self.query_set.name, self.queries, self.qrels)

    @property
    def verdict(self) -> Verdict | None:
        found = self.report.get("verdict")
        return Verdict.model_validate(found) if found else None

    def figure(self, metric: str = PRIMARY_METRIC, stage: str = "after") -> float:
        """One figure of the report: a metric after reranking (or `stage="before"`, the first stage's)."""
        return float(self.report[stage][metric])

    def summary(self) -> ExperimentSummary:
        """One row of the experiments list."""
        verdict = self.verdict
        preference = self.report.get("preference")
        said = verdict.direction if verdict else None
        if preference:  # a blind preference session kept: its outcome is the verdict people gave
            said = f"blind: {PreferenceVerdict.model_validate(preference).outcome}"
        return ExperimentSummary(
            id=self.id, name=self.name, created_at=self.created_at, configuration=self.configuration,
            collection=self.plan.collection or "", query_set=self.query_set.name, queries=self.query_set.queries,
            metric=PRIMARY_METRIC, before=self.figure(stage="before"), after=self.figure(),
            verdict=said, tags=self.tags,
        )  # fmt: skip

    def cost(self) -> dict[str, float]:
        """What the run cost: its wall time, the (query, document) pairs the reranker was asked to score, how many
        of them came from the score cache, and the median rerank time of a search."""
        report = self.report
        pairs = report["queries"] * self.plan.k if self.plan.reranks else 0
        return {
            "seconds": float(report.get("seconds", 0.0)),
            "pairs_reranked": float(pairs),
            "pairs_from_cache": float(report.get("score_cache_hits", 0)),
            "rerank_ms_p50": float(report.get("latency_p50", {}).get("rerank", 0.0)),
        }

    def shared(self) -> Experiment:
        """The experiment as it leaves this machine (an export, an API or MCP answer): a reranker that is a folder
        named by the folder's name, never where it sits on this server; a URL without its secrets."""
        reranker = public_name(self.plan.reranker) if self.plan.reranks else self.plan.reranker
        return self.model_copy(update={"plan": self.plan.with_(reranker=reranker)})

    def view(self) -> ExperimentView:
        """What opening the experiment shows (the API's and the MCP tool's answer)."""
        report = self.evaluation()
        verdict = report.verdict
        return ExperimentView(
            **self.summary().model_dump(), plan=self.shared().plan, notes=self.notes,
            verdict_words=verdict.words() if verdict else None, metrics=report.metric_rows(),
            preference_words=report.preference.lines() if report.preference else None,
            as_served=report.served,
            query_set_used=self.query_set, judgments=self.judgments, manifest=self.manifest,
            latency_p50=report.latency_p50, latency_p95=report.latency_p95, warnings=report.warnings,
            cost=self.cost(),
            most_hurt=[o.model_dump() for o in report.most_hurt()],
            most_helped=[o.model_dump() for o in report.most_helped()],
        )  # fmt: skip


class ExperimentSummary(BaseModel):
    """One experiment in a list: which configuration on which queries, its primary metric before and after
    reranking, and the verdict."""

    id: str
    name: str
    created_at: datetime
    configuration: str
    collection: str
    query_set: str
    queries: int
    metric: str
    before: float
    after: float
    verdict: str | None
    tags: list[str]


class ExperimentView(ExperimentSummary):
    """An experiment opened: the summary, the plan, every metric with its interval, the verdict in words, the
    queries most hurt and helped, what it ran on, and its notes."""

    plan: SearchPlan
    notes: str
    verdict_words: str | None
    preference_words: list[str] | None = None  # a blind preference session kept: its verdict in words
    as_served: ServedFigures | None = None  # run under a rerank budget: the verdict as a fail-open service serves it
    metrics: list[dict[str, Any]]
    query_set_used: QuerySetUsed
    judgments: JudgmentsUsed
    manifest: Manifest
    latency_p50: dict[str, float]
    latency_p95: dict[str, float]
    cost: dict[str, float]
    warnings: list[str]
    most_hurt: list[dict[str, Any]]
    most_helped: list[dict[str, Any]]


def _finite(value: Any, where: str) -> None:
    """InputError naming the first number in `value` (nested dicts and lists) that is not finite."""
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{where} holds {value}, where a finite number belongs.")
    if isinstance(value, dict):
        for key, item in value.items():
            _finite(item, f"{where}.{plain_text(str(key))[:40]}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _finite(item, f"{where}[{i}]")


def check_checksums(experiment: Experiment) -> None:
    """InputError when the query set's or the judgments' checksum (or count) is not the one their content gives:
    an experiment file edited by hand (or damaged) after it was made."""
    queries, qrels = experiment.queries, experiment.qrels
    expected = query_set_used(experiment.query_set.name, queries)
    if (experiment.query_set.checksum, experiment.query_set.queries) != (expected.checksum, expected.queries):
        raise InputError(
            "The experiment's queries do not match their checksum: the file was changed after it was made, so its "
            "figures cannot be trusted. Export it again from the workbench that made it."
        )
    graded = sum(len(judged) for judged in qrels.values())
    if (experiment.judgments.checksum, experiment.judgments.judgments) != (checksum(qrels), graded):
        raise InputError(
            "The experiment's judgments do not match their checksum: the file was changed after it was made, so its "
            "figures cannot be trusted. Export it again from the workbench that made it."
        )


def judgments_used(dataset: Dataset, source: str) -> JudgmentsUsed:
    """The dataset's judgments (of the queries it runs), described and checksummed."""
    qrels = {qid: dataset.qrels[qid] for qid in dataset.queries}
    return JudgmentsUsed(
        source=source,
        queries=len(qrels),
        judgments=sum(len(j) for j in qrels.values()),
        checksum=checksum(qrels),
    )


def query_set_used(name: str, queries: dict[str, str]) -> QuerySetUsed:
    return QuerySetUsed(name=name, queries=len(queries), checksum=checksum(queries))


def changed_inputs(first: Experiment, second: Experiment) -> list[str]:
    """What differs between the inputs of two experiments (empty: the same plan, queries, judgments, models and
    collection size, so their figures must agree to the last digit)."""
    checks = {
        "the search plan": (first.plan.model_dump(), second.plan.model_dump()),
        "the query set": (first.query_set.checksum, second.query_set.checksum),
        "the judgments": (first.judgments.checksum, second.judgments.checksum),
        "the embedder": (first.manifest.embedder, second.manifest.embedder),
        "the reranker's model files": (first.manifest.reranker_fingerprint, second.manifest.reranker_fingerprint),
        "the reranker's backend": (first.manifest.reranker_backend, second.manifest.reranker_backend),
        "the collection's size": (first.manifest.collection_chunks, second.manifest.collection_chunks),
        "the first stage's source": (
            (first.manifest.source, first.manifest.source_mapping),
            (second.manifest.source, second.manifest.source_mapping),
        ),
    }
    return [what for what, (a, b) in checks.items() if a != b]

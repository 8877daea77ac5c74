"""The plain data types every layer shares: what a store returns, what a search returns, what ingest reports.

A `SearchResult` is plain data (pydantic): it serialises to JSON, compares by value and re-slices to any
top_n with `top(n)` without running a model.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, computed_field, create_model, model_validator

from workbench.errors import InputError
from workbench.fusion import first_stage_name, parse_fusion
from workbench.inputs import parse_filters, validate_depths, validate_min_score, validate_retrieval
from workbench.passages import parse_long_documents
from workbench.redact import hide_paths, plain_text, public_name
from workbench.vocab import (
    DEFAULT_K,
    DEFAULT_RERANKER_CHOICE,
    DEFAULT_TOP_N,
    MAX_K,
    NO_RERANKER,
    RETRIEVAL,
    SEARCH_SERVICE_FIRST_STAGE,
    SEARCH_SERVICE_STORE,
    RetrievalMode,
    RetrievalModeInfo,
    ScoreScale,
)

Metadata = dict[str, Any]
Movement = Literal["up", "down", "same", "new"]


class Chunk(BaseModel):
    """One piece of a document as stored: a stable id, its text and metadata."""

    id: str
    text: str
    metadata: Metadata = Field(default_factory=dict)

    @property
    def content(self) -> str:
        """The text, under the name LangChain-style callers use."""
        return self.text


Retrieval = RetrievalMode
SourceScores = dict[str, dict[str, float]]


class Hit(Chunk):
    """A chunk returned by first-stage retrieval: cosine similarity for dense search, the BM25 score for
    BM25, the fused RRF score for hybrid (higher is better). `sources` has each retriever's own score and
    rank when several were fused."""

    score: float
    sources: SourceScores = Field(default_factory=dict)


class Candidate(Chunk):
    """One first-stage candidate, with its place before and after reranking (ranks start at 1).

    `vector_score` is the first-stage score (cosine for dense retrieval, BM25 for bm25, RRF for hybrid);
    `sources` has each retriever's own score and rank under hybrid retrieval.
    """

    vector_score: float
    vector_rank: int
    rerank_score: float | None = None
    rerank_rank: int
    sources: SourceScores = Field(default_factory=dict)


class RankedHit(Chunk):
    """One row of the reranked top n: both scores, both ranks and how far the document moved."""

    vector_score: float
    rerank_score: float | None
    rank_before: int
    rank_after: int
    movement: Movement
    shift: int = Field(description="rank_before - rank_after: positive means it moved up")

    @property
    def movement_label(self) -> str:
        """Human form of the movement: ↑3, ↓2, new or =."""
        if self.movement == "new":
            return f"new (was {self.rank_before})"
        if self.shift > 0:
            return f"↑{self.shift}"
        if self.shift < 0:
            return f"↓{-self.shift}"
        return "="


def input_error(exc: ValidationError, what: str = "a field") -> InputError:
    """A ValidationError as the InputError a user reads: the first problem, where it is and what is wrong."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
    if first.get("type") == "extra_forbidden":
        message = f"not {what}"
    return InputError(f"{where}: {message}" if where else message)


class CheckedModel(BaseModel):
    """A model whose construction raises InputError (never a ValidationError) naming the first wrong field."""

    def __init__(self, **given: Any) -> None:
        try:
            super().__init__(**given)
        except ValidationError as exc:
            raise input_error(exc) from None


def _reranker_part(name: str) -> str:
    """A reranker in a plan's key: a folder or hub id by its last part, a service by its whole URL (two services
    differ by host or path, and must not share a key)."""
    return name if "://" in name else name.rsplit("/", 1)[-1]


class SearchPlan(BaseModel):
    """How a query is answered: which collection, which first stage and how deep (k), how many results (top n),
    which metadata filters, which reranker, and any score cutoff. Validated once, when it is made; frozen, so a
    plan that exists is a valid one, and one value names "a configuration" everywhere (services, pages, the CLI,
    the API; saved experiments by `key`).

    `collection` None is the settings' default collection; `reranker` is a model id, None for no reranking, or
    "default" for the one the settings configure. `Engine.plan(...)` fills the settings' defaults.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    collection: str | None = Field(None, description="the collection searched (default: WORKBENCH_COLLECTION)")
    retrieval: RetrievalMode = Field("dense", description="the first stage: dense, bm25 or hybrid")
    fusion: str | None = Field(
        None,
        description="how hybrid fuses its lists: 'rrf k=60 dense=1 bm25=1', or 'minmax', 'zscore' or 'l2' with the "
        "dense list's weight ('minmax 0.7'); null: RRF with WORKBENCH_RRF_K and the WORKBENCH_HYBRID_*_WEIGHT",
    )
    k: int = Field(DEFAULT_K, ge=1, le=MAX_K, description="first-stage candidates reranked")
    top_n: int = Field(DEFAULT_TOP_N, ge=1, le=MAX_K, description="results kept after reranking (at most k)")
    filters: dict[str, Any] = Field(default_factory=dict, description="metadata equalities, e.g. {'page': 2}")
    reranker: str | None = Field(
        DEFAULT_RERANKER_CHOICE,
        description="'default' (the configured reranker), null or 'none' (no reranking), or a model id "
        "(a name in WORKBENCH_MODELS_DIR, a hub id, a service URL)",
    )
    min_score: float | None = Field(
        None, allow_inf_nan=False, description="drop results scoring below this (the reranker's score when reranking)"
    )
    long_documents: str | None = Field(
        None,
        description="what the reranker does with a document longer than its window: null or 'firstp' (the first "
        "window), 'maxp' (the best of the first 4 windows) or 'sump' (their probabilities added), with windows=N "
        "and stride=N (tokens)",
    )
    skip_gap: float | None = Field(
        None, ge=0, allow_inf_nan=False,
        description="rerank only when the first stage is unsure: when its top two scores differ by less than this "
        "(a skip policy; null: always rerank). A query it skips keeps the first stage's order and costs no model call",
    )  # fmt: skip

    def __init__(self, **given: Any) -> None:
        """A plan from its fields; InputError (never a ValidationError) naming the first field that is wrong."""
        try:
            super().__init__(**given)
        except ValidationError as exc:
            raise input_error(exc, "a field of a search plan") from None

    @model_validator(mode="before")
    @classmethod
    def _validated(cls, given: Any) -> Any:
        if not isinstance(given, dict):
            return given
        values = dict(given)
        if values.get("fusion") is not None and values.get("retrieval") is None:
            values["retrieval"] = "hybrid"  # a fusion named alone asks for the first stage it fuses
        if "retrieval" in values:
            values["retrieval"] = validate_retrieval(values["retrieval"])
        k = values.get("k", DEFAULT_K)
        top_n = values.get("top_n")
        if top_n is None:  # the default top n, never deeper than k
            top_n = min(DEFAULT_TOP_N, k) if isinstance(k, int) and not isinstance(k, bool) and k > 0 else DEFAULT_TOP_N
        values["k"], values["top_n"] = validate_depths(k, top_n)
        values["filters"] = parse_filters(values.get("filters"))
        values["min_score"] = validate_min_score(values.get("min_score"))
        if values.get("fusion") is not None:
            values["fusion"] = parse_fusion(values["fusion"]).spec
            if values.get("retrieval", "dense") != "hybrid":
                raise InputError(
                    f"A fusion ('{values['fusion']}') fuses hybrid retrieval's two lists; this plan's first stage is "
                    f"{values.get('retrieval', 'dense')}. Choose retrieval 'hybrid', or leave the fusion out."
                )
        if values.get("long_documents") is not None:
            strategy = parse_long_documents(values["long_documents"])
            values["long_documents"] = strategy.spec if strategy.windowed else None  # FirstP: what no field says
        collection = values.get("collection")
        if collection is not None and (not isinstance(collection, str) or not collection.strip()):
            raise InputError(f"The collection must be named by text; got {plain_text(repr(collection))[:40]}.")
        reranker = values.get("reranker", DEFAULT_RERANKER_CHOICE)
        if reranker is not None and not isinstance(reranker, str):
            raise InputError(f"reranker must be a model id, a folder, None or 'default'; got {reranker!r}.")
        return values

    @property
    def reranks(self) -> bool:
        """Whether this plan reranks at all."""
        return self.reranker is not None and self.reranker.strip().lower() not in {NO_RERANKER, ""}

    @property
    def key(self) -> str:
        """A stable, readable name of the plan: equal plans have equal keys, and a person can read one
        ('demo · hybrid k=50 → 10 · minilm-l6-qa-reranker · page=2 · min 0.5')."""
        parts = [
            self.collection or "(default collection)",
            f"{first_stage_name(self.retrieval, self.fusion)} k={self.k} → {self.top_n}",
            _reranker_part(public_name(self.reranker) or "") if self.reranks else NO_RERANKER,
        ]
        if self.filters:
            parts.append(",".join(f"{k}={json.dumps(v)}" for k, v in sorted(self.filters.items())))
        if self.min_score is not None:
            parts.append(f"min {self.min_score:g}")
        if self.long_documents is not None:
            parts.append(self.long_documents)
        if self.skip_gap is not None and self.reranks:
            parts.append(f"rerank if gap < {self.skip_gap:g}")
        return " · ".join(parts)

    def with_(self, **changes: Any) -> SearchPlan:
        """This plan with some fields changed, validated again (a first stage other than hybrid drops the fusion,
        which only hybrid has)."""
        if changes.get("retrieval", "hybrid") != "hybrid" and "fusion" not in changes:
            changes["fusion"] = None
        return SearchPlan(**{**self.model_dump(), **changes})


def _optional_plan_fields() -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, info in SearchPlan.model_fields.items():
        default = info.default if name == "reranker" else None  # None there means no reranking
        field = Field(default, description=info.description)
        field.metadata.extend(info.metadata)  # its bounds (ge, le): a request's schema states them
        fields[name] = (info.annotation | None, field)
    return fields


PlanFields = create_model(
    "PlanFields",
    __config__=ConfigDict(extra="forbid"),
    __doc__="A search plan as a request sends it: SearchPlan's fields, types, bounds and descriptions, each optional "
    "(None takes the server's default through `Engine.plan`; `reranker` defaults to 'default'). Derived from "
    "SearchPlan, so a field added to the plan reaches every request.",
    **_optional_plan_fields(),
)


class StageTimings(BaseModel):
    """Wall-clock milliseconds per stage of one search."""

    embed_ms: float = 0.0
    search_ms: float = 0.0
    rerank_ms: float = 0.0
    total_ms: float = 0.0


class CacheStats(BaseModel):
    """What the caches saved on one search."""

    score_hits: int = 0
    score_misses: int = 0
    result_cached: bool = Field(False, description="the whole result came from the engine's result cache")


class SearchResult(BaseModel):
    """Candidates in vector order, the same documents reranked, both scores, movements and timings."""

    model_config = ConfigDict(frozen=True)

    query: str
    collection: str
    store: str
    k: int
    top_n: int
    filters: Metadata = Field(default_factory=dict)
    retrieval: Retrieval = "dense"
    fusion: str | None = Field(None, description="how hybrid fused its lists (null: RRF with the settings' k)")
    long_documents: str | None = Field(None, description="MaxP or SumP over windows (null: FirstP, the first window)")
    windows_scored: int = Field(0, description="windows the reranker scored for the candidates (MaxP and SumP)")
    embedding_model: str
    reranker_model: str | None
    reranker_backend: str | None = Field(None, description="what scored the pairs, e.g. torch:cpu, onnx-int8:cpu")
    score_scale: ScoreScale | None = Field(
        None, description="the rerank scores' scale: 'logit' (a model's raw output) or 'probability' (0 to 1)"
    )
    candidates: list[Candidate]
    timings: StageTimings
    cache: CacheStats = Field(default_factory=CacheStats)
    duplicates_removed: int = 0
    skip_gap: float | None = Field(None, description="the plan's skip policy (SearchPlan.skip_gap)")
    notes: list[str] = Field(
        default_factory=list,
        description="what the reranker said of this list beyond its scores: a listwise answer that needed a repair",
    )
    rerank_skipped: bool = Field(
        False, description="the plan's skip policy kept the first stage's order: the first stage was sure enough"
    )
    rerank_fallback: str | None = Field(
        None,
        description="served under a rerank budget, the first stage's order was served instead of the reranked one, "
        "and why: 'budget' (the reranker took longer), 'circuit open' (it failed again and again: skipped for now) "
        "or 'error: ...'; null when reranked as planned",
    )
    min_score: float | None = Field(
        None,
        description="results of the top n scoring below this (the reranker's score, else the first stage's) "
        "are dropped from `reranked` and counted in `below_min_score`",
    )

    def final_score(self, candidate: Candidate) -> float:
        """The score the final order is by: the reranker's, or the first stage's where nothing reranked."""
        return candidate.rerank_score if candidate.rerank_score is not None else candidate.vector_score

    def _top_by_rerank(self) -> list[Candidate]:
        return sorted(self.candidates, key=lambda c: c.rerank_rank)[: self.top_n]

    @property
    def first_stage(self) -> RetrievalModeInfo:
        """What ranked the candidates, named by its source: the plan's retrieval mode, or the search service's own
        order for a collection that is a search service's API (its 'dense' is the service's ranking, not vectors)."""
        if self.store == SEARCH_SERVICE_STORE and self.retrieval == "dense":
            return SEARCH_SERVICE_FIRST_STAGE
        return RETRIEVAL.get(self.retrieval, RETRIEVAL["dense"])

    @property
    def plan(self) -> SearchPlan:
        """The plan this result answered, its reranker named by the model that ran (None when none did)."""
        return SearchPlan(
            collection=self.collection, retrieval=self.retrieval, fusion=self.fusion, k=self.k, top_n=self.top_n,
            filters=self.filters, reranker=self.reranker_model, min_score=self.min_score,
            long_documents=self.long_documents, skip_gap=self.skip_gap,
        )  # fmt: skip

    @computed_field  # type: ignore[prop-decorator]
    @property
    def below_min_score(self) -> int:
        """How many of the reranked top n were dropped for scoring below `min_score`."""
        if self.min_score is None:
            return 0
        return sum(1 for c in self._top_by_rerank() if self.final_score(c) < self.min_score)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def reranked(self) -> list[RankedHit]:
        """The top_n candidates in reranked order (less those below `min_score`, when one is set)."""
        by_rerank = self._top_by_rerank()
        if self.min_score is not None:
            by_rerank = [c for c in by_rerank if self.final_score(c) >= self.min_score]
        rows = []
        for c in by_rerank:
            shift = c.vector_rank - c.rerank_rank
            if c.vector_rank > self.top_n:
                movement: Movement = "new"
            else:
                movement = "up" if shift > 0 else "down" if shift < 0 else "same"
            rows.append(
                RankedHit(
                    id=c.id,
                    text=c.text,
                    metadata=c.metadata,
                    vector_score=c.vector_score,
                    rerank_score=c.rerank_score,
                    rank_before=c.vector_rank,
                    rank_after=c.rerank_rank,
                    movement=movement,
                    shift=shift,
                )
            )
        return rows

    @computed_field  # type: ignore[prop-decorator]
    @property
    def dropped(self) -> list[Candidate]:
        """Candidates in the vector top_n that reranking pushed out of the top_n."""
        return [c for c in self.candidates[: self.top_n] if c.rerank_rank > self.top_n]

    def with_min_score(self, min_score: float | None) -> SearchResult:
        """The same result with results below `min_score` dropped from the top n (None keeps them all)."""
        return self.model_copy(update={"min_score": min_score})

    def top(self, n: int) -> SearchResult:
        """The same result re-sliced to a top n of `n` (1 ≤ n ≤ number of candidates); runs no model."""
        if not 1 <= n <= max(len(self.candidates), 1):
            raise InputError(f"top_n must be between 1 and {len(self.candidates)} (the candidates held); got {n}.")
        return self.model_copy(update={"top_n": n})

    def to_json(self, **kwargs: Any) -> str:
        """JSON of the whole result, including the computed `reranked` and `dropped` lists."""
        return self.model_dump_json(**kwargs)


class IngestStatus(BaseModel):
    """An ingest under way (or interrupted), as another process reads it (see `workbench.ingest_status`)."""

    collection: str
    store_location: str  # the store's kind and redacted URL or folder (`StoreConfig.where`)
    embedding_model: str
    done: int
    total: int
    started: float  # seconds since the epoch
    updated: float
    pid: int
    host: str
    process_started: float | None = None  # when the process started (seconds since boot): a reused pid differs
    rate: float | None = None  # chunks per second, measured in this ingest
    characters_left: int | None = None  # in the chunks still to embed, once they are known
    character_rate: float | None = None  # characters embedded and stored per second
    estimated: bool = True  # the character rate is this machine's last ingest's, not yet this one's
    running: bool = True

    @property
    def seconds_left(self) -> float | None:
        """How long the rest takes: its characters at the character rate (chunk lengths vary tenfold between
        corpora, characters per second hardly), else its chunks at the chunk rate; None without either."""
        if self.characters_left is not None and self.character_rate:
            return self.characters_left / self.character_rate
        return (self.total - self.done) / self.rate if self.rate else None

    def words(self) -> str:
        """'ingesting 1,200 of 5,183 chunks (5.2 chunks/s, about 13 min left)', or what an interrupted one left."""
        if not self.running:
            return f"interrupted at {self.done:,} of {self.total:,} chunks: the same ingest again resumes it"
        left = self.seconds_left
        pace = [f"{self.rate:.1f} chunks/s"] if self.rate and not self.estimated else []
        pace += [f"about {spoken_duration(left)} left"] if left is not None else []
        return f"ingesting {self.done:,} of {self.total:,} chunks" + (f" ({', '.join(pace)})" if pace else "")


def spoken_duration(seconds: float) -> str:
    """'40 s', '13 min', '2.5 h': a duration as a person says it."""
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class CollectionInfo(BaseModel):
    """What the workbench knows about one collection."""

    name: str
    store: str
    location: str
    count: int
    embedding_model: str | None = None
    dimension: int | None = None
    ingesting: IngestStatus | None = None  # an ingest under way (or interrupted) into it
    written_by: str | None = None  # who filled an attached collection ("LangChain", "LlamaIndex", a mapping)
    read_only: bool = False  # attached: the workbench reads it and never writes it
    problem: str | None = None  # declared in workbench.toml but cannot be opened: why, in one line

    def public(self) -> CollectionInfo:
        """This information as a remote client (the API, an MCP client) sees it: the location and the embedder
        without credentials or the server's folders."""
        location = public_name(self.location) or ""
        status = None
        if self.ingesting is not None:
            hidden = {
                "store_location": self.store,
                "host": "",
                "pid": 0,
                "embedding_model": public_name(self.embedding_model) or "",
            }
            status = self.ingesting.model_copy(update=hidden)
        problem = hide_paths(self.problem) if self.problem else None
        return self.model_copy(
            update={
                "location": location, "embedding_model": public_name(self.embedding_model), "ingesting": status,
                "problem": problem,
            }
        )  # fmt: skip


class RetrievedChunk(BaseModel):
    """One result of `retrieve_chunks`: the contract's fields (text, source_url, score) and its metadata."""

    text: str
    source_url: str | None = None
    score: float
    document_id: str | None = None
    chunk_index: int | None = None
    title: str | None = None
    page: int | None = None
    url: str | None = None
    vector_score: float | None = None
    rerank_score: float | None = None


class IngestProblem(BaseModel):
    """A file that was not ingested: its name (relative to what was ingested) and why."""

    name: str
    reason: str


class IngestReport(BaseModel):
    """What one ingest did. `removed` counts stale chunks of re-ingested documents that were deleted;
    `problems` lists the files that could not be ingested (the others were)."""

    collection: str
    store: str
    files: int
    documents: int
    chunks: int
    added: int
    updated: int
    unchanged: int
    removed: int = 0
    problems: list[IngestProblem] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    seconds: float

    def summary(self) -> str:
        """One line: what was read and written, and how many files were skipped."""
        line = (
            f"{self.collection} ({self.store}): {self.documents} documents -> {self.chunks} chunks; "
            f"{self.added} added, {self.updated} updated, {self.unchanged} unchanged, {self.removed} removed "
            f"in {self.seconds:.1f}s"
        )
        if self.problems:
            line += f"; {len(self.problems)} file{'s' if len(self.problems) != 1 else ''} skipped"
        return line

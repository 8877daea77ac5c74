"""One settings object, read from the environment and an optional `workbench.toml`.

Precedence, highest first: arguments given in code, environment variables, `workbench.toml` (the file named by
WORKBENCH_CONFIG, else `./workbench.toml`; WORKBENCH_CONFIG="" turns the file off), then the defaults below.
Relative folders in the TOML file (data_dir, persist_dir, models_dir, data_roots, a collection's persist_dir) are
taken from the file's own folder, and so are model ids written as `./...` or `../...`; with no data_dir set
anywhere, the workbench keeps its files in the user's data folder, never in the current folder.
"""

from __future__ import annotations

import os
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from workbench.errors import ConfigError
from workbench.inputs import validate_policy
from workbench.paths import config_file, demo_dir, user_cache_dir, user_data_dir
from workbench.redact import plain_text, redact_url
from workbench.vocab import (
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_K,
    DEFAULT_RERANK_TIMEOUT,
    DEFAULT_RERANKER_MODEL,
    DEFAULT_STORE_TIMEOUT,
    DEFAULT_TOP_N,
    DEMO_COLLECTION,
    EVENT_SINK_PREFIXES,
    MAX_K,
    MAX_RERANK_BUDGET_MS,
    NO_RERANKER,
    RRF_K,
    STORES,
    BackendChoice,
    Device,
    EmbeddingBackend,
    RetrievalMode,
    StoreKind,
)

_FOLDER_KEYS = {
    "persist_dir",
    "data_dir",
    "exports_dir",
    "models_dir",
    "data_roots",
}  # relative: from the file's folder
_MODEL_KEYS = {"reranker_model", "embedding_model"}  # hub ids stay ids; only ./ and ../ are paths
_LIST_KEYS = {"models_dir", "data_roots"}  # os.pathsep separated


def _alias(*names: str) -> AliasChoices:
    return AliasChoices(*names)


class Settings(BaseSettings):
    """Every setting of the workbench. Environment names are given in each field's aliases."""

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True, case_sensitive=False, allow_inf_nan=False)

    # Reranker (RERANKER_MODEL and the other names the first scripts read, kept: tests/test_seed_contracts.py)
    reranker_model: str = Field(DEFAULT_RERANKER_MODEL, validation_alias=_alias("reranker_model", "RERANKER_MODEL"))
    reranker_device: Device = Field("auto", validation_alias=_alias("reranker_device", "RERANKER_DEVICE"))
    k_retrieve: int = Field(DEFAULT_K, ge=1, le=MAX_K, validation_alias=_alias("k_retrieve", "RERANKER_K_RETRIEVE"))
    k_return: int = Field(DEFAULT_TOP_N, ge=1, le=MAX_K, validation_alias=_alias("k_return", "RERANKER_K_RETURN"))
    cache_ttl: float = Field(3600, gt=0, validation_alias=_alias("cache_ttl", "CACHE_TTL"))
    cache_max_size: int = Field(10000, ge=0, validation_alias=_alias("cache_max_size", "CACHE_MAX_SIZE"))
    # Pair scores kept on disk across runs and processes (`scores.sqlite3` in the data folder), by the reranker's
    # fingerprint; CACHE_MAX_SIZE=0 turns it off too.
    score_store: bool = Field(True, validation_alias=_alias("score_store", "WORKBENCH_SCORE_STORE"))
    score_store_max_rows: int = Field(
        2_000_000, ge=1000, validation_alias=_alias("score_store_max_rows", "WORKBENCH_SCORE_STORE_MAX_ROWS")
    )
    # A causal-LM reranker's instruction (Qwen3-Reranker's "Instruct"); empty: its profile's default.
    reranker_instruction: str = Field(
        "", max_length=1000, validation_alias=_alias("reranker_instruction", "RERANKER_INSTRUCTION")
    )
    reranker_batch_size: int = Field(
        0, ge=0, le=4096, validation_alias=_alias("reranker_batch_size", "RERANKER_BATCH_SIZE")
    )  # 0: 32 on the CPU, 128 on CUDA
    reranker_batch_window_ms: float = Field(  # 0: continuous batching, a free model runs a request at once
        0.0, ge=0, le=1000, validation_alias=_alias("reranker_batch_window_ms", "RERANKER_BATCH_WINDOW_MS")
    )
    reranker_max_length: int = Field(
        256, ge=8, le=512, validation_alias=_alias("reranker_max_length", "RERANKER_MAX_LENGTH")
    )
    reranker_backend: BackendChoice = Field("auto", validation_alias=_alias("reranker_backend", "RERANKER_BACKEND"))
    # `auto` on the CPU measures each backend once per model and machine (a few seconds, kept in the data folder)
    reranker_calibrate: bool = Field(
        True, validation_alias=_alias("reranker_calibrate", "WORKBENCH_CALIBRATE_BACKENDS")
    )
    # when auto's calibration finds a backend faster than torch that no parity audit judged on this machine: audit
    # it on the demo without being asked (in the background of the app and the server; a command when it repays)
    auto_audit: bool = Field(True, validation_alias=_alias("auto_audit", "WORKBENCH_AUTO_AUDIT"))
    # Rerankers that are services (seed 004's RERANKER_SERVICE_URL is the default reranker when RERANKER_MODEL is
    # not set), more rerankers to offer beside the local folders, and how remote ones are called.
    reranker_service_url: str | None = Field(
        None, validation_alias=_alias("reranker_service_url", "RERANKER_SERVICE_URL")
    )
    rerankers: str | None = Field(None, validation_alias=_alias("rerankers", "WORKBENCH_RERANKERS"))
    rerank_timeout: float = Field(
        DEFAULT_RERANK_TIMEOUT, gt=0, le=3600, validation_alias=_alias("rerank_timeout", "WORKBENCH_RERANK_TIMEOUT")
    )
    rerank_retries: int = Field(3, ge=0, le=10, validation_alias=_alias("rerank_retries", "WORKBENCH_RERANK_RETRIES"))
    # Searches an evaluation sends at once to each replica when its reranker is a service (a local model batches them
    # itself).
    rerank_concurrency: int = Field(
        4, ge=1, le=64, validation_alias=_alias("rerank_concurrency", "WORKBENCH_RERANK_CONCURRENCY")
    )
    # Where an evaluation scores its pairs (rerankers/executors.py): 'local' (this process, as every search does),
    # 'ray' (the Ray cluster RAY_ADDRESS names, or a local one started for the run) or 'ray:ADDRESS'; and how many
    # workers score at once there.
    score_executor: str = Field(
        "local", max_length=300, validation_alias=_alias("score_executor", "WORKBENCH_SCORE_EXECUTOR")
    )
    score_workers: int = Field(2, ge=1, le=256, validation_alias=_alias("score_workers", "WORKBENCH_SCORE_WORKERS"))
    # A request's size in tokens (about 4 characters each, the query counted with every document): a query's
    # documents are split into requests of at most this many, sent to a service's replicas at once. 0: the document
    # limit alone.
    rerank_batch_tokens: int = Field(
        0, ge=0, le=10_000_000, validation_alias=_alias("rerank_batch_tokens", "WORKBENCH_RERANK_BATCH_TOKENS")
    )
    rerank_max_documents: int = Field(
        0, ge=0, le=100_000, validation_alias=_alias("rerank_max_documents", "WORKBENCH_RERANK_MAX_DOCUMENTS")
    )  # 0: each service's own limit
    # The bearer token for http(s):// and tei+http(s):// rerankers (another `workbench serve` with a token, a
    # gateway); a token in the URL's user info (http://:TOKEN@host) is used before it.
    rerank_api_key: SecretStr | None = Field(
        None, validation_alias=_alias("rerank_api_key", "WORKBENCH_RERANK_API_KEY")
    )
    # A listwise LLM reranker (listwise+http(s)://HOST/v1#MODEL): RankGPT's sliding window over the candidates,
    # its window and stride (rank_llm's defaults), the words of a passage it reads, and how many shuffled inputs
    # it ranks besides the first stage's order (permutation self-consistency; 0: the first stage's order only).
    listwise_window: int = Field(
        20, ge=2, le=100, validation_alias=_alias("listwise_window", "WORKBENCH_LISTWISE_WINDOW")
    )
    listwise_stride: int = Field(
        10, ge=1, le=100, validation_alias=_alias("listwise_stride", "WORKBENCH_LISTWISE_STRIDE")
    )
    listwise_passage_words: int = Field(
        300, ge=10, le=4000, validation_alias=_alias("listwise_passage_words", "WORKBENCH_LISTWISE_PASSAGE_WORDS")
    )
    listwise_shuffles: int = Field(
        0, ge=0, le=20, validation_alias=_alias("listwise_shuffles", "WORKBENCH_LISTWISE_SHUFFLES")
    )
    cohere_url: str = Field("https://api.cohere.com", validation_alias=_alias("cohere_url", "WORKBENCH_COHERE_URL"))
    jina_url: str = Field("https://api.jina.ai", validation_alias=_alias("jina_url", "WORKBENCH_JINA_URL"))
    voyage_url: str = Field("https://api.voyageai.com", validation_alias=_alias("voyage_url", "WORKBENCH_VOYAGE_URL"))

    # First-stage retrieval
    retrieval: RetrievalMode = Field("dense", validation_alias=_alias("retrieval", "WORKBENCH_RETRIEVAL"))
    rrf_k: int = Field(RRF_K, ge=1, le=1000, validation_alias=_alias("rrf_k", "WORKBENCH_RRF_K"))
    hybrid_dense_weight: float = Field(
        1.0, ge=0, le=100, validation_alias=_alias("hybrid_dense_weight", "WORKBENCH_HYBRID_DENSE_WEIGHT")
    )
    hybrid_bm25_weight: float = Field(
        1.0, ge=0, le=100, validation_alias=_alias("hybrid_bm25_weight", "WORKBENCH_HYBRID_BM25_WEIGHT")
    )
    bm25_k1: float = Field(0.9, gt=0, le=10, validation_alias=_alias("bm25_k1", "WORKBENCH_BM25_K1"))
    bm25_b: float = Field(0.4, ge=0, le=1, validation_alias=_alias("bm25_b", "WORKBENCH_BM25_B"))

    # Embeddings
    embedding_model: str = Field(
        DEFAULT_EMBEDDING_MODEL, validation_alias=_alias("embedding_model", "WORKBENCH_EMBEDDING_MODEL")
    )
    embedding_device: Device = Field("auto", validation_alias=_alias("embedding_device", "WORKBENCH_EMBEDDING_DEVICE"))
    embedding_backend: EmbeddingBackend = Field(
        "torch", validation_alias=_alias("embedding_backend", "WORKBENCH_EMBEDDING_BACKEND")
    )
    embedding_batch_size: int = Field(
        64, ge=1, validation_alias=_alias("embedding_batch_size", "WORKBENCH_EMBEDDING_BATCH_SIZE")
    )
    # An embedding service (WORKBENCH_EMBEDDING_MODEL=http(s)://...): batches of embedding_batch_size texts sent at
    # once, and the bearer token (a token in the URL's user info, http://:TOKEN@host, is used before it).
    embedding_concurrency: int = Field(
        4, ge=1, le=64, validation_alias=_alias("embedding_concurrency", "WORKBENCH_EMBEDDING_CONCURRENCY")
    )
    embedding_api_key: SecretStr | None = Field(
        None, validation_alias=_alias("embedding_api_key", "WORKBENCH_EMBEDDING_API_KEY")
    )

    # Store
    store: StoreKind = Field("chroma", validation_alias=_alias("store", "WORKBENCH_STORE"))
    persist_dir: Path | None = Field(None, validation_alias=_alias("persist_dir", "WORKBENCH_PERSIST_DIR"))
    chroma_url: str | None = Field(None, validation_alias=_alias("chroma_url", "WORKBENCH_CHROMA_URL"))
    qdrant_url: str | None = Field(None, validation_alias=_alias("qdrant_url", "WORKBENCH_QDRANT_URL"))
    search_url: str | None = Field(None, validation_alias=_alias("search_url", "WORKBENCH_SEARCH_URL"))
    pg_url: str | None = Field(None, validation_alias=_alias("pg_url", "WORKBENCH_PG_URL"))
    pg_schema: str = Field("workbench", validation_alias=_alias("pg_schema", "WORKBENCH_PG_SCHEMA"))
    store_timeout: float = Field(
        DEFAULT_STORE_TIMEOUT, gt=0, le=600, validation_alias=_alias("store_timeout", "WORKBENCH_STORE_TIMEOUT")
    )
    collection: str = Field(DEMO_COLLECTION, validation_alias=_alias("collection", "WORKBENCH_COLLECTION"))
    # Evaluate a collection whose ingest was interrupted (or is still running): the figures are then of part of the
    # corpus, and say so. Off by default: `eval`, `gate` and `tune` refuse such a collection, naming the ingest.
    allow_partial: bool = Field(False, validation_alias=_alias("allow_partial", "WORKBENCH_ALLOW_PARTIAL"))
    # Take a "helps" that rests on an LLM judge of the candidate's own lineage (evaluation/judge_limits.py). Off by
    # default: such a verdict reads "inconclusive under LLM judgments", since LLM judges favour their own lineage.
    allow_same_lineage_judge: bool = Field(
        False, validation_alias=_alias("allow_same_lineage_judge", "WORKBENCH_ALLOW_SAME_LINEAGE_JUDGE")
    )

    # Named collections with store settings of their own, from workbench.toml's [collections.<name>] tables:
    # store, url, persist_dir, collection, and for pgvector schema, table, id/text/embedding/metadata_column,
    # embedding_model (see README, "Stores").
    collections: dict[str, dict[str, Any]] = Field(default_factory=dict)

    # Where the workbench keeps its own files (embedded stores, exports, indexes, sessions)
    data_dir: Path = Field(default_factory=user_data_dir, validation_alias=_alias("data_dir", "WORKBENCH_DATA_DIR"))
    # ONNX/OpenVINO exports of reranker folders and `auto`'s measured backend choices: per machine, shared by every
    # data folder on it (the user's cache folder, WORKBENCH_CACHE_DIR), so a new clone or data folder measures nothing
    exports_dir: Path = Field(
        default_factory=lambda: user_cache_dir() / "exports",
        validation_alias=_alias("exports_dir", "WORKBENCH_EXPORTS_DIR"),
    )
    # Folders the app may read server-side paths from (os.pathsep separated); default: data_dir and the demo
    data_roots: str | None = Field(None, validation_alias=_alias("data_roots", "WORKBENCH_DATA_ROOTS"))
    app_password: SecretStr | None = Field(None, validation_alias=_alias("app_password", "WORKBENCH_APP_PASSWORD"))

    # Models
    models_dir: str | None = Field(None, validation_alias=_alias("models_dir", "WORKBENCH_MODELS_DIR"))
    offline: bool = Field(False, validation_alias=_alias("offline", "WORKBENCH_OFFLINE", "HF_HUB_OFFLINE"))

    # Services (workbench serve / mcp) and RetrievalCompleted events
    api_token: SecretStr | None = Field(None, validation_alias=_alias("api_token", "WORKBENCH_API_TOKEN"))
    # The names POST /rerank answers to besides the model's own (comma-separated; vLLM's --served-model-name):
    # the first is the one answers and GET /models carry.
    served_model_name: str | None = Field(
        None, validation_alias=_alias("served_model_name", "WORKBENCH_SERVED_MODEL_NAME")
    )
    query_timeout: float = Field(
        30.0, gt=0, le=3600, validation_alias=_alias("query_timeout", "WORKBENCH_QUERY_TIMEOUT")
    )
    # Fail open (workbench.serving): the serving paths' rerank budget in ms (none: the reranker is waited for, and its
    # failure is the search's), and the circuit that skips a reranker failing again and again.
    rerank_budget_ms: float | None = Field(
        None, ge=1, le=MAX_RERANK_BUDGET_MS, validation_alias=_alias("rerank_budget_ms", "WORKBENCH_RERANK_BUDGET_MS")
    )
    rerank_circuit_failures: int = Field(
        5, ge=1, le=1000, validation_alias=_alias("rerank_circuit_failures", "WORKBENCH_RERANK_CIRCUIT_FAILURES")
    )
    rerank_circuit_cooldown_s: float = Field(
        30.0, gt=0, le=86_400,
        validation_alias=_alias("rerank_circuit_cooldown_s", "WORKBENCH_RERANK_CIRCUIT_COOLDOWN_S"),
    )  # fmt: skip
    # An evaluation or gate run through the API (POST /experiments, POST /gate) may take minutes.
    evaluation_timeout: float = Field(
        1800.0, gt=0, le=86_400, validation_alias=_alias("evaluation_timeout", "WORKBENCH_EVALUATION_TIMEOUT")
    )
    max_body_bytes: int = Field(
        1_048_576, ge=1024, validation_alias=_alias("max_body_bytes", "WORKBENCH_MAX_BODY_BYTES")
    )
    events: str | None = Field(None, validation_alias=_alias("events", "WORKBENCH_EVENTS"))
    events_buffer: int = Field(
        1000, ge=1, le=1_000_000, validation_alias=_alias("events_buffer", "WORKBENCH_EVENTS_BUFFER")
    )

    # Session memory and the app's history (seed 004)
    session_db: str | None = Field(None, validation_alias=_alias("session_db", "WORKBENCH_SESSION_DB"))
    session_recent_limit: int = Field(
        10, ge=1, le=200, validation_alias=_alias("session_recent_limit", "SESSION_RECENT_LIMIT")
    )
    session_ttl_days: float | None = Field(None, gt=0, validation_alias=_alias("session_ttl_days", "SESSION_TTL_DAYS"))

    # Judgments (kept beside the sessions): how a pair's current grade is chosen from its history
    judgment_policy: str = Field("latest", validation_alias=_alias("judgment_policy", "WORKBENCH_JUDGMENT_POLICY"))
    # The optional LLM judge: any OpenAI-compatible chat endpoint (OpenAI when no URL is set). Its key is read from
    # WORKBENCH_JUDGE_API_KEY or the usual OPENAI_API_KEY and never shown.
    judge_model: str | None = Field(None, validation_alias=_alias("judge_model", "WORKBENCH_JUDGE_MODEL"))
    judge_url: str | None = Field(None, validation_alias=_alias("judge_url", "WORKBENCH_JUDGE_URL"))
    judge_api_key: SecretStr | None = Field(
        None, validation_alias=_alias("judge_api_key", "WORKBENCH_JUDGE_API_KEY", "OPENAI_API_KEY")
    )
    # Ask the judge's endpoint to hold each answer to the grade's JSON schema (structured outputs); an endpoint that
    # refuses it is asked again without.
    judge_schema: bool = Field(True, validation_alias=_alias("judge_schema", "WORKBENCH_JUDGE_SCHEMA"))

    # Ingest
    chunk_size: int = Field(1000, ge=50, validation_alias=_alias("chunk_size", "WORKBENCH_CHUNK_SIZE"))
    chunk_overlap: int = Field(100, ge=0, validation_alias=_alias("chunk_overlap", "WORKBENCH_CHUNK_OVERLAP"))
    ingest_unit: int = Field(256, ge=1, validation_alias=_alias("ingest_unit", "WORKBENCH_INGEST_UNIT"))

    @field_validator("judgment_policy")
    @classmethod
    def _known_policy(cls, value: str) -> str:
        return validate_policy(value)

    @field_validator("events")
    @classmethod
    def _known_sink(cls, value: str | None) -> str | None:
        target = (value or "").strip()
        if target and target.lower() != "off" and not target.startswith(EVENT_SINK_PREFIXES):
            raise ValueError(
                f"WORKBENCH_EVENTS='{redact_url(target)}' is not a sink: use jsonl:PATH, a RabbitMQ URL "
                "(amqp://host:5672/vhost, with the user and password before the host), or off."
            )
        return value

    @field_validator("score_executor")
    @classmethod
    def _known_executor(cls, value: str) -> str:
        target = value.strip()
        if target.lower() in {"local", "ray"} or (target.lower().startswith("ray:") and len(target) > 4):
            return target
        raise ValueError(
            f"WORKBENCH_SCORE_EXECUTOR='{redact_url(plain_text(target))[:100]}' is not an executor: use local, ray "
            "(the cluster RAY_ADDRESS names, or a local one) or ray:ADDRESS (ray:auto, ray:HOST:6379, "
            "ray:ray://HOST:10001)."
        )

    @field_validator("session_ttl_days", mode="before")
    @classmethod
    def _off_is_none(cls, value: Any) -> Any:
        return None if str(value).strip().lower() in {"", "off", "none", "0"} else value

    @field_validator(
        *(info.url_field for info in STORES.values()),  # each store kind's server URL
        "models_dir",
        "data_roots",
        "app_password",
        "session_db",
        "api_token",
        "served_model_name",
        "events",
        "reranker_service_url",
        "rerankers",
        "judge_model",
        "judge_url",
        "judge_api_key",
        "rerank_api_key",
        "embedding_api_key",
        mode="before",
    )
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        return None if value == "" else value

    @model_validator(mode="after")
    def _windows_overlap(self) -> Settings:
        if self.listwise_stride >= self.listwise_window:
            raise ValueError(
                f"WORKBENCH_LISTWISE_STRIDE ({self.listwise_stride}) must be below WORKBENCH_LISTWISE_WINDOW "
                f"({self.listwise_window}): windows that do not overlap never move a passage past its own window"
            )
        return self

    @model_validator(mode="after")
    def _service_is_the_default_reranker(self) -> Settings:
        if self.reranker_service_url and "reranker_model" not in self.model_fields_set:
            self.reranker_model = self.reranker_service_url
        return self

    def served_model_names(self) -> list[str]:
        """WORKBENCH_SERVED_MODEL_NAME's names, in order."""
        return [name.strip() for name in (self.served_model_name or "").split(",") if name.strip()]

    def extra_rerankers(self) -> list[str]:
        """The reranker ids WORKBENCH_RERANKERS offers beside the local folders (comma separated)."""
        return [r.strip() for r in (self.rerankers or "").split(",") if r.strip()]

    @property
    def reranker_enabled(self) -> bool:
        """False when RERANKER_MODEL is 'none' (or empty): results then keep the vector order."""
        return self.reranker_model.strip().lower() not in {NO_RERANKER, ""}

    @property
    def store_url(self) -> str | None:
        """The configured store's server URL (None for an embedded folder)."""
        return self.url_of(self.store)

    def url_of(self, kind: str) -> str | None:
        """The server URL configured for a store kind (WORKBENCH_CHROMA_URL, ...), None when there is none."""
        return getattr(self, STORES[kind].url_field)

    @property
    def store_location(self) -> str:
        """Where the configured store lives, safe to show: a redacted URL, or the embedded store's folder."""
        url = self.store_url
        return redact_url(url) if url else str(self.resolved_persist_dir)

    @property
    def resolved_persist_dir(self) -> Path:
        """The embedded store's folder: persist_dir, else `<data_dir>/<store>`."""
        return Path(self.persist_dir) if self.persist_dir else self.embedded_dir(self.store)

    def embedded_dir(self, kind: str) -> Path:
        """The folder an embedded store of this kind uses by default: `<data_dir>/<kind>`."""
        return Path(self.data_dir) / kind

    def store_options(self, kind: str | None = None) -> dict[str, Any]:
        """Store-specific settings handed to a backend of this kind (default: the configured store)."""
        kind = kind or self.store
        if kind == "chroma":  # a folder another tool wrote is opened as a copy kept here, never where it lies
            return {"snapshot_dir": str(Path(self.data_dir) / "attached" / "chroma")}
        return {"schema": self.pg_schema} if kind == "pgvector" else {}

    def data_root_paths(self) -> list[Path]:
        """Folders the app may read server-side paths from: WORKBENCH_DATA_ROOTS (os.pathsep separated), else
        the workbench's data folder; the demo's folder is always readable."""
        named = [Path(p).expanduser() for p in (self.data_roots or "").split(os.pathsep) if p]
        return [*(named or [Path(self.data_dir)]), demo_dir()]

    def model_dirs(self) -> list[Path]:
        """The folders searched for models by id, from WORKBENCH_MODELS_DIR (os.pathsep separated)."""
        if not self.models_dir:
            return []
        return [Path(p).expanduser() for p in self.models_dir.split(os.pathsep) if p]

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, env_settings, _TomlSource(settings_cls)


class _TomlSource(PydanticBaseSettingsSource):
    """Reads `workbench.toml`; relative paths in it are made relative to the file's folder."""

    def __init__(self, settings_cls: type[BaseSettings]) -> None:
        super().__init__(settings_cls)
        self._values = self._load()

    def _load(self) -> dict[str, Any]:
        path = config_file()
        if path is None:
            return {}
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ConfigError(f"WORKBENCH_CONFIG names {path}, which does not exist.") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path} cannot be read ({type(exc).__name__}).") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
        except RecursionError as exc:
            raise ConfigError(f"{path} nests its tables or arrays too deeply to be read.") from exc
        data = data.get("workbench", data)
        base = path.resolve().parent
        _resolve_paths(data, base)
        for table in (data.get("collections") or {}).values():
            if isinstance(table, dict):
                _resolve_paths(table, base)
                if isinstance(table.get("arguments"), dict):  # a LangChain or LlamaIndex class's own arguments
                    try:
                        _resolve_relative(table["arguments"], base)
                    except RecursionError as exc:
                        raise ConfigError(f"{path}: a collection's arguments nest too deeply to be read.") from exc
        return data

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return {k: v for k, v in self._values.items() if k in self.settings_cls.model_fields}


def _resolve_relative(values: dict[str, Any], base: Path) -> None:
    """Every `./` or `../` string in a table (and the tables inside it) made absolute from `base`, in place: a store
    class's `uri = "./milvus.db"` means beside workbench.toml, wherever the workbench is started."""
    for key, value in values.items():
        if isinstance(value, dict):
            _resolve_relative(value, base)
        elif isinstance(value, str) and value.startswith(("./", "../")):
            values[key] = str((base / value).resolve())


def _resolve_paths(values: dict[str, Any], base: Path) -> None:
    """Relative folders and `./`/`../` model paths in a TOML table, made absolute from `base` (in place)."""
    for key in (_FOLDER_KEYS | _MODEL_KEYS) & values.keys():
        parts = str(values[key]).split(os.pathsep) if key in _LIST_KEYS else [str(values[key])]
        resolved = []
        for part in parts:
            is_path = bool(part) and (key in _FOLDER_KEYS or part.startswith(("./", "../")))
            expanded = Path(part).expanduser()
            resolved.append(str((base / expanded).resolve()) if is_path and not expanded.is_absolute() else part)
        values[key] = os.pathsep.join(resolved)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return Settings()

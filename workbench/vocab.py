"""Every vocabulary, limit and default of the workbench, each defined once and imported everywhere else.

A new store kind, retrieval mode, backend or metric is one line here (plus its implementation file); the
settings' types, the CLI's choices, the app's pickers and the validators all read these definitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, get_args


def spoken(names: tuple[str, ...] | list[str], last: str = "or") -> str:
    """A vocabulary as a message names it: 'chroma, qdrant or pgvector'."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {last} {names[-1]}"


# Stores -----------------------------------------------------------------------------------------------------
StoreKind = Literal["chroma", "qdrant", "pgvector", "http"]  # http: a search service's API (read-only)
STORE_KINDS: Final[tuple[str, ...]] = get_args(StoreKind)
SEARCH_SERVICE_STORE: Final = "http"  # the kind that is a search service's API: no vectors to copy or compare
VECTOR_STORE_KINDS: Final[tuple[str, ...]] = tuple(k for k in STORE_KINDS if k != SEARCH_SERVICE_STORE)


@dataclass(frozen=True)
class StoreKindInfo:
    """A store kind: the setting holding its server URL (field and environment name), whether it also runs
    embedded in a local folder, and the settings field of any store-specific option it takes."""

    kind: str
    url_field: str
    url_env: str
    embedded: bool
    url_example: str


STORES: Final[dict[str, StoreKindInfo]] = {
    "chroma": StoreKindInfo("chroma", "chroma_url", "WORKBENCH_CHROMA_URL", True, "http://127.0.0.1:8000"),
    "qdrant": StoreKindInfo("qdrant", "qdrant_url", "WORKBENCH_QDRANT_URL", True, "http://127.0.0.1:6333"),
    "pgvector": StoreKindInfo("pgvector", "pg_url", "WORKBENCH_PG_URL", False, "postgresql://user@127.0.0.1:5432/db"),
    "http": StoreKindInfo("http", "search_url", "WORKBENCH_SEARCH_URL", False, "https://search.internal/api/search"),
}
LANGCHAIN_STORE: Final = "langchain"  # a LangChain VectorStore object: registered in code, or named in workbench.toml
LLAMAINDEX_STORE: Final = "llamaindex"  # a LlamaIndex vector store named in workbench.toml (stores/objects.py)
URL_SCHEMES: Final = ("http://", "https://", "postgresql://", "postgres://")
DEFAULT_STORE_TIMEOUT: Final = 10.0  # seconds a store's server may take (WORKBENCH_STORE_TIMEOUT)
STORE_TIMEOUT_SETTING: Final = "WORKBENCH_STORE_TIMEOUT"

# First-stage retrieval --------------------------------------------------------------------------------------
RetrievalMode = Literal["dense", "bm25", "hybrid"]
RETRIEVAL_MODES: Final[tuple[str, ...]] = get_args(RetrievalMode)


@dataclass(frozen=True)
class RetrievalModeInfo:
    """How a retrieval mode is named: on a picker, as a list's heading, and for its score."""

    mode: str
    label: str
    heading: str
    score_name: str
    description: str


RRF_K: Final = 60  # reciprocal rank fusion's constant (WORKBENCH_RRF_K)
RETRIEVAL: Final[dict[str, RetrievalModeInfo]] = {
    "dense": RetrievalModeInfo("dense", "dense", "Vector search", "vector", "vector search"),
    "bm25": RetrievalModeInfo("bm25", "BM25", "BM25", "BM25", "keywords"),
    "hybrid": RetrievalModeInfo("hybrid", "hybrid", "Hybrid (dense + BM25)", "RRF", "both, fused by reciprocal rank"),
}
# A collection that is a search service's API (store "http") ranks its candidates itself: its first stage is named
# by that source, whatever the plan's retrieval says (the plan's "dense" means "the collection's own order" there).
SEARCH_SERVICE_FIRST_STAGE: Final = RetrievalModeInfo(
    "search service", "search service", "Search service's order", "service", "the search service's own ranking"
)
# How a hybrid first stage fuses its lists (workbench.fusion names one, workbench.retrieval.fusion computes it):
# by rank (RRF), or by a weighted sum of scores normalised by min-max, z-score (mean 0, deviation 1) or L2 norm.
FusionMethod = Literal["rrf", "minmax", "zscore", "l2"]
FUSION_METHODS: Final[tuple[str, ...]] = get_args(FusionMethod)
LINEAR_FUSIONS: Final[tuple[str, ...]] = FUSION_METHODS[1:]
# What the reranker does with a document longer than its window (workbench.passages names one): FirstP reads the
# first window only (what a cross-encoder does by itself); MaxP and SumP score the first n windows, cut by the
# reranker's own tokenizer with a stride, and keep the best window's score or add the windows' probabilities.
LongDocumentStrategy = Literal["firstp", "maxp", "sump"]
LONG_DOCUMENT_STRATEGIES: Final[tuple[str, ...]] = get_args(LongDocumentStrategy)
DEFAULT_WINDOWS: Final = 4  # the first n windows MaxP and SumP read
MAX_WINDOWS: Final = 32
# A tuning run's grid when the user names none (`workbench tune`): first stages (a fusion is hybrid under it) × k.
DEFAULT_FIRST_STAGES: Final = ("dense", "bm25", "hybrid", "minmax 0.5", "zscore 0.5")
DEFAULT_TUNE_KS: Final = (10, 20, 50)

# Rerankers --------------------------------------------------------------------------------------------------
# What runs a model on the CPU. The OpenVINO ones score each pair as a request of its own, unpadded (so a score
# never depends on its batch-mates): in fp32; in bf16 where the CPU multiplies bf16 (AVX512_BF16, AMX); in int8
# statically quantized by NNCF (activation scales fixed by calibration on the demo's passages, not per call).
Backend = Literal["torch", "onnx", "onnx-int8", "openvino", "openvino-bf16", "openvino-int8"]
BACKENDS: Final[tuple[str, ...]] = get_args(Backend)
EXPORTED_BACKENDS: Final[tuple[str, ...]] = BACKENDS[1:]  # those run from an export kept under <data>/exports
OPENVINO_BACKENDS: Final[frozenset[str]] = frozenset({"openvino", "openvino-bf16", "openvino-int8"})
MAX_BENCH_PAIRS: Final = 512  # pairs a round of `doctor --bench` at most
# tokens a pair `doctor --bench` times at: a demo query (up to 18 tokens) and some passage, up to BERT's 512 positions
BENCH_LENGTH_RANGE: Final = (32, 512)
BF16_CPU_FLAGS: Final[frozenset[str]] = frozenset({"avx512_bf16", "amx_bf16"})  # a CPU that multiplies bf16
# Backends whose score for a pair depends on the other pairs in its batch: dynamic int8 quantization scales each
# call's activations by that call's range, so the same pair moved by up to 0.05 with other batch-mates, and the top
# 10 with it. `auto` never chooses one: a figure must not depend on what else was scored at the same time. Named
# outright (RERANKER_BACKEND=onnx-int8) they run, and every figure names its backend.
BATCH_DEPENDENT_BACKENDS: Final[frozenset[str]] = frozenset({"onnx-int8"})
# The parity audit (`workbench doctor --parity`): a backend is faithful to fp32 torch when the paired 95 % interval of
# its nDCG@10 change lies within ±PARITY_TOLERANCE, its top n set changes on at most PARITY_MAX_SET_CHANGES of the
# queries, and no pair's score moves by more than BATCH_SCORE_TOLERANCE with its batch-mates (torch's own padding
# moves a score by about 3e-6; dynamic int8's moved one by 1.2).
PARITY_TOLERANCE: Final = 0.01
PARITY_MAX_SET_CHANGES: Final = 0.10
BATCH_SCORE_TOLERANCE: Final = 1e-4
PARITY_REFERENCE: Final = "torch"
PARITY_K: Final = 20  # the audit's default depth: 50 queries x 20 candidates = 1,000 pairs a backend
BackendChoice = Literal["auto", Backend]  # "auto" picks one of BACKENDS
BACKEND_CHOICES: Final[tuple[str, ...]] = get_args(BackendChoice)
Device = Literal["auto", "cpu", "cuda", "mps"]
# How a local sentence-transformers embedder runs: torch, or OpenVINO in fp32 on the CPU (sentence-transformers' own
# backend, exported once per model into the exports folder): the same vectors to about 1e-7, some 2x faster.
EmbeddingBackend = Literal["torch", "openvino"]
NO_RERANKER: Final = "none"
DEFAULT_RERANKER_CHOICE: Final = "default"  # in a SearchPlan: the reranker the settings configure
BACKEND_SEPARATOR: Final = "@"  # "<cross-encoder id>@onnx-int8": that model on that backend
# 'probability sum': SumP's score, each window's probability (a logit through the sigmoid) added up (0 to windows)
# 'order': a listwise reranker's permutation, no scores (the number kept is minus the rank: -1 for the first)
# 'raw': an unbounded score with no 0-1 reading (a ColBERT model's MaxSim sum)
ScoreScale = Literal["logit", "probability", "probability sum", "raw", "order"]
ORDER_SCALE: Final = "order"
# Reranker kinds (rerankers/factory.py registers one builder each): what `reranker_kind(id).name` says.
CROSS_ENCODER_KIND: Final = "cross-encoder"  # a folder or hub id: a local cross-encoder
SERVICE_KIND: Final = "service"  # a Cohere-style POST /rerank server
TEI_KIND: Final = "tei"  # text-embeddings-inference
UNSUPPORTED_URL_KIND: Final = "unsupported URL"  # a URL of no other kind: refused by name
LISTWISE_KIND: Final = "listwise"  # an LLM ranking a window of passages over an OpenAI-compatible chat endpoint
CHAT_KIND: Final = "chat"  # a chat model asked pair by pair over an OpenAI-compatible endpoint: P(yes) from logprobs
VLLM_KIND: Final = "vllm"  # a causal-LM reranker served by vLLM, asked through POST /score with its template
# Reranker ids by form: a folder or hub id is a local cross-encoder; these forms are not.
SERVICE_SCHEMES: Final = ("http://", "https://")  # a server speaking the Cohere-style POST /rerank
TEI_PREFIX: Final = "tei+"
REPLICA_SEPARATOR: Final = ","  # replicas of one reranker service: http://gpu1:7997,http://gpu2:7997
TEI_SCHEMES: Final = ("tei+http://", "tei+https://")  # text-embeddings-inference's POST /rerank
LISTWISE_PREFIX: Final = "listwise+"
LISTWISE_SCHEMES: Final = ("listwise+http://", "listwise+https://")  # an OpenAI-compatible POST /chat/completions
CHAT_PREFIX: Final = "chat+"
CHAT_SCHEMES: Final = ("chat+http://", "chat+https://")  # an OpenAI-compatible POST /chat/completions with logprobs
CHAT_MODEL_SEPARATOR: Final = "#"  # listwise+ or chat+http://host:port/v1#MODEL: the chat model the endpoint serves
VLLM_PREFIX: Final = "vllm+"
VLLM_SCHEMES: Final = ("vllm+http://", "vllm+https://")  # vLLM's POST /score, the template written by the workbench
VLLM_PROFILE_SEPARATOR: Final = "#"  # vllm+http://host:port#qwen3: the family's template
HOSTED_KEYS: Final[dict[str, str]] = {"cohere": "COHERE_API_KEY", "jina": "JINA_API_KEY", "voyage": "VOYAGE_API_KEY"}
DEFAULT_RERANK_TIMEOUT: Final = 30.0  # seconds a reranker service may take per request (WORKBENCH_RERANK_TIMEOUT)
DEFAULT_RERANKER_MODEL: Final = "cross-encoder/ms-marco-MiniLM-L-6-v2"
DEFAULT_EMBEDDING_MODEL: Final = "sentence-transformers/all-MiniLM-L6-v2"
OPENAI_EMBEDDING_PREFIX: Final = "openai:"
LANGCHAIN_EMBEDDING_PREFIX: Final = "langchain:"
SERVED_MODEL_SEPARATOR: Final = "#"  # an embedding service and its model: http://gpu:7997#all-MiniLM-L6-v2

# Metrics ----------------------------------------------------------------------------------------------------
NDCG_10: Final = "ndcg@10"
MRR_10: Final = "mrr@10"
MAP_100: Final = "map@100"
P_10: Final = "p@10"
JUDGED_10: Final = "judged@10"  # the share of the top 10 that has a judgment (ir-measures' Judged@10)
NDCG_10_JUDGED: Final = "ndcg@10 judged-only"  # nDCG@10 over the judged documents alone (unjudged ones removed)
ENOUGH_JUDGED: Final = 0.5  # below this judged@10 a verdict says there are too few judgments to tell
VERDICT_ALPHA: Final = 0.05
# Evaluating to the decision (evaluation/sequential.py): a change in nDCG@10 inside ±this settles as no change
# that matters
STOPPING_TOLERANCE: Final = 0.02
DEPTH_SWEEP: Final = (10, 20, 50, 100)  # the k values a depth curve measures unless told (those up to k)
TOP_N_SWEEP: Final = (1, 3, 5, 10, 20)  # the top n values a recommendation weighs
PRIMARY_METRIC: Final = NDCG_10  # the metric verdicts, wins and losses are counted on


# Judgments --------------------------------------------------------------------------------------------------
# The grade scale every collection is judged on, stated once: grade -> label (imports may carry other integers).
GRADE_SCALE: Final[dict[int, str]] = {0: "not relevant", 1: "partly relevant", 2: "relevant", 3: "perfectly relevant"}
MAX_IMPORTED_GRADE: Final = 1000  # an imported qrels grade is a whole number this far from 0 at most
JudgmentSource = Literal["person", "llm", "import", "clicks"]
JUDGMENT_SOURCES: Final[tuple[str, ...]] = get_args(JudgmentSource)
CLICK_MODELS: Final[tuple[str, ...]] = ("coec", "pbm")  # clicks over expected clicks; the position-based model
LOG_SAMPLES: Final[tuple[str, ...]] = ("top", "random", "pps")  # how a query set is drawn from a click log
MAX_SERVICE_RETRIES: Final = 5  # a search service asked again at most this often (each try its own deadline)
EVENTS_EXCHANGE: Final = "workbench.events"  # the RabbitMQ topic exchange events are published to, clicks read from
MAX_CLICK_LOG_ROWS: Final = 500_000  # rows of a click log (or UBI queries and events together)
MAX_CLICK_LOG_BYTES: Final = 500_000_000
DEFAULT_MIN_IMPRESSIONS: Final = 5  # a click model's estimate of a pair shown fewer times is not kept as a grade
# An estimate's grade is how many cut-points it reaches: COEC is clicks over those expected at the positions shown
# (1 average), PBM's the probability that the result attracts a click once examined.
CLICK_GRADE_CUTS: Final[dict[str, tuple[float, float, float]]] = {"coec": (0.5, 1.0, 2.0), "pbm": (0.1, 0.3, 0.6)}
# The chance a result of each grade is clicked once examined: the click model an online test is sized with.
CLICK_ATTRACTIVENESS: Final[dict[int, float]] = {0: 0.05, 1: 0.3, 2: 0.6, 3: 0.9}
# Grades no person gave: where a person graded a pair, theirs count and these do not.
MACHINE_SOURCES: Final[tuple[str, ...]] = ("llm", "clicks")
# How the current grade of a (query, document) is chosen from its history; "rater:NAME" names one rater.
JUDGMENT_POLICIES: Final = ("latest", "majority")
RATER_POLICY_PREFIX: Final = "rater:"
DEFAULT_RATER: Final = "me"
MAX_RATER_CHARS: Final = 64
MAX_DOC_ID_CHARS: Final = 512
MAX_REASON_CHARS: Final = 500
LLM_RATER_PREFIX: Final = "llm:"  # the LLM judge grades as llm:<model>
JUDGE_PASSAGE_CHARS: Final = 2000  # the passage the judge reads, cut here (a chunk is ~1,000 characters)
DEFAULT_JUDGE_LIMIT: Final = 20  # queue documents one judge run grades
DEFAULT_JUDGE_CHECK: Final = 10  # pairs people graded that the judge grades too, so its agreement is measured
JUDGMENT_EXPORT_FORMATS: Final = ("trec", "beir", "history")  # qrels of the current grades, or every grade
MAX_JUDGE_PAIRS: Final = 500
JUDGE_ROUND: Final = 10  # pairs the LLM judge grades between two looks at the verdict, with a token budget
JUDGE_CONCURRENCY: Final = 4  # chat requests in flight at once
MAX_QUEUE_TEXT_CHUNKS: Final = 20_000  # the queue and the judge read passages of collections up to this size


def recall_at(k: int) -> str:
    """The name of Recall at the run depth k ('recall@50')."""
    return f"recall@{k}"


# Limits of the interactive surfaces (seed 002) and of what any front end accepts -----------------------------
MAX_QUERY_CHARS: Final = 512
MAX_RERANK_BUDGET_MS: Final = 600_000  # a rerank budget (workbench.serving) of at most ten minutes
MAX_SERVE_CONCURRENCY: Final = 64  # searches an evaluation under a rerank budget serves at once while timing each
MAX_K: Final = 200
MAX_TOP_K: Final = 20
DEFAULT_TOP_K: Final = 5
DEFAULT_K: Final = 50  # RERANKER_K_RETRIEVE
DEFAULT_TOP_N: Final = 10  # RERANKER_K_RETURN
DISPLAY_CHARS: Final = 800
COMPACT_CHARS: Final = 180  # a card's one line of text in the compact layout
SNIPPET_CHARS: Final = 160  # the start of a document a report lists beside its title
MAX_FILTERS: Final = 16
MAX_FILTER_KEY_CHARS: Final = 128
MAX_FILTER_VALUE_CHARS: Final = 1024
MAX_BROWSE_LIMIT: Final = 1000
MAX_UPLOAD_NAME_CHARS: Final = 120
EVENT_SINK_PREFIXES: Final = ("jsonl:", "amqp://", "amqps://")  # WORKBENCH_EVENTS: a file, or a RabbitMQ URL
MAX_JSON_DEPTH: Final = 32  # how deeply free-form JSON a user sends may nest (a turn's meta, a request body)

# Explanations and calibration --------------------------------------------------------------------------------
EXPLAIN_MAX_SENTENCES: Final = 64  # sentences left out one at a time; later ones stay in every variant
EXPLAIN_MAX_TERMS: Final = 32  # query terms left out one at a time
EXPLAIN_WINDOW_WORDS: Final = 40  # a run-on stretch is explained in windows of this many words
CALIBRATION_METHODS: Final = ("logistic", "isotonic")
CALIBRATION_FOLDS: Final = 5  # held-out queries: each pair's calibrated probability comes from the other folds
CALIBRATION_BINS: Final = 10  # reliability diagram and expected calibration error
DEFAULT_TARGET_PRECISION: Final = 0.8
# Hosted rerankers' list prices (kind: US dollars, per units, unit, when read); workbench/rerankers/served/pricing.py.
HOSTED_LIST_PRICES: Final[dict[str, tuple[float, int, str, str]]] = {
    "cohere": (2.0, 1000, "searches", "list price as of 2025 (rerank-v3.5)"),
    "jina": (0.02, 1_000_000, "tokens", "list price as of 2025"),
    "voyage": (0.05, 1_000_000, "tokens", "list price as of 2025 (rerank-2)"),
    # A chat endpoint's price is the model's, which the workbench cannot know: set it (--price listwise=USD).
    "listwise": (0.0, 1_000_000, "tokens", "no list price: a chat model's own, set with --price listwise=USD"),
    "chat": (0.0, 1_000_000, "tokens", "no list price: a chat model's own, set with --price chat=USD"),
}

# The demo ---------------------------------------------------------------------------------------------------
DEMO_COLLECTION: Final = "demo"

# Experiments, query sets and the ship gate ----------------------------------------------------------------------
MAX_NAME_CHARS: Final = 120  # an experiment's or query set's name, a tag
MAX_EXPERIMENT_TAGS: Final = 16
MAX_EXPERIMENT_NOTES: Final = 4000
MAX_QUERY_SET_QUERIES: Final = 10_000
MAX_QUERY_SET_TEXT_CHARS: Final = 4096  # a query of a set (judged queries may be long claims or questions)
# How `workbench gate` exits: the decision as a process status a CI job reads.
GateOutcome = Literal["ship", "no-ship", "inconclusive"]
GATE_EXIT_CODES: Final[dict[str, int]] = {"ship": 0, "no-ship": 1, "inconclusive": 3}
MAX_EXPORT_BYTES: Final = 200_000_000  # an experiment file to import

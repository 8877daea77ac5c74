"""Rerankers behind an HTTP API: reranker servers (Infinity, vLLM, Jina-compatible servers, another `workbench
serve`) speaking the Cohere-style `POST /rerank`, text-embeddings-inference's `POST /rerank`, and the hosted APIs
of Cohere, Jina and Voyage.

Every kind shares one `RemoteReranker`: an httpx client with WORKBENCH_RERANK_TIMEOUT as one deadline for each
try (a service that trickles its answer is cut off there, not at each read), retries with exponential backoff on
429 and 5xx (a Retry-After header is honoured), requests split at the service's document limit, the engine's
score cache, usage counters (requests, documents, tokens and billed units as the service reports them), and
failures as `ModelError`s that name the redacted URL and the setting to change. Answers are checked: every
document scored once, by a finite number, within [0, 1] on the probability scale. A kind only says how to
write its request and read its answer.

A service URL's credentials (`http://user:TOKEN@host`) are taken out of it and sent as a bearer token, as is
WORKBENCH_RERANK_API_KEY for the `http(s)://` and `tei+http(s)://` kinds; the reranker's `model_id` is the URL
without them, secret query parameters masked, so no id that leaves the process carries a secret.
"""

from __future__ import annotations

import json
import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

import httpx

from workbench.config import Settings
from workbench.errors import ConfigError, ModelError, QueryTimeoutError
from workbench.redact import plain_text, redact_text, redact_url
from workbench.rerankers.base import BaseReranker, RerankerUsage
from workbench.rerankers.scores.cache import ScoreCache
from workbench.service_calls import InvalidAnswer, ServiceCaller, ServiceWords, finite_number, service_address
from workbench.vocab import HOSTED_KEYS, REPLICA_SEPARATOR, SERVICE_KIND, TEI_KIND, TEI_PREFIX, ScoreScale

SETTING = "RERANKER_MODEL"
KEY_SETTING = "WORKBENCH_RERANK_API_KEY"


class RemoteReranker(BaseReranker):
    """A reranker that is a service. Subclasses set `kind`, `score_scale`, `max_documents`, and write
    `request` (the JSON body for one batch) and `read` (scores in input order, and the usage it reports)."""

    kind: ClassVar[str] = SERVICE_KIND
    score_scale: ScoreScale = "probability"
    max_documents: ClassVar[int] = 1000

    def __init__(
        self,
        model_id: str,
        settings: Settings,
        cache: ScoreCache,
        *,
        url: str | list[str],
        key: str | None = None,
        keys: list[str | None] | None = None,
    ):
        """`url` is one URL, or the URLs of replicas of one service, asked in turn (round-robin); `key` is the
        token for all of them, or `keys` one for each replica."""
        super().__init__(model_id, cache)
        self.urls = [url] if isinstance(url, str) else list(url)
        self.url = self.urls[0]
        self.timeout = settings.rerank_timeout
        self.service = ServiceCaller(
            self.urls, keys or [key] * len(self.urls), self._words(), timeout=self.timeout,
            retries=settings.rerank_retries,
        )  # fmt: skip
        self.shown_url = self.service.shown_url
        self.backend = f"{self.kind} {self.shown_url}"
        self.retries = settings.rerank_retries
        self.batch_limit = settings.rerank_max_documents or self.max_documents
        self.batch_tokens = settings.rerank_batch_tokens

    def _words(self) -> ServiceWords:
        if self.kind in HOSTED_KEYS:
            fix = f"set {HOSTED_KEYS[self.kind]} to a valid key"
        else:
            fix = f"set {KEY_SETTING} to a valid token, or give it in the URL (http://:TOKEN@host)"
        return ServiceWords("The reranker", SETTING, fix, "WORKBENCH_RERANK_TIMEOUT")

    # What a kind writes and reads -------------------------------------------------------------------------
    def request(self, query: str, documents: list[str]) -> dict[str, Any]:
        raise NotImplementedError

    def read(self, answer: Any, count: int) -> tuple[list[float], RerankerUsage]:
        raise NotImplementedError

    # Calling ------------------------------------------------------------------------------------------------
    def predict(self, query: str, texts: list[str], deadline: float | None = None) -> list[float]:
        """Every text scored by the service, in batches of at most `batch_limit` documents (and `batch_tokens`
        tokens), sent to the replicas at once where there are several; no request is sent once `deadline`
        (time.monotonic()) has passed."""
        spans = request_spans(query, texts, self.batch_limit, self.batch_tokens)
        if len(spans) > 1 and len(self.urls) > 1:
            with ThreadPoolExecutor(min(len(spans), len(self.urls)), thread_name_prefix="workbench-rerank") as pool:
                parts = list(pool.map(lambda span: self._scored(query, texts[span[0] : span[1]], deadline), spans))
        else:
            parts = [self._scored(query, texts[start:end], deadline) for start, end in spans]
        return [score for part in parts for score in part]

    def _scored(self, query: str, batch: list[str], deadline: float | None) -> list[float]:
        """One request's scores, checked."""
        if deadline is not None and time.monotonic() > deadline:
            raise QueryTimeoutError("The search ran past its time limit (WORKBENCH_QUERY_TIMEOUT) and was stopped.")
        answer = self._post(self.request(query, batch))
        try:
            batch_scores, used = self.read(answer, len(batch))
            check_scores(batch_scores, self.score_scale)
        except InvalidAnswer as exc:
            raise self._untrusted(exc) from exc
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise ModelError(
                f"The reranker at {self.shown_url} answered in a shape the workbench does not read "
                f"({type(exc).__name__}: {redact_text(str(exc))[:200]}): is it a {self.kind} reranker? "
                f"Check {SETTING}."
            ) from exc
        self.counted(documents=len(batch), tokens=used.tokens, billed_units=used.billed_units)
        return batch_scores

    def _post(self, body: dict[str, Any]) -> Any:
        try:
            return self.service.post(body)
        except InvalidAnswer as exc:
            raise self._untrusted(exc) from exc

    def _untrusted(self, exc: InvalidAnswer) -> ModelError:
        return ModelError(
            f"The reranker at {self.shown_url} answered {exc}: its scores cannot be trusted, so none are used. "
            f"Check the service, or {SETTING}."
        )

    def close(self) -> None:
        self.service.close()


CHARS_PER_TOKEN = 4  # what a request's size in tokens is estimated from (no tokenizer of the service's here)


def request_spans(query: str, texts: list[str], max_documents: int, max_tokens: int = 0) -> list[tuple[int, int]]:
    """Where a query's texts are cut into requests: spans [start, end) of at most `max_documents` texts and, with
    `max_tokens`, about that many tokens (each text counted with the query, at 4 characters a token; a text larger
    than the budget goes alone)."""
    spans: list[tuple[int, int]] = []
    start, used = 0, 0
    query_tokens = len(query) // CHARS_PER_TOKEN + 1
    for i, text in enumerate(texts):
        cost = query_tokens + len(text) // CHARS_PER_TOKEN + 1
        full = i - start >= max_documents or (max_tokens > 0 and i > start and used + cost > max_tokens)
        if full:
            spans.append((start, i))
            start, used = i, 0
        used += cost
    if start < len(texts):
        spans.append((start, len(texts)))
    return spans


def indexed_scores(results: list[dict[str, Any]], count: int, field: str) -> list[float]:
    """Scores from `[{index, <field>}]` in input order; every input must have exactly one, and no other index
    may appear."""
    if not isinstance(results, list):
        raise TypeError(f"the results are {type(results).__name__}, not a list")
    scores: list[float | None] = [None] * count
    for item in results:
        index = item["index"]
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            raise InvalidAnswer(f"index {plain_text(json.dumps(index))[:40]} for {count} documents sent")
        if scores[index] is not None:
            raise InvalidAnswer(f"document {index} twice")
        scores[index] = finite_number(item[field], f"the score of document {index}")
    if any(s is None for s in scores):
        raise InvalidAnswer(f"{scores.count(None)} of {count} documents without a score")
    return [float(s) for s in scores]  # type: ignore[arg-type]


def check_scores(scores: list[float], scale: ScoreScale) -> None:
    """Every score finite, and within [0, 1] on the probability scale."""
    for i, score in enumerate(scores):
        finite_number(score, f"the score of document {i}")
        if scale == "probability" and not 0.0 <= score <= 1.0:
            raise InvalidAnswer(f"{score:g} as the score of document {i}, which is no probability (0 to 1)")


def _cohere_shaped(answer: Any, results_field: str, count: int) -> tuple[list[float], RerankerUsage]:
    """Scores from `{<results_field>: [{index, relevance_score}]}`, and the usage the answer reports (tokens in
    `usage.total_tokens`, billed searches in `meta.billed_units.search_units`)."""
    scores = indexed_scores(answer[results_field], count, "relevance_score")
    usage = answer.get("usage") if isinstance(answer.get("usage"), dict) else {}
    meta = answer.get("meta") if isinstance(answer.get("meta"), dict) else {}
    billed = meta.get("billed_units") if isinstance(meta.get("billed_units"), dict) else {}
    return scores, RerankerUsage(
        tokens=int(reported_count(usage.get("total_tokens"))), billed_units=reported_count(billed.get("search_units"))
    )


def reported_count(value: Any) -> float:
    """A usage count as reported, 0 where it is missing or not a finite, non-negative number (usage figures
    are information: an odd one never fails a search)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return 0.0
    return float(value)


def replica_urls(model_id: str) -> list[str]:
    """The URLs of a service's replicas, written one after another with commas between them
    (`http://gpu1:7997,http://gpu2:7997`): each asked in turn. One URL is a list of one."""
    parts = [part.strip() for part in model_id.split(REPLICA_SEPARATOR)]
    if len(parts) > 1 and not all("://" in part for part in parts):
        shown = redact_url(plain_text(model_id))[:200]
        raise ConfigError(f"{SETTING} '{shown}': replicas are full URLs separated by commas, each with its scheme.")
    return parts


class RerankService(RemoteReranker):
    """A server speaking the Cohere-style `POST /rerank` (Infinity, vLLM, Jina-compatible servers, `workbench
    serve`): `{model?, query, documents, return_documents: false}` -> `{results: [{index, relevance_score}]}`.
    Such servers answer probabilities. The model is the one the server lists at `GET /models` when it serves
    exactly one; a URL ending in `/rerank` is used as given."""

    kind = SERVICE_KIND
    route: ClassVar[str] = "/rerank"  # the path a URL without it is given
    prefix: ClassVar[str] = ""  # what the id's URLs start with before their scheme

    def __init__(self, model_id: str, settings: Settings, cache: ScoreCache) -> None:
        addresses = [
            service_address(given.removeprefix(self.prefix), self.route, prefix=self.prefix)
            for given in replica_urls(model_id)
        ]
        key = _secret(settings.rerank_api_key)
        public = REPLICA_SEPARATOR.join(a.public_id for a in addresses)
        keys = [a.token or key for a in addresses]  # each replica its own token, the setting's where it has none
        super().__init__(public, settings, cache, url=[str(a.url) for a in addresses], keys=keys)
        self.models_urls = [a.url.copy_with(path=a.url.path.removesuffix(self.route) + "/models") for a in addresses]
        self.models_url = self.models_urls[0]
        self.served_model = self._served_model()

    def _served_model(self) -> str | None:
        """The model the service lists, asked of each replica in turn until one answers (one replica down is not
        the service down); when none answers, the first one's failure is said, once."""
        failures: list[Exception] = []
        for url in self.models_urls:
            try:
                listed = self.service.client.get(url, headers=self.service.headers())
                break
            except (httpx.TimeoutException, httpx.ConnectError) as exc:  # down or hung: the next replica
                failures.append(exc)
            except httpx.HTTPError:
                return None
        else:
            raise self.service.unreachable(failures[0]) from failures[0]
        try:
            models = [m.get("id") for m in listed.json().get("data", [])] if listed.status_code == 200 else []
        except (ValueError, AttributeError):
            return None  # not every server lists its models; the request then names none
        return models[0] if len(models) == 1 else None

    def request(self, query: str, documents: list[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"query": query, "documents": documents, "return_documents": False}
        if self.served_model:
            body["model"] = self.served_model
        return body

    def read(self, answer: Any, count: int) -> tuple[list[float], RerankerUsage]:
        return _cohere_shaped(answer, "results", count)


class TeiReranker(RemoteReranker):
    """Hugging Face text-embeddings-inference: `POST /rerank` `{query, texts, raw_scores: true}` ->
    `[{index, score}]`, asked for raw scores, so the scale is the model's logit."""

    kind = TEI_KIND
    score_scale: ScoreScale = "logit"

    def __init__(self, model_id: str, settings: Settings, cache: ScoreCache) -> None:
        addresses = [
            service_address(given.removeprefix(TEI_PREFIX), "/rerank", prefix=TEI_PREFIX)
            for given in replica_urls(model_id)
        ]
        key = _secret(settings.rerank_api_key)
        public = REPLICA_SEPARATOR.join(a.public_id for a in addresses)
        keys = [a.token or key for a in addresses]
        super().__init__(public, settings, cache, url=[str(a.url) for a in addresses], keys=keys)

    def request(self, query: str, documents: list[str]) -> dict[str, Any]:
        return {"query": query, "texts": documents, "raw_scores": True, "truncate": True, "return_text": False}

    def read(self, answer: Any, count: int) -> tuple[list[float], RerankerUsage]:
        return indexed_scores(answer, count, "score"), RerankerUsage()


def _secret(value: Any) -> str | None:
    """A SecretStr setting's value, or None."""
    return value.get_secret_value() if value is not None else None


def _hosted_key(kind: str) -> str:
    variable = HOSTED_KEYS[kind]
    key = os.environ.get(variable, "").strip()
    if not key:
        raise ConfigError(f"The {kind} reranker needs an API key: set {variable} in the environment.")
    return key


class HostedReranker(RemoteReranker):
    """A hosted API named `<kind>:<model>`: its URL from the `<kind>_url` setting plus `route`, its key from the
    kind's variable. Answers are `{<results_field>: [{index, relevance_score}]}` with the usage in
    `usage.total_tokens` or `meta.billed_units.search_units`; a kind writes only its request."""

    route: ClassVar[str] = "/v1/rerank"
    results_field: ClassVar[str] = "results"
    example: ClassVar[str] = ""

    def __init__(self, model_id: str, settings: Settings, cache: ScoreCache) -> None:
        self.model = model_id.removeprefix(f"{self.kind}:").strip()
        if not self.model:
            raise ConfigError(f"'{self.kind}:' names no model: write {self.kind}:MODEL (e.g. {self.example}).")
        setting = f"WORKBENCH_{self.kind.upper()}_URL"
        url = service_address(getattr(settings, f"{self.kind}_url"), self.route, setting).url
        super().__init__(model_id, settings, cache, url=str(url), key=_hosted_key(self.kind))

    def read(self, answer: Any, count: int) -> tuple[list[float], RerankerUsage]:
        return _cohere_shaped(answer, self.results_field, count)


class CohereReranker(HostedReranker):
    """Cohere (`cohere:rerank-v3.5`): `POST /v2/rerank` `{model, query, documents, top_n}`; bills searches
    (`meta.billed_units.search_units`); key COHERE_API_KEY."""

    kind = "cohere"
    route = "/v2/rerank"
    example = "cohere:rerank-v3.5"

    def request(self, query: str, documents: list[str]) -> dict[str, Any]:
        return {"model": self.model, "query": query, "documents": documents, "top_n": len(documents)}


class JinaReranker(HostedReranker):
    """Jina (`jina:jina-reranker-v2-base-multilingual`): `POST /v1/rerank` `{model, query, documents, top_n,
    return_documents: false}`; bills tokens (`usage.total_tokens`); key JINA_API_KEY."""

    kind = "jina"
    example = "jina:jina-reranker-v2-base-multilingual"

    def request(self, query: str, documents: list[str]) -> dict[str, Any]:
        body = {"model": self.model, "query": query, "documents": documents, "top_n": len(documents)}
        return {**body, "return_documents": False}


class VoyageReranker(HostedReranker):
    """Voyage (`voyage:rerank-2`): `POST /v1/rerank` `{model, query, documents, return_documents: false,
    truncation: true}` -> `{data: [...]}`; bills tokens (`usage.total_tokens`); key VOYAGE_API_KEY."""

    kind = "voyage"
    results_field = "data"
    example = "voyage:rerank-2"

    def request(self, query: str, documents: list[str]) -> dict[str, Any]:
        body = {"model": self.model, "query": query, "documents": documents}
        return {**body, "return_documents": False, "truncation": True}

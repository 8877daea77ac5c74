"""Any search service as a first stage: an HTTP search API declared in workbench.toml, read-only.

    [collections.prod]
    store = "http"
    url = "https://search.internal/api/search"
    method = "POST"                                  # or GET (the template then goes in the query string)
    body = { q = "{query}", size = "{k}" }           # "{query}", "{k}" and "{filters}" are filled in per search
    headers = { Authorization = "Bearer ${SEARCH_TOKEN}" }   # ${VAR}: from the environment, never shown
    hits = "data.results"                            # where the list of hits sits in the answer (dotted; "" = root)
    id = "doc_id"   text = "body"   title = "title"   score = "score"   metadata = "fields"   # within a hit

Calls go through `ServiceCaller` like the remote rerankers (one deadline a try, retries on 429 and 5xx, redirects
refused, NaN refused, the URL redacted and the headers' secrets never shown), and every answer is checked: not
JSON, a missing hits list, a hit without an id or a text, a repeated id, a score that is not a finite number
are each one clear line naming the service and the setting to fix.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import numpy as np

from workbench.errors import ConfigError, InputError, ModelError, StoreError
from workbench.inputs import validate_doc_id
from workbench.redact import plain_text, redact_url
from workbench.service_calls import InvalidAnswer, ServiceCaller, ServiceWords, finite_number
from workbench.stores.base import CONTENT_HASH_KEY, Collection, StoreBackend
from workbench.types import Chunk, CollectionInfo, Hit, Metadata
from workbench.vocab import DEFAULT_STORE_TIMEOUT, MAX_SERVICE_RETRIES, SEARCH_SERVICE_STORE

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_FIELDS = ("id", "text", "title", "score", "metadata")
_OPTIONS = frozenset({"method", "body", "params", "headers", "hits", "retries"})  # what a [collections.X] table sets


def _environment(value: str, where: str) -> str:
    """`${VAR}` in a header's value replaced by the environment's VAR (ConfigError naming VAR when unset)."""

    def variable(match: re.Match[str]) -> str:
        found = os.environ.get(match.group(1))
        if found is None:
            raise ConfigError(f"{where} names ${{{match.group(1)}}}, which is not set in the environment.")
        return found

    return _VARIABLE.sub(variable, value)


def _filled(template: Any, query: str, k: int, filters: Metadata | None) -> Any:
    """The request template with "{query}", "{k}" and "{filters}" filled in (a value that is only "{k}" or
    "{filters}" becomes the number or the object itself)."""
    if isinstance(template, dict):
        return {key: _filled(value, query, k, filters) for key, value in template.items()}
    if isinstance(template, list):
        return [_filled(value, query, k, filters) for value in template]
    if template == "{k}":
        return k
    if template == "{filters}":
        return dict(filters or {})
    if isinstance(template, str):
        return template.replace("{query}", query).replace("{k}", str(k))
    return template


def _at(value: Any, path: str) -> Any:
    """The value at a dotted path ("data.results"; "" is the value itself); KeyError when it is not there."""
    for part in [p for p in path.split(".") if p]:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise KeyError(part)
    return value


class HttpSearchCollection(Collection):
    """A search service's answers as a read-only collection (it embeds and ranks by itself)."""

    store: ClassVar[str] = SEARCH_SERVICE_STORE
    embeds_queries: ClassVar[bool] = True
    embeds_documents: ClassVar[bool] = True

    def __init__(self, name: str, url: str, options: dict[str, Any], timeout: float) -> None:
        self.name = name
        self.location = redact_url(url)
        self.options = options
        self.where = f"[collections.{plain_text(name)[:40]}]"
        unused = sorted(set(options) - _OPTIONS - set(_FIELDS))
        if unused:  # a declaration that does nothing is refused, not ignored (a typo would search as if unset)
            raise ConfigError(
                f"{self.where} has keys a search service does not read: {', '.join(plain_text(k)[:30] for k in unused)}"
                f" (it reads store, url, collection, {', '.join(sorted(_OPTIONS))} and the hit fields "
                f"{', '.join(_FIELDS)})."
            )
        self.method = str(options.get("method", "POST")).upper()
        self.url = url
        self.timeout = timeout
        self._caller: ServiceCaller | None = None
        self.template = options.get("body" if self.method == "POST" else "params") or {"query": "{query}", "k": "{k}"}
        self.fields = {field: options.get(field, field) for field in _FIELDS}
        self.hits_path = str(options.get("hits", "hits"))

    def caller(self) -> ServiceCaller:
        """The service's caller, made on the first search: its headers' `${VAR}`s are read then (so listing the
        collections never needs a secret that is not set)."""
        if self._caller is None:
            if self.method not in {"GET", "POST"}:
                raise ConfigError(f"{self.where} method must be GET or POST; got {plain_text(self.method)[:10]}.")
            headers = {
                str(k): _environment(str(v), f"{self.where} headers.{k}")
                for k, v in (self.options.get("headers") or {}).items()
            }
            if urlsplit(self.url).username is not None and any(k.lower() == "authorization" for k in headers):
                raise ConfigError(
                    f"{self.where} gives credentials twice, in the url (user:password@) and as an Authorization "
                    "header, and only one would be sent: keep one of the two."
                )
            words = ServiceWords(
                noun=f"The search service '{plain_text(self.name)[:40]}'", setting=f"{self.where} url",
                auth_fix=f"check {self.where} headers (their secrets come from the environment)",
                timeout_setting="WORKBENCH_STORE_TIMEOUT",
            )  # fmt: skip
            self._caller = ServiceCaller(
                [self.url], [None], words, timeout=self.timeout, retries=self._retries(),
                method=self.method, headers=headers,
            )  # fmt: skip
        return self._caller

    def _retries(self) -> int:
        """How often a busy or failing service is asked again: 0 to MAX_SERVICE_RETRIES, so that a search ends
        within (retries + 1) deadlines."""
        value = self.options.get("retries", 2)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SERVICE_RETRIES:
            raise ConfigError(
                f"{self.where} retries is a whole number from 0 to {MAX_SERVICE_RETRIES}; got "
                f"{plain_text(str(value))[:20]}."
            )
        return value

    def count(self) -> int:
        return -1  # a service does not say

    def info(self) -> CollectionInfo:
        return CollectionInfo(
            name=self.name, store=self.store, location=self.location, count=-1,
            written_by=f"the search service at {self.location}", read_only=True,
        )  # fmt: skip

    def search(
        self, k: int, filters: Metadata | None = None, *, vector: np.ndarray | None = None, text: str | None = None
    ) -> list[Hit]:
        if text is None:
            raise InputError(f"The search service '{self.name}' is asked by query text: pass text=.")
        request = _filled(self.template, text, k, filters)
        try:
            get = self.method == "GET"
            answer = self.caller().post(None if get else request, request if get else None)
            return self._hits(answer)[:k]
        except (ModelError, InvalidAnswer) as exc:
            raise StoreError(str(exc) if isinstance(exc, ModelError) else self._wrong(str(exc))) from exc

    def _wrong(self, what: str) -> str:
        return (
            f"The search service '{plain_text(self.name)[:40]}' at {self.location} answered {what}: check the hit "
            f"fields in [collections.{plain_text(self.name)[:40]}] (hits, id, text, title, score, metadata)."
        )

    def _hits(self, answer: Any) -> list[Hit]:
        try:
            rows = _at(answer, self.hits_path)
        except KeyError:
            raise InvalidAnswer(f"no list of hits at '{self.hits_path}'") from None
        if not isinstance(rows, list):
            raise InvalidAnswer(f"{type(rows).__name__} where the list of hits belongs ('{self.hits_path}')")
        hits: list[Hit] = []
        seen: set[str] = set()
        for rank, row in enumerate(rows, start=1):
            hits.append(self._hit(row, rank, seen))
        return hits

    def _field(self, row: Any, field: str, rank: int, required: bool = False) -> Any:
        path = self.fields[field]
        try:
            return _at(row, str(path)) if path else None
        except KeyError:
            if required:
                raise InvalidAnswer(f"hit {rank} without its {field} ('{path}')") from None
            return None

    def _hit(self, row: Any, rank: int, seen: set[str]) -> Hit:
        doc_id = self._field(row, "id", rank, required=True)
        if doc_id in (None, "") or isinstance(doc_id, dict | list):
            raise InvalidAnswer(f"hit {rank} without an id")
        try:
            doc_id = validate_doc_id(str(doc_id))
        except InputError as exc:
            raise InvalidAnswer(f"hit {rank} with an id that cannot be one ({exc})") from None
        if doc_id in seen:
            raise InvalidAnswer(f"the id {plain_text(doc_id)[:40]} twice")
        seen.add(doc_id)
        text = self._field(row, "text", rank, required=True)
        if not isinstance(text, str) or not text.strip():
            raise InvalidAnswer(f"hit {rank} ({plain_text(doc_id)[:40]}) without a text")
        score = self._field(row, "score", rank)
        score = -float(rank) if score is None else finite_number(score, f"the score of hit {rank}")
        extra = self._field(row, "metadata", rank)
        metadata = dict(extra) if isinstance(extra, dict) else {}
        metadata.setdefault("document_id", doc_id)
        title = self._field(row, "title", rank)
        if title:
            metadata.setdefault("title", str(title))
        return Hit(id=doc_id, text=text, metadata=metadata, score=score)

    def _read_only(self) -> StoreError:
        return StoreError(f"'{self.name}' is a search service: the workbench asks it and never writes it.")

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray | None) -> None:
        raise self._read_only()

    def stored_chunks(
        self, origins: Sequence[str], ids: Sequence[str] = (), key: str = CONTENT_HASH_KEY
    ) -> dict[str, str | None]:
        return {}

    def delete_chunks(self, ids: Sequence[str]) -> None:
        raise self._read_only()

    def browse(self, offset: int = 0, limit: int = 20) -> list[Chunk]:
        raise StoreError(
            f"'{self.name}' is a search service: it answers queries and cannot list its documents (so no BM25 index "
            "can be built over it either; its own ranking is the first stage)."
        )


class HttpSearchBackend(StoreBackend):
    """Search services named in workbench.toml (`store = "http"`): each collection is one service's API."""

    kind: ClassVar[str] = SEARCH_SERVICE_STORE

    def __init__(
        self,
        path: str | Path | None = None,
        url: str | None = None,
        *,
        timeout: float = DEFAULT_STORE_TIMEOUT,
        **options: Any,
    ) -> None:
        if not url:
            raise InputError('A search service is named by its URL: url = "https://host/search" in its table.')
        self.url, self.timeout, self.options = url, timeout, options
        self.location = redact_url(url)

    def list_collections(self) -> list[CollectionInfo]:
        return []  # each service is a collection named in workbench.toml (the registry lists those)

    def exists(self, name: str) -> bool:
        return True

    def get(self, name: str) -> HttpSearchCollection:
        return HttpSearchCollection(name, self.url, self.options, self.timeout)

    def create(self, name: str, *, embedding_model: str, dimension: int) -> HttpSearchCollection:
        raise StoreError(f"'{name}' is a search service: the workbench asks it and never writes it.")

    def delete(self, name: str) -> None:
        self.create(name, embedding_model="", dimension=0)

"""The workbench's reranker served as a rerank API: what `POST /rerank` (and `/v1/rerank`, `/v2/rerank`) does
for the Cohere v1/v2, Jina and Infinity clients, below the HTTP layer.

A request names the served model by any of its names (`served_names`), gives documents as strings or objects
(`document_text` reads `rank_fields`, else `text`), may cut each document to `max_tokens_per_doc` tokens and ask
for raw scores (the model's logit) instead of the 0-1 reading. The answer carries what each client reads:
`results[{index, relevance_score, document?}]`, `meta{api_version, billed_units{search_units}}` (Cohere) and
`usage{prompt_tokens, total_tokens}` (Infinity, Jina), and `reranked`.

Under a rerank budget (`ServedUnder`: the request's, or WORKBENCH_RERANK_BUDGET_MS) the request is served fail-open,
as a search is (`workbench.serving`): past the budget, when the reranker fails or its circuit is open, or when a run
check says it is not running as intended, the answer keeps the documents in the order they were sent (the caller's
first stage), `reranked: false` with `rerank_fallback` saying why (and the `X-Rerank-Fallback` header, which a
text-embeddings-inference list cannot carry), each `relevance_score` read as an order is: (n - rank + 1) / n, minus
the rank when raw. Never an error, never some documents scored and the rest not.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from workbench.errors import InputError, ModelError
from workbench.redact import plain_text, public_name
from workbench.rerankers.base import Reranker, to_probability
from workbench.serving import SAME_SCORES, RerankGuard, same_scores, sooner
from workbench.vocab import CHAT_MODEL_SEPARATOR, ORDER_SCALE

MAX_RERANK_DOCUMENTS = 1000
MAX_DOCUMENT_CHARS = 100_000
# What clients name when they mean "whatever is served": Infinity's client default, and none at all.
ANY_MODEL = frozenset({"", "default/not-specified", "default"})
_WORD = re.compile(r"\S+")


def served_names(reranker: Reranker, extra: Sequence[str] = ()) -> list[str]:
    """Every name the served model answers to: the names set by WORKBENCH_SERVED_MODEL_NAME first (the first
    is the one answers carry), then its public id and its short name (a listwise reranker's chat model)."""
    names = [n for n in extra if n]
    public = public_name(reranker.model_id) or reranker.model_id
    short = public.rsplit("/", 1)[-1]
    for name in (public, short.rsplit(CHAT_MODEL_SEPARATOR, 1)[-1], short):  # a listwise id's chat model too
        if name not in names:
            names.append(name)
    return names


def check_model(asked: str | None, reranker: Reranker, names: list[str]) -> None:
    """InputError unless `asked` is one of the served names (or names none); the full id is taken too."""
    if asked is None or asked.strip() in ANY_MODEL or asked in names or asked == reranker.model_id:
        return
    shown = plain_text(asked)[:80]
    raise InputError(f"model '{shown}' is not served here: this workbench serves {', '.join(names)}.")


def document_text(document: str | dict[str, Any], index: int, rank_fields: Sequence[str] | None) -> str:
    """The text a document is ranked on: a string as it is; an object's `rank_fields` (each as 'field: value',
    one a line, as Cohere reads them), or its `text`."""
    if isinstance(document, str):
        return document
    if rank_fields:
        missing = [f for f in rank_fields if f not in document]
        if len(missing) == len(rank_fields):
            raise InputError(f"documents[{index}] has none of the rank_fields ({', '.join(rank_fields)}).")
        return "\n".join(f"{f}: {_field_text(document[f])}" for f in rank_fields if f in document)
    text = document.get("text")
    if not isinstance(text, str):
        raise InputError(f"documents[{index}] is an object without a 'text' string: add one, or name rank_fields.")
    return text


def _field_text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def truncated(reranker: Reranker, texts: list[str], max_tokens: int | None) -> list[str]:
    """Each text cut to its first `max_tokens` tokens (the model's tokenizer where it has one, else words)."""
    if max_tokens is None:
        return texts
    tokenizer = getattr(reranker, "tokenizer", None)
    if tokenizer is None:
        return [" ".join(_WORD.findall(t)[:max_tokens]) for t in texts]
    out = []
    for text, offsets in zip(
        texts, tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"], strict=True
    ):
        out.append(text if len(offsets) <= max_tokens else text[: offsets[max_tokens - 1][1]])
    return out


def prompt_tokens(reranker: Reranker, query: str, texts: list[str]) -> int:
    """The tokens of the (query, document) pairs as the model reads them: its tokenizer's count, cut at its
    maximum length; words for a reranker without a tokenizer (a service)."""
    tokenizer = getattr(reranker, "tokenizer", None)
    if tokenizer is None:
        query_words = len(_WORD.findall(query))
        return sum(query_words + len(_WORD.findall(t)) for t in texts)
    limit = getattr(reranker, "max_length", None) or 512
    special = tokenizer.num_special_tokens_to_add(pair=True)
    query_ids = len(tokenizer(query, add_special_tokens=False)["input_ids"])
    lengths = [len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]
    return sum(min(query_ids + n + special, limit) for n in lengths)


def relevance_score(score: float, scale: str, count: int, *, raw: bool = False) -> float:
    """A score as /rerank answers it: 0 to 1 (a logit through the sigmoid, a probability as it is), or the model's
    own number when `raw`. A listwise reranker's order (minus the rank) answers (n - rank + 1) / n: 1 for the first
    of n documents, 1/n for the last; its raw number is minus the rank."""
    if raw:
        return float(score)
    if scale == ORDER_SCALE:
        return (count + score + 1) / count
    return to_probability(score, scale)


@dataclass(frozen=True)
class ServedUnder:
    """A rerank request served fail-open: the engine's guard, the reranker's circuit name, and the budget."""

    guard: RerankGuard
    circuit: str
    budget_ms: float


def rerank_answer(
    reranker: Reranker,
    query: str,
    documents: list[str | dict[str, Any]],
    *,
    model: str | None = None,
    served: Sequence[str] = (),
    top_n: int | None = None,
    return_documents: bool = False,
    rank_fields: Sequence[str] | None = None,
    max_tokens_per_doc: int | None = None,
    raw_scores: bool = False,
    api_version: str = "2",
    deadline: float | None = None,
    under: ServedUnder | None = None,
) -> dict[str, Any]:
    """The answer to one rerank request: the documents scored by `reranker`, best first, `top_n` of them; `under`
    a rerank budget, served fail-open (see the module)."""
    names = served_names(reranker, served)
    check_model(model, reranker, names)
    texts = document_texts(documents, rank_fields)
    ranked_texts = truncated(reranker, texts, max_tokens_per_doc)
    fallback = None
    if under is None:
        scores: list[float] | None = list(reranker.score(query, ranked_texts, deadline=deadline)[0])
    else:
        served_now = under.guard.run(
            under.circuit,
            lambda until: list(reranker.score(query, ranked_texts, deadline=sooner(until, deadline))[0]),
            under.budget_ms,
            check=lambda values: SAME_SCORES if same_scores(values) else None,
        )  # fmt: skip
        scores, fallback = served_now.value, served_now.fallback
    answer = ranked_answer(
        names[0], documents, texts, scores, reranker.score_scale, top_n=top_n, return_documents=return_documents,
        raw_scores=raw_scores, api_version=api_version, tokens=prompt_tokens(reranker, query, ranked_texts),
    )  # fmt: skip
    return answer if fallback is None else {**answer, "rerank_fallback": fallback}


def document_texts(documents: Sequence[str | dict[str, Any]], rank_fields: Sequence[str] | None) -> list[str]:
    """The text each document is ranked on (`document_text`), none longer than MAX_DOCUMENT_CHARS."""
    texts = [document_text(d, i, rank_fields) for i, d in enumerate(documents)]
    long = next((i for i, t in enumerate(texts) if len(t) > MAX_DOCUMENT_CHARS), None)
    if long is not None:
        raise InputError(f"documents[{long}] is longer than {MAX_DOCUMENT_CHARS} characters.")
    return texts


def ranked_answer(
    model: str,
    documents: Sequence[str | dict[str, Any]],
    texts: list[str],
    scores: Sequence[float] | None,
    scale: str,
    *,
    top_n: int | None,
    return_documents: bool,
    raw_scores: bool,
    api_version: str,
    tokens: int,
) -> dict[str, Any]:
    """A rerank answer: the documents best first by `scores`, `top_n` of them; with no scores (served fail-open),
    in the order sent, each scored as that order reads (`relevance_score` of an order), `reranked: false`."""
    reranked = scores is not None
    if scores is None:  # the caller's own order, as an order is read: never a made-up relevance
        scale, scores = ORDER_SCALE, [-(rank + 1.0) for rank in range(len(texts))]
    order = sorted(range(len(texts)), key=lambda i: (-scores[i], i))[: top_n or len(texts)]
    results = []
    for i in order:
        score = relevance_score(scores[i], scale, len(texts), raw=raw_scores)
        document = {"document": returned_document(documents[i], texts[i])} if return_documents else {}
        results.append({"index": i, "relevance_score": score, **document})
    return {
        "id": f"rerank-{uuid.uuid4().hex[:16]}",
        "object": "rerank",
        "created": int(time.time()),
        "model": model,
        "results": results,
        "meta": {"api_version": {"version": api_version}, "billed_units": {"search_units": 1}},
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        "reranked": reranked,
    }


def returned_document(sent: str | dict[str, Any], ranked_text: str) -> dict[str, Any]:
    """A document as a result carries it back: a string as `{text}`; an object as it was sent, all its fields
    (Cohere v1 answers `rank_fields` documents so), with the text it was ranked on only where it had no `text`."""
    if isinstance(sent, dict):
        return sent if isinstance(sent.get("text"), str) else {**sent, "text": ranked_text}
    return {"text": sent}


AnswerShape = Literal["cohere", "voyage", "tei", "mixedbread"]


def in_shape(answer: dict[str, Any], shape: AnswerShape) -> Any:
    """A rerank answer in the shape its client reads: Cohere's, Jina's and Infinity's as made; Voyage's with the
    results also in `data`; Mixedbread's in `data` with `score` and `input`; text-embeddings-inference's as its list
    of `{index, score, text?}`."""
    if shape == "voyage":  # Voyage's results carry the document as a plain string
        data = [
            {**r, "document": r["document"]["text"]} if "document" in r else r for r in answer["results"]
        ]  # fmt: skip
        return {**answer, "object": "list", "data": data}
    if shape == "mixedbread":  # Mixedbread's `data`: `score`, and the document's text as `input`
        data = [
            {"index": r["index"], "relevance_score": r["relevance_score"], "score": r["relevance_score"],
             **({"input": r["document"]["text"]} if "document" in r else {})}
            for r in answer["results"]
        ]  # fmt: skip
        return {**answer, "object": "list", "data": data}
    if shape == "tei":
        return [
            {
                "index": r["index"],
                "score": r["relevance_score"],
                **({"text": r["document"]["text"]} if "document" in r else {}),
            }
            for r in answer["results"]
        ]
    return answer


def model_list(reranker: Reranker, served: Sequence[str] = (), started: float | None = None) -> dict[str, Any]:
    """`GET /models` in the OpenAI list shape that Infinity's client reads too (`stats`, `backend`,
    `capabilities`): one entry, under the first served name (requests may use any of them)."""
    usage = reranker.usage
    created = int(started or time.time())
    return {
        "object": "list",
        "data": [
            {
                "id": name,
                "object": "model",
                "created": created,
                "backend": reranker.backend,
                "capabilities": ["rerank"],
                "stats": {"requests": usage.requests, "documents": usage.documents, "tokens": usage.tokens},
            }
            for name in served_names(reranker, served)[:1]
        ],
    }


def served_reranker(reranker: Reranker | None) -> Reranker:
    """The reranker to serve, or a ModelError when the workbench has none."""
    if reranker is None:
        raise ModelError("This workbench reranks with no model (RERANKER_MODEL=none): it cannot serve /rerank.")
    return reranker

"""A local server speaking the hosted rerank APIs' request and response shapes (Cohere v2, Jina v1, Voyage v1),
text-embeddings-inference's and the Cohere-style service's, under one prefix each, and OpenAI's chat completions
(`/openai/v1/chat/completions`) answering as an LLM judge from a fixed rubric, and as a listwise LLM reranker
(`/listwise/<case>/v1/chat/completions`: RankGPT's prompt read back, the passages ranked by the rule, answered well
or malformed as LISTWISE_CASES says), and as a chat model asked pair by pair for the chat+ kind
(`/pointwise/<case>/v1/chat/completions`: the first token's top log-probabilities from the rule, as POINTWISE_CASES
says). None of the hosted APIs can be reached from here, so this is what their
clients are tested against.

Scores follow a fixed rule the tests can recompute: the share of the query's words found in the document.
`Behaviour` makes it refuse keys, answer 429 or 503 a given number of times, or stop listening after N requests.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from tests.conftest import free_port

# What each bad service puts where the first document's score (or index) belongs; strings are written raw.
BAD_ANSWERS: dict[str, Any] = {
    "nan": "NaN",
    "infinity": "Infinity",
    "true": True,
    "string": '"0.9"',
    "big": 1e6,
    "negative": -5,
    "null": None,
    "index-repeated": 1,
    "index-negative": -1,
    "index-extra": 99,
    "index-true": True,
}


def text_vector(text: str) -> list[float]:
    """The embedding rule: 4 numbers from the text's length and words, never all zero (0.5 is always there)."""
    return [0.5, float(len(text) % 7), float(len(text.split())), float(sum(map(ord, text)) % 11)]


def _with_first(rows: list[dict[str, Any]], **changed: Any) -> list[dict[str, Any]]:
    return [{**rows[0], **changed}, *rows[1:]]


# How a bad embedding service answers (the rows it would have sent well, changed).
EMBEDDING_CASES: dict[str, Any] = {
    "zero": lambda rows: _with_first(rows, embedding=[0.0] * 4),
    "ragged": lambda rows: _with_first(rows, embedding=[0.5, 1.0]),
    "too-many": lambda rows: [*rows, {**rows[0], "index": len(rows)}],
    "too-few": lambda rows: rows[1:],
    "base64": lambda rows: _with_first(rows, embedding="AAAAPwAAgD8="),
    "null": lambda rows: _with_first(rows, embedding=None),
    "index-repeated": lambda rows: [rows[0], {**rows[1], "index": 0}, *rows[2:]],
    "no-index": lambda rows: _with_first(rows, index=None),
    "string-number": lambda rows: _with_first(rows, embedding=["0.5", 1, 2, 3]),
}


def overlap(query: str, document: str) -> float:
    """The rule: the share of the query's distinct words that the document contains."""
    words = set(re.findall(r"\w+", query.lower()))
    found = set(re.findall(r"\w+", document.lower()))
    return len(words & found) / len(words) if words else 0.0


def rubric_grade(query: str, passage: str) -> int:
    """The judge's rubric: 3 when at least 3/4 of the query's words are in the passage, 2 from 1/2, 1 from 1/4."""
    share = overlap(query, passage)
    return 3 if share >= 0.75 else 2 if share >= 0.5 else 1 if share >= 0.25 else 0


_PASSAGE = re.compile(r"^\[(\d+)\] (.*)$", re.DOTALL)
_RANK_QUERY = re.compile(r"relevance to query: (?P<query>.*)\.$", re.DOTALL)


def listwise_order(query: str, passages: list[str]) -> list[int]:
    """The listwise rule: the passages (1-based) by the share of the query's words they hold, ties by position."""
    return sorted(range(1, len(passages) + 1), key=lambda i: (-overlap(query, passages[i - 1]), i))


# How the listwise endpoint answers for a window whose right order is `order` (1-based ids).
LISTWISE_CASES: dict[str, Any] = {
    "good": lambda order: " > ".join(f"[{i}]" for i in order),
    "repeats": lambda order: " > ".join(f"[{i}]" for i in [*order[:2], order[0], *order[2:], order[1]]),
    "missing": lambda order: " > ".join(f"[{i}]" for i in order[: max(1, len(order) // 2)]),
    "prose": lambda order: "Sure! The ranking is " + " > ".join(f"[{i}]" for i in order) + ". Hope it helps.",
    "out-of-range": lambda order: " > ".join(f"[{i}]" for i in [99, *order, 0]),
    "empty": lambda order: "",
    "null": lambda order: None,
    "reversed": lambda order: " > ".join(f"[{i}]" for i in order[::-1]),
    "list": lambda order: [f"[{i}]" for i in order],  # not a string: an answer that cannot be read
    "endless": lambda order: " > ".join(f"[{i % 7 + 1}]" for i in range(20_000)),  # ids repeated thousands of times
}


def pointwise_logprobs(query: str, document: str) -> list[dict[str, Any]]:
    """The first token's top choices for a pair: " yes" and "Yes" sharing P(yes) = the rule's share (kept inside
    (0.01, 0.99)), "no" the rest, and a third token beside them; log-probabilities, largest first."""
    share = min(max(overlap(query, document), 0.01), 0.99)
    rows = [(" yes", 0.7 * share), ("Yes", 0.2 * share), ("no", 0.9 * (1 - share)), ("The", 0.1)]
    return [
        {"token": t, "logprob": math.log(p), "bytes": list(t.encode())} for t, p in sorted(rows, key=lambda r: -r[1])
    ]


# How the pointwise endpoint writes `logprobs` for a pair whose top choices are `top` (see pointwise_logprobs).
POINTWISE_CASES: dict[str, Any] = {
    "good": lambda top: {"content": [{**top[0], "top_logprobs": top}]},
    "no-logprobs": lambda top: None,  # an endpoint that ignores `logprobs`
    "neither": lambda top: {
        "content": [
            {
                "token": "The",
                "logprob": -0.1,
                "top_logprobs": [{"token": "The", "logprob": -0.1}, {"token": "A", "logprob": -2.5}],
            }
        ]
    },  # neither word among the top
    "positive": lambda top: {"content": [{**top[0], "logprob": 3.0, "top_logprobs": top}]},  # not a log-probability
    "string": lambda top: {"content": [{"token": "yes", "logprob": "-0.1", "top_logprobs": []}]},
    "too-much": lambda top: {
        "content": [
            {
                "token": "yes",
                "logprob": -0.1,
                "top_logprobs": [{"token": "yes", "logprob": -0.1}, {"token": "no", "logprob": -0.2}],
            }
        ]
    },  # 0.90 + 0.82: more than all there is
}


def read_rankgpt(messages: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """The query and the passages of RankGPT's chat messages."""
    asked = _RANK_QUERY.search(messages[1]["content"])
    passages = [m["content"] for m in messages[3:-1:2]]
    assert asked is not None and all(_PASSAGE.match(p) for p in passages), messages
    return asked["query"], [_PASSAGE.match(p).group(2) for p in passages]  # type: ignore[union-attr]


_ASKED = re.compile(r"Query: (?P<query>.*)\nPassage: (?P<passage>.*)", re.DOTALL)


@dataclass
class Behaviour:
    key: str
    busy: list[int] = field(default_factory=list)  # statuses to answer, one per request, before answering well
    stop_after: int | None = None  # stop listening after this many rerank requests
    requests: list[dict[str, Any]] = field(default_factory=list)
    delay: float = 0.0  # seconds each /service/rerank answer takes (a model busy elsewhere)
    in_flight: int = 0
    most_in_flight: int = 0  # the most /service/rerank requests answered at once
    hang_on: str | None = None  # /service/rerank hangs for `hang_seconds` on a query with this word
    hang_seconds: float = 4.0
    fail_on: str | None = None  # /service/rerank answers a query with this word with no scores (a lying server)


def create_app(behaviour: Behaviour, server: list[uvicorn.Server]) -> FastAPI:
    app = FastAPI()

    def gate(request: Request, body: dict[str, Any], keyed: bool) -> JSONResponse | None:
        given = request.headers.get("authorization")
        behaviour.requests.append({"path": request.url.path, "body": body, "authorization": given})
        if behaviour.stop_after is not None and len(behaviour.requests) >= behaviour.stop_after:
            server[0].should_exit = True
        if keyed and request.headers.get("authorization") != f"Bearer {behaviour.key}":
            given = request.headers.get("authorization", "")
            return JSONResponse({"message": f"invalid api token: {given}"}, status_code=401)
        if behaviour.busy:
            status = behaviour.busy.pop(0)
            return JSONResponse({"message": "busy"}, status_code=status, headers={"Retry-After": "0"})
        return None

    def ranked(query: str, documents: list[str], field_name: str) -> list[dict[str, Any]]:
        scored = [{"index": i, field_name: overlap(query, d)} for i, d in enumerate(documents)]
        return sorted(scored, key=lambda r: -r[field_name])

    @app.post("/cohere/v2/rerank")
    async def cohere(request: Request) -> Any:
        body = await request.json()
        refused = gate(request, body, keyed=True)
        results = ranked(body["query"], body["documents"], "relevance_score")[: body.get("top_n")]
        return refused or {"id": "x", "results": results, "meta": {"billed_units": {"search_units": 1}}}

    @app.post("/jina/v1/rerank")
    async def jina(request: Request) -> Any:
        body = await request.json()
        refused = gate(request, body, keyed=True)
        words = sum(len(d.split()) for d in body["documents"]) + len(body["query"].split())
        results = ranked(body["query"], body["documents"], "relevance_score")[: body.get("top_n")]
        return refused or {"model": body["model"], "results": results, "usage": {"total_tokens": words}}

    @app.post("/voyage/v1/rerank")
    async def voyage(request: Request) -> Any:
        body = await request.json()
        refused = gate(request, body, keyed=True)
        words = sum(len(d.split()) for d in body["documents"]) + len(body["query"].split())
        data = ranked(body["query"], body["documents"], "relevance_score")
        return refused or {"object": "list", "data": data, "usage": {"total_tokens": words}}

    @app.post("/tei/rerank")
    async def tei(request: Request) -> Any:
        body = await request.json()
        refused = gate(request, body, keyed=False)
        # TEI answers raw scores when asked: a logit, here the rule mapped to a logit-like range
        return refused or [
            {"index": r["index"], "score": 10 * r["score"] - 5} for r in ranked(body["query"], body["texts"], "score")
        ]

    @app.post("/service/rerank")
    async def service(request: Request) -> Any:
        body = await request.json()
        refused = gate(request, body, keyed=False)
        words = str(body.get("query", "")).split()
        if behaviour.fail_on in words:
            return {"results": "the model crashed"}
        behaviour.in_flight += 1
        behaviour.most_in_flight = max(behaviour.most_in_flight, behaviour.in_flight)
        try:
            await asyncio.sleep(behaviour.hang_seconds if behaviour.hang_on in words else behaviour.delay)
        finally:
            behaviour.in_flight -= 1
        return refused or {"results": ranked(body["query"], body["documents"], "relevance_score")}

    @app.post("/openai/v1/chat/completions")
    async def chat(request: Request) -> Any:
        body = await request.json()
        refused = gate(request, body, keyed=True)
        if refused:
            return JSONResponse({"error": {"message": refused.body.decode(), "type": "invalid_request_error"}},
                                status_code=refused.status_code)  # fmt: skip
        asked = _ASKED.search(body["messages"][-1]["content"])
        if asked is None or "garble" in asked["query"]:
            content = "I would rather not say."
        else:
            grade = rubric_grade(asked["query"], asked["passage"])
            content = json.dumps(
                {"grade": grade, "reason": f"{overlap(asked['query'], asked['passage']):.0%} of the query's words"}
            )
        prompt = sum(len(m["content"].split()) for m in body["messages"])
        usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": len(content.split()),
                                 "total_tokens": prompt + len(content.split())}  # fmt: skip
        choices = [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]
        query = asked["query"] if asked else ""
        if "no choices" in query:  # an endpoint that answers with nothing in it
            choices = []
        if "odd usage" in query:  # token counts that are not counts
            usage = {"prompt_tokens": "many", "completion_tokens": -3, "total_tokens": None}
        return {
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": choices, "usage": usage,
        }  # fmt: skip

    @app.post("/listwise/{case}/v1/chat/completions")
    async def listwise(case: str, request: Request) -> Any:
        """A chat model ranking RankGPT's window by the rule, answering as LISTWISE_CASES[case] writes it;
        'shape' answers without choices."""
        body = await request.json()
        refused = gate(request, body, keyed=False)
        if refused:
            return refused
        query, passages = read_rankgpt(body["messages"])
        content = LISTWISE_CASES.get(case, LISTWISE_CASES["good"])(listwise_order(query, passages))
        prompt = sum(len(m["content"].split()) for m in body["messages"])
        completion = len(str(content or "").split())
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        choices = [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]
        return {
            "id": "chatcmpl-2", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [] if case == "shape" else choices, "usage": usage,
        }  # fmt: skip

    @app.post("/pointwise/{case}/v1/chat/completions")
    async def pointwise(case: str, request: Request) -> Any:
        """A chat model asked whether a passage meets the query (the Qwen3-Reranker card's turns), answering one
        token with log-probabilities from the rule, written as POINTWISE_CASES[case] says."""
        body = await request.json()
        behaviour.requests.append({"path": request.url.path, "body": body})
        asked = re.search(r"<Query>: (?P<query>.*)\n<Document>: (?P<document>.*)", body["messages"][-1]["content"],
                          re.DOTALL)  # fmt: skip
        assert asked is not None and body["logprobs"] is True and body["max_tokens"] == 1, body
        top = pointwise_logprobs(asked["query"], asked["document"])[: body.get("top_logprobs") or 1]
        choice = {"index": 0, "message": {"role": "assistant", "content": top[0]["token"]}, "finish_reason": "length",
                  "logprobs": POINTWISE_CASES[case](top)}  # fmt: skip
        prompt = sum(len(m["content"].split()) for m in body["messages"])
        usage = {"prompt_tokens": prompt, "completion_tokens": 1, "total_tokens": prompt + 1}
        return {"id": "chatcmpl-3", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [choice], "usage": usage}  # fmt: skip

    @app.get("/pointwise/{case}/v1/models")
    async def pointwise_models(case: str) -> Any:
        return {"object": "list", "data": [{"id": "tiny-judge", "object": "model"}]}

    @app.get("/listwise/{case}/v1/models")
    async def listwise_models(case: str) -> Any:
        return {"object": "list", "data": [{"id": "tiny-ranker", "object": "model"}]}

    @app.post("/bad/{case}/rerank")
    async def bad(case: str, request: Request) -> Any:
        """A service answering in the right shape with content that cannot be right (see BAD_ANSWERS)."""
        body = await request.json()
        behaviour.requests.append({"path": request.url.path, "body": body})
        count = len(body["documents"])
        if case == "trickle":  # a byte every half second: every read is quick, the whole answer never is

            async def drip() -> Any:
                for _ in range(120):
                    yield b" "
                    await asyncio.sleep(0.5)
                yield json.dumps({"results": [{"index": i, "relevance_score": 0.5} for i in range(count)]}).encode()

            return StreamingResponse(drip(), media_type="application/json")
        if case == "redirect":
            return Response(status_code=307, headers={"location": "http://127.0.0.1:1/elsewhere?api_key=hidden123"})
        if case == "traceback":  # a 500 whose body is the server's own traceback
            trace = 'Traceback (most recent call last):\n  File "/srv/app/rerank.py", line 12, in rank\nKeyError: 0\n'
            return Response(trace, status_code=500, media_type="text/plain")
        if case == "deep":  # JSON nested past any parser's recursion limit
            return Response(b"[" * 100_000 + b"]" * 100_000, media_type="application/json")
        scores: list[Any] = [0.5] * count
        indices: list[Any] = list(range(count))
        raw = BAD_ANSWERS[case]
        if case.startswith("index"):
            indices[0] = raw
        else:
            scores[0] = raw
        results = ",".join(
            f'{{"index": {json.dumps(i) if not isinstance(i, str) else i}, "relevance_score": '
            f"{score if isinstance(score, str) else json.dumps(score)}}}"
            for i, score in zip(indices, scores, strict=True)
        )
        return Response(f'{{"results": [{results}]}}', media_type="application/json")

    @app.post("/embed/{case}/embeddings")
    async def embeddings(case: str, request: Request) -> Any:
        """OpenAI's `/embeddings`, answered well (`good`, or `reverse`: the same vectors listed last first, each
        with its index) or in one of the ways EMBEDDING_CASES names."""
        body = await request.json()
        behaviour.requests.append({"path": request.url.path, "body": body})
        rows = [{"object": "embedding", "index": i, "embedding": text_vector(t)} for i, t in enumerate(body["input"])]
        if case == "trickle":

            async def drip() -> Any:
                for _ in range(60):
                    yield b" "
                    await asyncio.sleep(2)
                yield json.dumps({"data": rows}).encode()

            return StreamingResponse(drip(), media_type="application/json")
        if case == "html":
            return Response("<html><body>Bad gateway</body></html>", media_type="text/html")
        if case == "reverse":
            rows = rows[::-1]
        elif case == "nan":
            return Response(json.dumps({"data": rows}).replace("0.5", "NaN", 1), media_type="application/json")
        elif case in EMBEDDING_CASES:
            rows = EMBEDDING_CASES[case](rows)
        return {"object": "list", "model": body.get("model"), "data": rows}

    @app.get("/embed/{case}/models")
    async def embedding_models(case: str) -> Any:
        return {"object": "list", "data": [{"id": "fake-embedder", "object": "model"}]}

    @app.get("/service/models")
    async def models() -> Any:
        return {"object": "list", "data": [{"id": "fake-reranker", "object": "model"}]}

    return app


class RerankApis:
    """The server in a thread on a free 127.0.0.1 port: `base` is its URL."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        holder: list[uvicorn.Server] = []
        config = uvicorn.Config(create_app(behaviour, holder), host="127.0.0.1", port=self.port, log_level="error")
        self.server = uvicorn.Server(config)
        holder.append(self.server)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> RerankApis:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

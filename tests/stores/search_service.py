"""A real full-text search service for the tests: FastAPI over bm25s, indexing the demo handbook's passages, with
routes that answer well and routes that answer badly. Run as `python search_service.py PORT`."""

from __future__ import annotations

import sys
import time

import bm25s
import uvicorn
from fastapi import FastAPI, Header, HTTPException, Request
from fastapi.responses import PlainTextResponse

from workbench.loaders import load_path
from workbench.paths import demo_dir

DOCUMENTS = load_path(demo_dir() / "docs").documents
INDEX = bm25s.BM25()
INDEX.index(bm25s.tokenize([d.text for d in DOCUMENTS], stopwords="en", show_progress=False), show_progress=False)
app = FastAPI()


def ranked(query: str, size: int) -> list[dict]:
    found, scores = INDEX.retrieve(bm25s.tokenize([query], stopwords="en", show_progress=False), k=size,
                                   show_progress=False)  # fmt: skip
    return [
        {"doc_id": DOCUMENTS[i].id, "body": DOCUMENTS[i].text, "title": DOCUMENTS[i].metadata.get("title"),
         "score": float(s)}
        for i, s in zip(found[0], scores[0], strict=True)
        if s > 0
    ]  # fmt: skip


@app.get("/health")
def health() -> dict:
    return {"ok": True}


@app.post("/search")
async def search(request: Request, authorization: str | None = Header(None)) -> dict:
    body = await request.json()
    return {"data": {"results": ranked(body["q"], int(body["size"]))}}


@app.get("/get")
def get(q: str, size: int) -> dict:
    return {"data": {"results": ranked(q, size)}}


@app.post("/auth")
async def auth(request: Request, authorization: str | None = Header(None)) -> dict:
    if authorization != "Bearer s3cret-token":
        raise HTTPException(401, "bad token")
    body = await request.json()
    return {"data": {"results": ranked(body["q"], int(body["size"]))}}


@app.post("/html", response_class=PlainTextResponse)
def html() -> str:
    return "<html><body>Search is down for maintenance</body></html>"


@app.post("/error")
def error() -> dict:
    raise HTTPException(500, "index corrupted")


@app.post("/slow")
def slow() -> dict:
    time.sleep(5)
    return {"data": {"results": []}}


@app.post("/missing")
def missing() -> dict:
    return {"data": {"results": [{"doc_id": "a", "score": 1.0}]}}


@app.post("/dupes")
def dupes() -> dict:
    return {
        "data": {"results": [{"doc_id": "a", "body": "x", "score": 2.0}, {"doc_id": "a", "body": "y", "score": 1.0}]}
    }


@app.post("/badscore")
def badscore() -> dict:
    return {"data": {"results": [{"doc_id": "a", "body": "x", "score": "high"}]}}


@app.post("/escape-id")
def escape_id() -> dict:
    return {"data": {"results": [{"doc_id": "a\x1b[31mred", "body": "x", "score": 1.0}]}}


@app.post("/long-id")
def long_id() -> dict:
    return {"data": {"results": [{"doc_id": "a" * 100_000, "body": "x", "score": 1.0}]}}


@app.post("/nolist")
def nolist() -> dict:
    return {"data": {"total": 0}}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")

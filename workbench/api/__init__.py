"""The HTTP API (`workbench serve`): FastAPI over one engine per process.

    POST /search          seed 002's search (+ vector and rerank scores, rank before, timings, trace id)
    POST /retrieve        seed 000's retrieve_top_docs as {"result": str}
    GET  /collections     every collection; GET /collections/{name} one
    GET  /health          {"status": "starting" | "ready", ...}: ready once the models are loaded
    /session/...          session memory (seed 004)
    /docs                 OpenAPI

Errors are JSON `{"detail": message}`: 422 names the field, 404 an unknown collection, 401 a missing or wrong
token (when WORKBENCH_API_TOKEN is set, every route but /health needs `Authorization: Bearer <token>`), 413 a
body over WORKBENCH_MAX_BODY_BYTES, 503 a missing model or a store that is down (with the setting to change),
504 a search past WORKBENCH_QUERY_TIMEOUT. Nothing a client sends produces a 500 or a traceback.
"""

from __future__ import annotations

from workbench.api.app import create_app

__all__ = ["create_app"]

"""The HTTP API (`workbench serve`): FastAPI over one engine per process; `create_app` builds it (see
`workbench.api.app` for the routes and the error statuses)."""

from __future__ import annotations

from workbench.api.app import create_app

__all__ = ["create_app"]

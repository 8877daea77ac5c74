"""The OpenAPI schema and its interactive page, behind the same token as every other route."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

from workbench.api.dependencies import Authorised

router = APIRouter(include_in_schema=False, dependencies=Authorised)


@router.get("/openapi.json")
async def openapi(request: Request) -> dict[str, Any]:
    return request.app.openapi()


@router.get("/docs")
async def docs(request: Request) -> HTMLResponse:
    return get_swagger_ui_html(openapi_url="/openapi.json", title=f"{request.app.title} - docs")

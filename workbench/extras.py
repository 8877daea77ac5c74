"""The optional parts of the workbench and the extra that installs each.

The engine, the CLI and embedded Chroma install alone (`pip install rerank-workbench`); the app, the HTTP API, the
MCP server, the Qdrant and PostgreSQL stores, RabbitMQ events, OpenAI-compatible endpoints and the OpenVINO backend
each come with an extra (`rerank-workbench[server]`, ... or `[all]`). Each is imported only where it is used;
`require_extra` is called there first, so a missing one is a one-line error naming the extra, not an ImportError.
"""

from __future__ import annotations

import importlib.util
from typing import Final

from workbench.errors import ConfigError

# extra -> the top-level modules it installs (what is looked for)
EXTRAS: Final[dict[str, tuple[str, ...]]] = {
    "app": ("streamlit",),
    "server": ("fastapi", "uvicorn"),
    "mcp": ("mcp",),
    "qdrant": ("qdrant_client",),
    "pgvector": ("psycopg", "psycopg_pool"),
    "events": ("pika",),
    "openai": ("langchain_openai",),
    "openvino": ("openvino", "nncf"),
    "ray": ("ray",),
}


def has_extra(extra: str) -> bool:
    """Whether every module of `extra` can be imported here."""
    for module in EXTRAS[extra]:
        try:
            if importlib.util.find_spec(module) is None:
                return False
        except (ImportError, ValueError):
            return False
    return True


def require_extra(extra: str, what: str) -> None:
    """ConfigError naming the extra to install when `what` (a command, a store, a backend) cannot run here."""
    if not has_extra(extra):
        raise ConfigError(
            f"{what} needs the '{extra}' extra, which is not installed: pip install 'rerank-workbench[{extra}]' "
            "(or '[all]' for every optional part)."
        )

"""The arguments of `workbench servers` commands (handlers in workbench.cli.servers, imported on use)."""

from __future__ import annotations

import argparse
import os

from workbench.cli.parsers.common import checked, store_options
from workbench.inputs import validate_listen_host, validate_port

HOST = checked(validate_listen_host)
PORT = checked(validate_port)
SERVE_PORT = 8765  # `workbench serve`'s: `mkdocs serve` (the manual) takes 8000, Streamlit 8501


def add_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    app = commands.add_parser("app", help="start the Streamlit workbench (http://127.0.0.1:8501)")
    app.add_argument(
        "--port", type=PORT, default=os.environ.get("WORKBENCH_APP_PORT", "8501"), help="port (default 8501)"
    )
    app.add_argument(
        "--host", type=HOST, default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)"
    )
    app.add_argument("--headless", action="store_true", help="do not open a browser")
    app.set_defaults(handler="workbench.cli.servers:cmd_app")

    serve = commands.add_parser("serve", help="the HTTP API: /search, /retrieve, /collections, /session, /health")
    serve.add_argument("--host", type=HOST, default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument(
        "--port", type=PORT, default=SERVE_PORT, help=f"port (default {SERVE_PORT}, apart from MkDocs' 8000)"
    )
    serve.add_argument(
        "--log-level",
        default="warning",
        choices=["critical", "error", "warning", "info", "debug"],
        help="uvicorn's log level (default warning; info logs every request)",
    )
    store_options(serve)
    serve.set_defaults(handler="workbench.cli.servers:cmd_serve")

    interleaving = commands.add_parser(
        "interleaving", help="an online test's interleaved impressions and clicks (workbench serve's /search)"
    )
    verbs = interleaving.add_subparsers(dest="verb", required=True, help="what to do with the log")
    analysed = verbs.add_parser(
        "analyse", help="wins, ties and losses of the reranked list against the first stage, with a binomial interval"
    )
    analysed.add_argument(
        "log", nargs="?", help="the log (default: <WORKBENCH_DATA_DIR>/interleaving/log.jsonl, what serve writes)"
    )
    analysed.add_argument("--collection", help="only this collection's impressions")
    analysed.add_argument(
        "--test", help="the online test to analyse (its id, t-…): a log of several tests names them; never pooled"
    )
    analysed.add_argument("--json", action="store_true", help="print the analysis as JSON")
    analysed.set_defaults(handler="workbench.cli.servers:cmd_interleaving_analyse")

    mcp = commands.add_parser("mcp", help="the MCP server: stdio, or --http PORT for streamable HTTP")
    mcp.add_argument("--http", type=PORT, metavar="PORT", help="serve streamable HTTP on this port instead of stdio")
    mcp.add_argument(
        "--host", type=HOST, default="127.0.0.1", help="with --http: address to listen on (127.0.0.1 only)"
    )
    store_options(mcp)
    mcp.set_defaults(handler="workbench.cli.mcp_command:cmd_mcp")

    postgres = commands.add_parser("postgres", help="start or stop a local PostgreSQL with pgvector (offline)")
    postgres.add_argument("action", choices=["start", "stop"], help="start or stop the local server")
    postgres.add_argument("--dir", help="data folder (default: <WORKBENCH_DATA_DIR>/postgres)")
    postgres.add_argument("--port", type=PORT, default=5433, help="TCP port on 127.0.0.1 (default 5433)")
    postgres.set_defaults(handler="workbench.cli.servers:cmd_postgres")

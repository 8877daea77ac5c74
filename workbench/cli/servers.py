"""Commands that start something: the app, the HTTP API, the MCP server, a local PostgreSQL with pgvector."""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
from pathlib import Path

from workbench.app import ENTRY_SCRIPT
from workbench.cli.common import ProgressBar, print_json, settings_from, shown, warn
from workbench.clicks.online import analyse_interleaving_log, interleaving_log_path
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import ConfigError, InputError, WorkbenchError
from workbench.extras import require_extra
from workbench.inputs import is_loopback
from workbench.rerankers.factory import first_use_words
from workbench.rerankers.local.backends import measure_backends_in_background
from workbench.services.demo import DEMO_COLLECTION, prepare_demo
from workbench.stores.localpg import LocalPostgres

# The environment the app's server starts with. Streamlit's server reads the websocket handshake with the
# `websockets` library, whose header lines stop at 8,192 bytes: a Cookie line over it (a host with many cookies, a
# proxy's session cookie) left the page loading for ever, with no answer and no log (streamlit#15492). 64 KiB is
# what Streamlit's earlier server took.
APP_ENVIRONMENT = {"WEBSOCKETS_MAX_LINE_LENGTH": "65536"}


def app_command(port: int, host: str, headless: bool = True) -> list[str]:
    """The `streamlit run` command line of the installed app (one place, for the CLI and the tests). The app's
    other options are in the `.streamlit/config.toml` beside the entry script, which Streamlit reads itself."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(ENTRY_SCRIPT),
        "--server.port",
        str(port),
        "--server.address",
        host,
        "--server.headless",
        "true" if headless else "false",
    ]


def _ensure_demo(engine: Engine) -> None:
    """Build the demo collection before a server starts when it is the default collection, so that the first
    visit or request does not wait (or find nothing). A failure is reported and the server starts anyway: its
    own health check and errors then say what is wrong."""
    if engine.settings.collection == DEMO_COLLECTION:
        warn(f"Checking the demo collection in {engine.settings.store_location} (built offline on first start)…")
    try:
        with ProgressBar("demo") as bar:
            info = prepare_demo(engine, progress=bar)
    except WorkbenchError as exc:
        warn(f"The demo collection could not be built: {exc}")
        return
    if info is not None:
        warn(f"Demo collection ready: {info.count} passages.")


def _say_backend_choice(settings: Settings) -> None:
    """Say whether `auto` still has to measure the default reranker's backends on this machine: the server then
    answers on torch at once and measures in the background (once per machine, kept in the user's cache)."""
    if settings.reranker_backend != "auto" or not settings.reranker_calibrate:
        return
    measure_backends_in_background()  # what the server does (the app's process does it on its first visit)
    try:
        words = first_use_words(settings, settings.reranker_model)
    except WorkbenchError:
        return  # the first search names what is wrong with the model
    if words and "background" in words:
        warn(
            "The reranker's backends (torch, ONNX, int8, OpenVINO) are measured in the background after start, once "
            "per machine: searches run on torch meanwhile."
        )


def cmd_app(args: argparse.Namespace) -> int:
    require_extra("app", "workbench app")
    settings = settings_from(args)
    if not is_loopback(args.host) and settings.app_password is None:
        raise ConfigError(
            f"--host {args.host} makes the app reachable from other machines: set WORKBENCH_APP_PASSWORD first "
            "(a shared password every visitor types), or keep the default 127.0.0.1."
        )
    _ensure_demo(Engine(settings))
    _say_backend_choice(settings)
    warn(f"Starting the workbench at http://{args.host}:{args.port}")
    command = app_command(args.port, args.host, headless=args.headless or not sys.stdout.isatty())
    sys.stdout.flush()
    sys.stderr.flush()
    for name, value in APP_ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    # Streamlit replaces this process, so a signal to `workbench app` (a service manager's SIGTERM, a test's
    # terminate) reaches the server itself instead of leaving it running as an orphan.
    os.execv(command[0], command)
    return 0  # not reached


def cmd_postgres(args: argparse.Namespace) -> int:
    folder = Path(args.dir or Path(settings_from(args).data_dir) / "postgres").resolve()
    server = LocalPostgres(folder, port=args.port)
    if args.action == "start":
        server.start()
        print(
            shown(
                f"PostgreSQL with pgvector is running in {folder}; use it with:\n"
                f"  export WORKBENCH_STORE=pgvector WORKBENCH_PG_URL={server.url}"
            )
        )
    else:
        server.stop()
        print(shown(f"Stopped the PostgreSQL in {folder}."))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    require_extra("server", "workbench serve")
    # Deferred: FastAPI and uvicorn take a second to import, which every other command would pay.
    import uvicorn

    from workbench.api import create_app

    settings = settings_from(args)
    if not is_loopback(args.host) and settings.api_token is None:
        raise ConfigError(
            f"--host {args.host} makes the API reachable from other machines: set WORKBENCH_API_TOKEN first (clients "
            "then send 'Authorization: Bearer <token>'), or keep the default 127.0.0.1."
        )
    _port_free(args.host, args.port)  # before the models load: a busy port is one line, at once
    engine = Engine(settings)  # one engine per process: the one that checked the demo serves the requests
    _ensure_demo(engine)
    _say_backend_choice(settings)
    warn(f"Serving the workbench API at http://{args.host}:{args.port} (OpenAPI at /docs); loading the models…")
    _log_to_stderr("workbench")
    app = create_app(engine=engine, host=args.host)
    requests_logged = args.log_level in {"info", "debug"}
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=requests_logged)
    return 0


def _port_free(host: str, port: int) -> None:
    """InputError naming the port and the flag when something already listens on it (`mkdocs serve`, another
    workbench), instead of uvicorn's "[Errno 98] address already in use" after the models have loaded."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a closed port is free
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise InputError(
                f"Port {port} on {host} is taken ({exc.strerror or 'in use'}): another server listens there (the "
                f"manual's `mkdocs serve`, or another workbench?). Start it on another: workbench serve --port N."
            ) from None


def _log_to_stderr(name: str) -> None:
    """The workbench's own log lines (ready, warnings) on stderr, one plain line each."""
    logger = logging.getLogger(name)
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


def cmd_interleaving_analyse(args: argparse.Namespace) -> int:
    log = Path(args.log) if args.log else interleaving_log_path(settings_from(args))
    analysis = analyse_interleaving_log(log, args.collection, args.test)
    if args.json:
        print_json(analysis)
    else:
        print(shown(analysis.words()))
    return 0

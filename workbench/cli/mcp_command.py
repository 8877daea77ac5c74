"""`workbench mcp`: the MCP server, on stdio or streamable HTTP. Apart from the other servers' commands, so that
starting it imports only what answers a client's `initialize` (the tools come right after, see `workbench.mcp`)."""

from __future__ import annotations

import argparse

from workbench.cli.common import settings_from, warn
from workbench.errors import ConfigError
from workbench.extras import require_extra
from workbench.inputs import is_loopback
from workbench.mcp import run as run_mcp


def cmd_mcp(args: argparse.Namespace) -> int:
    require_extra("mcp", "workbench mcp")
    settings = settings_from(args)
    if args.http is not None:
        if not is_loopback(args.host):
            raise ConfigError("The MCP server over HTTP has no authentication: keep it on 127.0.0.1.")
        warn(f"Serving MCP over streamable HTTP at http://{args.host}:{args.http}/mcp")
    run_mcp(settings, args.http, args.host)
    return 0

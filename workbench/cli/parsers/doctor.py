"""The arguments of `workbench doctor` commands (handlers in workbench.cli.doctor, imported on use)."""

from __future__ import annotations

import argparse


def add_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    doctor = commands.add_parser(
        "doctor", help="this machine, and the reranker backend `auto` chose here with its measured figures"
    )
    doctor.add_argument("--recalibrate", action="store_true", help="measure the backends again")
    doctor.add_argument("--json", action="store_true", help="print the machine and the choice as JSON")
    doctor.add_argument("--reranker", help="the reranker to check (default: RERANKER_MODEL)")
    doctor.set_defaults(handler="workbench.cli.doctor:cmd_doctor")

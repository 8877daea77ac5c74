"""The arguments of `workbench doctor` commands (handlers in workbench.cli.doctor, imported on use)."""

from __future__ import annotations

import argparse

from workbench.cli.parsers.common import checked
from workbench.inputs import validate_bench_lengths, validate_bench_pairs, validate_tolerance
from workbench.vocab import PARITY_K, PARITY_TOLERANCE


def add_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    doctor = commands.add_parser(
        "doctor",
        help="this machine, the reranker backend `auto` chose here, its speed against the machine's ceiling, and "
        "(--parity) every backend audited against fp32 torch",
    )
    doctor.add_argument("--recalibrate", action="store_true", help="measure the backends again")
    doctor.add_argument("--json", action="store_true", help="print the figures as JSON")
    doctor.add_argument("--reranker", help="the reranker to check (default: RERANKER_MODEL)")
    doctor.add_argument(
        "--parity", metavar="COLLECTION",
        help="audit every backend of the reranker against fp32 torch on this collection's judged queries (`demo`: "
        "its 50); `auto` then takes the fastest faithful backend on this machine",
    )  # fmt: skip
    doctor.add_argument(
        "--checks", metavar="COLLECTION",
        help="run the reranker (any kind: a model, a service, a listwise LLM) on this collection's judged queries "
        "and name each run check that fires (constant, tied, identity, split, squashed, cut, served); exit 3 when "
        "one does, as the gate exits inconclusive",
    )  # fmt: skip
    doctor.add_argument("--dataset", help="with --parity or --checks: a BEIR folder whose judged queries to use")
    doctor.add_argument(
        "--served", action="append", metavar="ID",
        help="with --parity: a server of the same model to audit too (http://host:port for Infinity or `workbench "
        "serve`, tei+http://... for TEI, vllm+http://...#qwen3 for a causal LM on vLLM); repeat for more",
    )  # fmt: skip
    doctor.add_argument("-k", type=int, help=f"with --parity or --checks: candidates per query ({PARITY_K})")
    doctor.add_argument("-n", type=int, help="with --parity or --checks: the top n (10, or k when k is smaller)")
    doctor.add_argument("--max-queries", type=int, help="with --parity or --checks: only the first N judged queries")
    doctor.add_argument(
        "--tolerance", type=checked(validate_tolerance), default=PARITY_TOLERANCE,
        help=f"with --parity: how far the nDCG@10 change's interval may reach (±{PARITY_TOLERANCE})",
    )  # fmt: skip
    doctor.add_argument(
        "--no-keep", action="store_true", help="with --parity: report only; `auto` keeps deciding as before"
    )
    doctor.add_argument(
        "--bench", nargs="*", metavar="RERANKER",
        help="time the local cross-encoders named (default: every one in the models folders) on every backend "
        "installed here, at 64, 128, 256 and 512 tokens a pair: pairs/s per core and per chip, share of the "
        "ceiling, x fp32 torch and the audit's verdict, with the machine and library versions (--json: the "
        "documented schema, docs/doctor-bench.schema.json)",
    )  # fmt: skip
    doctor.add_argument(
        "--lengths", type=checked(validate_bench_lengths), help="with --bench: tokens a pair, e.g. 128,256 (32 to 512)"
    )
    doctor.add_argument("--backends", type=_names, help="with --bench: only these backends (and torch), e.g. onnx")
    doctor.add_argument(
        "--pairs",
        type=checked(validate_bench_pairs),
        help="with --bench: at most N pairs a round (default: ~8k tokens)",
    )
    doctor.set_defaults(handler="workbench.cli.doctor:cmd_doctor")


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]

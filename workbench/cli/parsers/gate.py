"""The arguments of `workbench gate` commands (handlers in workbench.cli.gate, imported on use)."""

from __future__ import annotations

import argparse

from workbench.cli.parsers.common import (
    candidates_options,
    checked,
    fusion_option,
    long_documents_option,
    partial_option,
    same_lineage_option,
    served_options,
    skip_option,
    stopping_options,
    store_options,
)
from workbench.cli.parsers.experiments import dataset_options
from workbench.inputs import validate_budget_ms
from workbench.vocab import RETRIEVAL_MODES, spoken


def add_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    gate = commands.add_parser(
        "gate",
        help="ship or not: a candidate configuration against a baseline; exit 0 ship, 1 no-ship, 3 inconclusive",
    )
    dataset_options(gate)
    gate.add_argument("--retrieval", help=f"the candidate's first stage: {spoken(RETRIEVAL_MODES)}")
    fusion_option(gate)
    long_documents_option(gate)
    candidates_options(gate, "the gate decides whether reranking them ships")
    gate.add_argument("--reranker", metavar="ID", help="the candidate's reranker (default: RERANKER_MODEL)")
    gate.add_argument("--no-rerank", action="store_true", help="the candidate does not rerank")
    gate.add_argument(
        "--candidate-experiment",
        metavar="ID",
        help="the candidate is a kept experiment's plan (the cell `workbench tune` recommends), run now",
    )
    gate.add_argument("--backend", help="the candidate reranker's backend")
    gate.add_argument("-k", type=int, help="candidates per query (default: RERANKER_K_RETRIEVE)")
    gate.add_argument("-n", type=int, help="top n after reranking (default: RERANKER_K_RETURN)")
    gate.add_argument(
        "--baseline",
        help="first-stage (default: the candidate's own first stage, no reranker), or a kept experiment's id",
    )
    gate.add_argument("--baseline-retrieval", help="a baseline configuration: the candidate's, with this first stage")
    gate.add_argument("--baseline-reranker", help="... with this reranker (`none` for none)")
    gate.add_argument("--baseline-k", type=int, help="... with this k")
    gate.add_argument("--baseline-n", type=int, help="... with this top n")
    gate.add_argument("--query-set", help="a kept query set (its queries, judged by the dataset)")
    gate.add_argument("--max-queries", type=int, help="only the first N judged queries")
    partial_option(gate)
    same_lineage_option(gate)
    stopping_options(gate)
    skip_option(gate)
    gate.add_argument("--max-latency-ms", type=checked(validate_budget_ms), help="budget: p95 of a search's total time")
    gate.add_argument("--max-rerank-pairs", type=int, help="budget: documents reranked per query")
    served_options(gate, "decide on the candidate")
    gate.add_argument(
        "--preferences",
        metavar="SESSION",
        help="decide on a blind preference session instead (B the candidate, A the baseline): ship when B's share of "
        "the decisive queries is above one half with 95 %% confidence; nothing is run",
    )
    gate.add_argument("--junit", metavar="FILE", help="write the decision as JUnit XML")
    gate.add_argument("--json-out", metavar="FILE", help="write the decision as JSON")
    gate.add_argument("--json", action="store_true", help="print the decision as JSON")
    store_options(gate)
    gate.set_defaults(handler="workbench.cli.gate:cmd_gate")

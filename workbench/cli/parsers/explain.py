"""The arguments of `workbench explain` commands (handlers in workbench.cli.explain, imported on use)."""

from __future__ import annotations

import argparse

from workbench.cli.parsers.common import fusion_option, store_options
from workbench.vocab import BACKEND_CHOICES, RETRIEVAL_MODES, spoken


def add_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    explain = commands.add_parser(
        "explain",
        help="why the reranker scored a document as it did: each sentence's and query term's effect on the score",
    )
    explain.add_argument("text", help="the query (1 to 512 characters)")
    explain.add_argument(
        "--doc",
        required=True,
        metavar="ID",
        help="the document to explain: a chunk id or a document id the search finds",
    )
    explain.add_argument("--collection", help="collection name (default: WORKBENCH_COLLECTION)")
    explain.add_argument("-k", type=int, default=None, help="candidates searched for the document (default 50)")
    explain.add_argument("--retrieval", choices=RETRIEVAL_MODES, help="candidate source (default: WORKBENCH_RETRIEVAL)")
    fusion_option(explain)
    explain.add_argument("--reranker", help="reranker model id, folder or service URL (default: RERANKER_MODEL)")
    explain.add_argument("--backend", help=f"reranker backend: {spoken(BACKEND_CHOICES)}")
    explain.add_argument(
        "--price", action="append", metavar="KIND=USD", help="a hosted reranker's price, to state what explaining cost"
    )
    explain.add_argument("--json", action="store_true", help="print the explanation as JSON")
    store_options(explain)
    explain.set_defaults(handler="workbench.cli.explain:cmd_explain")

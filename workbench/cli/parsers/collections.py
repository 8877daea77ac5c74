"""The arguments of `workbench collections` commands (handlers in workbench.cli.collections, imported on use)."""

from __future__ import annotations

import argparse

from workbench.cli.parsers.common import fusion_option, long_documents_option, skip_option, store_options
from workbench.vocab import BACKEND_CHOICES, DEFAULT_K, DEFAULT_TOP_N, RETRIEVAL_MODES, VECTOR_STORE_KINDS, spoken


def add_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    ingest = commands.add_parser("ingest", help="load files or a BEIR folder into a collection")
    ingest.add_argument("path", help="a file, a folder of files, or a BEIR folder (with corpus.jsonl)")
    ingest.add_argument("--collection", required=True, help="the collection to create or update")
    ingest.add_argument("--chunk-size", type=int, help="characters per chunk (BEIR passages stay whole by default)")
    ingest.add_argument("--chunk-overlap", type=int, help="characters carried into the next chunk")
    ingest.add_argument(
        "--text-columns",
        help="CSV columns holding the text, comma-separated (default: a text "
        "column, else every column as 'name: value')",
    )
    ingest.add_argument(
        "--replace",
        action="store_true",
        help="a file named like a document that came from a different file replaces it (default: both are kept, "
        "the new one under '<its folder>/<name>')",
    )
    ingest.add_argument("--json", action="store_true", help="print the report as JSON")
    store_options(ingest)
    ingest.set_defaults(handler="workbench.cli.collections:cmd_ingest")

    query = commands.add_parser("query", help="search a collection and show vector and reranked orders")
    query.add_argument("text", help="the query (1 to 512 characters)")
    query.add_argument("--collection", help="collection name (default: WORKBENCH_COLLECTION)")
    query.add_argument("-k", type=int, default=None, help="candidates from vector search (default 50)")
    query.add_argument("-n", type=int, default=None, help="results kept after reranking (default 10)")
    query.add_argument("--filter", action="append", metavar="KEY=VALUE", help="metadata equality; repeatable")
    query.add_argument("--retrieval", choices=RETRIEVAL_MODES, help="candidate source (default: WORKBENCH_RETRIEVAL)")
    fusion_option(query)
    long_documents_option(query)
    query.add_argument("--reranker", help="reranker model id or folder (default: RERANKER_MODEL)")
    query.add_argument("--backend", help=f"reranker backend: {spoken(BACKEND_CHOICES)}")
    query.add_argument("--no-rerank", action="store_true", help="keep the vector order")
    query.add_argument(
        "--min-score",
        type=float,
        metavar="X",
        help="drop results of the top n scoring below X (the reranker's score; the first stage's with --no-rerank)",
    )
    skip_option(query)
    query.add_argument("--json", action="store_true", help="print the SearchResult as JSON")
    store_options(query)
    query.set_defaults(handler="workbench.cli.collections:cmd_query")

    collections = commands.add_parser("collections", help="list collections")
    collections.add_argument("--json", action="store_true", help="print the collections as JSON")
    store_options(collections)
    collections.set_defaults(handler="workbench.cli.listing:cmd_collections")

    delete = commands.add_parser("delete", help="delete a collection")
    delete.add_argument("collection", help="the collection to delete")
    delete.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    store_options(delete)
    delete.set_defaults(handler="workbench.cli.collections:cmd_delete")

    demo = commands.add_parser("demo", help="build the demo collection (offline) if it is missing")
    store_options(demo)
    demo.set_defaults(handler="workbench.cli.collections:cmd_demo")


def add_store_comparison(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    compare = commands.add_parser(
        "compare-stores", help="one query (or a judged set) against the same collection in several stores"
    )
    compare.add_argument("text", nargs="?", help="the query (or use --dataset)")
    compare.add_argument("--collection", required=True, help="the collection, of the same name in every store")
    compare.add_argument(
        "--in",
        dest="store_in",
        action="append",
        metavar="STORE",
        help=f"{spoken(VECTOR_STORE_KINDS)}, optionally :location (folder or URL); repeat for each",
    )
    compare.add_argument(
        "--copy-from", metavar="STORE", help="first copy the collection from this store into the others"
    )
    compare.add_argument("--dataset", help="a BEIR folder: ANN recall against exact search over its judged queries")
    compare.add_argument("--max-queries", type=int, help="with --dataset: only the first N judged queries")
    compare.add_argument("-k", type=int, default=DEFAULT_K, help=f"candidates per store (default {DEFAULT_K})")
    compare.add_argument(
        "-n", type=int, default=DEFAULT_TOP_N, help=f"top n compared after reranking (default {DEFAULT_TOP_N})"
    )
    compare.add_argument("--no-rerank", action="store_true", help="compare the first-stage order only")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    compare.set_defaults(handler="workbench.cli.collections:cmd_compare_stores")

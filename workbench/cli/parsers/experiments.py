"""The arguments of `workbench experiments` commands (handlers in workbench.cli.experiments, imported on use)."""

from __future__ import annotations

import argparse

from workbench.cli.parsers.common import candidates_options, checked, store_options
from workbench.inputs import validate_seed
from workbench.vocab import BACKEND_CHOICES, LOG_SAMPLES, spoken


def dataset_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dataset", nargs="?", help="a BEIR folder, or `demo` (its judgments)")
    parser.add_argument(
        "--collection", help="the collection (default: the BEIR folder's name; for `demo`, the demo collection)"
    )
    parser.add_argument("--split", default="test", help="qrels split of a BEIR folder (default test)")
    parser.add_argument(
        "--shipped-judgments", action="store_true",
        help="for `demo`: its judgments as shipped, without the grades given since",
    )  # fmt: skip
    parser.add_argument("--qrels", help="a qrels file (BEIR TSV or TREC)")
    parser.add_argument("--queries", help="a queries file (BEIR jsonl or id<TAB>text) with --qrels")


def _listing_limit(value: str) -> int:
    try:
        limit = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--limit takes a whole number from 1 to 500; got {value[:20]!r}") from None
    if not 1 <= limit <= 500:
        raise argparse.ArgumentTypeError(f"--limit takes a whole number from 1 to 500; got {limit}")
    return limit


def add_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _experiment_commands(commands)
    _query_set_commands(commands)


def _experiment_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    experiments = commands.add_parser("experiments", help="kept evaluations: list, show, diff, rerun, export")
    verbs = experiments.add_subparsers(dest="verb", required=True, help="what to do with the kept experiments")
    listed = verbs.add_parser("list", help="the kept experiments, newest first")
    listed.add_argument("--collection", help="only this collection's")
    listed.add_argument("--limit", type=_listing_limit, default=50, help="at most this many, 1-500 (default 50)")
    listed.add_argument("--json", action="store_true", help="print them as JSON")
    listed.set_defaults(handler="workbench.cli.experiments:cmd_list")
    show = verbs.add_parser("show", help="one experiment's report")
    show.add_argument("id", help="the experiment's id")
    show.add_argument("--json", action="store_true", help="print it as JSON (what the API's GET answers)")
    show.add_argument("--report", metavar="DIR", help="write its TREC runs and HTML/Markdown verdict report")
    show.set_defaults(handler="workbench.cli.experiments:cmd_show")
    diff = verbs.add_parser("diff", help="the second experiment against the first, query by query")
    diff.add_argument("first", help="experiment A's id (the baseline)")
    diff.add_argument("second", help="experiment B's id (against A)")
    diff.add_argument("--show", type=int, default=10, help="queries listed where they disagree most")
    diff.add_argument("--json", action="store_true", help="print the comparison as JSON")
    diff.set_defaults(handler="workbench.cli.experiments:cmd_diff")
    for verb, handler, text in (
        ("delete", "workbench.cli.experiments:cmd_delete", "remove an experiment"),
        ("rerun", "workbench.cli.experiments:cmd_rerun", "run its exact plan on its exact queries and judgments again"),
    ):
        parser = verbs.add_parser(verb, help=text)
        parser.add_argument("id", help="the experiment's id")
        parser.set_defaults(handler=handler)
        if verb == "rerun":
            parser.add_argument(
                "--backend",
                help=f"run the reranker on this backend ({spoken(BACKEND_CHOICES)}; default RERANKER_BACKEND)",
            )
    export = verbs.add_parser("export", help="one experiment as one JSON file")
    export.add_argument("id", help="the experiment's id")
    export.add_argument("-o", "--output", help="the file (default: standard output)")
    export.set_defaults(handler="workbench.cli.experiments:cmd_export")
    imported = verbs.add_parser("import", help="keep an exported experiment here")
    imported.add_argument("file", help="a file `workbench experiments export` wrote")
    imported.set_defaults(handler="workbench.cli.experiments:cmd_import")
    note = verbs.add_parser("note", help="name, tag or annotate an experiment")
    note.add_argument("id", help="the experiment's id")
    note.add_argument("--name", help="its new name")
    note.add_argument("--tag", action="append", help="repeat for several (replaces its tags)")
    note.add_argument("--notes", help="its notes (replaced)")
    note.set_defaults(handler="workbench.cli.experiments:cmd_note")
    for parser in (listed, show, diff, export, imported, note, *(verbs.choices[v] for v in ("delete", "rerun"))):
        store_options(parser)


def _query_set_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    sets = commands.add_parser("query-sets", help="named, saved query sets")
    verbs = sets.add_subparsers(dest="verb", required=True, help="what to do with the named query sets")
    add = verbs.add_parser("add", help="keep a query set: from a file, judged queries, or a session's history")
    add.add_argument("name", help="the query set's name")
    add.add_argument("--file", help="one query a line, CSV (query[,id,weight]) or JSONL ({text, _id, weight})")
    add.add_argument("--from-session", metavar="ID", help="the queries of a kept session (the app's: app:<user>)")
    add.add_argument("--from-log", metavar="LOG", help="queries of a click log (UBI 1.0, or CSV/JSON lines)")
    add.add_argument("--events", help="with --from-log: UBI events in a file of their own")
    add.add_argument(
        "--sample", choices=LOG_SAMPLES,
        help="with --from-log: the most frequent, at random, or by frequency (pps) (default top)",
    )  # fmt: skip
    add.add_argument("--size", type=int, help="with --from-log: how many queries (default 50)")
    add.add_argument("--seed", type=checked(validate_seed), help="with --from-log: the random draw's seed (default 0)")
    dataset_options(add)
    add.set_defaults(handler="workbench.cli.experiments:cmd_set_add")
    listed = verbs.add_parser("list", help="the kept query sets")
    listed.set_defaults(handler="workbench.cli.experiments:cmd_set_list")
    show = verbs.add_parser("show", help="a query set's queries: id, weight, text")
    show.add_argument("name", help="the query set's name")
    show.add_argument("--json", action="store_true", help="print it as JSON")
    show.set_defaults(handler="workbench.cli.experiments:cmd_set_show")
    delete = verbs.add_parser("delete", help="remove a query set")
    delete.add_argument("name", help="the query set's name")
    delete.set_defaults(handler="workbench.cli.experiments:cmd_set_delete")
    compare = verbs.add_parser(
        "compare", help="two configurations over a query set: how often B changes what people see (no judgments needed)"
    )
    compare.add_argument("name", help="the query set")
    compare.add_argument("--collection", help="the collection (default: WORKBENCH_COLLECTION)")
    compare.add_argument("--a", default="", help="configuration A: NAME=VALUE,... (retrieval, k, n, reranker, backend)")
    compare.add_argument("--b", default="", help="configuration B, e.g. retrieval=hybrid,reranker=none")
    compare.add_argument("--judged", action="store_true", help="add the judged figures (the collection's judgments)")
    candidates_options(compare, "both configurations start from them unless one names collection=")
    compare.add_argument("--show", type=int, default=10, help="queries listed where they disagree most")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    compare.set_defaults(handler="workbench.cli.experiments:cmd_set_compare")
    for parser in (add, listed, show, delete, compare):
        store_options(parser)

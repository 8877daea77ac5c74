"""What the command parsers share: the store options and argparse types from `workbench.inputs`' validators."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from workbench.errors import InputError
from workbench.inputs import (
    validate_looks,
    validate_rerank_budget_ms,
    validate_seed,
    validate_serve_concurrency,
    validate_tolerance,
)
from workbench.vocab import STOPPING_TOLERANCE, STORE_KINDS, STORES

__all__ = ["candidates_options", "checked", "store_options"]


def store_options(parser: argparse.ArgumentParser) -> None:
    """--store, --persist-dir and --url, on every command that opens a store."""
    group = parser.add_argument_group("store")
    group.add_argument("--store", choices=STORE_KINDS, help="vector store (default: WORKBENCH_STORE)")
    group.add_argument("--persist-dir", help="folder of an embedded store (default: WORKBENCH_PERSIST_DIR)")
    group.add_argument(
        "--url", help="the store's server URL: " + ", ".join(f"{k} {v.url_example}" for k, v in STORES.items())
    )


def candidates_options(parser: argparse.ArgumentParser, what: str) -> None:
    """--candidates FILE and --corpus: a production system's first stage, from a file; `what` says what the
    command does with it."""
    parser.add_argument(
        "--candidates", metavar="FILE",
        help=f"the first stage your system returned: JSONL ({{query_id, query, hits: [{{id, text, score}}]}}), or a "
        f"TREC run with --corpus for the texts; {what}",
    )  # fmt: skip
    parser.add_argument("--corpus", help="with a TREC run as --candidates: the BEIR corpus its ids come from")


def checked(validate: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse `type` from one of `workbench.inputs`' validators: its message becomes argparse's error."""

    def convert(value: str) -> Any:
        try:
            return validate(value)
        except InputError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from exc

    convert.__name__ = validate.__name__
    return convert


def served_options(parser: argparse.ArgumentParser, what: str) -> None:
    """--rerank-budget-ms and --serve-concurrency: the run weighed as a fail-open service serves it
    (evaluation/served.py); `what` says what the command does with it."""
    parser.add_argument(
        "--rerank-budget-ms", type=checked(validate_rerank_budget_ms),
        help=f"{what} as a fail-open service serves it under this rerank budget: every search timed (no cache), a "
        "query whose rerank took longer counted at its first-stage order",
    )  # fmt: skip
    parser.add_argument(
        "--serve-concurrency", type=checked(validate_serve_concurrency), metavar="N",
        help="with --rerank-budget-ms: N searches served at once while each is timed, as under load (default 1)",
    )  # fmt: skip


def skip_option(parser: argparse.ArgumentParser) -> None:
    """--skip-gap: rerank only when the first stage is unsure (a skip policy, SearchPlan.skip_gap)."""
    parser.add_argument(
        "--skip-gap", type=float, metavar="GAP",
        help="rerank only when the first stage's top two scores differ by less than GAP (a skip policy: a sure "
        "first stage keeps its order and costs no model call)",
    )  # fmt: skip


def stopping_options(parser: argparse.ArgumentParser) -> None:
    """--stop-when-settled and --tolerance: evaluate to the decision (evaluation/sequential.py)."""
    parser.add_argument(
        "--stop-when-settled", action="store_true",
        help="take the queries in a seeded random order (--seed) and stop once the verdict is settled: helps, hurts, "
        "or a change inside ±--tolerance (an interval valid under repeated looks; the report names the rule)",
    )  # fmt: skip
    parser.add_argument(
        "--tolerance", type=checked(validate_tolerance), default=STOPPING_TOLERANCE, metavar="DELTA",
        help=f"with --stop-when-settled: a change in nDCG@10 inside ±DELTA settles as no change that matters "
        f"(default {STOPPING_TOLERANCE})",
    )  # fmt: skip
    parser.add_argument(
        "--seed",
        type=checked(validate_seed),
        default=0,
        help="with --stop-when-settled: the seed of the query order (default 0)",
    )
    parser.add_argument(
        "--looks", type=checked(validate_looks), metavar="N",
        help="with --stop-when-settled: look N times, at equal parts of the set (default: after every query, "
        "which the rule allows at no cost to its validity)",
    )  # fmt: skip


def partial_option(parser: argparse.ArgumentParser) -> None:
    """--allow-partial: evaluate a collection whose ingest was interrupted, knowingly (the figures say so)."""
    parser.add_argument(
        "--allow-partial", action="store_true",
        help="evaluate a collection whose ingest was interrupted or is running (its figures are then marked partial)",
    )  # fmt: skip


def same_lineage_option(parser: argparse.ArgumentParser) -> None:
    """--allow-same-lineage-judge: take a "helps" resting on an LLM judge of the candidate's own lineage."""
    parser.add_argument(
        "--allow-same-lineage-judge", action="store_true",
        help="take a 'helps' that rests on an LLM judge of the candidate's own lineage (refused by default: LLM "
        "judges favour rankers of their own lineage)",
    )  # fmt: skip


def fusion_option(parser: argparse.ArgumentParser) -> None:
    """--fusion: how a hybrid first stage fuses its two lists (workbench.fusion reads it)."""
    parser.add_argument(
        "--fusion",
        metavar="FUSION",
        help="hybrid's fusion: 'rrf k=60 dense=1 bm25=1', or minmax, zscore or l2 with the dense list's weight "
        "('minmax 0.7'); given alone, it makes the first stage hybrid",
    )


def long_documents_option(parser: argparse.ArgumentParser) -> None:
    """--long-documents: what the reranker does with a document longer than its window (workbench.passages)."""
    parser.add_argument(
        "--long-documents",
        metavar="STRATEGY",
        help="firstp (the first window: the default), maxp (the best of the first 4 windows) or sump (their "
        "probabilities added); with windows=N and stride=N (tokens), e.g. 'maxp windows=8'",
    )

"""The arguments of `workbench evaluate` commands (handlers in workbench.cli.evaluate, imported on use)."""

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
from workbench.vocab import (
    BACKEND_CHOICES,
    DEFAULT_FIRST_STAGES,
    DEFAULT_TARGET_PRECISION,
    DEFAULT_TUNE_KS,
    DEPTH_SWEEP,
    HOSTED_LIST_PRICES,
    RETRIEVAL_MODES,
    spoken,
)


def add_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _eval_command(commands)
    _tune_command(commands)
    _long_documents_command(commands)


def _long_documents_command(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    long = commands.add_parser(
        "long-documents",
        help="FirstP against MaxP and SumP on judged queries: what FirstP never reads, what each changes, its cost",
    )
    dataset_options(long)
    long.add_argument(
        "--strategy", action="append", metavar="STRATEGY",
        help="a strategy beside FirstP, repeatable: maxp, sump, with windows=N and stride=N (default: maxp, sump)",
    )  # fmt: skip
    long.add_argument("--retrieval", choices=RETRIEVAL_MODES, help="first stage (default: WORKBENCH_RETRIEVAL)")
    fusion_option(long)
    long.add_argument("-k", type=int, help="candidates per query (default: RERANKER_K_RETRIEVE)")
    long.add_argument("-n", type=int, help="top n after reranking (default: RERANKER_K_RETURN)")
    long.add_argument("--reranker", metavar="ID", help="a local cross-encoder (default: RERANKER_MODEL)")
    long.add_argument("--backend", help=f"the reranker's backend: {spoken(BACKEND_CHOICES)}")
    long.add_argument("--max-queries", type=int, help="only the first N judged queries")
    long.add_argument("--timing-queries", type=int, default=5, help="queries each strategy's rerank time is timed on")
    long.add_argument("--json", action="store_true", help="print the comparison as JSON")
    store_options(long)
    long.set_defaults(handler="workbench.cli.tune:cmd_long_documents")


def _tune_command(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    tune = commands.add_parser(
        "tune",
        help="a grid of first stages (dense, BM25, hybrid fusions) × k on judged queries, each reranked; the "
        "cheapest cell not measurably below the best",
    )
    dataset_options(tune)
    tune.add_argument(
        "--first-stage",
        action="append",
        metavar="STAGE",
        help="a first stage of the grid, repeatable: dense, bm25, hybrid (RRF with the settings' k), or a fusion "
        "('rrf k=20', 'minmax 0.7', 'zscore 0.3', 'l2 0.5'); default: " + ", ".join(DEFAULT_FIRST_STAGES),
    )
    tune.add_argument(
        "-k", action="append", type=int, help="a k of the grid, repeatable (default: "
        + ", ".join(map(str, DEFAULT_TUNE_KS)) + ")",
    )  # fmt: skip
    tune.add_argument(
        "--chunking", action="append", metavar="SIZE/OVERLAP",
        help="compare ingest's chunking, repeatable (two or more): the BEIR corpus ingested once per chunking, its "
        "passages split (characters, e.g. 500/50), each a collection of its own",
    )  # fmt: skip
    tune.add_argument("-n", type=int, help="the largest top n weighed (default: RERANKER_K_RETURN, 10)")
    tune.add_argument("--reranker", metavar="ID", help="the reranker every cell reranks with (default: RERANKER_MODEL)")
    tune.add_argument("--backend", help=f"the reranker's backend: {spoken(BACKEND_CHOICES)}")
    tune.add_argument("--filter", action="append", metavar="KEY=VALUE", help="metadata equality, repeatable")
    long_documents_option(tune)
    tune.add_argument("--max-queries", type=int, help="only the first N judged queries")
    partial_option(tune)
    same_lineage_option(tune)
    tune.add_argument(
        "--latency-budget-ms", type=checked(validate_budget_ms), help="recommend only a cell whose p95 fits this budget"
    )
    served_options(tune, "each cell's quality, and the recommendation, by nDCG@10")
    tune.add_argument("--timing-queries", type=int, default=10, help="queries each cell's cost is timed on (10)")
    tune.add_argument("--out", metavar="FILE", help="write the run as Markdown (.md) or JSON (.json)")
    tune.add_argument("--json", action="store_true", help="print the run as JSON")
    tune.add_argument("--no-save", action="store_true", help="do not keep the recommended cell as an experiment")
    store_options(tune)
    tune.set_defaults(handler="workbench.cli.tune:cmd_tune")


def _eval_command(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    evaluate = commands.add_parser("eval", help="metrics before and after reranking on judged queries")
    evaluate.add_argument(
        "dataset", nargs="?", help="a BEIR folder (corpus.jsonl, queries.jsonl, qrels/), or `demo` (its judgments)"
    )
    evaluate.add_argument(
        "--collection",
        help="ingested from the BEIR corpus when missing (default: the BEIR folder's name; for `demo`, the demo "
        "collection)",
    )
    evaluate.add_argument("-k", type=int, help="candidates per query (default: RERANKER_K_RETRIEVE, 50)")
    evaluate.add_argument("-n", type=int, help="top n after reranking (default: RERANKER_K_RETURN, 10)")
    evaluate.add_argument("--split", default="test", help="qrels split of a BEIR folder (default test)")
    evaluate.add_argument(
        "--shipped-judgments", action="store_true",
        help="for `demo`: its judgments as shipped, without the grades given since",
    )  # fmt: skip
    evaluate.add_argument("--qrels", help="a qrels file (BEIR TSV or TREC) instead of a BEIR folder")
    evaluate.add_argument("--queries", help="a queries file (BEIR jsonl or id<TAB>text) with --qrels")
    evaluate.add_argument("--run", help="an outside TREC run to compare with the reranked run")
    candidates_options(evaluate, "the evaluation reranks them")
    evaluate.add_argument(
        "--depth",
        help="k values for the depth curve and the recommended k and top n (default: "
        + ",".join(map(str, DEPTH_SWEEP))
        + ", those up to -k); `none` for no curve",
    )
    evaluate.add_argument(
        "--latency-budget-ms",
        type=checked(validate_budget_ms),
        help="recommend only a k whose p95 rerank time fits this budget",
    )
    served_options(
        evaluate, "the verdict (nDCG@10 against the first stage and always reranked, the share served reranked, "
        "p50/p95)",
    )  # fmt: skip
    evaluate.add_argument("--max-queries", type=int, help="only the first N judged queries")
    partial_option(evaluate)
    same_lineage_option(evaluate)
    skip_option(evaluate)
    stopping_options(evaluate)
    evaluate.add_argument(
        "--corpus-sample",
        type=int,
        metavar="N",
        help="a quick look at a large BEIR corpus: ingest only the judged passages of the queries evaluated and N "
        "others (into <collection>-sample-N; every figure says it is a sample)",
    )
    evaluate.add_argument(
        "--retrieval",
        help=f"candidate source: {spoken(RETRIEVAL_MODES)}, or several separated by commas (one report each)",
    )
    fusion_option(evaluate)
    long_documents_option(evaluate)
    evaluate.add_argument("--no-rerank", action="store_true", help="evaluate the vector order only")
    evaluate.add_argument(
        "--calibrate",
        action="store_true",
        help="scores against relevance (ROC AUC), a calibration checked on held-out queries (kept for the app's "
        "cards) and a cutoff table for --min-score",
    )
    evaluate.add_argument(
        "--target-precision",
        type=float,
        default=DEFAULT_TARGET_PRECISION,
        metavar="P",
        help=f"with --calibrate: the precision the suggested cutoff must reach (default {DEFAULT_TARGET_PRECISION})",
    )
    evaluate.add_argument(
        "--save-runs",
        metavar="DIR",
        help="write TREC runs, the verdict report (self-contained HTML and Markdown) and per-query JSON",
    )
    evaluate.add_argument(
        "--json", action="store_true", help="print the figures as JSON (the summary, or the rerankers side by side)"
    )
    evaluate.add_argument(
        "--reranker",
        action="append",
        metavar="ID",
        help="reranker: a folder or hub id (with @BACKEND), http(s)://host:port, tei+http://..., "
        "vllm+http://...#qwen3, listwise+http://.../v1#MODEL, cohere:MODEL, jina:MODEL or voyage:MODEL (default: "
        "RERANKER_MODEL); repeat it to compare rerankers side by side",
    )
    evaluate.add_argument(
        "--price",
        action="append",
        metavar="KIND=USD",
        help="a hosted reranker's price for the comparison: cohere per 1,000 searches, jina and voyage per million "
        "tokens (defaults: " + ", ".join(f"{k} {usd:g}" for k, (usd, *_) in HOSTED_LIST_PRICES.items()) + ")",
    )
    evaluate.add_argument("--backend", help=f"reranker backend: {spoken(BACKEND_CHOICES)}")
    evaluate.add_argument("--query-set", help="a kept query set: its queries, judged by the dataset")
    evaluate.add_argument("--name", help="the kept experiment's name")
    evaluate.add_argument("--tag", action="append", help="a tag for the kept experiment (repeat for several)")
    evaluate.add_argument("--notes", help="notes kept with the experiment")
    evaluate.add_argument("--no-save", action="store_true", help="do not keep the evaluation as an experiment")
    store_options(evaluate)
    evaluate.set_defaults(handler="workbench.cli.evaluate:cmd_eval")

"""Commands over collections: ingest, query, collections, delete, demo."""

from __future__ import annotations

import argparse
import json
import shutil
import sys

from workbench.cli.common import ProgressBar, print_json, settings_from, shown, warn
from workbench.cli.plans import plan_from
from workbench.engine import DEFAULT, Engine
from workbench.errors import InputError
from workbench.evaluation import Dataset
from workbench.fusion import first_stage_name, score_name
from workbench.rerankers import scale_words
from workbench.services.demo import ensure_demo_collection
from workbench.services.hints import no_match_hint
from workbench.services.store_comparison import StoreTarget, compare_stores, copy_collection, open_target, recall_study
from workbench.types import SearchResult
from workbench.vocab import ORDER_SCALE, SEARCH_SERVICE_FIRST_STAGE


def cmd_ingest(args: argparse.Namespace) -> int:
    engine = Engine(settings_from(args))
    columns = [c.strip() for c in args.text_columns.split(",") if c.strip()] if args.text_columns else None
    with ProgressBar(f"ingest {args.collection}") as bar:
        report = engine.ingest(
            args.path,
            args.collection,
            chunk_size=args.chunk_size if args.chunk_size is not None else DEFAULT,
            chunk_overlap=args.chunk_overlap,
            text_columns=columns,
            progress=bar,
            replace=args.replace,
            announce=warn,
        )
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        print(shown(report.summary()))
    for warning in report.warnings:
        warn(f"warning: {warning}")
    for problem in report.problems[:20]:
        warn(f"skipped {problem.name}: {problem.reason}")
    if len(report.problems) > 20:
        warn(f"... and {len(report.problems) - 20} more skipped files (--json lists them all)")
    return 0


def _snippet(text: str, width: int) -> str:
    flat = " ".join(shown(text).split())
    return flat if len(flat) <= width else flat[: max(width - 1, 1)] + "…"


def format_result(result: SearchResult, width: int | None = None) -> str:
    """Both orderings side by side with movements, then what dropped out and the stage timings."""
    width = width or shutil.get_terminal_size((160, 40)).columns
    column = max((width - 3) // 2, 40)
    text_width = column - 24
    title = shown(
        f"Query: {result.query}  [{result.collection} · {result.store} · "
        f"{first_stage_name(result.first_stage.mode, result.fusion)} · k={result.k} → "
        f"top {result.top_n}]"
    )
    scorer = f"{result.reranker_model} · {result.reranker_backend}" if result.reranker_model else "no reranker"
    if result.rerank_skipped:
        scorer = f"not reranked: the skip policy found the first stage sure (its top two {result.skip_gap:g} or "
        scorer += "more apart)"
    mode = result.first_stage
    # a hybrid list's scores are fused (RRF or normalised), not vector similarities
    scores = mode.score_name if mode is SEARCH_SERVICE_FIRST_STAGE else score_name(result.retrieval, result.fusion)
    left_head = f"{'#':>3}  {scores:>7}  text"
    right_head = f"{'#':>3}  {'rerank':>8}  {'move':<12} text"
    lines = [title, "", f"{mode.heading.upper():<{column}} │ RERANKED ({shown(scorer)})"]
    lines.append(f"{left_head:<{column}} │ {right_head}")
    lines.append("─" * column + "─┼─" + "─" * column)
    reranked = result.reranked
    for i in range(result.top_n):
        left = ""
        if i < len(result.candidates):
            c = result.candidates[i]
            left = f"{c.vector_rank:>3}  {c.vector_score:7.3f}  {_snippet(c.text, text_width + 9)}"
        right = ""
        if i < len(reranked):
            r = reranked[i]
            ordered = r.rerank_score is None or result.score_scale == ORDER_SCALE  # an order has ranks only
            score = f"{'—':>8}" if ordered else f"{r.rerank_score:8.3f}"
            right = f"{r.rank_after:>3}  {score}  {r.movement_label:<12} {_snippet(r.text, text_width)}"
        lines.append(f"{left:<{column}} │ {right}")
    if result.dropped:
        dropped = ", ".join(f"#{c.vector_rank} → #{c.rerank_rank}" for c in result.dropped)
        lines += ["", f"Dropped from the top {result.top_n}: {dropped}"]
    if result.below_min_score:
        lines.append(
            f"{result.below_min_score} of the top {result.top_n} scored below --min-score {result.min_score:g}: "
            "not kept."
        )
    t = result.timings
    lines += [
        "",
        f"Timings: embed {t.embed_ms:.1f} ms · search {t.search_ms:.1f} ms · rerank {t.rerank_ms:.1f} ms · "
        f"total {t.total_ms:.1f} ms   (score cache: {result.cache.score_hits} hits, "
        f"{result.cache.score_misses} misses; {result.duplicates_removed} duplicates removed)",
    ]
    if result.reranker_model:
        lines.append(scale_words(result.score_scale))
    lines += [shown(f"Note: {note}") for note in result.notes]
    return "\n".join(lines)


def cmd_query(args: argparse.Namespace) -> int:
    engine = Engine(settings_from(args))
    result = engine.search(args.text, plan_from(args, engine))
    if args.json:
        print_json(result)
    elif not result.candidates:
        if result.filters:
            hint = no_match_hint(engine, result.collection, result.filters)
            print(shown(f"Nothing matched in '{result.collection}' with filters {json.dumps(result.filters)}. {hint}"))
        else:
            print(shown(f"Nothing matched in '{result.collection}': try other words."))
    else:
        print(format_result(result))
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    engine = Engine(settings_from(args))
    info = engine.collection_info(args.collection)
    if not args.yes:
        if not sys.stdin.isatty():
            raise InputError(f"Deleting '{info.name}' needs confirmation and there is no terminal: pass --yes.")
        answer = input(f"Delete '{info.name}' ({info.count} chunks in {info.store})? Type the name to confirm: ")
        if answer.strip() != info.name:
            print("Not deleted.")
            return 1
    engine.delete_collection(args.collection)
    print(f"Deleted {info.name}.")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    with ProgressBar("demo") as bar:
        info = ensure_demo_collection(Engine(settings_from(args)), progress=bar)
    print(shown(f"{info.name}: {info.count} chunks in {info.store} at {info.location}"))
    return 0


def cmd_compare_stores(args: argparse.Namespace) -> int:
    engine = Engine(settings_from(args))
    targets = [StoreTarget.parse(t) for t in args.store_in or []]
    if len(targets) < 2:
        raise InputError(
            "Name two or more stores with --in, e.g. --in chroma --in qdrant --in pgvector:postgresql://..."
        )
    if args.copy_from:
        source = open_target(StoreTarget.parse(args.copy_from), engine.settings, args.collection)
        for target in targets:
            if target.label != StoreTarget.parse(args.copy_from).label:
                with ProgressBar(f"copy to {target.label}") as bar:
                    copy_collection(source, target, engine.settings, progress=bar)
    if args.dataset:
        with ProgressBar("queries", unit="query") as bar:
            plan = plan_from(args, engine)
            study = recall_study(
                engine, Dataset.from_beir(args.dataset), plan, targets, max_queries=args.max_queries, progress=bar
            )
        if args.json:
            print(study.model_dump_json(indent=2))
            return 0
        print(
            shown(
                f"{study.collection}: {study.queries} queries, k={study.k}; exact search nDCG@10 "
                f"{study.exact_ndcg_before:.4f} before reranking, {study.exact_ndcg_after:.4f} after"
            )
        )
        for row in study.rows:
            print(shown("  " + " · ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{v}" for k, v in row.items())))
        return 0
    if not args.text:
        raise InputError("Give a query, or --dataset DIR for the recall study over judged queries.")
    result = compare_stores(engine, args.text, plan_from(args, engine), targets)
    if args.json:
        print(result.model_dump_json(indent=2))
        return 0
    print(shown(f"Query: {result.query}  [{result.collection} · k={result.k} → top {result.top_n}]"))
    for run in result.runs:
        print(
            shown(
                f"  {run.store:<40} search {run.search_ms_p50:7.1f} ms · recall@{result.k} vs exact "
                f"{run.recall_vs_exact:.3f} · top {result.top_n} after reranking: {', '.join(run.reranked_ids[:5])}…"
            )
        )
    for pair, agree in result.agreement.items():
        tau = "—" if agree.kendall_tau is None else f"{agree.kendall_tau:.3f}"
        print(shown(f"  {pair}: overlap@{agree.n} {agree.overlap_at_n:.3f} · Kendall τ {tau} · RBO {agree.rbo:.3f}"))
    return 0

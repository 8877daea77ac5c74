"""The `workbench` command line: ingest, query, collections, delete, demo, eval and app."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from workbench.config import Settings
from workbench.engine import DEFAULT, Engine
from workbench.errors import WorkbenchError
from workbench.inputs import parse_filters
from workbench.types import SearchResult


def _store_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("store")
    group.add_argument("--store", choices=["chroma", "qdrant"], help="vector store (default: WORKBENCH_STORE)")
    group.add_argument("--persist-dir", help="folder of an embedded store (default: WORKBENCH_PERSIST_DIR)")
    group.add_argument("--url", help="URL of a Chroma or Qdrant server instead of a folder")


def _settings(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {}
    if getattr(args, "store", None):
        overrides["store"] = args.store
    if getattr(args, "persist_dir", None):
        overrides["persist_dir"] = Path(args.persist_dir)
    if getattr(args, "url", None):
        store = overrides.get("store") or Settings().store
        overrides["chroma_url" if store == "chroma" else "qdrant_url"] = args.url
    if getattr(args, "reranker", None):
        overrides["reranker_model"] = args.reranker
    return Settings(**overrides)


class _ProgressBar:
    """A tqdm bar on stderr, opened on the first update so that early errors print alone."""

    def __init__(self, description: str, unit: str = "chunk") -> None:
        self.description = description
        self.unit = unit
        self._bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        from tqdm import tqdm

        if self._bar is None:
            self._bar = tqdm(total=total, desc=self.description, unit=self.unit, file=sys.stderr, dynamic_ncols=True)
        if self._bar.total != total:
            self._bar.total = total
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _cmd_ingest(args: argparse.Namespace) -> int:
    engine = Engine(_settings(args))
    bar = _ProgressBar(f"ingest {args.collection}")
    try:
        report = engine.ingest(
            args.path,
            args.collection,
            chunk_size=args.chunk_size if args.chunk_size is not None else DEFAULT,
            chunk_overlap=args.chunk_overlap,
            progress=bar,
        )
    finally:
        bar.close()
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        print(
            f"{report.collection} ({report.store}): {report.documents} documents -> {report.chunks} chunks; "
            f"{report.added} added, {report.updated} updated, {report.unchanged} unchanged in {report.seconds:.1f}s"
        )
    return 0


def _snippet(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: max(width - 1, 1)] + "…"


def format_result(result: SearchResult, width: int | None = None) -> str:
    """Both orderings side by side with movements, then what dropped out and the stage timings."""
    width = width or shutil.get_terminal_size((160, 40)).columns
    column = max((width - 3) // 2, 40)
    text_width = column - 24
    title = f"Query: {result.query}  [{result.collection} · {result.store} · k={result.k} → top {result.top_n}]"
    left_head = f"{'#':>3}  {'vector':>7}  text"
    right_head = f"{'#':>3}  {'rerank':>8}  {'move':<12} text"
    lines = [title, "", f"{'VECTOR SEARCH':<{column}} │ RERANKED ({result.reranker_model or 'no reranker'})"]
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
            score = f"{r.rerank_score:8.3f}" if r.rerank_score is not None else f"{'—':>8}"
            right = f"{r.rank_after:>3}  {score}  {r.movement_label:<12} {_snippet(r.text, text_width)}"
        lines.append(f"{left:<{column}} │ {right}")
    if result.dropped:
        dropped = ", ".join(f"#{c.vector_rank} → #{c.rerank_rank}" for c in result.dropped)
        lines += ["", f"Dropped from the top {result.top_n}: {dropped}"]
    t = result.timings
    lines += [
        "",
        f"Timings: embed {t.embed_ms:.1f} ms · search {t.search_ms:.1f} ms · rerank {t.rerank_ms:.1f} ms · "
        f"total {t.total_ms:.1f} ms   (score cache: {result.cache.score_hits} hits, "
        f"{result.cache.score_misses} misses; {result.duplicates_removed} duplicates removed)",
    ]
    return "\n".join(lines)


def _cmd_query(args: argparse.Namespace) -> int:
    engine = Engine(_settings(args))
    result = engine.search(
        args.text,
        args.k,
        args.n,
        parse_filters(args.filter),
        collection=args.collection,
        reranker=None if args.no_rerank else DEFAULT,
    )
    if args.json:
        data = result.model_dump(mode="json")
        data["timings"] = result.timings.model_dump()
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        print(format_result(result))
    return 0


def _cmd_collections(args: argparse.Namespace) -> int:
    infos = Engine(_settings(args)).collections()
    if args.json:
        print(json.dumps([i.model_dump() for i in infos], indent=2))
        return 0
    if not infos:
        print("No collections yet. Create one with: workbench ingest PATH --collection NAME")
        return 0
    print(f"{'name':<24} {'store':<8} {'count':>8}  {'dim':>5}  embedding model")
    for i in infos:
        print(f"{i.name:<24} {i.store:<8} {i.count:>8}  {i.dimension or '—':>5}  {i.embedding_model or '—'}")
    return 0


def _cmd_delete(args: argparse.Namespace) -> int:
    engine = Engine(_settings(args))
    info = engine.collection_info(args.collection)
    if not args.yes:
        answer = input(f"Delete '{info.name}' ({info.count} chunks in {info.store})? Type the name to confirm: ")
        if answer.strip() != info.name:
            print("Not deleted.")
            return 1
    engine.delete_collection(args.collection)
    print(f"Deleted {info.name}.")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from workbench.demo import ensure_demo_collection

    bar = _ProgressBar("demo")
    try:
        info = ensure_demo_collection(Engine(_settings(args)), progress=bar)
    finally:
        bar.close()
    print(f"{info.name}: {info.count} chunks in {info.store} at {info.location}")
    return 0


def _cmd_app(args: argparse.Namespace) -> int:
    app = Path(__file__).resolve().parents[1] / "app.py"
    if not app.exists():
        raise WorkbenchError(f"The app is not beside this package (looked for {app}); run from a source checkout.")
    command = [sys.executable, "-m", "streamlit", "run", str(app), "--server.port", str(args.port)]
    if args.headless:
        command += ["--server.headless", "true"]
    os.chdir(app.parent)
    return subprocess.call(command)


def _cmd_eval(args: argparse.Namespace) -> int:
    from workbench.errors import CollectionNotFoundError
    from workbench.evaluation import (
        Dataset,
        compare_runs,
        depth_curve,
        markdown_report,
        read_trec_run,
        run_evaluation,
        write_trec_run,
    )

    if args.qrels or args.queries:
        if not (args.qrels and args.queries):
            raise WorkbenchError("--qrels and --queries go together.")
        dataset = Dataset.from_files(args.queries, args.qrels)
    else:
        dataset = Dataset.from_beir(args.dataset, args.split)
    engine = Engine(_settings(args))
    try:
        engine.collection_info(args.collection)
    except CollectionNotFoundError:
        if dataset.corpus is None:
            raise
        print(f"'{args.collection}' does not exist yet: ingesting {dataset.corpus}", file=sys.stderr)
        bar = _ProgressBar(f"ingest {args.collection}")
        try:
            engine.ingest(dataset.corpus, args.collection, progress=bar)
        finally:
            bar.close()
    bar = _ProgressBar("queries", unit="query")
    try:
        report = run_evaluation(
            engine,
            dataset,
            args.collection,
            k=args.k,
            top_n=args.n,
            reranker=None if args.no_rerank else DEFAULT,
            progress=bar,
            max_queries=args.max_queries,
        )
    finally:
        bar.close()
    if args.depth:
        ks = sorted({int(x) for x in args.depth.split(",")})
        report.depth = depth_curve(engine, report, dataset, ks, reranker=None if args.no_rerank else DEFAULT)
    summary = report.summary()
    if args.run:
        outside = compare_runs(
            dataset, read_trec_run(args.run), report.after_run, args.k, (Path(args.run).name, "after")
        )
        summary["outside_run"] = outside.model_dump()
    if args.save_runs:
        folder = Path(args.save_runs)
        write_trec_run(report.before_run, folder / f"{args.collection}.before.trec", "vector")
        write_trec_run(report.after_run, folder / f"{args.collection}.after.trec", "reranked")
        (folder / f"{args.collection}.report.md").write_text(markdown_report(report), encoding="utf-8")
        (folder / f"{args.collection}.per_query.json").write_text(
            json.dumps([o.model_dump() for o in report.per_query], indent=1), encoding="utf-8"
        )
        print(f"runs and report written to {folder}", file=sys.stderr)
    if args.json:
        if report.depth:
            summary["depth"] = [p.model_dump() for p in report.depth]
        print(json.dumps(summary, indent=2))
    else:
        print(markdown_report(report))
        if args.run:
            o = summary["outside_run"]
            print(
                f"outside run {o['name_a']}: ndcg@10 {o['a']['ndcg@10']:.4f} vs after {o['b']['ndcg@10']:.4f}, "
                f"p = {o['p_value']:.4f} over {o['queries']} queries"
            )
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, one sub-command per verb."""
    parser = argparse.ArgumentParser(
        prog="workbench",
        description="Rerank Workbench: vector search beside cross-encoder reranking.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=textwrap.dedent(
            """
            examples:
              workbench ingest ../shared/data/cranfield --collection cran
              workbench query "boundary layer in hypersonic flow" --collection cran -k 50 -n 10
              workbench collections
            """
        ),
    )
    commands = parser.add_subparsers(dest="command", required=True)

    ingest = commands.add_parser("ingest", help="load files or a BEIR folder into a collection")
    ingest.add_argument("path", help="a file, a folder of files, or a BEIR folder (with corpus.jsonl)")
    ingest.add_argument("--collection", required=True)
    ingest.add_argument("--chunk-size", type=int, help="characters per chunk (BEIR passages stay whole by default)")
    ingest.add_argument("--chunk-overlap", type=int, help="characters carried into the next chunk")
    ingest.add_argument("--json", action="store_true", help="print the report as JSON")
    _store_options(ingest)
    ingest.set_defaults(handler=_cmd_ingest)

    query = commands.add_parser("query", help="search a collection and show vector and reranked orders")
    query.add_argument("text")
    query.add_argument("--collection", help="collection name (default: WORKBENCH_COLLECTION)")
    query.add_argument("-k", type=int, default=None, help="candidates from vector search (default 50)")
    query.add_argument("-n", type=int, default=None, help="results kept after reranking (default 10)")
    query.add_argument("--filter", action="append", metavar="KEY=VALUE", help="metadata equality; repeatable")
    query.add_argument("--reranker", help="reranker model id or folder (default: RERANKER_MODEL)")
    query.add_argument("--no-rerank", action="store_true", help="keep the vector order")
    query.add_argument("--json", action="store_true", help="print the SearchResult as JSON")
    _store_options(query)
    query.set_defaults(handler=_cmd_query)

    collections = commands.add_parser("collections", help="list collections")
    collections.add_argument("--json", action="store_true")
    _store_options(collections)
    collections.set_defaults(handler=_cmd_collections)

    delete = commands.add_parser("delete", help="delete a collection")
    delete.add_argument("collection")
    delete.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    _store_options(delete)
    delete.set_defaults(handler=_cmd_delete)

    demo = commands.add_parser("demo", help="build the demo collection (offline) if it is missing")
    _store_options(demo)
    demo.set_defaults(handler=_cmd_demo)

    evaluate = commands.add_parser("eval", help="metrics before and after reranking on judged queries")
    evaluate.add_argument("dataset", nargs="?", help="a BEIR folder (corpus.jsonl, queries.jsonl, qrels/)")
    evaluate.add_argument("--collection", required=True, help="ingested from the BEIR corpus when missing")
    evaluate.add_argument("-k", type=int, default=100, help="candidates per query (default 100)")
    evaluate.add_argument("-n", type=int, default=10, help="top n after reranking (default 10)")
    evaluate.add_argument("--split", default="test", help="qrels split of a BEIR folder (default test)")
    evaluate.add_argument("--qrels", help="a qrels file (BEIR TSV or TREC) instead of a BEIR folder")
    evaluate.add_argument("--queries", help="a queries file (BEIR jsonl or id<TAB>text) with --qrels")
    evaluate.add_argument("--run", help="an outside TREC run to compare with the reranked run")
    evaluate.add_argument("--depth", help="comma-separated k values for the depth curve, e.g. 10,20,50,100")
    evaluate.add_argument("--max-queries", type=int, help="only the first N judged queries")
    evaluate.add_argument("--no-rerank", action="store_true", help="evaluate the vector order only")
    evaluate.add_argument("--save-runs", metavar="DIR", help="write TREC runs, a Markdown report and per-query JSON")
    evaluate.add_argument("--json", action="store_true")
    evaluate.add_argument("--reranker", help="reranker model id or folder (default: RERANKER_MODEL)")
    _store_options(evaluate)
    evaluate.set_defaults(handler=_cmd_eval)

    app = commands.add_parser("app", help="start the Streamlit workbench")
    app.add_argument("--port", type=int, default=8501)
    app.add_argument("--headless", action="store_true")
    app.set_defaults(handler=_cmd_app)

    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `workbench` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        print(f"error: invalid setting: {problems}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; run the same command again to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

"""`workbench eval`: judged queries through the engine, metrics before and after reranking."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from workbench.cli.common import ProgressBar, settings_from, shown, warn
from workbench.cli.plans import evaluation_from, plan_from, stopping_from
from workbench.clicks.interleaving import online_test_size
from workbench.engine import Engine
from workbench.errors import InputError, WorkbenchError
from workbench.evaluation import check_plan, read_trec_run
from workbench.evaluation.calibration import calibrate, save_calibration
from workbench.evaluation.html_report import save_report
from workbench.evaluation.io import Run
from workbench.evaluation.report import EvaluationReport
from workbench.evaluation.rerankers import compare_rerankers
from workbench.evaluation.sample import corpus_lines
from workbench.evaluation.service import EvaluationOptions, Listeners
from workbench.evaluation.settling import settle_state
from workbench.inputs import safe_file_stem, validate_collection_name, validate_retrieval
from workbench.rerankers.served.pricing import parse_prices
from workbench.services.backend_audit import audit_first_if_it_repays
from workbench.services.evaluations import Evaluated, Keeping, ReadyEvaluation, ready_evaluation, run_evaluation_request


def _writable_folder(path: str) -> Path:
    """The --save-runs folder, created now so that a typo fails before an hour of reranking."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--save-runs {path}: cannot create that folder ({exc.strerror}).") from exc
    if not os.access(folder, os.W_OK):
        raise InputError(f"--save-runs {path}: the folder is not writable.")
    return folder


def _modes(text: str | None) -> list[str | None]:
    if not text:
        return [None]
    modes = [m.strip() for m in text.split(",") if m.strip()]
    return [validate_retrieval(m) for m in dict.fromkeys(modes)]


def cmd_eval(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    modes, folder = _checked_arguments(args)
    if args.fusion and modes != [None] and "hybrid" not in modes:
        raise InputError(f"--fusion fuses hybrid retrieval's lists, and --retrieval {args.retrieval} has no hybrid.")
    if args.candidates and modes != [None] and modes != ["dense"]:
        raise InputError("With --candidates the first stage is the file's: leave out --retrieval.")
    request = evaluation_from(args, settings)
    k = settings.k_retrieve if args.k is None else args.k  # the depth the app searches at, unless told
    check_plan(k, settings.k_return if args.n is None else args.n, request.max_queries, request.depth_grid(k))
    outside = read_trec_run(args.run) if args.run else None
    engine = Engine(settings)
    ready = ready_evaluation(engine, request, warn=warn)
    _notice_ingest(engine, ready, args)
    if not request.rerankers:  # faster backends never audited here: checked first when this run repays it
        queries = min(len(ready.dataset.queries), request.max_queries or len(ready.dataset.queries))
        audit_first_if_it_repays(engine, queries * k * len(modes), warn)
    if request.rerankers:
        return _compare(engine, ready, args, modes)
    summaries, lost = [], False
    keeping = Keeping(name=args.name or "", tags=tuple(args.tag or ()), notes=args.notes or "")
    for mode in modes:  # one process: later modes reuse the scores earlier ones computed
        evaluated = _evaluate_mode(engine, ready, args, mode, outside, keeping)
        report = evaluated.report
        target = folder / report.retrieval if folder is not None and len(modes) > 1 else folder
        summary = _report_out(engine, report, ready, args, target)
        if evaluated.experiment is not None:
            kept = summary["experiment"] = evaluated.experiment.id
            warn(f"kept as experiment {kept} (`workbench experiments show {kept}`)")
        elif evaluated.not_kept:
            lost = True
            warn(f"error: the evaluation could not be kept as an experiment: {evaluated.not_kept}")
        summaries.append(summary)
    if args.json:
        print(json.dumps(summaries[0] if len(summaries) == 1 else summaries, indent=2))
    return 1 if lost else 0


def _notice_ingest(engine: Engine, ready: ReadyEvaluation, args: argparse.Namespace) -> None:
    """Say so before an evaluation ingests its corpus first (the collection is empty or not there yet)."""
    try:
        state = "is empty" if engine.collection_info(ready.collection).count == 0 else None
    except WorkbenchError:
        if ready.collection not in engine.settings.collections:
            validate_collection_name(ready.collection)  # before saying it will be made
        state = "does not exist yet"
    if state and ready.dataset.corpus is not None:
        warn(_ingest_notice(ready, args, state))


QUICK_LOOK_PASSAGES = 1000  # what the notice offers as --corpus-sample


def _ingest_notice(ready: ReadyEvaluation, args: argparse.Namespace, state: str) -> str:
    """What an evaluation must ingest before its first query, and the quicker way (the time follows from
    `Engine.ingest`, once the chunks to embed are counted)."""
    sampled = ready.request.corpus_sample is not None
    passages = corpus_lines(ready.dataset) or 0
    source = ready.dataset.corpus if not sampled else f"a sample of {args.dataset}"  # not its cache folder
    notice = f"'{ready.collection}' {state}: ingesting {source} ({passages:,} passages) first."
    if not sampled and passages > QUICK_LOOK_PASSAGES:
        notice += (
            f" For a quick look, --corpus-sample {QUICK_LOOK_PASSAGES} ingests only the judged passages of the "
            f"queries evaluated and {QUICK_LOOK_PASSAGES:,} others (every figure then says it is a sample)."
        )
    return notice


def _checked_arguments(args: argparse.Namespace) -> tuple[list[str | None], Path | None]:
    """The options no request holds, checked before any query runs: the first stages, the calibration's, the
    folder to save to."""
    if args.calibrate and (args.no_rerank or len(args.reranker or []) > 1):
        raise InputError("--calibrate calibrates one reranker's scores: leave out --no-rerank and name one --reranker.")
    if not 0 < args.target_precision <= 1:
        raise InputError(f"--target-precision must be above 0 and at most 1; got {args.target_precision}.")
    stopping_from(args)  # its options are checked before anything is ingested or scored
    return _modes(args.retrieval), _writable_folder(args.save_runs) if args.save_runs else None


def _evaluate_mode(
    engine: Engine,
    ready: ReadyEvaluation,
    args: argparse.Namespace,
    mode: str | None,
    outside: Run | None,
    keeping: Keeping,
) -> Evaluated:
    """One first stage's evaluation (kept unless --no-save), with progress bars for the ingest and the queries."""
    label = f"queries ({mode})" if mode else "queries"
    ingest_bar = ProgressBar(f"ingest {ready.collection}")
    with ingest_bar, ProgressBar(label, unit="query") as bar:
        return run_evaluation_request(
            engine, ready, plan_from(args, engine, retrieval=mode, collection=ready.collection), keeping=keeping,
            options=EvaluationOptions(
                outside_run=outside, outside_name=Path(args.run).name if args.run else "outside run",
                latency_budget_ms=args.latency_budget_ms, sequential=stopping_from(args),
            ),
            listeners=Listeners(progress=bar, ingest_progress=ingest_bar, ingest_announce=warn),
        )  # fmt: skip


def _report_out(
    engine: Engine, report: EvaluationReport, ready: ReadyEvaluation, args: argparse.Namespace, target: Path | None
) -> dict[str, Any]:
    """One evaluation's summary, printed (and its calibration, kept), its warnings, and its files in `target`."""
    summary = report.summary()
    qrels = ready.dataset.qrels
    calibration = calibrate(report, qrels, target_precision=args.target_precision) if args.calibrate else None
    if calibration is not None:
        summary["calibration"] = calibration.summary()
        kept = save_calibration(engine.settings, calibration.chosen)
        warn(f"calibration kept in {kept.name}: the app's cards for this reranker on '{ready.collection}' use it")
    online = online_test_size(report) if report.verdict is not None else None
    if online is not None:
        summary["online_test"] = online.model_dump()
    if not args.json:
        print(shown(report.to_markdown()))
        if online is not None:
            print(shown(f"\n**Online test**: {online.words()}"))
        state = settle_state(report) if report.unjudged_before or report.unjudged_after else None
        if state is not None:
            print(shown(f"\n**Judging**: {state.words()}"))
        if calibration is not None:
            print(shown(calibration.to_markdown()))
    for warning in report.warnings:
        warn(f"warning: {warning}")
    if target is not None:
        try:
            save_report(report, target)
            if calibration is not None:
                (target / "calibration.md").write_text(calibration.to_markdown(), encoding="utf-8")
                (target / "calibration.json").write_text(json.dumps(calibration.summary(), indent=2), encoding="utf-8")
        except OSError as exc:  # the figures are printed; only the files are lost
            raise InputError(f"The results are printed, but writing them to {target} failed: {exc}") from exc
        warn(f"runs and report written to {target}")
    return summary


def _compare(engine: Engine, ready: ReadyEvaluation, args: argparse.Namespace, modes: list[str | None]) -> int:
    """`--reranker A --reranker B ...`: the rerankers side by side, one table per first stage."""
    prices = parse_prices(args.price)
    comparisons = []
    for mode in modes:
        label = f"rerankers ({mode})" if mode else "rerankers"
        ingest_bar = ProgressBar(f"ingest {ready.collection}")
        with ingest_bar, ProgressBar(label, unit="query") as bar:
            plan = plan_from(args, engine, retrieval=mode, reranker=None, collection=ready.collection)
            comparison = compare_rerankers(
                engine,
                ready.dataset,
                plan,
                list(ready.request.rerankers),
                max_queries=ready.request.max_queries,
                prices=prices,
                progress=bar,
                ingest_progress=ingest_bar,
                ingest_announce=warn,
            )
        comparisons.append(comparison)
        if not args.json:
            print(shown(comparison.to_markdown(args.latency_budget_ms)))
        if args.save_runs:
            target = Path(args.save_runs) / f"{safe_file_stem(ready.collection)}.{comparison.retrieval}.rerankers"
            Path(f"{target}.md").write_text(comparison.to_markdown(args.latency_budget_ms), encoding="utf-8")
            Path(f"{target}.json").write_text(comparison.model_dump_json(indent=2), encoding="utf-8")
            warn(f"comparison written to {target}.md and .json")
    if args.json:
        data = [
            {**c.model_dump(mode="json"), "cheapest": c.cheapest(args.latency_budget_ms).model_dump()}
            for c in comparisons
        ]
        print(json.dumps(data[0] if len(data) == 1 else data, indent=2))
    return 0

"""Evaluate: judgments in, metrics before and after reranking out, with significance, groups and a depth curve.

The page calls the same service as `workbench eval` (`evaluate_dataset`), which checks every argument
before any work and refuses judgments that do not belong to the collection.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import streamlit as st

from workbench.app import calibration_view, queue_view, report_view, rerankers_view, tuning_view
from workbench.app.progress import bar_with_time_left
from workbench.app.state import STATE, Controls, controls, engine_resource, error_text
from workbench.app.uploads import beir_folders, save_upload, server_path
from workbench.app.widgets import file_picker, sidebar_note
from workbench.engine import Engine
from workbench.errors import InputError, WorkbenchError
from workbench.evaluation import read_trec_run
from workbench.evaluation.report import EvaluationReport
from workbench.evaluation.rerankers import compare_rerankers
from workbench.evaluation.service import EvaluationOptions, Listeners
from workbench.evaluation.tuning import tune
from workbench.experiments import keep_tuning, open_experiment_store
from workbench.experiments.service import Keeping
from workbench.inputs import parse_int_list
from workbench.judgments import load_judgments, pooled_reports
from workbench.rerankers import discover_rerankers
from workbench.services.demo import DEMO_COLLECTION, demo_dir, others_graded_demo
from workbench.services.evaluations import Evaluated, EvaluationRequest, ready_evaluation, run_evaluation_request
from workbench.vocab import (
    DEFAULT_K,
    DEFAULT_TOP_N,
    MAX_K,
    MAX_NAME_CHARS,
    MAX_RERANK_BUDGET_MS,
    MAX_SERVE_CONCURRENCY,
)

ALL_QUERIES = "every judged query"
DEMO = "The demo handbook's judgments (50 queries)"
SHIPPED = "The demo handbook's judgments as shipped, without the grades given since"
ATTACHED = "Judgments of the collection in the sidebar (rated and imported)"
FOLDER = "A BEIR folder on this machine"
UPLOAD = "Upload queries and qrels"


def run() -> None:
    """The Evaluate page, drawn under the sidebar that `main.run` draws: an outline of its sections."""
    engine = engine_resource()
    c = controls()
    st.title("Evaluate")
    sidebar_note(
        "evaluate",
        own="the judgments, the collection, k, top n and max queries (judged queries run without filters)",
    )
    st.caption(
        "Run judged queries through the engine and see what the reranker does: by how much, on which queries, "
        "and whether the difference is real. It may help, do nothing or hurt; the figures say which."
    )
    presets = _presets(engine, c)
    asked = _form(engine, c, presets)
    if asked.submitted:
        _evaluate(engine, c, presets, asked)
    if asked.tune_submitted:
        _tune(engine, c, presets, asked)
    if STATE.tuning_error:
        st.error(STATE.tuning_error, icon=":material/error:")
    if STATE.tuning_run is not None:
        tuning_view.draw(STATE.tuning_run, STATE.tuning_experiment)
        st.divider()
    report = _report_or_stop()
    report_view.headline(report)
    report_view.query_by_query(report, STATE.eval_plan, "evaluate")
    report_view.served(report)
    if STATE.eval_experiment:
        if STATE.eval_linked:
            st.info(STATE.eval_linked, icon=":material/link:")
        report_view.kept_as(STATE.eval_experiment)
    with st.expander("Judging queue: grade what the metrics cannot see", expanded=report.unjudged_after > 0):
        pool = [r for r in STATE.eval_pool if r.collection == report.collection and r.dataset == report.dataset]
        queue_view.draw(engine, pool or [report], c.rater)
    if STATE.reranker_comparison is not None:
        rerankers_view.draw(STATE.reranker_comparison)
    report_view.groups(report)
    report_view.outside(report)
    report_view.charts(report)
    report_view.most_hurt_and_helped(report)
    report_view.downloads(report)
    if report.reranker_model and STATE.eval_qrels is not None:
        st.divider()
        calibration_view.draw(report, STATE.eval_qrels)


@dataclass
class _EvalForm:
    """What the evaluation form asked for."""

    source: str
    folder_text: str
    split: str
    queries_file: Any
    qrels_file: Any
    outside_file: Any
    candidates_file: Any
    collection: str
    k: int
    top_n: int
    max_queries: int
    depth_ks: str
    budget_ms: int
    serve_concurrency: int
    compared: list[str]
    query_set: str | None
    name: str
    submitted: bool
    grid: tuning_view.TuneGrid
    tune_submitted: bool


def _presets(engine: Engine, c: Controls) -> dict[str, Path | None]:
    """Where judgments can come from: the demo's, the sidebar collection's (when it has some), the BEIR folders
    found in the allowed folders, a folder typed in, an upload."""
    presets: dict[str, Path | None] = {DEMO: demo_dir()}
    if others_graded_demo(engine.settings):
        presets[SHIPPED] = demo_dir()
    if c.collection and load_judgments(engine.settings, c.collection) is not None:
        presets[ATTACHED] = None
    for folder in beir_folders(engine.settings):
        if folder != demo_dir().resolve():
            presets[f"BEIR: {folder.name}"] = folder
    presets[FOLDER] = None
    presets[UPLOAD] = None
    return presets


def _form(engine: Engine, c: Controls, presets: dict[str, Path | None]) -> _EvalForm:
    """The judgments, the collection, the depths and the rerankers to evaluate."""
    choices = discover_rerankers(engine.settings)
    by_id = {m.id: m for m in choices}
    source = st.radio("Judgments", list(presets), key="eval-source", on_change=_forget_result)
    default_collection = {
        DEMO: DEMO_COLLECTION,
        SHIPPED: DEMO_COLLECTION,
        ATTACHED: c.collection or "",
    }.get(source, (presets[source].name if presets.get(source) else c.collection or ""))
    with st.form("eval-form"):
        folder_text = split = ""
        queries_file = qrels_file = None
        if source == FOLDER:
            folder_text = st.text_input(
                "BEIR folder (corpus.jsonl, queries.jsonl, qrels/test.tsv), inside the allowed folders",
                key="eval-folder",
            )
        if source not in {UPLOAD, ATTACHED, DEMO, SHIPPED}:
            split = st.text_input("qrels split", "test", key="eval-split")
        if source == UPLOAD:
            queries_file = file_picker(
                st, "Queries (BEIR queries.jsonl or id<TAB>text)", ["jsonl", "tsv", "txt"], "eval-queries"
            )
            qrels_file = file_picker(st, "Qrels (BEIR TSV or TREC qrels)", ["tsv", "txt", "qrels"], "eval-qrels")
        with st.expander("Optional: your first stage's candidates, or an outside run to compare with"):
            candidates_file = file_picker(
                st, "Your search's candidates to rerank (JSONL of {query_id, query, hits}, or a TREC run of the "
                "BEIR folder's ids): they replace the collection's first stage", ["jsonl", "trec", "txt", "run"],
                "eval-candidates",
            )  # fmt: skip
            outside_file = file_picker(
                st, "An outside TREC run (your production ranking, say)", ["trec", "txt", "run"], "eval-outside"
            )
        c1, c2, c3, c4 = st.columns(4)
        collection = c1.text_input(
            "Collection (ingested from a BEIR corpus when missing)",
            value=default_collection,
            key=f"eval-collection-{source}",
        )
        k = c2.number_input("k (candidates)", 1, MAX_K, value=DEFAULT_K, key="eval-k")
        top_n = c3.number_input("top n", 1, MAX_K, value=DEFAULT_TOP_N, key="eval-top-n")
        max_queries = c4.number_input("max queries (0 = all)", 0, 100000, value=0, key="eval-max")
        d1, d2, d3 = st.columns([3, 1, 1])
        depth_ks = d1.text_input("Depth curve k values (empty = none)", "10, 20, 50", key="eval-depth")
        budget_ms = d2.number_input(
            "Rerank budget, ms (0 = none)", 0, MAX_RERANK_BUDGET_MS, value=0, step=50, key="eval-budget",
            help="The verdict (and the tuning grid) as a fail-open service serves it under this budget too: every "
            "search timed with no cache, a query whose rerank took longer scored at its first-stage order "
            "(`eval --rerank-budget-ms`).",
        )  # fmt: skip
        serve_concurrency = d3.number_input(
            "Searches at once (with a budget)", 1, MAX_SERVE_CONCURRENCY, value=1, key="eval-serve-concurrency",
            help="Under the rerank budget, this many searches served at once while each is timed: budgets bite "
            "under load (`--serve-concurrency`).",
        )  # fmt: skip
        compared = st.multiselect(
            "Rerankers side by side (optional: two or more, on the same candidates)",
            [m.id for m in choices],
            format_func=lambda i: by_id[i].short_name,
            key="eval-rerankers",
            help="Local cross-encoders, their int8 variant, and the services and hosted rerankers configured with "
            "RERANKER_SERVICE_URL or WORKBENCH_RERANKERS.",
        )
        sets = _query_set_names(engine)
        q1, q2 = st.columns(2)
        query_set = q1.selectbox(
            "Query set (optional: only its queries, judged by these judgments)", [ALL_QUERIES, *sets],
            key="eval-query-set", help="Kept on the Experiments page, or with `workbench query-sets add`.",
        )  # fmt: skip
        name = q2.text_input("Experiment name (optional)", key="eval-name", max_chars=MAX_NAME_CHARS)
        grid = tuning_view.grid_inputs()
        b1, b2 = st.columns(2)
        submitted = b1.form_submit_button("Run evaluation", type="primary")
        tune_submitted = b2.form_submit_button("Run tuning grid", help="every first stage × k of the grid, reranked")
    return _EvalForm(
        source, folder_text, split, queries_file, qrels_file, outside_file, candidates_file, collection, int(k),
        int(top_n), int(max_queries), depth_ks, int(budget_ms), int(serve_concurrency), compared,
        None if query_set == ALL_QUERIES else query_set, name, submitted, grid, tune_submitted,
    )  # fmt: skip


def _query_set_names(engine: Engine) -> list[str]:
    try:
        return open_experiment_store(engine.settings).query_set_names()
    except WorkbenchError as exc:  # the store being down leaves the form usable
        st.caption(f"Query sets are not available: {error_text(exc)}")
        return []


def _request(
    engine: Engine,
    c: Controls,
    presets: dict[str, Path | None],
    asked: _EvalForm,
    tmp: Path,
    depth: tuple[int, ...] | None = None,
) -> EvaluationRequest:
    """The form's adapter to an `EvaluationRequest` (as `cli/plans.evaluation_from` is the CLI's): the judged
    queries it names (uploads saved under `tmp`), the collection, a candidates file, the query set, the depth
    curve's k values."""
    uploaded = asked.source == UPLOAD
    if uploaded and (asked.queries_file is None or asked.qrels_file is None):
        raise InputError("Upload both a queries file and a qrels file.")
    beir = None
    if asked.source not in {UPLOAD, ATTACHED, DEMO, SHIPPED}:
        beir = presets[asked.source] or server_path(asked.folder_text, engine.settings, "BEIR folder")
    candidates = save_upload(asked.candidates_file, tmp) if asked.candidates_file is not None else None
    return EvaluationRequest(
        demo=asked.source in {DEMO, SHIPPED}, shipped=asked.source == SHIPPED,
        beir=str(beir) if beir is not None else None, split=asked.split.strip() or "test",
        queries=str(save_upload(asked.queries_file, tmp)) if uploaded else None,
        qrels=str(save_upload(asked.qrels_file, tmp)) if uploaded else None,
        collection=asked.collection.strip() or None,
        judgments_of=c.collection if asked.source == ATTACHED else None,
        candidates=str(candidates) if candidates is not None else None,
        query_set=asked.query_set, max_queries=asked.max_queries or None, tag=STATE.session_tag,
        rerank_budget_ms=asked.budget_ms or None, serve_concurrency=asked.serve_concurrency, depth=depth,
    )  # fmt: skip


def _evaluate(engine: Engine, c: Controls, presets: dict[str, Path | None], asked: _EvalForm) -> None:
    """Run the evaluation the form asked for (and the rerankers side by side). A failure is kept to be shown, and
    no earlier report stays on screen."""
    STATE.eval_report, STATE.eval_error, STATE.reranker_comparison = None, None, None
    STATE.eval_qrels = STATE.eval_experiment = STATE.eval_plan = None
    working: list[Any] = []  # the progress elements, removed when the work ends however it ends
    try:
        wanted = parse_int_list(asked.depth_ks, "Depth curve k values") if asked.depth_ks.strip() else []
        depth = tuple(d for d in wanted if d <= asked.k)
        if len(depth) < len(wanted):
            left_out = ", ".join(str(d) for d in wanted if d > asked.k)
            st.info(f"Depth values above k ({asked.k}) were left out: {left_out}.")
        with tempfile.TemporaryDirectory() as tmp:
            request = _request(engine, c, presets, asked, Path(tmp), depth=depth)
            ready = ready_evaluation(engine, request, warn=st.warning)
            outside_file = asked.outside_file
            outside = read_trec_run(save_upload(outside_file, Path(tmp))) if outside_file is not None else None
        ingest_estimate, ingest_bar = st.empty(), st.empty()
        bar = st.progress(0.0, text="running queries")
        working.extend([ingest_estimate, ingest_bar, bar])
        # the sidebar's first stage and reranker over the whole judged set: no metadata filters (with a candidates
        # file, its hits are the first stage, served in the file's order)
        plan = c.plan(engine).with_(collection=ready.collection, k=asked.k, top_n=asked.top_n, filters={})
        if ready.candidates:
            plan = plan.with_(retrieval="dense")
        started = datetime.now(UTC)  # an experiment kept before this moment was not kept by this click
        done = run_evaluation_request(
            engine, ready, plan,
            keeping=Keeping(name=asked.name, tags=("app",), link_identical=True),
            options=EvaluationOptions(
                outside_run=outside,
                outside_name=outside_file.name if outside_file is not None else "outside run",
            ),
            listeners=Listeners(
                progress=bar_with_time_left(bar, "queries"),
                ingest_progress=lambda d, t: ingest_bar.progress(d / max(t, 1), text=f"ingesting {d}/{t}"),
                ingest_announce=ingest_estimate.caption,
                phase=lambda words: bar.progress(1.0, text=f"queries done; now {words}…"),
            ),
        )  # fmt: skip
        dataset = ready.dataset
        STATE.eval_report, STATE.eval_plan = done.report, plan
        STATE.eval_qrels = dataset.qrels
        STATE.eval_pool = pooled_reports(STATE.eval_pool, STATE.eval_report)
        _kept(done, started)
        if len(asked.compared) > 1:
            side = st.progress(0.0, text="rerankers side by side")
            working.append(side)
            STATE.reranker_comparison = compare_rerankers(
                engine,
                dataset,
                plan,  # its collection, first stage, k and top n; each reranker in turn
                asked.compared,
                max_queries=asked.max_queries or None,
                prices=STATE.prices,
                progress=bar_with_time_left(side, "searches of the rerankers side by side"),
            )
        elif asked.compared:
            st.info("Pick two or more rerankers to see them side by side.")
    except Exception as exc:  # shown, never raised: the page keeps working
        STATE.eval_error = error_text(exc)
    finally:
        for element in working:  # no bar or "now the depth curve…" stays above a finished verdict
            element.empty()


def _tune(engine: Engine, c: Controls, presets: dict[str, Path | None], asked: _EvalForm) -> None:
    """Run the tuning grid the form asked for on its judgments and collection, with the sidebar's reranker; keep
    the recommended cell. A failure is kept to be shown."""
    STATE.tuning_run, STATE.tuning_error, STATE.tuning_experiment = None, None, None
    working: list[Any] = []
    try:
        if asked.candidates_file is not None:
            raise InputError("A tuning grid compares first stages; a candidates file is one first stage. Remove it.")
        with tempfile.TemporaryDirectory() as tmp:
            ready = ready_evaluation(engine, _request(engine, c, presets, asked, Path(tmp)))
        dataset = ready.dataset
        ks = parse_int_list(asked.grid.ks, "Tuning grid k values")
        deepest = max(ks) if ks else asked.k
        base = c.plan(engine).with_(collection=ready.collection, k=deepest, top_n=min(asked.top_n, deepest), filters={})
        bar = st.progress(0.0, text="tuning grid")
        working.append(bar)
        STATE.tuning_run = run = tune(
            engine, dataset, base, first_stages=asked.grid.first_stages, ks=ks, chunkings=asked.grid.chunkings,
            max_queries=asked.max_queries or None,
            latency_budget_ms=asked.grid.budget_ms, progress=bar_with_time_left(bar, "queries of the tuning grid"),
            rerank_budget_ms=ready.request.rerank_budget_ms, serve_concurrency=ready.request.serve_concurrency,
        )  # fmt: skip
        kept = keep_tuning(engine, run, dataset, source=asked.source, tags=["app"])
        STATE.tuning_experiment = kept.id if kept else None
    except Exception as exc:  # shown, never raised: the page keeps working
        STATE.tuning_error = error_text(exc)
    finally:
        for element in working:
            element.empty()


def _kept(done: Evaluated, started: datetime) -> None:
    """The experiment the evaluation was kept as; a store that could not keep it leaves the report on screen,
    with why; an unchanged evaluation run again is linked to the one kept before, never kept twice."""
    if done.experiment is None:
        if done.not_kept:
            st.warning(f"The evaluation could not be kept as an experiment: {done.not_kept}")
        return
    kept = done.experiment
    STATE.eval_experiment = kept.id
    STATE.eval_linked = (
        f"The same evaluation, with the same figures, was kept on {kept.created_at:%Y-%m-%d %H:%M} UTC as "
        f"experiment `{kept.id}`: nothing new was kept."
        if kept.created_at < started
        else None
    )


def _forget_result() -> None:
    """Another source of judgments was picked: the result shown was another source's, so it goes."""
    STATE.eval_report = None
    STATE.eval_error = None
    STATE.eval_experiment = None
    STATE.reranker_comparison = None
    STATE.tuning_run = STATE.tuning_error = STATE.tuning_experiment = None


def _report_or_stop() -> EvaluationReport:
    """The last report, under the last error if any; the page stops when there is no report yet."""
    if STATE.eval_error:
        st.error(STATE.eval_error, icon=":material/error:")
    report: EvaluationReport | None = STATE.eval_report
    if report is None:
        if not STATE.eval_error:
            st.info(
                "Pick judgments and press Run evaluation. The demo's judgments are ready to run; a BEIR corpus is "
                "ingested into the collection if it is missing."
            )
        st.stop()
    return report


if __name__ == "__main__":  # Streamlit runs a page file as __main__; importing the module draws nothing
    run()

"""Experiments side by side and the named query sets, for the Experiments page: run against run (the paired
test between the two, judged@10 of each, and how much they disagree on what people see), the queries where they
disagree most one click from Explore, both runs' unjudged documents in the judging queue; query sets kept from an
upload, this user's searches, or judged queries."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from workbench.app import queue_view
from workbench.app.history import history_queries
from workbench.app.state import explore_with, page, shown_errors
from workbench.app.uploads import beir_folders
from workbench.app.widgets import counted, file_picker, text_md
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation.figures import delta_bars
from workbench.evaluation.io import Dataset
from workbench.experiments import (
    Experiment,
    ExperimentStore,
    RunDiff,
    diff_experiments,
    history_query_set,
    judged_query_set,
    parse_query_set,
)
from workbench.judgments import open_judgment_store
from workbench.services.demo import demo_dataset
from workbench.services.evaluations import EvaluationRequest, judged_queries_of
from workbench.types import SearchPlan
from workbench.vocab import MAX_NAME_CHARS, PRIMARY_METRIC

DISAGREEMENTS_SHOWN = 8


def draw(engine: Engine, experiments: list[Experiment], rater: str) -> None:
    """Two kept experiments, the second against the first."""
    st.subheader("Two experiments side by side")
    if len(experiments) < 2:
        st.caption("Keep a second experiment (another k, first stage or reranker) to compare two.")
        return
    by_id = {e.id: e for e in experiments}
    ids = list(by_id)
    a, b = st.columns(2)

    def label(i: str) -> str:
        return f"{i} · {by_id[i].title} · {by_id[i].created_at:%m-%d %H:%M}"

    first = a.selectbox("Baseline (A)", ids, index=1, format_func=label, key="diff-a")
    second = b.selectbox("Candidate (B)", ids, index=0, format_func=label, key="diff-b")
    if first == second:
        st.caption("Pick two different experiments.")
        return
    with shown_errors():
        diff = diff_experiments(by_id[first], by_id[second])
        figures(diff)
        disagreements(diff, by_id[second].plan, "diff")
        with st.expander("Judging queue: the unjudged documents of both", expanded=False):
            queue_view.draw(engine, [by_id[first].evaluation(), by_id[second].evaluation()], rater)


def figures(diff: RunDiff, key: str = "diff") -> None:
    """The comparison in words, its agreement figures, both runs' metrics and the per-query change."""
    for warning in diff.warnings:
        st.warning(warning, icon=":material/warning:")
    colour = {"helps": "green", "hurts": "red", "none": "gray", "unknown": "orange"}.get(diff.direction or "", "gray")
    st.markdown(f":{colour}-badge[{diff.direction or 'no judgments'}] {text_md(diff.words())}")
    agree = diff.agreement
    m = st.columns(4)
    m[0].metric("top 1 changed", f"{agree.top1_change_rate:.0%}", help=f"of {agree.queries} queries")
    m[1].metric(f"overlap@{agree.top_n} (mean)", f"{agree.overlap_at_n.mean:.3f}")
    m[2].metric(
        "RBO (mean)", f"{agree.rbo.mean:.3f}", help=f"median {agree.rbo.median:.3f}, lowest {agree.rbo.low:.3f}"
    )
    m[3].metric("Kendall τ (mean)", f"{agree.kendall_tau.mean:.3f}")
    if diff.change is not None:
        rows = [{"metric": name, "A": diff.a[name], "B": diff.b[name], "B − A": diff.b[name] - diff.a[name]}
                for name in diff.a]  # fmt: skip
        st.dataframe(pd.DataFrame(rows).style.format(precision=4), hide_index=True, width="stretch")
        judged = [r for r in diff.per_query if r.delta is not None]
        st.plotly_chart(
            delta_bars([r.query_id for r in judged], [r.delta or 0.0 for r in judged], PRIMARY_METRIC),
            width="stretch", key=f"{key}-delta-bars",
        )  # fmt: skip


def disagreements(diff: RunDiff, plan: SearchPlan, key: str) -> None:
    """The queries where A and B disagree most, each one click from Explore (with B's plan)."""
    st.markdown("#### Where they disagree most")
    differing = diff.disagreeing()
    if not differing:
        st.success(f"They agree on every one of the {diff.agreement.queries} queries: the same top "
                   f"{diff.agreement.top_n} in the same order.")  # fmt: skip
        return
    rows = [
        {"query_id": r.query_id, "query": r.query, "RBO": r.rbo, f"overlap@{diff.agreement.top_n}": r.overlap_at_n,
         "top 1 changed": r.top1_changed, "A": r.a, "B": r.b, "B − A": r.delta}
        for r in differing
    ]  # fmt: skip
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key=f"{key}-table")

    for r in differing[:DISAGREEMENTS_SHOWN]:
        left, right = st.columns([5, 1])
        left.markdown(f"`{text_md(r.query_id)}` {text_md(r.query[:120])} · RBO {r.rbo:.3f}")
        if right.button("Explore", key=f"{key}-explore-{r.query_id}", on_click=explore_with, args=(r.query, plan)):
            st.switch_page(page("explore"))


def query_sets(engine: Engine, store: ExperimentStore) -> None:
    """The named query sets: list, keep one from an upload, this user's searches or judged queries, delete."""
    st.subheader("Query sets")
    st.caption(
        "Named sets of queries (with weights, such as how often each is asked) that Evaluate, the gate and "
        "`workbench eval --query-set` run. Kept beside the experiments."
    )
    with shown_errors():
        names = store.query_set_names()
        if names:
            sets = [store.query_set(name) for name in names]
            st.dataframe(
                pd.DataFrame([{"name": s.name, "queries": len(s.queries), "source": s.source} for s in sets]),
                hide_index=True, width="stretch", key="query-sets-table",
            )  # fmt: skip
        source = st.radio(
            "Keep a query set from", ["an uploaded file", "my searches", "judged queries"], horizontal=True,
            key="query-set-source",
        )  # fmt: skip
        name = st.text_input("Name", key="query-set-name", max_chars=MAX_NAME_CHARS)
        upload = None
        if source == "an uploaded file":
            upload = file_picker(st, "Queries: one a line, CSV or JSONL (id, weight optional)",
                                 ["txt", "csv", "jsonl"], "query-set-upload")  # fmt: skip
        judged_from = None
        if source == "judged queries":
            sources = _judged_sources(engine)
            judged_from = st.selectbox("Judged queries of", list(sources), key="query-set-judged")
        if st.button("Keep query set", disabled=not name.strip(), key="query-set-keep"):
            if source == "an uploaded file":
                if upload is None:
                    raise InputError("Upload a file of queries first.")
                kept = parse_query_set(name, upload.getvalue(), upload.name)
            elif source == "my searches":
                kept = history_query_set(name, history_queries(engine))
            else:
                kept = judged_query_set(name, sources[judged_from]())
            store.save_query_set(kept)
            st.success(f"Kept '{text_md(kept.name)}': {counted(len(kept.queries), 'query', 'queries')}.")
        if names:
            gone = st.selectbox("Delete a query set", ["", *names], key="query-set-delete")
            if gone and st.button(f"Delete '{gone}'", key="query-set-delete-button"):
                store.delete_query_set(gone)
                st.rerun()


def _judged_sources(engine: Engine) -> dict[str, Callable[[], Dataset]]:
    """Where judged queries can come from: the demo's, each collection's in the judgments store, the BEIR folders
    in the allowed folders (each read only when picked)."""
    settings = engine.settings
    sources: dict[str, Callable[[], Dataset]] = {"the demo handbook": lambda: demo_dataset("test", settings)}
    for collection in open_judgment_store(settings).collections():
        sources[f"the judgments of '{collection}'"] = lambda c=collection: judged_queries_of(
            settings, EvaluationRequest(collection=c)
        )[0]
    for folder in beir_folders(settings):
        sources[f"BEIR: {folder.name}"] = lambda f=folder: Dataset.from_beir(f)
    return sources

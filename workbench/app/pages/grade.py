"""Grade: walk a query set (or Evaluate's judging queue) one document at a time, grading from the keyboard: 0 to 3
grade and go on, ← goes back, → skips. Beside it, how far each rater has got through the same pairs."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
import streamlit as st

from workbench.app import queue_view
from workbench.app.judging import Judging, record_grade
from workbench.app.progress import bar_with_time_left
from workbench.app.state import STATE, Controls, controls, engine_resource, shown_errors
from workbench.app.widgets import counted, sidebar_note, text_md
from workbench.engine import Engine
from workbench.evaluation.report import EvaluationReport
from workbench.experiments import open_experiment_store
from workbench.judgments import (
    WalkItem,
    grading_walk,
    judged_queries,
    judging_queue,
    judgment_rows,
    load_judgments,
    queries_by_rater,
    queue_walk,
    rater_progress,
)
from workbench.vocab import DISPLAY_CHARS, GRADE_SCALE

QUERY_SET = "A query set, searched with the sidebar's plan"
QUEUE = "Evaluate's judging queue (its last evaluation)"
_WALK = "wb.grading_walk"


@dataclass
class Walk:
    """A grading walk under way: its pairs, where the user is, and what was given on this walk."""

    collection: str
    label: str
    items: list[WalkItem]
    position: int = 0
    given: dict[int, int] = field(default_factory=dict)  # item index -> grade given on this walk
    report: EvaluationReport | None = None  # the evaluation whose queue this walks: its verdict counts down


def rank_words(before: int | None, after: int | None) -> str:
    """Where a document stood in the two top-n lists, in words ('#7 before → #2 after reranking', 'not in the top n
    before → #3 after reranking')."""
    first = f"#{before} before" if before else "not in the top n before"
    second = f"#{after} after reranking" if after else "not in the top n after reranking"
    return f"{first} → {second}"


def run() -> None:
    """The Grade page: pick what to walk, then grade its documents one by one."""
    engine = engine_resource()
    c = controls()
    st.title("Grade")
    sidebar_note("grade", own="what to walk")
    st.caption(
        "Grade a whole query set as fast as you read: each document with its query, title and passage; press 0, 1, "
        "2 or 3 to grade it and go on, ← to go back, → to skip. Grades are kept under your name, as on every card."
    )
    _start(engine, c)
    walk: Walk | None = st.session_state.get(_WALK)
    if walk is None:
        st.stop()
    _progress(engine, walk)
    _current(engine, c, walk)


def _start(engine: Engine, c: Controls) -> None:
    """What to walk: the collection's judged queries (no detour: they are there), a query set searched with the
    sidebar's plan, or Evaluate's judging queue."""
    judged = judged_queries(engine.settings, c.collection) if c.collection else {}
    own = f"The judged queries of '{c.collection}' ({counted(len(judged), 'query', 'queries')})" if judged else None
    if judged:  # why there may be more than an evaluation of the shipped judgments runs
        by_rater = queries_by_rater(judgment_rows(engine.settings, c.collection))
        st.caption(text_md(f"Judged queries of '{c.collection}': {by_rater}."))
    sources = ([own] if own else []) + [QUERY_SET] + ([QUEUE] if STATE.eval_report is not None else [])
    source = st.radio("Walk through", sources, key="walk-source", horizontal=True)
    with shown_errors():
        if source == QUEUE:
            report = STATE.eval_report
            if st.button("Start grading the queue", key="walk-start", type="primary"):
                queue = judging_queue([report], load_judgments(engine.settings, report.collection))
                st.session_state[_WALK] = Walk(
                    report.collection,
                    f"the judging queue of {report.dataset}",
                    queue_walk(engine, report.collection, queue),
                    report=report,
                )
            return
        if source == own:
            left, right = st.columns([2, 1], vertical_alignment="bottom")
            left.caption("Each judged query searched with the sidebar's plan: its top n before and after reranking.")
            unjudged = right.checkbox("Only documents without a grade", value=True, key="walk-unjudged")
            if st.button("Start grading", key="walk-start", type="primary"):
                _walk_texts(engine, c, list(judged.values()), f"the judged queries of {c.collection}", unjudged)
            return
        names = open_experiment_store(engine.settings).query_set_names()
        if not names:
            st.info(
                "Keep a query set on the Experiments page (from a file, your searches or judged queries) to walk it."
            )
            return
        left, right = st.columns([2, 1], vertical_alignment="bottom")
        chosen = left.selectbox("Query set", names, key="walk-query-set")
        unjudged = right.checkbox("Only documents without a grade", value=True, key="walk-unjudged")
        if c.collection and st.button("Start grading", key="walk-start", type="primary"):
            query_set = open_experiment_store(engine.settings).query_set(chosen)
            _walk_texts(engine, c, [q.text for q in query_set.queries], f"'{chosen}' on {c.collection}", unjudged)


def _walk_texts(engine: Engine, c: Controls, texts: list[str], label: str, only_unjudged: bool) -> None:
    """A walk through each text's top n before and after reranking, searched with the sidebar's plan."""
    collection = c.collection or engine.settings.collection
    bar = st.progress(0.0, text="searching")
    items = grading_walk(
        engine, texts, c.plan(engine), judgments=load_judgments(engine.settings, collection),
        only_unjudged=only_unjudged, progress=bar_with_time_left(bar, "queries searched"),
    )  # fmt: skip
    bar.empty()
    st.session_state[_WALK] = Walk(collection, label, items)


def _progress(engine: Engine, walk: Walk) -> None:
    """Where the user is, and each rater's count of graded pairs of this walk."""
    total = len(walk.items)
    if not total:
        st.success(f"Nothing to grade in {text_md(walk.label)}: every document already has a grade.")
        st.stop()
    seen = min(walk.position, total)
    st.progress(seen / total, text=f"{text_md(walk.label)}: document {min(seen + 1, total)} of {total}")
    if walk.report is not None:
        queue_view.settle_banner(walk.report, load_judgments(engine.settings, walk.collection))
    raters = rater_progress(
        walk.items, judgment_rows(engine.settings, walk.collection), judged_queries(engine.settings, walk.collection)
    )
    if raters:
        st.dataframe(
            pd.DataFrame([{"rater": r, "graded": n, "of": total, "share": n / total} for r, n in raters.items()])
            .style.format({"share": "{:.0%}"}),
            hide_index=True,
        )  # fmt: skip


def _grade(engine: Engine, c: Controls, walk: Walk, grade: int) -> None:
    item = walk.items[walk.position]
    record_grade(Judging(engine, walk.collection, item.query, {}, c.rater), item.doc_id, grade)
    walk.given[walk.position] = grade
    walk.position += 1


def _move(walk: Walk, step: int) -> None:
    walk.position = max(0, min(walk.position + step, len(walk.items)))


def _current(engine: Engine, c: Controls, walk: Walk) -> None:
    """The document to grade now, its grade buttons (keys 0-3) and the way back and on."""
    if walk.position >= len(walk.items):
        st.success(
            f"You have been through all {counted(len(walk.items), 'document', 'documents')} of this walk; "
            f"{counted(len(walk.given), 'grade', 'grades')} given. ← goes back to any of them.",
            icon=":material/task_alt:",
        )
    else:
        item = walk.items[walk.position]
        judged = load_judgments(engine.settings, walk.collection)
        match = judged.for_query(item.query) if judged else None
        current = match[1].get(item.doc_id) if match else None
        with st.container(border=True):
            st.markdown(f"**Query:** {text_md(item.query)}")
            ranks = rank_words(item.rank_before, item.rank_after)
            title = f"**{text_md(item.title)}** · " if item.title else ""
            st.markdown(f"{title}`{item.doc_id.replace('`', '')}` · {ranks}")
            text = " ".join(item.text.split())
            st.markdown(text_md(text[: DISPLAY_CHARS * 2]) + ("…" if len(text) > DISPLAY_CHARS * 2 else ""))
            if current is not None:
                st.caption(f"Its grade now: {current} ({GRADE_SCALE[current]}).")
        columns = st.columns(len(GRADE_SCALE))
        for column, (grade, label) in zip(columns, GRADE_SCALE.items(), strict=True):
            column.button(
                f"{grade} {label}", key=f"walk-grade-{grade}", shortcut=str(grade), width="stretch",
                type="primary" if grade == current else "secondary", on_click=_grade, args=(engine, c, walk, grade),
            )  # fmt: skip
    back, on = st.columns(2)
    back.button(
        "← Previous", key="walk-back", shortcut="Left", disabled=walk.position == 0, on_click=_move,
        args=(walk, -1), width="stretch",
    )  # fmt: skip
    on.button(
        "Skip →", key="walk-skip", shortcut="Right", disabled=walk.position >= len(walk.items), on_click=_move,
        args=(walk, 1), width="stretch",
    )  # fmt: skip


if __name__ == "__main__":  # Streamlit runs a page file as __main__; importing the module draws nothing
    run()

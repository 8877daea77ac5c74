"""The LLM judge on Evaluate's queue: grade the queue's first documents with the configured judge, then see each
grade with its reason, the tokens the run used, and the judge's agreement with each person, each grade with a
control that overrides it in one click (a person's grade outranks the judge's)."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from workbench.app.judging import Judging, grade_control
from workbench.app.state import STATE, error_text
from workbench.app.widgets import text_md
from workbench.engine import Engine
from workbench.errors import WorkbenchError
from workbench.judgments import QueueItem, judgment_rows
from workbench.judgments.llm import SETTINGS_HINT, JudgeRun, judge_queue, judge_rater
from workbench.vocab import DEFAULT_JUDGE_CHECK, DEFAULT_JUDGE_LIMIT, GRADE_SCALE, MACHINE_SOURCES, MAX_JUDGE_PAIRS


def draw(engine: Engine, collection: str, queue: Sequence[QueueItem], rater: str) -> None:
    """The judge's controls for this queue, and its last run's grades (each one overridable as `rater`)."""
    settings = engine.settings
    if not settings.judge_model:
        st.caption(f"An LLM judge can grade this queue for you: set {SETTINGS_HINT} before starting the app.")
        return
    judge = judge_rater(settings)
    if queue:
        left, middle, right = st.columns([1, 1, 2], vertical_alignment="bottom")
        limit = left.number_input(
            "Queue documents", 1, MAX_JUDGE_PAIRS, min(DEFAULT_JUDGE_LIMIT, len(queue)), key="judge-limit"
        )
        check = middle.number_input(
            "People's grades to check it on",
            0,
            MAX_JUDGE_PAIRS,
            DEFAULT_JUDGE_CHECK,
            key="judge-check",
            help="Pairs people already graded that the judge grades too, so its agreement with them is measured.",
        )
        if right.button(f"Grade with {judge}", key="judge-run", icon=":material/smart_toy:"):
            with st.spinner(f"{judge} is grading {int(limit) + int(check)} pairs…"):
                try:
                    run = judge_queue(engine, collection, queue, limit=int(limit), check=int(check))
                except WorkbenchError as exc:
                    st.error(error_text(exc), icon=":material/error:")
                else:
                    STATE.judge_run = (collection, run)
                    st.rerun()  # the queue below loses what the judge graded
    kept = STATE.judge_run
    if kept is not None and kept[0] == collection:
        _draw_run(engine, collection, kept[1], rater)


def _draw_run(engine: Engine, collection: str, run: JudgeRun, rater: str) -> None:
    st.markdown(f"##### {text_md(run.rater)}'s grades")
    st.caption(text_md(run.summary()) + f" · endpoint {text_md(run.endpoint)}")
    for line in run.agreement_lines():
        st.markdown("- " + text_md(line))
    people = {
        (r.query_id, r.doc_id): r.grade
        for r in judgment_rows(engine.settings, collection)
        if r.source not in MACHINE_SOURCES
    }  # later rows replace earlier: each pair's latest grade by a person
    for grade in run.grades:
        with st.container(border=True):
            said = (
                f"**{grade.grade} {GRADE_SCALE[grade.grade]}**: {text_md(grade.reason)}"
                if grade.grade is not None
                else f"no grade: {text_md(grade.error)}"
            )
            checked = " · people graded it too" if grade.graded_by_people else ""
            st.markdown(
                f"{text_md(grade.query)} · `{grade.doc_id.replace('`', '')}` · {said} · "
                f"{grade.input_tokens + grade.output_tokens} tokens{checked}"
            )
            person = people.get((grade.query_id, grade.doc_id))
            graded = {grade.doc_id: person} if person is not None else {}
            grade_control(Judging(engine, collection, grade.query, graded, rater), grade.doc_id, "judge")

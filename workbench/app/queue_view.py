"""Evaluate's judging queue: the unjudged documents of the top n lists the evaluation ran, heaviest on the
verdict first, each with its passage and a grade control. A graded row leaves the queue on the next run."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from workbench.app import judge_view
from workbench.app.judging import Judging, grade_control
from workbench.app.state import for_report
from workbench.app.widgets import counted, text_md
from workbench.engine import Engine
from workbench.evaluation.report import EvaluationReport
from workbench.judgments import (
    Judgments,
    configuration_label,
    document_chunks,
    judging_queue,
    load_judgments,
    settle_now,
)
from workbench.types import Chunk
from workbench.vocab import DISPLAY_CHARS

SHOWN = 10  # rows drawn at a time; the rest wait below


@st.cache_data(max_entries=64, show_spinner=False)
def _chunks(_engine: Engine, collection: str, doc_ids: tuple[str, ...]) -> dict[str, Chunk]:
    """The queue's passages (with their titles), read once per set of rows (every widget on Evaluate reruns the
    page)."""
    return document_chunks(_engine, collection, doc_ids)


def settle_banner(report: EvaluationReport, judgments: Judgments | None) -> None:
    """The count down: about how many grades settle the verdict, or that it is settled (grading can stop); measured
    again only when a grade was given (every widget reruns the page)."""
    given = judgments.given if judgments is not None else 0
    state = for_report("settle", report, given, lambda: settle_now(report, judgments))
    if state is None:
        return
    if state.settled:
        st.success(text_md(state.words()), icon=":material/gavel:")
    else:
        st.info(text_md(state.words()), icon=":material/hourglass_top:")


def draw(engine: Engine, reports: Sequence[EvaluationReport], rater: str) -> None:
    """The queue pooled over these reports (the configurations run on one collection and its judgments, the
    newest last), rated in place as `rater`."""
    report = reports[-1]
    judgments = load_judgments(engine.settings, report.collection)
    queue = judging_queue(reports, judgments)
    st.markdown("#### Judging queue")
    settle_banner(report, judgments)
    judge_view.draw(engine, report.collection, queue, rater)
    if not queue:
        st.success(
            f"Every document in the top {report.top_n}, before and after reranking, is judged.",
            icon=":material/task_alt:",
        )
        return
    st.caption(
        f"{counted(len(queue), 'unjudged document', 'unjudged documents')} in the top {report.top_n} before or after "
        "reranking, those that could move the verdict most first (brought in or dropped by the reranker, near the "
        f"top). Every metric counts them as not relevant until graded. Grading as **{text_md(rater)}**; run the "
        "evaluation again to count the new grades."
    )
    if len(reports) > 1:
        st.caption(
            f"Pooled over the {len(reports)} configurations run here on these judgments: "
            + "; ".join(text_md(configuration_label(r)) for r in reports)
            + ". Run another first stage, k or reranker to add its documents."
        )
    else:
        st.caption("Run another first stage, k or reranker on these judgments to pool its documents here too.")
    chunks = _chunks(engine, report.collection, tuple(item.doc_id for item in queue[:SHOWN]))
    for item in queue[:SHOWN]:
        with st.container(border=True):
            before = f"#{item.rank_before}" if item.rank_before else "—"
            after = f"#{item.rank_after}" if item.rank_after else "—"
            chunk = chunks.get(item.doc_id)
            title = str(chunk.metadata.get("title") or "") if chunk is not None else ""
            named = f"**{text_md(title)}** " if title else ""
            st.markdown(
                f"**{text_md(item.query)}** · {named}`{item.doc_id.replace('`', '')}` · rank {before} → {after} · "
                f"could move the mean nDCG@10 change by up to {item.weight:.3f}",
                help="Its weight: how far the verdict's mean nDCG@10 change (after minus before) would move if this "
                "document were relevant at the top grade (its discount in the reranked top 10 minus its discount in "
                "the first-stage top 10, over the query's ideal DCG and the number of queries). The heaviest come "
                "first: grading them narrows the bounds on the change fastest.",
            )
            text = " ".join(chunk.text.split()) if chunk is not None else ""
            if text:
                st.markdown(text_md(text[:DISPLAY_CHARS]) + ("…" if len(text) > DISPLAY_CHARS else ""))
            grade_control(Judging(engine, report.collection, item.query, {}, rater), item.doc_id, "queue")
    if len(queue) > SHOWN:
        st.caption(f"{len(queue) - SHOWN} more after these.")

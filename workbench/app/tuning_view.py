"""Evaluate's Tune section: the grid's inputs (inside the evaluation form) and a tuning run drawn: the
recommendation, a row per cell, and where recall and reranked quality part ways."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from workbench.app.markdown import text_md
from workbench.evaluation.tuning import TuningRun
from workbench.vocab import DEFAULT_FIRST_STAGES, DEFAULT_TUNE_KS

MORE_STAGES = ("rrf k=20", "minmax 0.3", "minmax 0.7", "l2 0.5")


@dataclass
class TuneGrid:
    """What the form asks the grid to be."""

    first_stages: list[str]
    ks: str
    budget_ms: float | None
    chunkings: list[str]


def grid_inputs() -> TuneGrid:
    """The grid's first stages, k values and latency budget (drawn inside the evaluation form)."""
    with st.expander("Tuning grid: first stages, fusions and k together (press Run tuning grid)"):
        stages = st.multiselect(
            "First stages (a fusion is hybrid fused that way: RRF, or min-max, z-score or L2 with the dense weight)",
            [*DEFAULT_FIRST_STAGES, *MORE_STAGES],
            default=list(DEFAULT_FIRST_STAGES),
            key="tune-stages",
        )
        c1, c2, c3 = st.columns(3)
        extra = c1.text_input("Another fusion (optional)", placeholder="zscore 0.8", key="tune-extra")
        ks = c2.text_input("k values", ", ".join(map(str, DEFAULT_TUNE_KS)), key="tune-ks")
        budget = c3.number_input("p95 budget, ms (0: none)", 0.0, 3_600_000.0, 0.0, key="tune-budget")
        chunkings = st.text_input(
            "Chunkings to compare (optional: two or more SIZE/OVERLAP in characters, e.g. 500/50, 1000/100; a BEIR "
            "folder's corpus is ingested once for each, its passages split)",
            key="tune-chunkings",
        )
    stages = [*stages, *([extra.strip()] if extra.strip() else [])]
    return TuneGrid(stages, ks, float(budget) or None, [c.strip() for c in chunkings.split(",") if c.strip()])


def draw(run: TuningRun, kept: str | None) -> None:
    """The run: its sentence, its table, its findings, where the recommended cell was kept."""
    st.subheader("Tuning: first stage, fusion and k")
    st.caption(
        f"{run.queries} judged queries · reranker `{text_md(run.reranker_model or 'none')}`"
        f"{f' on `{run.reranker_backend}`' if run.reranker_backend else ''} · {len(run.cells)} cells · "
        f"{run.pairs_scored:,} pairs scored for {run.pairs_in_cells:,} reranked in the cells · {run.seconds:.0f} s · "
        f"cost timed with the caches bypassed on {run.timing_queries} queries"
    )
    (st.success if run.recommended else st.warning)(text_md(run.words))
    st.dataframe(run.table(), hide_index=True, use_container_width=True)
    if run.findings:
        st.markdown("**Where recall and reranked quality part ways**")
        st.markdown("\n".join(f"- {text_md(finding)}" for finding in run.findings))
    if kept:
        st.caption(
            f"The recommended cell is kept as experiment `{kept}`: `workbench gate DATASET --candidate-experiment "
            f"{kept}` takes it as the gate's candidate."
        )
    st.download_button(
        "Download the tuning run (Markdown)", run.to_markdown(), file_name="tuning.md", mime="text/markdown",
        key="tune-download",
    )  # fmt: skip

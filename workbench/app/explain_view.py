"""Explore's "why here?": inside a reranked card, the passage's sentences highlighted by their effect on the
score and the query terms that matter; for a card that moved up, the same beside the document it overtook."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from workbench.app.state import STATE, engine_resource, shown_errors
from workbench.app.widgets import text_md
from workbench.services.explain import Explanation, MovementExplanation, explain_movement
from workbench.types import RankedHit, SearchResult

_MEMO_SIZE = 64


def highlighted_md(explanation: Explanation) -> str:
    """The passage's sentences as Markdown, green where leaving the sentence out lowers the score, red where it
    raises it (a tenth of the largest effect or less stays plain); the text itself is escaped."""
    largest = max((abs(s.effect) for s in explanation.sentences), default=0.0)
    parts = []
    for sentence in explanation.sentences:
        text = text_md(sentence.text)
        if largest and abs(sentence.effect) > largest / 10:
            colour = "green" if sentence.effect > 0 else "red"
            text = f":{colour}-background[{text}]"
        parts.append(text)
    return " ".join(parts)


def terms_md(explanation: Explanation) -> str:
    """The query terms by effect, strongest first."""
    ordered = sorted(explanation.terms, key=lambda t: -abs(t.effect))
    return " · ".join(f"**{text_md(t.term)}** `{t.effect:+.2f}`" for t in ordered)


def _draw(explanation: Explanation, heading: str) -> None:
    st.markdown(heading)
    st.markdown(highlighted_md(explanation))
    strongest = explanation.strongest()
    if strongest is not None:
        st.caption(
            f"Green raises the score, red lowers it. Strongest: {strongest.label}, "
            f"{strongest.effect:+.2f} on the {explanation.score_scale} (the score without it: "
            f"{explanation.score - strongest.effect:.2f} instead of {explanation.score:.2f})."
        )
    if explanation.terms:
        st.markdown(f"Query terms: {terms_md(explanation)}")
    notes = " ".join(explanation.notes)
    st.caption(f"{explanation.cost_note}, {explanation.seconds * 1000:.0f} ms. {notes}".strip())


def _explained(result: SearchResult, row: RankedHit) -> MovementExplanation | None:
    memo = STATE.explanations  # (collection, query, reranker, k, chunk id) -> MovementExplanation
    key = (result.collection, result.query, result.reranker_model, result.k, result.retrieval, row.id)
    if key not in memo:
        with st.spinner("Leaving each sentence and query term out…"), shown_errors():
            memo[key] = explain_movement(engine_resource(), result, row.id)
        while len(memo) > _MEMO_SIZE:
            memo.pop(next(iter(memo)))
    return memo.get(key)


def why_here(result: SearchResult) -> Callable[[RankedHit], None]:
    """The `extra` for `widgets.reranked_row`: a "why here?" toggle that explains the card when switched on."""

    def draw(row: RankedHit) -> None:
        if not st.toggle("Why here?", key=f"why-{row.id}", help="Leave each sentence and query term out once"):
            return
        movement = _explained(result, row)
        if movement is None:
            return
        if movement.overtaken is None:
            _draw(movement.moved, f"Why #{movement.moved_to}: score `{movement.moved.score:.2f}`")
            return
        st.markdown(
            f"It came from #{movement.moved_from} to #{movement.moved_to}, past the document that was "
            f"#{movement.overtaken_from} (now #{movement.overtaken_to}): "
            f"`{movement.moved.score:.2f}` against `{movement.overtaken.score:.2f}`."
        )
        mine, theirs = st.columns(2)
        with mine:
            _draw(movement.moved, "**This document**")
        with theirs:
            _draw(movement.overtaken, f"**The one it overtook** (#{movement.overtaken_from} before)")

    return draw

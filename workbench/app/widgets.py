"""Drawing a SearchResult: the two ordered lists, movement and judgment badges, scores, downloads.

Passage text and titles come from documents, so they are shown as text: every Markdown, HTML and
Streamlit directive character is escaped (an image link in a document must not make a viewer's browser
fetch anything, and a link must not be clickable).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

from workbench.app.markdown import text_md
from workbench.app.state import bind
from workbench.evaluation.calibration import Calibration
from workbench.fusion import score_name
from workbench.inputs import safe_upload_name
from workbench.rerankers import scale_words, sigmoid, to_probability
from workbench.spreadsheet import csv_text
from workbench.types import Candidate, RankedHit, SearchResult
from workbench.vocab import COMPACT_CHARS, DISPLAY_CHARS, ORDER_SCALE

GRADE_LABELS = {
    3: ("green", "perfectly relevant"),
    2: ("green", "relevant"),
    1: ("orange", "partly relevant"),
    0: ("gray", "judged not relevant"),
}


SIDEBAR_CONTROLS = ("collection", "reranker", "first stage", "k", "top n", "filters")
# The sidebar's controls each page uses (the others are drawn greyed on it): one table for the sidebar and the notes.
PAGE_CONTROLS: dict[str, tuple[str, ...]] = {
    "explore": SIDEBAR_CONTROLS,
    "compare": ("filters",),
    "latency": SIDEBAR_CONTROLS,
    "evaluate": ("reranker", "first stage"),
    "grade": SIDEBAR_CONTROLS,
    "prefer": ("collection", "reranker", "first stage", "k", "top n"),
    "experiments": (),
    "collections": (),
}


def sidebar_note(page: str, own: str = "") -> None:
    """Say which of the sidebar's controls this page uses (PAGE_CONTROLS), what it sets itself, and what it
    ignores (greyed in the sidebar)."""
    used = PAGE_CONTROLS[page]
    unused = [c for c in SIDEBAR_CONTROLS if c not in used]
    parts = [f"From the sidebar: {', '.join(used)}." if used else "This page uses none of the sidebar's controls."]
    if own:
        parts.append(f"Set on this page: {own}.")
    if used and unused:
        parts.append(f"The sidebar's {', '.join(unused)} do not apply here (greyed).")
    st.caption(" ".join(parts), help="The sidebar's controls are shared by every page; each page says which it uses.")


def counted(n: int, one: str, many: str) -> str:
    """'1 search', '2 searches'."""
    return f"{n:,} {one if n == 1 else many}"


def score_note(result: SearchResult) -> str:
    """What the rerank scores of a result are, in words."""
    return scale_words(result.score_scale)


def fallback_note(result: SearchResult) -> str | None:
    """A search served unreranked under the rerank budget, in words (None when it was reranked as planned)."""
    if result.rerank_fallback is None:
        return None
    reason = result.rerank_fallback
    why = {"budget": "the reranker took longer than the rerank budget (WORKBENCH_RERANK_BUDGET_MS)",
           "circuit open": "the reranker failed again and again, so it is skipped for a while"}.get(reason)  # fmt: skip
    if why is None and reason.startswith("run check: "):
        checked = text_md(reason.removeprefix("run check: "))
        why = f"a run check says the reranker is not running as intended ({checked})"
    if why is None:
        why = text_md(reason.removeprefix("error: "))
    return f"Served without reranking: {why}. Both lists are the first stage's order, as an app would get it now."


def score_md(rerank_score: float | None, scale: str | None = "logit") -> str:
    if rerank_score is None:
        return "no reranker"
    if scale == ORDER_SCALE:  # a listwise reranker's order: its rank, no score
        return f"listwise rank `{-rerank_score:.0f}`"
    if scale == "probability":
        return f"rerank `{rerank_score:.3f}` (0–1)"
    if scale == "raw":  # a ColBERT model's MaxSim sum: no 0-1 reading
        return f"rerank `{rerank_score:.2f}` (MaxSim)"
    return f"rerank `{rerank_score:.2f}` · σ `{sigmoid(rerank_score):.2f}`"


def label_of(metadata: dict, text: str) -> str:
    """A row's human label: its section or title, else the start of its text."""
    label = metadata.get("section") or metadata.get("title")
    if label:
        return str(label)
    flat = " ".join(text.split())
    return flat if len(flat) <= 40 else flat[:39] + "…"


def _where(metadata: dict) -> str:
    """Where a passage sits (its document's title, its page), less what its card's label already says."""
    shown_label = metadata.get("section") or metadata.get("title")
    title = metadata.get("title")
    parts = [str(title)] if title and title != shown_label else []
    if metadata.get("page") not in (None, ""):
        parts.append(f"p. {metadata['page']}")
    return " · ".join(parts)


def movement_badge(row: RankedHit) -> str:
    """The row's movement label (↑3, ↓2, new, =) as a coloured badge."""
    color = {"new": "blue", "up": "green", "down": "red", "same": "gray"}[row.movement]
    return f":{color}-badge[{text_md(row.movement_label)}]"


def grade_badge(grades: dict[str, int] | None, doc_id: str) -> str:
    """The document's grade as a badge; "unjudged" where the query's grades are known and it has none (then
    every metric counts it as not relevant); nothing when no grades are at hand."""
    if grades is None:
        return ""
    grade = grades.get(doc_id)
    if grade is None:
        return " · :gray-badge[:material/help: unjudged]"
    color, label = GRADE_LABELS.get(grade, ("green", f"grade {grade}"))
    return f" · :{color}-badge[{label} ({grade})]"


def _body(text: str, compact: bool = False) -> None:
    flat = " ".join(text.split())
    if compact:  # one line of the passage: ten cards a screen
        st.caption(text_md(flat[:COMPACT_CHARS]) + ("…" if len(flat) > COMPACT_CHARS else ""))
        return
    if len(flat) <= DISPLAY_CHARS:
        st.markdown(text_md(flat))
        return
    st.markdown(text_md(flat[:DISPLAY_CHARS]) + "…")
    with st.expander("Full text"):
        st.markdown(text_md(flat))


def compact_toggle() -> bool:
    """The "Compact rows" switch of a page with two lists: one line of text a card, so ten fit a screen."""
    return bool(st.toggle("Compact rows", help="Each card as its header, one line of text and its grade buttons.",
                          **bind("compact_rows")))  # fmt: skip


def _document(metadata: dict, fallback: str) -> str:
    return str(metadata.get("document_id", fallback))


def vector_row(
    c: Candidate,
    top_n: int,
    grades: dict[str, int] | None = None,
    retrieval: str = "dense",
    extra: Callable[[str], None] | None = None,
    fusion: str | None = None,
    compact: bool = False,
) -> None:
    """One first-stage card; `extra` draws more inside it, given the document id (Explore's grade control);
    `compact` keeps it to its header, one line of text and the extra."""
    with st.container(border=True):
        fate = "" if c.rerank_rank <= top_n else f" · :gray-badge[dropped → \\#{c.rerank_rank}]"
        grade = grade_badge(grades, _document(c.metadata, c.id))
        name = score_name(retrieval, fusion)
        sources = ""
        if c.sources:
            sources = " · " + " · ".join(f"{k} \\#{int(v['rank'])}" for k, v in sorted(c.sources.items()))
        st.markdown(
            f"**\\#{c.vector_rank}** · **{text_md(label_of(c.metadata, c.text))}** · {name} "
            f"`{c.vector_score:.3f}`{sources}{fate}{grade}"
        )
        if not compact:
            st.caption(text_md(_where(c.metadata)))
        _body(c.text, compact)
        if extra is not None:
            extra(_document(c.metadata, c.id))


def calibrated_md(score: float | None, calibration: Calibration | None) -> str:
    """' · p(relevant) ≈ 0.83' from a kept calibration, or nothing."""
    if score is None or calibration is None:
        return ""
    return f" · p(relevant) ≈ `{calibration.probability(score):.2f}`"


def calibration_caption(calibration: Calibration | None) -> str:
    """What the cards' p(relevant) was fitted on, or that the σ reading is uncalibrated."""
    if calibration is None:
        return "No calibration is kept for this reranker on this collection (Evaluate fits one): σ is uncalibrated."
    return f"p(relevant): {calibration.method} calibration fitted on {text_md(calibration.fitted_on)}."


def reranked_row(
    r: RankedHit,
    grades: dict[str, int] | None = None,
    scale: str | None = "logit",
    note: str | None = None,
    calibration: Calibration | None = None,
    extra: Callable[[RankedHit], None] | None = None,
    compact: bool = False,
) -> None:
    """One reranked card; `note` (Compare's "only in A") is a badge in the card's own header line; `calibration`
    adds p(relevant) beside the score; `extra` draws more inside the card (Explore's "why here?"); `compact` keeps
    it to its header, one line of text and the extra."""
    with st.container(border=True):
        grade = grade_badge(grades, _document(r.metadata, r.id))
        badge = f" · :violet-badge[{text_md(note)}]" if note else ""
        st.markdown(
            f"**\\#{r.rank_after}** {movement_badge(r)} · **{text_md(label_of(r.metadata, r.text))}** · "
            f"{score_md(r.rerank_score, scale)}{calibrated_md(r.rerank_score, calibration)} · first stage "
            f"`{r.vector_score:.3f}`{grade}{badge}"
        )
        if not compact:
            st.caption(text_md(_where(r.metadata)))
        _body(r.text, compact)
        if extra is not None:
            extra(r)


def _zero_one(score: float | None, scale: str | None) -> float | None:
    """A score on the 0-1 scale for the exported tables; none for an order (a listwise reranker's ranks)."""
    return None if score is None or scale in (ORDER_SCALE, "raw") else to_probability(score, scale or "logit")


def candidates_frame(result: SearchResult) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "vector_rank": c.vector_rank,
                "rerank_rank": c.rerank_rank,
                "id": c.id,
                "document_id": c.metadata.get("document_id"),
                "vector_score": c.vector_score,
                "rerank_score": c.rerank_score,
                "rerank_scale": result.score_scale,
                "rerank_0_1": _zero_one(c.rerank_score, result.score_scale),
                "title": c.metadata.get("title"),
                "section": c.metadata.get("section"),
                "page": c.metadata.get("page"),
                "text": c.text,
            }
            for c in result.candidates
        ]
    )


def reranked_frame(result: SearchResult) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "rank_after": r.rank_after,
                "rank_before": r.rank_before,
                "movement": r.movement_label,
                "id": r.id,
                "document_id": r.metadata.get("document_id"),
                "rerank_score": r.rerank_score,
                "rerank_scale": result.score_scale,
                "rerank_0_1": _zero_one(r.rerank_score, result.score_scale),
                "vector_score": r.vector_score,
                "title": r.metadata.get("title"),
                "section": r.metadata.get("section"),
                "page": r.metadata.get("page"),
                "text": r.text,
            }
            for r in result.reranked
        ]
    )


def downloads(result: SearchResult, key: str) -> None:
    """CSV of both lists and JSON of the whole result."""
    files = [
        ("Vector list (CSV)", csv_text(candidates_frame(result)), "vector_search.csv", "text/csv", "csv-v"),
        ("Reranked list (CSV)", csv_text(reranked_frame(result)), "reranked.csv", "text/csv", "csv-r"),
        ("Result (JSON)", result.to_json(indent=2), "search_result.json", "application/json", "json"),
    ]
    for column, (label, data, name, mime, suffix) in zip(st.columns(3), files, strict=True):
        column.download_button(label, data, name, mime, key=f"{key}-{suffix}", width="stretch")


def file_picker(where: Any, label: str, types: list[str], key: str, *, multiple: bool = False) -> Any:
    """`where.file_uploader` for files ending in `types`; a picked file whose name ends otherwise (a file named
    '..', say) is left out with a message naming it. Streamlit's own check would raise while it reads the widget
    (before the page runs, so no page can catch it): a MIME type in the list turns that check off, and the
    extension check is done here instead."""
    picked = where.file_uploader(label, type=[*types, "text/plain"], accept_multiple_files=multiple, key=key)
    files = picked if multiple else [picked] if picked is not None else []
    allowed = tuple(f".{t.lower()}" for t in types)
    refused = [f for f in files if not f.name.lower().endswith(allowed)]
    if refused:
        names = ", ".join(f"'{text_md(safe_upload_name(f.name))}'" for f in refused)
        where.error(
            f"{text_md(label)}: {names} left out: a file name must end in {', '.join(allowed)}.",
            icon=":material/block:",
        )
    kept = [f for f in files if f not in refused]
    return kept if multiple else (kept[0] if kept else None)


def problems_table(problems: list) -> pd.DataFrame:
    """Files that were not ingested, by their own names."""
    return pd.DataFrame([{"file": p.name, "why it was skipped": p.reason} for p in problems])

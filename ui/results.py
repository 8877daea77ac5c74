"""Rendering a SearchResult: the two ordered lists, movement badges and downloads."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ui.charts import label_of
from workbench.types import Candidate, RankedHit, SearchResult

DISPLAY_CHARS = 800


def movement_badge(row: RankedHit) -> str:
    """The row's movement label (↑3, ↓2, new, =) as a coloured badge."""
    color = {"new": "blue", "up": "green", "down": "red", "same": "gray"}[row.movement]
    return f":{color}-badge[{row.movement_label}]"


def _where(metadata: dict) -> str:
    parts = [str(metadata[k]) for k in ("title",) if metadata.get(k)]
    if metadata.get("page") not in (None, ""):
        parts.append(f"p. {metadata['page']}")
    return " · ".join(parts)


def _body(text: str, key: str) -> None:
    flat = " ".join(text.split())
    if len(flat) <= DISPLAY_CHARS:
        st.write(flat)
        return
    st.write(flat[:DISPLAY_CHARS] + "…")
    with st.expander("Full text"):
        st.write(flat)


def vector_row(c: Candidate, top_n: int) -> None:
    with st.container(border=True):
        fate = "" if c.rerank_rank <= top_n else f" · :gray-badge[dropped → #{c.rerank_rank}]"
        st.markdown(f"**#{c.vector_rank}** · **{label_of(c.metadata, c.text)}** · vector `{c.vector_score:.3f}`{fate}")
        st.caption(_where(c.metadata))
        _body(c.text, f"v-{c.id}")


def reranked_row(r: RankedHit) -> None:
    with st.container(border=True):
        score = f"rerank `{r.rerank_score:.3f}`" if r.rerank_score is not None else "no reranker"
        st.markdown(
            f"**#{r.rank_after}** {movement_badge(r)} · **{label_of(r.metadata, r.text)}** · {score} · "
            f"vector `{r.vector_score:.3f}`"
        )
        st.caption(_where(r.metadata))
        _body(r.text, f"r-{r.id}")


def candidates_frame(result: SearchResult) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "vector_rank": c.vector_rank,
                "rerank_rank": c.rerank_rank,
                "id": c.id,
                "vector_score": c.vector_score,
                "rerank_score": c.rerank_score,
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
                "rerank_score": r.rerank_score,
                "vector_score": r.vector_score,
                "title": r.metadata.get("title"),
                "section": r.metadata.get("section"),
                "text": r.text,
            }
            for r in result.reranked
        ]
    )


def downloads(result: SearchResult, key: str) -> None:
    """CSV of both lists and JSON of the whole result."""
    files = [
        ("Vector list (CSV)", candidates_frame(result).to_csv(index=False), "vector_search.csv", "text/csv", "csv-v"),
        ("Reranked list (CSV)", reranked_frame(result).to_csv(index=False), "reranked.csv", "text/csv", "csv-r"),
        ("Result (JSON)", result.to_json(indent=2), "search_result.json", "application/json", "json"),
    ]
    for column, (label, data, name, mime, suffix) in zip(st.columns(3), files, strict=True):
        column.download_button(label, data, name, mime, key=f"{key}-{suffix}", width="stretch")

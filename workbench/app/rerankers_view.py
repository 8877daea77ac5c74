"""The Rerankers view on Evaluate: many rerankers on the same candidates and judgments, as a table (downloadable),
an editable price table, and quality against latency with the Pareto front."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from workbench.app.charts import quality_against_latency
from workbench.app.markdown import text_md
from workbench.app.state import STATE
from workbench.evaluation.rerankers import RerankerComparison
from workbench.inputs import safe_file_stem
from workbench.rerankers.served.pricing import DEFAULT_PRICES, Price
from workbench.spreadsheet import csv_text


def _prices() -> dict[str, Price]:
    """The price table as the user edited it (the defaults, each marked with when it was read)."""
    frame = pd.DataFrame([p.model_dump() for p in (STATE.prices or DEFAULT_PRICES).values()])
    edited = st.data_editor(
        frame,
        hide_index=True,
        disabled=["kind", "per", "unit"],
        key="price-table",
        column_config={"usd": st.column_config.NumberColumn("US$", min_value=0.0, format="%.4f")},
    )
    prices = {
        row["kind"]: Price(
            kind=row["kind"],
            usd=float(row["usd"]),
            per=int(row["per"]),
            unit=row["unit"],
            read=row["read"] if float(row["usd"]) == DEFAULT_PRICES[row["kind"]].usd else "set by you",
        )
        for row in edited.to_dict("records")
    }
    STATE.prices = prices
    return prices


def draw(comparison: RerankerComparison) -> None:
    """The comparison with the current prices."""
    st.markdown("#### Rerankers side by side")
    st.caption(
        f"{comparison.queries} judged queries, the same {comparison.retrieval} candidates (k = {comparison.k}) for "
        f"every reranker; intervals are paired bootstrap 95 %, p-values paired randomization. Latency counts only "
        f"queries whose scores were all computed in this run. {comparison.seconds:.0f} s."
    )
    with st.expander("Prices of the hosted rerankers (edit to recompute the cost column)"):
        prices = _prices()
    priced = comparison.with_prices(prices)
    table = pd.DataFrame(priced.table())
    st.dataframe(table, hide_index=True, width="stretch")
    st.download_button(
        "Rerankers (CSV)",
        csv_text(table),
        f"{safe_file_stem(comparison.collection)}.rerankers.csv",
        "text/csv",
    )
    budget = st.number_input(
        "Latency budget (ms per query, p95; 0 for none)", min_value=0.0, value=0.0, step=50.0, key="rerankers-budget"
    )
    budget_ms = budget or None
    st.markdown(text_md(priced.cheapest(budget_ms).words))
    if any(r.latency_ms_p95 is not None for r in priced.rows):
        st.plotly_chart(quality_against_latency(priced, budget_ms), width="stretch", key="rerankers-pareto")
    else:
        st.caption("Every score came from the cache: no latency was measured in this run.")

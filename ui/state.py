"""The engine as a Streamlit resource, the shared sidebar, and error display."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import WorkbenchError
from workbench.inputs import MAX_K, parse_filters
from workbench.types import CollectionInfo, SearchResult


@st.cache_resource(show_spinner=False)
def engine_resource() -> Engine:
    """One engine per server process: models, store clients and caches are shared by every session."""
    return Engine(Settings())


@contextlib.contextmanager
def shown_errors() -> Iterator[None]:
    """Engine errors become st.error messages the user can act on; nothing escapes as a traceback."""
    try:
        yield
    except WorkbenchError as exc:
        st.error(str(exc), icon=":material/error:")
    except ValueError as exc:  # pydantic validation of settings and inputs
        st.error(f"Invalid input: {exc}", icon=":material/error:")
    except Exception as exc:  # the app must keep working after anything the store or a model throws
        st.error(f"Unexpected error ({type(exc).__name__}): {exc}", icon=":material/error:")


@dataclass
class Controls:
    """What the sidebar chose; every page reads it."""

    collection: str | None
    info: CollectionInfo | None
    k: int
    top_n: int
    filters: dict[str, Any] = field(default_factory=dict)
    rerank: bool = True
    filter_error: str | None = None

    @property
    def reranker(self) -> Any:
        from workbench.engine import DEFAULT

        return DEFAULT if self.rerank else None


def collections(engine: Engine) -> list[CollectionInfo]:
    with shown_errors():
        return engine.collections()
    return []


def _persisted(name: str, default: Any) -> Any:
    """Sidebar values live under plain session keys (widgets use `w_<name>`) so they survive page switches."""
    return st.session_state.setdefault(name, default)


def sidebar(engine: Engine) -> Controls:
    """The controls shared by every page: collection, k, top_n, filters and the reranker switch.

    Each page calls this first; the values persist across pages and reruns.
    """
    settings = engine.settings
    infos = collections(engine)
    names = [i.name for i in infos]
    with st.sidebar:
        st.markdown("### Collection")
        collection = info = None
        if not names:
            st.info("No collections yet: create one on the Collections page.")
        else:
            wanted = _persisted("collection", settings.collection)
            index = (
                names.index(wanted)
                if wanted in names
                else (names.index(settings.collection) if settings.collection in names else 0)
            )
            collection = st.selectbox(
                "Collection", names, index=index, key="w_collection", label_visibility="collapsed"
            )
            info = next(i for i in infos if i.name == collection)
            st.caption(
                f"**{info.store}** · {info.count:,} chunks · {info.dimension or '?'}-d  \n"
                f"embedder `{info.embedding_model}`"
            )
        rerank = st.toggle(
            "Rerank with the cross-encoder",
            value=_persisted("rerank", settings.reranker_enabled),
            key="w_rerank",
            disabled=not settings.reranker_enabled,
        )
        st.caption(f"reranker `{settings.reranker_model if settings.reranker_enabled else 'none'}`")
        st.markdown("### Depth")
        k = st.slider(
            "k — candidates from vector search", 1, MAX_K, value=_persisted("k", settings.k_retrieve), key="w_k"
        )
        top_n = min(_persisted("top_n", settings.k_return), k)
        if k > 1:
            top_n = st.slider("top n — kept after reranking", 1, k, value=top_n, key="w_top_n")
        st.markdown("### Filters")
        raw = st.text_area(
            "Metadata equalities, one key=value per line",
            value=_persisted("filters_text", ""),
            key="w_filters_text",
            placeholder="title=Leave and Time Off Policy\npage=2",
            height=80,
        )
        filter_error = None
        try:
            filters = parse_filters(raw)
        except WorkbenchError as exc:
            filters, filter_error = {}, str(exc)
            st.error(filter_error)
    st.session_state.update(collection=collection, rerank=rerank, k=k, top_n=top_n, filters_text=raw)
    return Controls(collection, info, k, top_n, filters, rerank, filter_error)


def page_setup() -> tuple[Engine, Controls]:
    """The engine and the sidebar's controls: the first line of every page."""
    engine = engine_resource()
    return engine, sidebar(engine)


def remember(result: SearchResult) -> None:
    """Keep each new search's timings for the Latency page; re-slicing the same search (top n) is not a new one.

    A search another session already ran comes back from the engine's cache: it is recorded with its original
    timings and marked `cached`.
    """
    signature = (result.query, result.collection, result.k, str(result.filters), result.reranker_model)
    if st.session_state.get("last_signature") == signature:
        return
    st.session_state["last_signature"] = signature
    history = st.session_state.setdefault("history", [])
    history.append(
        {
            "query": result.query,
            "collection": result.collection,
            "k": result.k,
            "reranker": result.reranker_model or "none",
            "cached": result.cache.result_cached,
            **result.timings.model_dump(),
        }
    )

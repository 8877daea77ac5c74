"""Collections: list, create from uploads or an allowed folder, attach judgments, browse, delete."""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from workbench.app.state import STATE, bind, engine_resource, set_value, shown_errors
from workbench.app.uploads import save_upload, save_uploads, server_path
from workbench.app.widgets import counted, file_picker, problems_table, sidebar_note, text_md
from workbench.clicks.grades import import_clicks
from workbench.engine import Engine
from workbench.errors import IngestError, InputError
from workbench.judgments import import_judgments, load_judgments
from workbench.loaders import SUPPORTED_SUFFIXES
from workbench.spreadsheet import csv_text
from workbench.types import CollectionInfo
from workbench.vocab import CLICK_MODELS, DEFAULT_MIN_IMPRESSIONS


def run() -> None:
    """The Collections page, drawn under the sidebar that `main.run` draws: an outline of its sections."""
    engine = engine_resource()
    st.title("Collections")
    sidebar_note("collections")
    _last_ingest()
    infos = _collections_table(engine)
    names = [i.name for i in infos]
    _create(engine)
    if not names:
        st.stop()
    _attach_judgments(engine, names)
    _import_clicks(engine, names)
    _browse(engine, infos, names)
    _delete(engine, names)


def _last_ingest() -> None:
    """What the last ingest of this session said: its summary, skipped files and warnings."""
    if STATE.flash:
        st.success(STATE.flash)
        STATE.flash = None
    if STATE.ingest_report is not None and STATE.ingest_report.problems:
        report = STATE.ingest_report
        st.warning(
            f"{counted(len(report.problems), 'file', 'files')} of that ingest skipped; the others were ingested:"
        )
        st.dataframe(problems_table(report.problems), hide_index=True, width="stretch")
    if STATE.ingest_report is not None:
        for warning in STATE.ingest_report.warnings:
            st.warning(text_md(warning), icon=":material/content_copy:")


def _collections_table(engine: Engine) -> list[CollectionInfo]:
    """Every collection with its size, embedder and judgments, downloadable."""
    infos = []
    with shown_errors():
        infos = engine.collections()
    names = [i.name for i in infos]
    rows = [
        {**i.model_dump(exclude={"ingesting"}), "ingest": i.ingesting.words() if i.ingesting else ""} for i in infos
    ]
    table = pd.DataFrame(rows).astype(object).fillna("")  # what is not known shows blank, never as "None"
    if table.empty:
        st.info("No collections yet.")
    else:
        table["judgments"] = [
            (lambda j: counted(j.query_count, "query", "queries") if j else "")(load_judgments(engine.settings, n))
            for n in names
        ]
        st.dataframe(table, hide_index=True, width="stretch")
        st.download_button("Collections (CSV)", csv_text(table), "collections.csv", "text/csv")
    return infos


@dataclass
class _NewCollection:
    """What the create form asked for."""

    source: str
    name: str
    uploads: Any
    folder: str | None
    chunk_size: int
    chunk_overlap: int
    text_columns: str
    replace: bool


def _create(engine: Engine) -> None:
    """Create or update a collection from uploads or an allowed folder, with chunking settings and progress."""
    asked = _create_form(engine)
    if asked is not None:
        _ingest(engine, asked)


def _create_form(engine: Engine) -> _NewCollection | None:
    """The create form; what it asked for once submitted, else None."""
    st.divider()
    st.subheader("Create or update a collection")
    source = st.radio("From", ["Uploaded files", "A folder on this machine"], horizontal=True, key="new-source")
    with st.form("create"):
        name = st.text_input("Collection name", key="new-name", placeholder="my-docs")
        uploads = folder = None
        if source == "Uploaded files":
            uploads = file_picker(
                st,
                "Files (txt, md, pdf, csv, jsonl)",
                [s.lstrip(".") for s in SUPPORTED_SUFFIXES],
                "new-files",
                multiple=True,
            )
        else:
            roots = ", ".join(str(r) for r in engine.settings.data_root_paths())
            folder = st.text_input(
                "Folder or BEIR folder (with corpus.jsonl)", key="new-folder", help=f"Allowed folders: {roots}"
            )
        c1, c2, c3 = st.columns(3)
        chunk_size = c1.number_input(
            "Chunk size (characters)", 50, 20000, value=engine.settings.chunk_size, step=50, key="new-chunk-size"
        )
        chunk_overlap = c2.number_input(
            "Chunk overlap (characters)", 0, 5000, value=engine.settings.chunk_overlap, step=10, key="new-chunk-overlap"
        )
        text_columns = c3.text_input(
            "CSV text columns (optional)",
            key="new-text-columns",
            help="Comma-separated. Empty: a column named text, content or body; else every column as 'name: value'.",
        )
        replace = False
        if source != "Uploaded files":
            replace = st.checkbox(
                "Replace documents of the same name from other files",
                key="new-replace",
                help="Off: a file named like a document that came from a different file is kept beside it, under "
                "'<its folder>/<name>'. Uploads are matched by name: uploading a name again replaces it.",
            )
        submitted = st.form_submit_button("Ingest", type="primary")
    if not submitted:
        return None
    return _NewCollection(source, name, uploads, folder, int(chunk_size), int(chunk_overlap), text_columns, replace)


def _ingest(engine: Engine, asked: _NewCollection) -> None:
    """Ingest what the form asked for, with a progress bar; the page reruns to list the collection."""
    with shown_errors():
        if not asked.name.strip():
            raise InputError("Give the collection a name.")
        bar = st.progress(0.0, text="reading files")
        estimate = st.empty()  # how many chunks and how long, once they are counted

        def progress(done: int, total: int) -> None:
            bar.progress(done / max(total, 1), text=f"{done}/{total} chunks written")

        columns = [c.strip() for c in asked.text_columns.split(",") if c.strip()] or None
        with tempfile.TemporaryDirectory() as tmp:
            refused = []
            if asked.source == "Uploaded files":
                if not asked.uploads:
                    raise InputError("Choose at least one file to upload.")
                saved, refused = save_uploads(asked.uploads, Path(tmp), SUPPORTED_SUFFIXES)
                if not saved:
                    raise IngestError(
                        "No file could be ingested: " + "; ".join(f"{p.name}: {p.reason}" for p in refused)
                    )
                path, shown = Path(tmp), "your upload"
            else:
                path = server_path(asked.folder or "", engine.settings, "folder")
                shown = str(path)
            report = engine.ingest(
                path,
                asked.name.strip(),
                chunk_size=asked.chunk_size,
                chunk_overlap=asked.chunk_overlap,
                text_columns=columns,
                progress=progress,
                shown_as=shown,
                replace=asked.replace,
                uploaded=asked.source == "Uploaded files",
                announce=estimate.caption,
            )
        report.problems = [*refused, *report.problems]
        STATE.ingest_report = report
        STATE.flash = report.summary()
        set_value("browse_collection", report.collection)
        st.rerun()  # the list above shows the new collection


def _attach_judgments(engine: Engine, names: list[str]) -> None:
    """Import qrels and their queries into the judgments store for a collection."""
    st.divider()
    st.subheader("Attach judgments")
    st.caption(
        "Qrels and the queries they judge, attached to a collection: Explore then marks judged documents and scores "
        "judged queries, and Evaluate offers them."
    )
    with st.form("judgments"):
        target = st.selectbox("Collection", names, key="judge-collection")
        j1, j2 = st.columns(2)
        qrels_file = file_picker(j1, "Qrels (BEIR TSV or TREC)", ["tsv", "txt", "qrels"], "judge-qrels")
        queries_file = file_picker(j2, "Queries (BEIR jsonl or id<TAB>text)", ["jsonl", "tsv", "txt"], "judge-q")
        rater = st.text_input(
            "Whose grades these are (the rater)", key="judge-rater", placeholder="imported <qrels file name>",
            help="The grades are kept under this rater's name, beside everyone else's; agreement is per rater.",
        )  # fmt: skip
        attach = st.form_submit_button("Attach")
    if attach:
        with shown_errors():
            if qrels_file is None or queries_file is None:
                raise InputError("Upload both a qrels file and a queries file.")
            with tempfile.TemporaryDirectory() as tmp:
                judged = import_judgments(
                    engine, target, save_upload(qrels_file, Path(tmp)), save_upload(queries_file, Path(tmp)),
                    rater=rater.strip() or None,
                )  # fmt: skip
            st.success(f"Attached judgments for {counted(judged.query_count, 'query', 'queries')} to '{target}'.")


def _import_clicks(engine: Engine, names: list[str]) -> None:
    """Judgments from a click log: a click model's grades, with their agreement with people's shown first."""
    st.divider()
    st.subheader("Judgments from clicks")
    st.caption(
        "A log of what users were shown and clicked (UBI 1.0 queries and events, or CSV / JSON lines with query, "
        "shown, clicked, session, time): a click model turns each pair shown often enough into a grade, kept as the "
        "rater clicks:<model>. A person's grade of a pair outranks it; its agreement with people is shown here first."
    )
    with st.form("clicks"):
        target = st.selectbox("Collection", names, key="clicks-collection")
        c1, c2 = st.columns(2)
        log_file = file_picker(c1, "Click log (or UBI queries)", ["csv", "jsonl", "ndjson", "json"], "clicks-log")
        events_file = file_picker(
            c2, "UBI events (when in a file of their own)", ["jsonl", "ndjson", "json"], "clicks-ev"
        )
        m1, m2, m3 = st.columns(3)
        model = m1.radio(
            "Click model", CLICK_MODELS, key="clicks-model", horizontal=True,
            format_func=lambda name: {"coec": "COEC", "pbm": "position-based (EM)"}[name],
        )  # fmt: skip
        least = m2.number_input(
            "Least impressions of a pair",
            min_value=1,
            max_value=10_000,
            value=DEFAULT_MIN_IMPRESSIONS,
            key="clicks-min",
        )
        keep = m3.checkbox("Keep the grades", value=True, key="clicks-keep", help="Off: read, fit and compare only.")
        imported = st.form_submit_button("Import clicks")
    if imported:
        with shown_errors():
            if log_file is None:
                raise InputError("Upload a click log (or UBI queries).")
            with tempfile.TemporaryDirectory() as tmp:
                events = save_upload(events_file, Path(tmp)) if events_file is not None else None
                result = import_clicks(
                    engine, target, save_upload(log_file, Path(tmp)), events=events, model=model,
                    min_impressions=int(least), save=keep,
                )  # fmt: skip
            st.success(text_md(result.summary()).replace("\n", "  \n"))


def _browse(engine: Engine, infos: list[CollectionInfo], names: list[str]) -> None:
    """A collection's chunks, a page at a time, downloadable."""
    st.divider()
    st.subheader("Browse")
    if STATE.browse_collection not in names:
        set_value("browse_collection", names[0])
    c1, c2, c3 = st.columns([2, 1, 1])
    chosen = c1.selectbox("Collection", names, **bind("browse_collection"))
    page_size = c2.selectbox("Page size", [10, 20, 50], index=1, key="browse-size")
    total = next((i.count for i in infos if i.name == chosen), 0)
    pages = max(1, math.ceil(total / page_size))
    page = c3.number_input(f"Page (of {pages})", 1, pages, value=1, key=f"browse-page-{chosen}-{page_size}")
    with shown_errors():
        chunks = engine.browse(chosen, (int(page) - 1) * page_size, page_size)
        first = (int(page) - 1) * page_size + 1
        st.caption(f"{total:,} chunks in '{chosen}'; showing {first:,}–{first + len(chunks) - 1:,}.")
        rows = pd.DataFrame([{"id": c.id, "text": " ".join(c.text.split())[:300], **c.metadata} for c in chunks])
        if rows.empty:
            st.caption("No chunks on this page.")
        else:
            st.dataframe(rows, hide_index=True, width="stretch")
            st.download_button("This page (CSV)", csv_text(rows), "chunks.csv", "text/csv")


def _delete(engine: Engine, names: list[str]) -> None:
    """Delete a collection after its name is typed again."""
    st.divider()
    st.subheader("Delete")
    doomed = st.selectbox(
        "Collection to delete", names, index=None, placeholder="Choose a collection", key="delete-collection"
    )
    if doomed:
        confirm = st.text_input(f"Type '{doomed}' to confirm", key=f"delete-confirm-{doomed}")
        if st.button("Delete collection", type="secondary", disabled=confirm.strip() != doomed, key="delete-button"):
            with shown_errors():
                engine.delete_collection(doomed)
                STATE.flash = f"Deleted {doomed}."
                if STATE.collection == doomed:
                    # The sidebar moves to another collection; the old query must not run there unasked.
                    STATE.collection = None
                    set_value("query", "")
                    STATE.flash += (
                        " It was the collection in the sidebar, which now shows another one; the query was cleared "
                        "so that nothing runs there unasked."
                    )
                st.rerun()


if __name__ == "__main__":  # Streamlit runs a page file as __main__; importing the module draws nothing
    run()

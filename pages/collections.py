"""Collections: list, create from uploads or a folder, browse, delete."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from ui.state import collections, page_setup, shown_errors
from workbench.loaders import SUPPORTED_SUFFIXES

engine, _ = page_setup()

st.title("Collections")
if flash := st.session_state.pop("collections_flash", None):
    st.success(flash)

infos = collections(engine)
table = pd.DataFrame([i.model_dump() for i in infos])
if table.empty:
    st.info("No collections yet.")
else:
    st.dataframe(table, hide_index=True, width="stretch")
    st.download_button("Collections (CSV)", table.to_csv(index=False), "collections.csv", "text/csv")

st.divider()
st.subheader("Create or update a collection")
with st.form("create"):
    name = st.text_input("Collection name", key="new-name", placeholder="my-docs")
    source = st.radio("From", ["Uploaded files", "A folder on this machine"], horizontal=True, key="new-source")
    uploads = st.file_uploader(
        "Files", type=[s.lstrip(".") for s in SUPPORTED_SUFFIXES], accept_multiple_files=True, key="new-files"
    )
    folder = st.text_input("Folder path (files, or a BEIR folder with corpus.jsonl)", key="new-folder")
    c1, c2 = st.columns(2)
    chunk_size = c1.number_input(
        "Chunk size (characters)", 50, 20000, value=engine.settings.chunk_size, step=50, key="new-chunk-size"
    )
    chunk_overlap = c2.number_input(
        "Chunk overlap (characters)", 0, 5000, value=engine.settings.chunk_overlap, step=10, key="new-chunk-overlap"
    )
    submitted = st.form_submit_button("Ingest", type="primary")

if submitted:
    with shown_errors():
        if not name.strip():
            raise ValueError("give the collection a name")
        bar = st.progress(0.0, text="reading files")

        def progress(done: int, total: int) -> None:
            bar.progress(done / max(total, 1), text=f"{done}/{total} chunks embedded")

        with tempfile.TemporaryDirectory() as tmp:
            if source == "Uploaded files":
                if not uploads:
                    raise ValueError("choose at least one file to upload")
                for upload in uploads:
                    (Path(tmp) / Path(upload.name).name).write_bytes(upload.getvalue())
                path = Path(tmp)
            else:
                if not folder.strip():
                    raise ValueError("type the path of a folder")
                path = Path(folder.strip()).expanduser()
            report = engine.ingest(
                path, name.strip(), chunk_size=int(chunk_size), chunk_overlap=int(chunk_overlap), progress=progress
            )
        st.success(
            f"{report.collection}: {report.documents} documents → {report.chunks} chunks; {report.added} "
            f"added, {report.updated} updated, {report.unchanged} unchanged in {report.seconds:.1f} s"
        )
        st.session_state.pop("browse-page", None)

st.divider()
st.subheader("Browse")
names = [i.name for i in collections(engine)]
if names:
    c1, c2, c3 = st.columns([2, 1, 1])
    chosen = c1.selectbox("Collection", names, key="browse-collection")
    page_size = c2.selectbox("Page size", [10, 20, 50], index=1, key="browse-size")
    page = c3.number_input("Page", 1, 100000, value=1, key="browse-page")
    with shown_errors():
        chunks = engine.browse(chosen, (int(page) - 1) * page_size, page_size)
        rows = pd.DataFrame([{"id": c.id, "text": " ".join(c.text.split())[:300], **c.metadata} for c in chunks])
        if rows.empty:
            st.caption("No chunks on this page.")
        else:
            st.dataframe(rows, hide_index=True, width="stretch")
            st.download_button("This page (CSV)", rows.to_csv(index=False), "chunks.csv", "text/csv")

    st.divider()
    st.subheader("Delete")
    target = st.selectbox("Collection to delete", names, key="delete-collection")
    confirm = st.text_input(f"Type '{target}' to confirm", key="delete-confirm")
    if st.button("Delete collection", type="secondary", disabled=confirm.strip() != target, key="delete-button"):
        with shown_errors():
            engine.delete_collection(target)
            st.session_state["collections_flash"] = f"Deleted {target}."
            if st.session_state.get("collection") == target:
                st.session_state.pop("collection", None)
            st.rerun()

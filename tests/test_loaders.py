from __future__ import annotations

from pathlib import Path

import pytest

from workbench.errors import IngestError
from workbench.loaders import load_path


def test_a_folder_of_mixed_files(corpus_dir: Path) -> None:
    documents = load_path(corpus_dir)
    by_id = {d.id: d for d in documents}
    assert set(by_id) == {
        "facts.csv#1",
        "facts.csv#2",
        "guide.md#0",
        "guide.md#1",
        "guide.md#2",
        "j1",
        "j2",
        "notes.txt",
    }
    rivers = by_id["guide.md#2"]
    assert rivers.metadata["title"] == "Field Guide"
    assert rivers.metadata["section"] == "Rivers" and rivers.metadata["page"] == 2
    assert rivers.metadata["url"] == "https://example.test/guide#rivers"
    assert by_id["facts.csv#2"].metadata["topic"] == "insects"
    assert by_id["j1"].metadata["title"] == "Reefs"


def test_pdf_pages_become_documents(tmp_path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    for text in ("Page one talks about herons.", "Page two talks about glaciers."):
        pdf.add_page()
        pdf.set_font("Helvetica", size=12)
        pdf.cell(0, 10, text)
    pdf.set_title("Nature Notes")
    path = tmp_path / "notes.pdf"
    pdf.output(str(path))
    documents = load_path(path)
    assert [d.metadata["page"] for d in documents] == [1, 2]
    assert "glaciers" in documents[1].text and documents[0].metadata["title"] == "Nature Notes"


def test_beir_folders_keep_passages_whole(cranfield_dir: Path) -> None:
    documents = load_path(cranfield_dir)
    assert len(documents) == 1398  # 1,400 less the two empty documents
    assert all(not d.chunkable for d in documents)
    first = next(d for d in documents if d.id == "1")
    assert first.text.startswith(first.metadata["title"])


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="no such file or folder"):
        load_path(tmp_path / "absent")


def test_broken_jsonl_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "fine"}\n{"text": broken\n')
    with pytest.raises(IngestError, match=r"line 2: not valid JSON"):
        load_path(path)


def test_binary_file_is_not_text(tmp_path: Path) -> None:
    path = tmp_path / "blob.txt"
    path.write_bytes(b"\xff\xfe\x00\x81binary")
    with pytest.raises(IngestError, match="not UTF-8"):
        load_path(path)


def test_broken_pdf(tmp_path: Path) -> None:
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.4 this is not really a pdf")
    with pytest.raises(IngestError, match="Cannot read PDF"):
        load_path(path)


def test_csv_without_a_text_column(tmp_path: Path) -> None:
    path = tmp_path / "table.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(IngestError, match="no text column"):
        load_path(path)


def test_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "x.bin").write_bytes(b"1")
    with pytest.raises(IngestError, match="No files to ingest"):
        load_path(tmp_path)

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.errors import IngestError
from workbench.loaders import load_path


def test_a_folder_of_mixed_files(corpus_dir: Path) -> None:
    loaded = load_path(corpus_dir)
    assert loaded.files == 4 and loaded.problems == []
    by_id = {d.id: d for d in loaded.documents}
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
    # the origin is the file: re-ingesting it replaces every chunk it produced
    assert {d.origin for d in loaded.documents} == {"facts.csv", "guide.md", "more.jsonl", "notes.txt"}


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
    documents = load_path(path).documents
    assert [d.metadata["page"] for d in documents] == [1, 2]
    assert "glaciers" in documents[1].text and documents[0].metadata["title"] == "Nature Notes"


def test_beir_folders_keep_passages_whole(cranfield_dir: Path) -> None:
    documents = load_path(cranfield_dir).documents
    assert len(documents) == 1398  # 1,400 less the two empty documents
    assert all(not d.chunkable for d in documents)
    first = next(d for d in documents if d.id == "1")
    assert first.text.startswith(first.metadata["title"]) and first.origin == "beir:1"


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="no such file or folder"):
        load_path(tmp_path / "absent")


def test_broken_jsonl_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "fine"}\n{"text": broken\n')
    with pytest.raises(IngestError, match=r"bad.jsonl, line 2: not valid JSON"):
        load_path(path)


def test_binary_file_is_not_text(tmp_path: Path) -> None:
    path = tmp_path / "blob.txt"
    path.write_bytes(b"\xff\xfe\x00\x81binary")
    with pytest.raises(IngestError, match=r"blob\.txt: not UTF-8"):
        load_path(path)


def test_broken_pdf(tmp_path: Path) -> None:
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.4 this is not really a pdf")
    with pytest.raises(IngestError, match=r"broken\.pdf: not a readable PDF"):
        load_path(path)


def test_a_plain_table_csv_is_ingested_row_by_row(tmp_path: Path) -> None:
    path = tmp_path / "table.csv"
    path.write_text("id,city,population,note\n7,Lyon,522000,river city\n8,Graz,291000,\n")
    documents = load_path(path).documents
    assert [d.id for d in documents] == ["table.csv#7", "table.csv#8"]
    assert documents[0].text == "city: Lyon\npopulation: 522000\nnote: river city"
    assert documents[1].text == "city: Graz\npopulation: 291000"


def test_picked_text_columns(tmp_path: Path) -> None:
    path = tmp_path / "table.csv"
    path.write_text("city,note,population\nLyon,river city,522000\n")
    [document] = load_path(path, text_columns=["note"]).documents
    assert document.text == "river city"
    assert document.metadata["city"] == "Lyon" and document.metadata["population"] == "522000"
    with pytest.raises(IngestError, match="no column nope"):
        load_path(path, text_columns=["nope"])


def test_a_huge_csv_field_is_read(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    path.write_text("id,text\n1," + "word " * 40000 + "\n")
    [document] = load_path(path).documents
    assert len(document.text) > 131072


def test_repeated_ids_name_both_lines(tmp_path: Path, cranfield_dir: Path) -> None:
    path = tmp_path / "dup.jsonl"
    path.write_text('{"_id": "a", "text": "one"}\n{"_id": "b", "text": "two"}\n{"_id": "a", "text": "three"}\n')
    with pytest.raises(IngestError, match="line 3: id 'a' repeats line 1"):
        load_path(path)
    beir = tmp_path / "beir"
    beir.mkdir()
    (beir / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n{"_id": "d1", "text": "y"}\n')
    with pytest.raises(IngestError, match="_id 'd1' repeats line 1"):
        load_path(beir)


def test_bad_files_in_a_folder_are_listed_and_the_rest_load(tmp_path: Path) -> None:
    (tmp_path / "good.md").write_text("# Good\n\n## Part\nReadable text.\n")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 nope")
    (tmp_path / "photo.jpg").write_bytes(b"\xff\xd8\xff")
    (tmp_path / ".hidden.txt").write_text("secret")
    loaded = load_path(tmp_path)
    assert [d.origin for d in loaded.documents] == ["good.md"]
    reasons = {p.name: p.reason for p in loaded.problems}
    assert set(reasons) == {"latin1.txt", "broken.pdf", "photo.jpg"}
    assert "not UTF-8" in reasons["latin1.txt"] and "unsupported type '.jpg'" in reasons["photo.jpg"]
    assert all(str(tmp_path) not in r for r in reasons.values())


def test_links_out_of_the_folder_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "credentials.txt").write_text("password=hunter2")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "ok.txt").write_text("fine")
    (folder / "creds.txt").symlink_to(outside / "credentials.txt")
    loaded = load_path(folder)
    assert [d.id for d in loaded.documents] == ["ok.txt"]
    assert [p.name for p in loaded.problems] == ["creds.txt"]


def test_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="No files to ingest"):
        load_path(tmp_path)


def test_a_markdown_file_without_page_marks_has_no_pages(tmp_path: Path) -> None:
    """Issue 36, item 10: a Markdown upload's passages carried "p. 1" on every card though the file has no pages."""
    path = tmp_path / "birds.md"
    path.write_text("# Birds\n\n## Owls\nOwls hunt at night.\n\n## Herons\nHerons wade.\n")
    documents = load_path(path).documents
    assert [d.metadata.get("section") for d in documents] == ["Owls", "Herons"]
    assert all("page" not in d.metadata for d in documents)
    assert all(d.metadata["title"] == "Birds" and "# Birds" not in d.text for d in documents)

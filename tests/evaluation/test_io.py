from __future__ import annotations

from pathlib import Path

import pytest

from workbench.errors import IngestError
from workbench.evaluation import Dataset, read_qrels, read_queries, read_trec_run, write_trec_run


def test_beir_folder_with_graded_judgments(cranfield_dir: Path) -> None:
    dataset = Dataset.from_beir(cranfield_dir)
    assert len(dataset.queries) == 225 and len(dataset.qrels) == 225
    assert sum(len(j) for j in dataset.qrels.values()) == 1612
    grades = {g for j in dataset.qrels.values() for g in j.values()}
    assert grades == {1, 2, 3, 4}
    assert dataset.corpus == cranfield_dir


def test_scifact_only_judged_queries_are_kept(scifact_dir: Path) -> None:
    dataset = Dataset.from_beir(scifact_dir)
    assert len(read_queries(scifact_dir / "queries.jsonl")) == 1109
    assert len(dataset.queries) == 300 and sum(len(j) for j in dataset.qrels.values()) == 339


def test_trec_qrels_and_tsv_queries(tmp_path: Path) -> None:
    (tmp_path / "q.tsv").write_text("1\tfirst question\n2\tsecond question\n")
    (tmp_path / "qrels.txt").write_text("1 0 d1 2\n1 0 d2 0\n2 0 d3 1\n")
    dataset = Dataset.from_files(tmp_path / "q.tsv", tmp_path / "qrels.txt")
    assert dataset.qrels == {"1": {"d1": 2, "d2": 0}, "2": {"d3": 1}}
    assert dataset.queries == {"1": "first question", "2": "second question"}


def test_trec_run_round_trip(tmp_path: Path) -> None:
    run = {"q2": {"b": 0.5, "a": 0.5, "c": 2.0}, "q1": {"x": -1.25}}
    path = write_trec_run(run, tmp_path / "runs" / "r.trec", "tag1")
    lines = path.read_text().splitlines()
    assert lines[0] == "q1 Q0 x 1 -1.25 tag1"
    assert lines[1:] == ["q2 Q0 c 1 2.0 tag1", "q2 Q0 a 2 0.5 tag1", "q2 Q0 b 3 0.5 tag1"]
    assert read_trec_run(path) == run


def test_a_trec_run_keeps_scores_that_differ_in_the_last_digit_apart(tmp_path: Path) -> None:
    """Six decimals would tie two documents a reranker parted (and trec_eval would then order them by id)."""
    import math

    close = math.nextafter(0.5, 0.0)
    run = {"q": {"a": close, "b": 0.5, "c": 0.1234567891234}}
    path = write_trec_run(run, tmp_path / "r.trec", "t")
    assert [line.split()[2] for line in path.read_text().splitlines()] == ["b", "a", "c"]
    assert read_trec_run(path) == run  # every score read back as the same float


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("bad.qrels", "1 d1 1\n1 0 d2 x 9\n", "line 2: expected 3"),
        ("grade.qrels", "1 0 d1 high\n", "is not a number"),
        ("empty.qrels", "query-id\tcorpus-id\tscore\n", "holds no judgments"),
        ("fraction.qrels", "q1 0 d1 1\nq1 0 d2 2.9\n", "line 2: the grade '2.9' is not a whole number"),
        ("huge.qrels", "q1 0 d1 1e30\n", "'1e30' is not a whole number from -1000 to 1000"),
        ("nul.qrels", "q1 0 d\x001 2\n", "line 1: a NUL byte"),
        ("escape.tsv", "query-id\tcorpus-id\tscore\nq\x1b[31m1\td1\t1\n", "line 2: an id holds a control"),
    ],
)
def test_broken_qrels(tmp_path: Path, name: str, text: str, message: str) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(IngestError, match=message):
        read_qrels(tmp_path / name)


def test_whole_grades_written_as_decimals_are_read() -> None:
    from workbench.evaluation.io import _whole_grade

    assert [_whole_grade(text, "x") for text in ("2", "2.0", "-1", "1e2")] == [2, 2, -1, 100]


def test_broken_run_and_queries(tmp_path: Path) -> None:
    (tmp_path / "r.trec").write_text("q1 Q0 d1 1 0.5\n")
    with pytest.raises(IngestError, match="6 columns"):
        read_trec_run(tmp_path / "r.trec")
    (tmp_path / "q.jsonl").write_text('{"text": "no id"}\n')
    with pytest.raises(IngestError, match="_id and text"):
        read_queries(tmp_path / "q.jsonl")
    with pytest.raises(IngestError, match="not a BEIR folder"):
        Dataset.from_beir(tmp_path)

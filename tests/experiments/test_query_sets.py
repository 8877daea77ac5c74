"""Query sets from files (one a line, CSV, JSONL), judged queries and a history; broken files named line by line."""

from __future__ import annotations

import pytest

from workbench.errors import IngestError, InputError
from workbench.evaluation.io import Dataset
from workbench.experiments import QuerySet, history_query_set, judged_query_set, parse_query_set


def test_a_plain_file_is_one_query_a_line_blank_lines_skipped() -> None:
    found = parse_query_set("log", b"first query\n\n  second query  \n", "log.txt")
    assert [(q.id, q.text, q.weight) for q in found.queries] == [
        ("q1", "first query", 1.0),
        ("q3", "second query", 1.0),
    ]
    assert found.source == "file log.txt"


def test_csv_takes_id_query_and_frequency_columns_in_any_case_and_order() -> None:
    raw = 'Frequency,Query,ID\n12,parental leave,a1\n3,"expenses, travel",a2\n'
    found = parse_query_set("log", raw.encode(), "log.csv")
    assert [(q.id, q.text, q.weight) for q in found.queries] == [
        ("a1", "parental leave", 12.0),
        ("a2", "expenses, travel", 3.0),
    ]
    assert found.weights == {"a1": 12.0, "a2": 3.0}


def test_jsonl_takes_beir_ids_and_weights() -> None:
    raw = b'{"_id": "x", "text": "one", "weight": 2}\n{"query": "two"}\n'
    found = parse_query_set("s", raw, "s.jsonl")
    assert [(q.id, q.text, q.weight) for q in found.queries] == [("x", "one", 2.0), ("q2", "two", 1.0)]


@pytest.mark.parametrize(
    ("raw", "filename", "words"),
    [
        (b"", "empty.txt", "has no queries"),
        (b"a,b\n1,2\n", "bad.csv", "the header must name the query column"),
        (b"query,weight\nfine,-1\n", "neg.csv", "line 2: the weight must be a positive number"),
        (b"query,weight\nfine,lots\n", "nan.csv", "line 2: the weight 'lots' is not a number"),
        (b"query,weight\nfine,nan\n", "nan2.csv", "line 2: the weight must be a positive number"),
        (b'{"text": ""}\n', "blank.jsonl", "line 1: the query is empty"),
        (b'{"_id": "a", "text": "x"}\n{"_id": "a", "text": "y"}\n', "twice.jsonl", "names the query id 'a' twice"),
        (b"\xff\xfe\x00", "binary.txt", "not UTF-8 text"),
        (b'["a list"]\n', "list.jsonl", "expected a JSON object"),
        (b"q1 only an id and no tab\n", "ids.tsv", "line 1: a .tsv line is id<TAB>text"),
        (b'{"_id": "q\\u202e1", "text": "x"}\n', "bidi.jsonl", "line 1: id: A query id holds an invisible"),
        (b'{"_id": "q1", "text": "\\u200b \\u200b"}\n', "invisible.jsonl", "line 1: text: The query is empty"),
    ],
)
def test_a_broken_file_is_refused_naming_the_file_and_line(raw: bytes, filename: str, words: str) -> None:
    with pytest.raises((InputError, IngestError)) as caught:
        parse_query_set("s", raw, f"/tmp/uploads/{filename}")
    assert words in str(caught.value)
    assert "/tmp" not in str(caught.value)


def test_tsv_is_id_tab_text_with_an_optional_weight_or_a_header() -> None:
    plain = parse_query_set("s", b"q1\tparental leave\nq2\ttravel expenses\t3\n", "topics.tsv")
    assert [(q.id, q.text, q.weight) for q in plain.queries] == [
        ("q1", "parental leave", 1.0),
        ("q2", "travel expenses", 3.0),
    ]
    headed = parse_query_set("s", b"query\tqid\nparental leave\tq9\n", "log.tsv")
    assert [(q.id, q.text) for q in headed.queries] == [("q9", "parental leave")]


def test_names_are_checked() -> None:
    with pytest.raises(InputError, match="1 to 120 characters"):
        QuerySet(name="  ", queries=[{"id": "a", "text": "x"}])


def test_judged_queries_and_history_make_sets() -> None:
    dataset = Dataset("demo", {"q1": "a", "q2": "b"}, {"q1": {"d": 1}, "q2": {"e": 2}})
    judged = judged_query_set("demo-judged", dataset)
    assert judged.texts == {"q1": "a", "q2": "b"}
    history = history_query_set("mine", ["alpha", "beta", "alpha", "  ", "alpha"])
    assert [(q.text, q.weight) for q in history.queries] == [("alpha", 3.0), ("beta", 1.0)]


def test_a_set_judged_by_a_dataset_keeps_its_judged_queries_only() -> None:
    dataset = Dataset("demo", {"q1": "a", "q2": "b"}, {"q1": {"d": 1}, "q2": {"e": 2}})
    chosen = QuerySet(name="one", queries=[{"id": "q2", "text": "b"}, {"id": "typed", "text": "c"}])
    assert list(chosen.judged(dataset).qrels) == ["q2"]
    with pytest.raises(InputError, match="None of the 1 queries of 'other' is judged in demo"):
        QuerySet(name="other", queries=[{"id": "zz", "text": "c"}]).judged(dataset)

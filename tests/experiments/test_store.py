"""The experiments store on SQLite and on a real PostgreSQL: kept, listed, opened, renamed, deleted; query sets; one
file out and back in; hostile files refused with words, nothing lost."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import ExperimentNotFoundError, InputError, error_status
from workbench.evaluation.io import Dataset
from workbench.experiments import (
    Experiment,
    Manifest,
    QuerySet,
    export_experiment,
    import_experiment,
    open_experiment_store,
)
from workbench.experiments.record import judgments_used, query_set_used
from workbench.experiments.store import ExperimentStore, PostgresExperimentStore, SqliteExperimentStore
from workbench.types import SearchPlan

pytestmark = pytest.mark.live_server


def make_experiment(collection: str = "demo", ndcg: float = 0.5, days: int = 0, **fields: object) -> Experiment:
    queries = {"q1": "parental leave", "q2": "travel expenses"}
    qrels = {"q1": {"d1": 2}, "q2": {"d2": 1}}
    report = {
        "dataset": "demo", "collection": collection, "embedding_model": "e", "reranker_model": "r", "k": 20,
        "top_n": 5, "queries": 2, "before": {"ndcg@10": 0.4}, "after": {"ndcg@10": ndcg}, "p_value": 0.5,
        "p_value_ttest": 0.5, "wins": 1, "ties": 0, "losses": 1, "unjudged_before": 0, "unjudged_after": 0,
        "judged_looked_at": 10, "seconds": 1.0, "score_cache_hits": 0, "per_query": [],
    }  # fmt: skip
    manifest = Manifest.here(embedder="e", reranker_fingerprint="f", reranker_backend="torch:cpu", collection_chunks=9)
    return Experiment(
        plan=SearchPlan(collection=collection, k=20, top_n=5, reranker="r"),
        query_set=query_set_used("demo", queries),
        judgments=judgments_used(Dataset("demo", queries, qrels), "demo"),
        manifest=manifest,
        report=report,
        queries=queries,
        qrels=qrels,
        before_run={"q1": {"d1": 1.0}, "q2": {"d2": 1.0}},
        after_run={"q1": {"d1": 2.0}, "q2": {"d2": 2.0}},
        created_at=datetime.now(UTC) - timedelta(days=days),
        **fields,
    )


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ExperimentStore]:
    if request.param == "sqlite":
        yield SqliteExperimentStore(tmp_path / "experiments.sqlite3")
        return
    url = request.getfixturevalue("postgres_url")
    schema = f"exp_{tmp_path.name[-12:].replace('-', '_').lower()}"
    kept = PostgresExperimentStore(url, schema=schema)
    yield kept


def test_experiments_are_kept_listed_newest_first_opened_renamed_and_deleted(store: ExperimentStore) -> None:
    older = store.save(make_experiment(ndcg=0.5, days=2))
    newer = store.save(make_experiment(ndcg=0.6, days=1, name="second", tags=["ci", "qa"], notes="tuned"))
    other = store.save(make_experiment(collection="scifact", days=0))
    assert [e.id for e in store.list()] == [other.id, newer.id, older.id]
    assert [e.id for e in store.list(collection="demo")] == [newer.id, older.id]
    assert [e.id for e in store.list(configuration=older.configuration)] == [newer.id, older.id]
    opened = store.get(newer.id)
    assert opened == newer and opened.figure() == 0.6 and opened.tags == ["ci", "qa"]
    store.save(opened.model_copy(update={"name": "renamed"}))
    assert store.get(newer.id).name == "renamed" and len(store.list()) == 3
    store.delete(older.id)
    with pytest.raises(ExperimentNotFoundError, match="No experiment has the id") as caught:
        store.get(older.id)
    assert error_status(caught.value) == 404
    with pytest.raises(ExperimentNotFoundError):
        store.delete("nope")


def test_query_sets_are_kept_by_name(store: ExperimentStore) -> None:
    first = QuerySet(name="log", queries=[{"id": "a", "text": "x", "weight": 3}])
    store.save_query_set(first)
    store.save_query_set(QuerySet(name="log", queries=[{"id": "b", "text": "y"}]))  # replaced
    store.save_query_set(QuerySet(name="another", queries=[{"id": "c", "text": "z"}]))
    assert store.query_set_names() == ["another", "log"]
    assert store.query_set("log").texts == {"b": "y"}
    store.delete_query_set("another")
    with pytest.raises(ExperimentNotFoundError, match="No query set is named"):
        store.query_set("another")


def test_names_tags_and_notes_are_bounded() -> None:
    with pytest.raises(InputError, match="at most 120 characters"):
        make_experiment(name="x" * 121)
    with pytest.raises(InputError, match="at most 16 tags"):
        make_experiment(tags=[f"t{i}" for i in range(17)])
    assert make_experiment(name="a\x1b[31mred").name == "a [31mred"  # a terminal escape cannot colour a listing


def test_an_experiment_goes_out_as_one_file_and_back_in_once(tmp_path: Path) -> None:
    source = Engine(Settings(data_dir=tmp_path / "a"))
    target = Engine(Settings(data_dir=tmp_path / "b"))
    experiment = open_experiment_store(source.settings).save(make_experiment(name="shared"))
    text = export_experiment(experiment)
    imported = import_experiment(target, text.encode())
    assert imported == experiment
    assert import_experiment(target, text) == experiment  # the same file twice keeps it once
    assert len(open_experiment_store(target.settings).list()) == 1
    clash = json.loads(text)
    clash["experiment"]["name"] = "another one"
    with pytest.raises(InputError, match="is kept here already, and it is another one"):
        import_experiment(target, json.dumps(clash))
    assert open_experiment_store(target.settings).get(experiment.id).name == "shared"  # nothing overwritten


DEEP = json.dumps(
    {"format": "rerank-workbench.experiment", "version": 1, "experiment": {"a": json.loads("[" * 40 + "]" * 40)}}
)


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b"\x00\x01 not json", "it is not JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
        (DEEP, "nests deeper than 32 levels"),
        (b'{"format": "something else"}', 'has no "format": "rerank-workbench.experiment"'),
        (b'{"format": "rerank-workbench.experiment", "version": 99}', "version 1; got 99"),
        (b'{"format": "rerank-workbench.experiment", "version": 1, "experiment": {"id": "x"}}', "Not an experiment"),
    ],
)
def test_a_hostile_experiment_file_is_refused_with_words(tmp_path: Path, raw: bytes, words: str) -> None:
    engine = Engine(Settings(data_dir=tmp_path))
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace(".", r"\.")):
        import_experiment(engine, raw)
    assert open_experiment_store(engine.settings).list() == []


def test_the_trend_of_one_run_spans_hours_and_its_labels_are_text() -> None:
    """Issue 36, item 10: a trend of one run had sub-millisecond ticks; names and notes are escaped for Plotly,
    which renders tags in labels."""
    from workbench.experiments.figures import trend_figure

    one = make_experiment(name="<a href='http://x'>x</a>", notes="<img src=x>")
    figure = trend_figure([one], "ndcg@10", "trend")
    start, end = (datetime.fromisoformat(str(v)) for v in figure.layout.xaxis.range)
    assert end - start >= timedelta(hours=6)
    reranked = figure.data[1]
    assert "<a" not in reranked.text[0] and "&lt;a" in reranked.text[0]
    assert "<img" not in reranked.customdata[0] and "&lt;img" in reranked.customdata[0]


def test_a_diff_says_when_the_two_ran_on_different_backends() -> None:
    """Issue 37: figures move with the backend; a diff of two experiments says so as it says judgments differ."""
    from workbench.experiments import diff_experiments

    first = make_experiment(name="torch")
    second = make_experiment(name="int8", days=0)
    second = second.model_copy(
        update={"manifest": second.manifest.model_copy(update={"reranker_backend": "onnx-int8:cpu"})}
    )
    warnings = diff_experiments(first, second).warnings
    assert any("different backends (torch:cpu and onnx-int8:cpu)" in w for w in warnings)
    assert not any("backends" in w for w in diff_experiments(first, first).warnings)

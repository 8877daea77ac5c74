"""Issue 36, items 1, 2 and 5: an experiment from outside is checked whole, as one made here would be, before
anything is kept; one bad row never takes the store down; a report's files stay in the folder named."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.experiments.test_store import make_experiment
from workbench.cli import main
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.experiments import export_experiment, import_experiment, open_experiment_store


def _file(change: Any) -> str:
    document = json.loads(export_experiment(make_experiment(name="shared")))
    change(document["experiment"])
    return json.dumps(document)


def _set(path: str, value: Any) -> Any:
    def change(experiment: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = experiment
        for part in parents:
            target = target[part]
        target[last] = value

    return change


HOSTILE = {
    "an empty report": (_set("report", {}), "report.dataset"),
    "a figure NaN": (_set("report.after", {"ndcg@10": float("nan")}), "finite number"),
    "a figure that is a word": (_set("report.after", {"ndcg@10": "high"}), "report.after"),
    "a run score NaN": (_set("after_run", {"q1": {"d1": float("nan")}, "q2": {"d2": 1.0}}), "finite number"),
    "every grade set to 3": (_set("qrels", {"q1": {"d1": 3}, "q2": {"d2": 3}}), "judgments do not match"),
    "a query text changed": (_set("queries.q1", "something else"), "queries do not match"),
    "a checksum deadbeef": (_set("judgments.checksum", "deadbeef"), "judgments do not match"),
    "a reranker URL": (_set("plan.reranker", "http://10.0.0.1:7997"), "not a URL or a path"),
    "an empty id": (_set("id", ""), "12 hex digits"),
    "an id with CR LF": (_set("id", "abc\r\nSet-Cookie: x"), "12 hex digits"),
    "an id of 100 kB": (_set("id", "a" * 100_000), "12 hex digits"),
    "an id holding Markdown": (_set("id", "![x](http://h/p.png)"), "12 hex digits"),
    "a collection that climbs": (_set("plan.collection", "../../pwned"), "Collection name"),
    "a date in 9999": (_set("created_at", "9999-01-01T00:00:00Z"), "in the future"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_an_imported_experiment_is_checked_whole_before_it_is_kept(case: str, tmp_path: Path) -> None:
    change, words = HOSTILE[case]  # a report's collection that climbs is a label: see the report test below
    engine = Engine(Settings(data_dir=tmp_path))
    with pytest.raises(InputError) as refused:
        import_experiment(engine, _file(change))
    assert words in str(refused.value), str(refused.value)
    assert "http://h" not in str(refused.value) and "\r" not in str(refused.value)
    assert open_experiment_store(engine.settings).list() == []


@pytest.mark.parametrize(("given", "kept"), [("/etc/models/x", "x"), ("../../models", "models")])
def test_an_imported_folder_reranker_travels_by_its_name_never_as_a_path(tmp_path: Path, given: str, kept: str) -> None:
    """A server path in an imported plan is never used as one: the folder is named by its name (as an export
    names it), which `rerun` resolves in this machine's models folder."""
    engine = Engine(Settings(data_dir=tmp_path))
    imported = import_experiment(engine, _file(_set("plan.reranker", given)))
    assert imported.plan.reranker == kept
    assert open_experiment_store(engine.settings).get(imported.id).plan.reranker == kept


def _kept_raw(settings: Settings, body: str, experiment_id: str = "0123456789ab") -> None:
    """A row written into the store behind the product's back (an older version, a hand edit, a damaged disk)."""
    open_experiment_store(settings)  # the tables
    with sqlite3.connect(settings.data_dir / "experiments.sqlite3") as db:
        db.execute(
            "INSERT INTO experiments (id, name, collection, configuration, created_at, body) VALUES (?,?,?,?,?,?)",
            (experiment_id, "", "demo", "x", "2026-01-01T00:00:00+00:00", body),
        )


def test_an_unreadable_row_is_named_and_skipped_everywhere_and_deleted_by_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings(data_dir=tmp_path)
    good = open_experiment_store(settings).save(make_experiment(name="good"))
    broken = json.loads(good.model_dump_json())
    broken["report"] = {}
    _kept_raw(settings, json.dumps(broken), "0123456789ab")
    _kept_raw(
        settings, good.model_dump_json().replace('"after":{"ndcg@10":0.5}', '"after":{"ndcg@10":NaN}'), "ba9876543210"
    )
    listed = open_experiment_store(settings).list()
    assert [e.id for e in listed] == [good.id]
    assert sorted(i for i, _ in listed.unreadable) == ["0123456789ab", "ba9876543210"]
    env = {"WORKBENCH_DATA_DIR": str(tmp_path)}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        assert main(["experiments", "list"]) == 0
        out, err = capsys.readouterr()
        assert good.id in out and "could not be read" in err and "0123456789ab" in err and "Traceback" not in err
        assert main(["experiments", "delete", "ba9876543210"]) == 0
        assert main(["experiments", "delete", "0123456789ab"]) == 0
    listed = open_experiment_store(settings).list()
    assert [e.id for e in listed] == [good.id] and not listed.unreadable


def test_a_report_is_written_inside_the_folder_named_whatever_its_collection_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, out = tmp_path / "data", tmp_path / "a" / "b" / "reports"
    engine = Engine(Settings(data_dir=data))
    experiment = import_experiment(engine, _file(_set("report.collection", "../../pwned")))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WORKBENCH_DATA_DIR", str(data))
        assert main(["experiments", "show", experiment.id, "--report", str(out)]) == 0
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file() and data not in p.parents)
    assert written and all(p.parent == out.relative_to(tmp_path) for p in written), written
    assert {p.name for p in out.iterdir()} >= {"pwned.report.html", "pwned.report.md"}
    absolute = import_experiment(Engine(Settings(data_dir=tmp_path / "d2")), _file(_set("report.collection", "/tmp/x")))
    assert absolute.evaluation().file_stem == "tmp_x"  # an absolute path names no folder either
    capsys.readouterr()

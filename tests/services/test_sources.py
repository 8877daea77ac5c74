"""Issue 55: the judged-query sources are a registry, matched in order; a new source is a reader and one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.config import Settings
from workbench.errors import InputError
from workbench.evaluation.io import Dataset
from workbench.services import sources
from workbench.services.sources import JUDGED_SOURCES, JudgedSource, judged_dataset


def test_the_sources_are_matched_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(data_dir=tmp_path)
    assert [s.name for s in JUDGED_SOURCES] == ["files", "demo as shipped", "demo", "beir", "judgments store"]
    queries, qrels = tmp_path / "q.tsv", tmp_path / "qrels.tsv"
    queries.write_text("q1\trivers and lakes\n")
    qrels.write_text("q1\t0\td1\t1\n")
    both = judged_dataset(settings, queries=queries, qrels=qrels, demo=True)  # files come before the demo
    assert both.queries == {"q1": "rivers and lakes"}
    with pytest.raises(InputError, match="go together"):
        judged_dataset(settings, queries=queries)
    assert judged_dataset(settings, demo=True, shipped=True).name.endswith("(as shipped)")
    with pytest.raises(InputError, match="Name what to evaluate"):
        judged_dataset(settings, collection="nothing-judged-here")  # named, but no judgments: the next, then none
    # a new source: a reader and one line
    mine = JudgedSource("mine", lambda ask: ask.collection == "mine",
                        lambda _, ask: Dataset("mine", {"a": "text"}, {"a": {"d": 1}}))  # fmt: skip
    monkeypatch.setattr(sources, "JUDGED_SOURCES", (*JUDGED_SOURCES, mine))
    assert judged_dataset(settings, collection="mine").name == "mine"

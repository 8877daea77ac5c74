"""Issue 36, item 10: the demo figures the README and docs/evaluation.md quote come from a run
(`scripts/demo_figures.py`, kept in docs/figures/demo.json with the backend and machine that made them), so they
cannot drift: every block reads as the record renders it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("demo_figures", REPO / "scripts" / "demo_figures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_figures_block_reads_as_the_kept_run_renders_it() -> None:
    figures = _script()
    record = json.loads(figures.RECORD.read_text(encoding="utf-8"))
    assert record["backend"] and record["machine"]["cpu"] and record["measured_at"] and record["versions"]
    named = []
    for document in figures.DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        named += [m.group("name") for m in figures.BLOCK.finditer(text)]
        assert figures.rewrite(text, record) == text, f"{document.name}: run scripts/demo_figures.py --write"
    assert sorted(named) == sorted(figures.BLOCK_NAMES)


def test_a_block_says_which_backend_and_machine_made_it() -> None:
    figures = _script()
    record = json.loads(figures.RECORD.read_text(encoding="utf-8"))
    for name in figures.BLOCK_NAMES:
        text = figures.render(name, record)
        assert f"backend {record['backend']}" in text and record["machine"]["cpu"] in text, name

"""Issue 36, item 10: every figure the README and the docs quote comes from a run of a script (`scripts/*_figures.py`,
each keeping its record in docs/figures/ with the backend and machine that made it), so none can drift: every
marked block reads as its record renders it, and every block belongs to a script."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = (
    "demo_figures",
    "collection_figures",
    "backend_figures",
    "doctor_bench_figures",
    "attach_figures",
    "bench_figures",
    "tuning_figures",
    "clicks_figures",
    "run_check_figures",
    "skip_policy_figures",
    "family_figures",
    "settling_figures",
    "fail_open_figures",
    "smollm2_figures",
    "preference_figures",
    "house_figures",
)


def _script(name: str) -> ModuleType:
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(REPO / "scripts"))


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_block_of_a_script_reads_as_its_kept_run_renders_it(name: str) -> None:
    script = _script(name)
    common = _script("figures_blocks")
    record = json.loads(script.RECORD.read_text(encoding="utf-8"))
    assert record["backend"] and record["machine"]["cpu"] and record["measured_at"] and record["versions"]
    named = common.blocks_named(script.PREFIX)
    assert named, f"{name} renders no block in the README or docs"
    for document in common.DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        rendered = common.rewrite(text, script.PREFIX, lambda block: script.render(block, record))
        assert rendered == text, f"{document.name}: run scripts/{name}.py --write"
    for block in named:  # each says which machine made it
        assert record["machine"]["cpu"] in script.render(block, record), block


def test_every_block_belongs_to_a_script() -> None:
    common = _script("figures_blocks")
    prefixes = tuple(_script(name).PREFIX for name in SCRIPTS)
    every = common.blocks_named("")
    assert every and all(block.startswith(prefixes) for block in every), every

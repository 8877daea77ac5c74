"""The suite's own scheduling (tests/scheduling.py): under `-n 2`, a `whole_machine` test runs while no other test
does, the other worker's tests before and after it; the controller says how long it held the machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.scheduling import HOLDER, _owner

REPO = Path(__file__).resolve().parents[1]

TIMES = """
    import json, os, time
    from pathlib import Path

    def spend(name, seconds):
        started = time.time()
        time.sleep(seconds)
        with Path(os.environ["TIMES_FILE"]).open("a") as log:
            log.write(json.dumps([name, os.environ.get("PYTEST_XDIST_WORKER"), started, time.time()]) + "\\n")
"""


def test_a_whole_machine_test_runs_while_no_other_test_does(tmp_path: Path) -> None:
    (tmp_path / "times.py").write_text(textwrap.dedent(TIMES))
    # a test_truth.py: the scope of the reference-truth worker; the others are the suite's
    (tmp_path / "truth").mkdir()
    (tmp_path / "truth" / "test_truth.py").write_text(
        "import pytest\nfrom times import spend\n\n"
        "def test_shared_before():\n    spend('truth-shared', 0.2)\n\n"
        "@pytest.mark.whole_machine\ndef test_alone():\n    spend('alone', 1.5)\n"
    )
    (tmp_path / "test_suite.py").write_text(
        "import pytest\nfrom times import spend\n\n"
        "@pytest.mark.parametrize('n', range(12))\ndef test_suite(n):\n    spend(f'suite-{n}', 0.3)\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    whole_machine: alone\n")
    times = tmp_path / "times.jsonl"
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}", "TIMES_FILE": str(times)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-p", "tests.scheduling", "-p", "no:cacheprovider", "-q"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:]
    runs = {name: (worker, start, end) for name, worker, start, end in map(json.loads, times.read_text().splitlines())}
    worker, start, end = runs.pop("alone")
    suite_workers = {w for name, (w, _, _) in runs.items() if name.startswith("suite")}
    assert suite_workers == {"gw0", "gw1"} - {worker}  # the suite's tests on the other worker
    overlapping = [name for name, (_, s, e) in runs.items() if s < end and e > start]
    assert overlapping == []
    suite = [name for name, (w, _, _) in runs.items() if name.startswith("suite")]
    assert any(runs[name][1] >= end for name in suite)  # the other worker went on after it
    line = next(line for line in done.stdout.splitlines() if line.startswith("the machine to itself: "))
    assert "truth/test_truth.py::test_alone (waited " in line and "held it 2 s)" in line


def test_a_holder_whose_process_is_gone_is_let_go(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / HOLDER).write_text(f"gw0 {gone.stdout.strip()}")
    assert _owner(tmp_path / HOLDER) is None and not (tmp_path / HOLDER).exists()
    (tmp_path / HOLDER).write_text(f"gw1 {os.getpid()}")
    assert _owner(tmp_path / HOLDER) == "gw1"

"""How the suite shares this machine's cores (pyproject's `-n 2`), and what it keeps of each test's time.

Two workers: the tests in BESIDE_THE_TRUTH, minutes of model CPU each that nothing waits on, run on one of their own at
the lowest CPU priority while the rest of the suite runs in order on the other (`TruthApart`). A test marked
`whole_machine` (the dense references: SciFact's 5,183 abstracts through the real embedder, ~29 TFLOP of fp32, and
Cranfield's 1,400 on torch, which no sharing makes cheaper) is handed the machine alone: it waits until every other
worker has paused between two tests, runs, then lets them go on (`machine_to_itself`, through files in a folder the
controller makes for the run). The wait is outside the test's own setup, call and teardown, so the seconds kept for
it are its own; the terminal summary says how long each held the machine.

Each test's seconds go to build/test-durations.json, slowest first, and the slowest files and each worker's seconds are
printed, so a test that grew is seen the day it grows.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Minutes of model CPU each, nothing waits on them: the reference-truth tests and the demo's pooling check, then the
# gate's longest runs, which even out the two workers' time (CI prints the slowest tests).
BESIDE_THE_TRUTH = (
    "/test_truth.py::",
    "/test_demo_pool.py::",
    "/test_gate_and_cli.py::test_the_gate_exits_",
    "/test_gate_and_cli.py::test_a_budget_broken_",
    "/test_gate_and_cli.py::test_eval_keeps_",
    "/test_gate_and_cli.py::test_the_gate_against_",
    "/test_demo.py::",
    "/test_vllm.py::",
    "/test_sanity.py::",
    "/test_openvino_pairs.py::",
    "/test_object_stores.py::",
    # minutes of CPU that wait on nothing either, moved here once the demo's pairs were scored once (issue 73)
    "/test_reranker_servers.py::test_infinity_gives_",
    "/test_llm_judge.py::test_the_judge_grades_to_the_decision_",
    "/test_parity.py::test_doctor_parity_from_the_command_line",
    "/test_recommend.py::",
    "/test_packaging.py::",
    "/test_corrected.py::",
    "/test_tuning.py::",
    "/test_explain.py::",
    # a minute of the app's and a browser's CPU, moved here when the blind preference tests joined the suite (issue 71)
    "/test_experiments_in_chromium.py::",
    # model CPU the suite's worker took back when SciFact's reference was given the machine alone (its worker pauses)
    "/test_judge_limits.py::",
    "/test_candidates_file.py::",
    "/test_causal_lm.py::",
    "/test_sequential.py::",
    "/test_colbert.py::",
    "/test_parallel.py::",
    "/test_calibration.py::",
)


def _scope(nodeid: str) -> str:
    return "reference-truth" if any(name in nodeid for name in BESIDE_THE_TRUTH) else "suite"


DURATIONS_FILE = Path(__file__).resolve().parent.parent / "build" / "test-durations.json"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Each test's seconds (setup, call and teardown together) kept in build/test-durations.json, slowest first, and
    the files that took longest printed, so a test that grew is seen the day it grows; under xdist, each worker's
    seconds too (the suite's and the reference-truth tests'), so the two can be evened out by moving tests into or
    out of BESIDE_THE_TRUTH."""
    per_test: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if hasattr(report, "duration") and hasattr(report, "nodeid") and report.nodeid:
                per_test[report.nodeid] = per_test.get(report.nodeid, 0.0) + report.duration
    if not per_test:
        return
    slowest = dict(sorted(((n, round(s, 2)) for n, s in per_test.items()), key=lambda item: -item[1]))
    with contextlib.suppress(OSError):
        DURATIONS_FILE.parent.mkdir(exist_ok=True)
        DURATIONS_FILE.write_text(json.dumps(slowest, indent=1) + "\n")
    per_file: dict[str, float] = {}
    for nodeid, seconds in per_test.items():
        per_file[nodeid.split("::")[0]] = per_file.get(nodeid.split("::")[0], 0.0) + seconds
    terminalreporter.write_line(
        f"seconds of tests: {sum(per_test.values()):.0f} in all, {len(per_test)} tests; the slowest files: "
        + ", ".join(f"{name} {total:.0f} s" for name, total in sorted(per_file.items(), key=lambda i: -i[1])[:12])
        + f" (every test's in {DURATIONS_FILE.relative_to(DURATIONS_FILE.parent.parent)})"
    )
    if getattr(terminalreporter.config.option, "numprocesses", None):
        seconds: dict[str, float] = {}
        for nodeid, total in per_test.items():
            seconds[_scope(nodeid)] = seconds.get(_scope(nodeid), 0.0) + total
        terminalreporter.write_line(
            "seconds of tests per worker: " + ", ".join(f"{name} {total:.0f} s" for name, total in seconds.items())
        )
        alone = alone_summary(terminalreporter.config)
        if alone:
            terminalreporter.write_line(alone)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Under `-n 2` (pyproject's addopts): the tests in BESIDE_THE_TRUTH, minutes of CPU each, run on a worker of
    their own while the rest of the suite runs in order on the other (a scope per worker)."""
    from xdist.scheduler import LoadScheduling, LoadScopeScheduling

    if config.getoption("markexpr", ""):  # a lane of the suite (the quick one): its tests spread over both workers
        return LoadScheduling(config, log)

    class TruthApart(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _scope(nodeid)

    return TruthApart(config, log)


# The machine handed to one test. Each worker marks itself busy while in a test; a `whole_machine` test takes the
# holder's file (only one worker can create it), then waits until no other worker is busy; any other test, once marked
# busy, looks for a holder and, if there is one, unmarks itself and waits until it goes. Each marks before it looks, so
# either the holder sees the test or the test sees the holder: never both running.
TURNS = "whole_machine_turns"  # the folder's key in each worker's input
HOLDER = "machine"
PAUSE_FOR_OTHERS_S = 300.0  # the longest a holder waits for another worker to finish the test it is in
HOLD_AT_MOST_S = 1800.0  # the longest a worker waits for the machine back (the holder's test timeout is 900 s)
_POLL_S = 0.1
_turns_key = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput") and config.getoption("numprocesses", None):
        config.stash[_turns_key] = Path(tempfile.mkdtemp(prefix="wb-test-turns-"))


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_turns_key, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist's controller, as it starts each worker: the folder where the workers take turns."""
    folder = node.config.stash.get(_turns_key, None)
    if folder is not None:
        node.workerinput[TURNS] = str(folder)


def _worker(config: pytest.Config) -> tuple[Path, str] | None:
    workerinput = getattr(config, "workerinput", None)
    if not workerinput or TURNS not in workerinput:
        return None
    return Path(workerinput[TURNS]), workerinput["workerid"]


def _mark(path: Path, me: str) -> None:
    path.write_text(f"{me} {os.getpid()}", encoding="utf-8")


def _owner(path: Path) -> str | None:
    """The worker that wrote `path`, if the file is there and its process alive (a dead one's file is removed)."""
    try:
        worker, pid = path.read_text(encoding="utf-8").split()
    except (OSError, ValueError):
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        path.unlink(missing_ok=True)
        return None
    except PermissionError:  # alive, another user's
        pass
    return worker


def _wait(condition: Any, limit_s: float) -> None:
    started = time.monotonic()
    while not condition() and time.monotonic() - started < limit_s:
        time.sleep(_POLL_S)


@contextlib.contextmanager
def taking_part(folder: Path, me: str) -> Iterator[None]:
    """Worker `me` in a test that shares the machine: busy while in it, after waiting out any holder."""
    busy = folder / f"busy.{me}"
    while True:
        _mark(busy, me)
        if _owner(folder / HOLDER) in (None, me):
            break
        busy.unlink(missing_ok=True)
        _wait(lambda: _owner(folder / HOLDER) is None, HOLD_AT_MOST_S)
    try:
        yield
    finally:
        busy.unlink(missing_ok=True)


@contextlib.contextmanager
def machine_to_itself(folder: Path, me: str) -> Iterator[dict[str, float]]:
    """Worker `me` holds the machine for one test: it takes the holder's file (after another holder's turn), waits
    until no other worker is in a test (at most PAUSE_FOR_OTHERS_S), and lets go when the test is done. Yields the
    seconds it waited for the others, and (once done) how long it held the machine."""
    times, started = {"waited_s": 0.0, "held_s": 0.0}, time.monotonic()
    while True:
        try:
            os.close(os.open(folder / HOLDER, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            _wait(lambda: _owner(folder / HOLDER) is None, HOLD_AT_MOST_S)
            continue
        _mark(folder / HOLDER, me)  # read as no holder until written: the busy marks still keep both from running
        break

    def others_between_tests() -> bool:
        return all(_owner(busy) in (None, me) for busy in folder.glob("busy.*"))

    _wait(others_between_tests, PAUSE_FOR_OTHERS_S)
    times["waited_s"] = time.monotonic() - started
    try:
        yield times
    finally:
        times["held_s"] = time.monotonic() - started - times["waited_s"]
        (folder / HOLDER).unlink(missing_ok=True)


ALONE_LOG = "alone.jsonl"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """Under xdist, around each test (outside its setup, call and teardown): a `whole_machine` test holds the
    machine, any other takes part in it."""
    worker = _worker(item.config)
    if worker is None:
        return (yield)
    folder, me = worker
    if item.get_closest_marker("whole_machine") is None:
        with taking_part(folder, me):
            return (yield)
    with machine_to_itself(folder, me) as times:
        result = yield
    with (folder / ALONE_LOG).open("a", encoding="utf-8") as log:
        log.write(json.dumps({"test": item.nodeid, **{k: round(v, 1) for k, v in times.items()}}) + "\n")
    return result


def alone_summary(config: pytest.Config) -> str | None:
    """The controller's line on the tests that held the machine: how long each waited for the others and held it."""
    folder = config.stash.get(_turns_key, None)
    if folder is None:  # no workers (`-n 0`): nobody took turns
        return None
    try:
        rows = [json.loads(line) for line in (folder / ALONE_LOG).read_text(encoding="utf-8").splitlines()]
    except (OSError, ValueError):  # no test held the machine, or a line cut short
        return None
    return "the machine to itself: " + ", ".join(
        f"{row['test']} (waited {row['waited_s']:.0f} s for the other worker, held it {row['held_s']:.0f} s)"
        for row in rows
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`whole_machine` tests first (a stable sort, the same on every worker): the machine is handed over while the
    other worker's tests are its first, short ones."""
    items.sort(key=lambda item: item.get_closest_marker("whole_machine") is None)

"""The house's own figures (issue 73), written into docs/development.md: modules at the top of `rerankers/`, imports
up a floor and circles between files or folders (the layout test's own rules), the longest parameter list of the
evaluation's face, duplicate pairs in the package (the `duplicates` command, where it is on the PATH), functions over
complexity 10 (ruff's C901), and the suite's time: CI's on a fresh clone (set-up and tests apart, from the clone's
`build/ci-times.json`, which `.ci/run` writes, and its `build/test-durations.json`) and the quick lane's, run here.

    .venv/bin/python scripts/house_figures.py --ci-dir ../fresh --quick-lane   # after `bash .ci/run` in ../fresh
    .venv/bin/python scripts/house_figures.py                                  # the code's figures; CI's kept
    .venv/bin/python scripts/house_figures.py --write                          # the block again from the record
"""

from __future__ import annotations

import inspect
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from figures_blocks import FIGURES, REPO, script_main, stamp

RECORD = FIGURES / "house.json"
PREFIX = "house-"
QUICK_LANE = ["-m", "not slow and not browser and not live_server", "-q", "-p", "no:randomly"]
LONG_TEST_S = 120


def add_options(parser: Any) -> None:
    """--ci-dir (a clone where `.ci/run` ran) and --quick-lane (run the quick lane here and time it)."""
    parser.add_argument("--ci-dir", help="a fresh clone where `bash .ci/run` ran: its set-up and test times")
    parser.add_argument("--quick-lane", action="store_true", help="run the quick lane here and time it")


def _code() -> dict[str, Any]:
    from tests import test_layout as layout
    from tests.evaluation.test_steps import FACE

    graph = layout._graph()
    packages = sorted(name for name, path in layout.MODULES.items() if path.name == "__init__.py")
    longest = max(FACE, key=lambda f: len(inspect.signature(f).parameters))
    complex_ = subprocess.run(
        [str(REPO / ".venv" / "bin" / "ruff"), "check", "--select", "C901", "--output-format", "json", "--exit-zero",
         str(REPO / "workbench")], capture_output=True, text=True, check=True,
    )  # fmt: skip
    duplicates = None
    if shutil.which("duplicates"):
        said = subprocess.run(["duplicates", "--most", "1", "--seconds", "120"], cwd=REPO / "workbench",
                              capture_output=True, text=True, check=False).stdout  # fmt: skip
        found = re.match(r"(\d+) pairs of places", said)
        duplicates = int(found.group(1)) if found else None
    return {
        "rerankers_top_modules": len(list((REPO / "workbench" / "rerankers").glob("*.py"))),
        "upward_imports": len(layout._upward(graph)),
        "file_circles": len(layout._circles(graph)),
        "folder_circles": sum(len(layout._circles(layout._folder_graph(graph, p))) for p in packages),
        "face_longest": {"name": longest.__qualname__, "parameters": len(inspect.signature(longest).parameters)},
        "over_complexity_10": len(json.loads(complex_.stdout or "[]")),
        "duplicate_pairs": duplicates,
    }


def _ci(folder: Path) -> dict[str, Any]:
    from tests.scheduling import _scope  # which worker a test runs on (the reference-truth one, or the suite's)

    times = json.loads((folder / "build" / "ci-times.json").read_text(encoding="utf-8"))
    durations: dict[str, float] = json.loads((folder / "build" / "test-durations.json").read_text(encoding="utf-8"))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=folder, capture_output=True, text=True,
                            check=True).stdout.strip()  # fmt: skip
    return {
        "commit": commit, "setup_s": times["setup_s"], "tests_s": times["tests_s"], "exit": times["exit"],
        "tests": len(durations), "test_seconds": round(sum(durations.values())),
        "slowest": dict(list(durations.items())[:5]),
        "over_120_s": sum(1 for seconds in durations.values() if seconds > LONG_TEST_S),
        "workers": {scope: round(sum(s for n, s in durations.items() if _scope(n) == scope))
                    for scope in ("reference-truth", "suite")},
    }  # fmt: skip


def _quick_lane() -> dict[str, Any]:
    started = time.perf_counter()
    done = subprocess.run([str(REPO / ".venv" / "bin" / "python"), "-m", "pytest", *QUICK_LANE], cwd=REPO,
                          capture_output=True, text=True, check=False)  # fmt: skip
    passed = re.search(r"(\d+) passed", done.stdout)
    return {"seconds": round(time.perf_counter() - started), "passed": int(passed.group(1)) if passed else 0,
            "exit": done.returncode}  # fmt: skip


def measure(shared: Path, ci_dir: str | None = None, quick_lane: bool = False) -> dict[str, Any]:
    """The code's figures now; CI's and the quick lane's measured anew when asked, else as kept."""
    kept: dict[str, Any] = json.loads(RECORD.read_text(encoding="utf-8")) if RECORD.exists() else {}
    record = {"code": _code(), "ci": _ci(Path(ci_dir)) if ci_dir else kept.get("ci"),
              "quick_lane": _quick_lane() if quick_lane else kept.get("quick_lane"),
              "backend": "none (the code and the suite's own times)"}  # fmt: skip
    return stamp(record)


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


def render(name: str, kept: dict[str, Any]) -> str:
    """`house-figures`: the house's figures, each with its goal."""
    code, ci, lane, m = kept["code"], kept.get("ci"), kept.get("quick_lane"), kept["machine"]
    lines = [
        f"- Modules at the top of `rerankers/`: {code['rerankers_top_modules']} (goal at most 12).",
        f"- Imports up a floor: {code['upward_imports']}; circles between files: {code['file_circles']}, between the "
        f"folders and modules side by side in a package: {code['folder_circles']} (goal 0 each; "
        "`tests/test_layout.py`).",
        f"- The longest parameter list of the evaluation's face: {code['face_longest']['parameters']} "
        f"(`{code['face_longest']['name']}`; goal at most 8; `tests/evaluation/test_steps.py`).",
        f"- Functions over complexity 10 (ruff's C901) in the package: {code['over_complexity_10']}.",
        "- Duplicate pairs in the package (`duplicates`): "
        + (str(code["duplicate_pairs"]) if code["duplicate_pairs"] is not None else "not measured (no `duplicates`)")
        + ".",
    ]
    if ci:
        slowest = ", ".join(f"`{n.split('::')[-1][:60]}` {s:.0f} s" for n, s in ci["slowest"].items())
        lines.append(
            f"- CI on a fresh clone at {ci['commit']} (`bash .ci/run`): set-up {_minutes(ci['setup_s'])}, tests "
            f"{_minutes(ci['tests_s'])} (goal at most 30 min), exit {ci['exit']}; {ci['tests']:,} tests, "
            f"{ci['test_seconds']:,} test-seconds (the reference-truth worker {ci['workers']['reference-truth']:,} s, "
            f"the suite's {ci['workers']['suite']:,} s); {ci['over_120_s']} over {LONG_TEST_S} s. The slowest: "
            f"{slowest}."
        )
    if lane:
        lines.append(
            f"- The quick lane (`pytest {' '.join(repr(a) if ' ' in a else a for a in QUICK_LANE)}`): "
            f"{lane['passed']:,} passed in {_minutes(lane['seconds'])} (goal at most 5 min), exit {lane['exit']}."
        )
    lines.append(
        f"\nMeasured by `scripts/house_figures.py` on {kept['measured_at']}: {m['cpu']} ({m['cores']} cores, "
        f"{m['vector']}), workbench {kept['versions'].get('rerank-workbench', '?')}."
    )
    return "\n".join(lines) + "\n"


def footer(kept: dict[str, Any]) -> str:
    return f"house: {json.dumps(kept['code'])}"


if __name__ == "__main__":
    sys.exit(script_main(sys.argv[1:], sys.modules[__name__]))

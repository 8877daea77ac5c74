"""README command 1's wait: seconds from `workbench app` (and `workbench serve`) to the first answer, on a fresh
machine (an empty data folder and an empty user cache: the demo is built and nothing was ever measured) and on a
machine that measured before (an empty data folder, the cache of an earlier run: a new clone, say).

    python bench/first_start.py [--rounds 2]

`app` is ready when Streamlit's /_stcore/health answers 200; `serve` when /health says `ready` (its models loaded).
Each start is stopped once it answers. A fresh start's backend measurement then runs in the background; the
"measured before" rounds use a cache that `workbench doctor` filled first.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from _output import add_json_option, keep

WORKBENCH = str(Path(sys.executable).parent / "workbench")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answered(url: str, ready: str | None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            body = response.read().decode()
    except Exception:
        return False
    return ready is None or json.loads(body).get("status") == ready


def seconds_to_answer(command: str, cache: Path, timeout: float = 600) -> float:
    """Start `workbench <command>` on an empty data folder with `cache` as the user cache; seconds to its answer."""
    port = free_port()
    env = dict(os.environ, WORKBENCH_DATA_DIR=tempfile.mkdtemp(prefix="wb-first-"), WORKBENCH_CACHE_DIR=str(cache))
    argv = [WORKBENCH, command, "--port", str(port)] + (["--headless"] if command == "app" else [])
    url, ready = (
        (f"http://127.0.0.1:{port}/_stcore/health", None)
        if command == "app"
        else (f"http://127.0.0.1:{port}/health", "ready")
    )
    started = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while time.perf_counter() - started < timeout:
            if process.poll() is not None:
                raise RuntimeError(f"workbench {command} exited with {process.returncode}")
            if _answered(url, ready):
                return time.perf_counter() - started
            time.sleep(0.2)
        raise TimeoutError(f"workbench {command} did not answer within {timeout:.0f} s")
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    add_json_option(parser)
    args = parser.parse_args()
    measured = Path(tempfile.mkdtemp(prefix="wb-cache-measured-"))
    began = time.perf_counter()
    subprocess.run([WORKBENCH, "doctor"], env=dict(os.environ, WORKBENCH_CACHE_DIR=str(measured)), check=True,
                   capture_output=True)  # fmt: skip
    doctor_seconds = time.perf_counter() - began
    print(f"`workbench doctor` measured the backends into a cache in {doctor_seconds:.0f} s")
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for command in ("app", "serve"):
            fresh = Path(tempfile.mkdtemp(prefix="wb-cache-fresh-"))
            times.setdefault((command, "fresh machine"), []).append(seconds_to_answer(command, fresh))
            times.setdefault((command, "measured before"), []).append(seconds_to_answer(command, measured))
    for (command, machine), seconds in times.items():
        print(f"workbench {command:<5} on a {machine:<16}: median {statistics.median(seconds):5.1f} s to answer "
              f"({', '.join(f'{s:.1f}' for s in seconds)})")  # fmt: skip
    keep(args, {"rounds": args.rounds, "doctor_seconds": doctor_seconds, "starts": {
        command: {machine: statistics.median(seconds) for (c, machine), seconds in times.items() if c == command}
        for command in ("app", "serve")}})  # fmt: skip


if __name__ == "__main__":
    main()

"""Fast by default (issue 76): on a fresh machine (an empty data folder and an empty user cache: no backend measured,
none audited), how long until the README's default reranker runs a faster backend that the parity audit found
faithful, with no command typed. `workbench serve` (the app's process runs the same background work) answers one
demo query every --every seconds; after each, /health says which backend the reranker runs on.

    python bench/first_audit.py [--queries 20] [--every 15] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from _output import add_json_option, keep
from first_start import WORKBENCH, free_port

DEMO_QUERIES = Path(__file__).resolve().parents[1] / "workbench" / "demo_data" / "queries.jsonl"


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read().decode())


def _post(url: str, body: dict) -> dict:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read().decode())


def _backend(health: dict) -> tuple[str, bool]:
    """The reranker's backend as /health says it ('torch:cpu', 'openvino-bf16:cpu'), and whether it is still being
    measured or audited in the background."""
    said = health.get("models", {}).get("reranker", "")
    found = re.search(r"\(([^,)]+)(, its backends being measured in the background)?\)", said)
    return (found.group(1), found.group(2) is not None) if found else ("not loaded", True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--every", type=float, default=15.0, help="seconds between queries")
    parser.add_argument("--wait", type=float, default=900.0, help="seconds to wait for the switch after the queries")
    add_json_option(parser)
    args = parser.parse_args()
    queries = [json.loads(line)["text"] for line in DEMO_QUERIES.read_text(encoding="utf-8").splitlines()]
    port = free_port()
    env = dict(
        os.environ, WORKBENCH_DATA_DIR=tempfile.mkdtemp(prefix="wb-first-audit-data-"),
        WORKBENCH_CACHE_DIR=tempfile.mkdtemp(prefix="wb-first-audit-cache-"), RERANKER_BACKEND="auto",
        WORKBENCH_CALIBRATE_BACKENDS="1", WORKBENCH_AUTO_AUDIT="true",
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    process = subprocess.Popen(
        [WORKBENCH, "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    rows, switched = [], None
    try:
        while True:
            try:
                if _get(f"{url}/health").get("status") == "ready":
                    break
            except Exception:
                pass
            if process.poll() is not None or time.perf_counter() - started > 600:
                raise SystemExit("workbench serve did not become ready")
            time.sleep(0.5)
        ready = time.perf_counter() - started
        for i in range(args.queries):
            time.sleep(max(0.0, ready + i * args.every - (time.perf_counter() - started)))
            answer = _post(f"{url}/search", {"query": queries[i % len(queries)], "top_k": 5})
            backend, busy = _backend(_get(f"{url}/health"))
            at = time.perf_counter() - started
            rows.append({"query": i + 1, "at_s": round(at, 1), "backend": backend, "checking": busy,
                         "rerank_ms": answer["timings"]["rerank_ms"]})  # fmt: skip
            print(rows[-1], flush=True)
            if switched is None and not busy and not backend.startswith("torch"):
                switched = at
        while switched is None and time.perf_counter() - started < ready + args.queries * args.every + args.wait:
            backend, busy = _backend(_get(f"{url}/health"))
            if not busy:
                switched = time.perf_counter() - started if not backend.startswith("torch") else None
                break
            time.sleep(2)
        final, _ = _backend(_get(f"{url}/health"))
    finally:
        process.terminate()
        _, log = process.communicate(timeout=60)
    said = [line for line in log.splitlines() if "parity audit" in line or "Checking" in line]
    figures = {
        "ready_s": ready, "queries": rows, "switched_s": switched, "final_backend": final,
        "on_faster": sum(not r["backend"].startswith("torch") for r in rows), "log": said[-3:],
    }  # fmt: skip
    print(json.dumps({k: v for k, v in figures.items() if k != "queries"}, indent=2))
    keep(args, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())

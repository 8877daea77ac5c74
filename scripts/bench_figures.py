"""The speed figures that docs/performance.md and the README quote: each `bench/` script run once with `--json`, its
figures kept with the machine, the versions and the date, and written into the documents' `bench-*` blocks, so that
no speed figure there is copied by hand.

    .venv/bin/python scripts/bench_figures.py                          # every bench (about 50 minutes on 2 cores)
    .venv/bin/python scripts/bench_figures.py --only http_load,cli_imports   # some again; the others kept
    .venv/bin/python scripts/bench_figures.py --write                  # write the blocks again from the record

Every bench runs with the reranker on fp32 torch (RERANKER_BACKEND=torch), offline, in one data folder (`--data-dir`,
default a fresh one): the SciFact benches ingest SciFact there the first time. `http_load` runs against a
`workbench serve` this script starts on a free port, and the Infinity benches need `.venv-infinity`
(`scripts/setup.sh --test`). The record is `docs/figures/bench.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_render import RENDERERS
from figures_blocks import FIGURES, REPO, script_main, stamp

RECORD = FIGURES / "bench.json"
PREFIX = "bench-"
SCIFACT = "{shared}/data/scifact"
BENCHES: dict[str, list[str]] = {  # each bench's arguments, as its block quotes them
    "search_latency": ["bench/search_latency.py", "--dataset", SCIFACT, "--queries", "30"],
    "compare_pipeline": ["bench/compare_pipeline.py", "--dataset", SCIFACT, "--queries", "20"],
    "concurrent_queries": ["bench/concurrent_queries.py"],
    "evaluate_twice": ["bench/evaluate_twice.py", "--models", "{shared}/models"],
    "explain_cost": ["bench/explain_cost.py"],
    "batching_overhead": ["bench/batching_overhead.py"],
    "app_first_list": ["bench/app_first_list.py"],
    "app_fastest": [
        "bench/app_first_list.py",
        "--reranker-backend",
        "openvino-bf16",
        "--embedding-backend",
        "openvino",
    ],
    "app_floor": ["bench/app_first_list.py", "--bare"],
    "http_load": ["bench/http_load.py", "--clients", "8", "--queries", "20", "--url", "{url}"],
    "remote_concurrency": ["bench/remote_concurrency.py"],
    "remote_replicas": ["bench/remote_concurrency.py", "--replicas", "--levels", "1,2,4,8"],
    "remote_infinity": ["bench/remote_concurrency.py", "--infinity"],
    "ray_overhead": ["bench/ray_overhead.py"],
    "remote_embedding": ["bench/remote_embedding.py", SCIFACT],
    "ingest_sort": ["bench/ingest_sort.py", SCIFACT],
    "embedding_backends": ["bench/embedding_backends.py", SCIFACT],
    "first_start": ["bench/first_start.py"],
    "first_audit": ["bench/first_audit.py"],
    "cli_imports": ["bench/cli_imports.py", "--repeat", "5", "--data-dir", "{data}"],
    "newcomer_walk": ["bench/newcomer_walk.py"],
    "quantized_backends": ["bench/quantized_backends.py"],
}


# what ranks in each bench, as its block says it: the local model, or what stands in for it
BACKEND_OF = {
    "batching_overhead": "none (a stand-in model: a fixed time a call and a pair)",
    "remote_concurrency": "a local /rerank server answering after 200 ms",
    "remote_replicas": "local /rerank servers answering after 200 ms",
    "remote_infinity": "Infinity (torch, CPU) and torch:cpu in the evaluating process",
    "remote_embedding": "none (the embedder, local and served)",
    "ingest_sort": "none (the embedder)",
    "app_fastest": "openvino-bf16 (named), the embedder on openvino",
    "app_floor": "none (a bare Streamlit page)",
    "embedding_backends": "none (the embedder, on torch and on openvino)",
    "cli_imports": "none (imports only)",
    "newcomer_walk": "the README's default (auto: torch until this machine's backends are measured)",
    "quantized_backends": "each named: torch:cpu, openvino, openvino-bf16, openvino-int8",
    "first_audit": "the README's default (auto), measured and audited in the background from a fresh machine",
}


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only", help="comma-separated benches to run again (default: all): " + ", ".join(BENCHES))
    parser.add_argument("--data-dir", type=Path, help="the data folder the benches share (default: a fresh one)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serving(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    """`workbench serve` on the demo, on a free port, once /health says ready."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    command = [str(Path(sys.executable).parent / "workbench"), "serve", "--port", str(port)]
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:  # our own server on 127.0.0.1
                if json.loads(answer.read()).get("status") == "ready":
                    return server, url
        except OSError:
            pass
        time.sleep(0.5)
    server.kill()
    raise SystemExit("workbench serve did not say ready within 600 s")


def run_bench(name: str, shared: Path, data: Path, env: dict[str, str]) -> dict[str, Any]:
    """One bench run with `--json`: its figures, the command that made them, and the machine it ran on."""
    server, url = _serving(env) if name == "http_load" else (None, "")
    argv = [part.format(shared=shared, data=data, url=url) for part in BENCHES[name]]
    try:
        with tempfile.TemporaryDirectory(prefix="bench-figures-") as folder:
            out = Path(folder) / "figures.json"
            print(f"== {name}: python {' '.join(argv)}", flush=True)
            subprocess.run([sys.executable, *argv, "--json", str(out)], cwd=REPO, env=env, check=True)
            figures = json.loads(out.read_text(encoding="utf-8"))
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=60)
    shown = [part.format(shared="../shared", data="DATA", url="http://127.0.0.1:PORT") for part in BENCHES[name]]
    return stamp(
        {"command": "python " + " ".join(shown), "figures": figures, "backend": BACKEND_OF.get(name, "torch:cpu")}
    )


def measure(shared: Path, only: str | None = None, data_dir: Path | None = None) -> dict[str, Any]:
    """Every bench (or those named in `only`) run in one data folder; any other kept from the last record."""
    chosen = [name.strip() for name in only.split(",")] if only else list(BENCHES)
    unknown = sorted(set(chosen) - set(BENCHES))
    if unknown:
        raise SystemExit(f"no bench named {', '.join(unknown)}; the benches: {', '.join(BENCHES)}")
    kept = json.loads(RECORD.read_text(encoding="utf-8"))["benches"] if RECORD.exists() else {}
    data = data_dir or Path(tempfile.mkdtemp(prefix="bench-figures-data-"))
    env = {**os.environ, "WORKBENCH_DATA_DIR": str(data), "WORKBENCH_MODELS_DIR": str(shared / "models"),
           "RERANKER_MODEL": "minilm-l6-qa-reranker", "RERANKER_BACKEND": "torch", "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}  # fmt: skip
    for name in chosen:  # the record is kept after each bench, so that one that fails loses no other
        kept[name] = run_bench(name, shared.resolve(), data.resolve(), env)
        record = stamp({"benches": {n: kept[n] for n in BENCHES if n in kept}, "backend": "torch:cpu"})
        RECORD.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return record


def footer(record: dict[str, Any]) -> str:
    m = record["machine"]
    return f"{len(record['benches'])} benches kept; the last written on {record['measured_at']} on {m['cpu']}."


def render(name: str, record: dict[str, Any]) -> str:
    """The text of one block, from the record."""
    draw: Callable[[dict[str, Any]], str] = RENDERERS[name]
    return draw(record["benches"])


if __name__ == "__main__":
    raise SystemExit(script_main(sys.argv[1:], sys.modules[__name__]))

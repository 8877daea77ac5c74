"""An evaluation against a reranker that is a service: wall time one search at a time against
WORKBENCH_RERANK_CONCURRENCY searches at once, on local Cohere-style `/rerank` servers that take a fixed time per
request, and whether the figures are the same to the last digit.

    python bench/remote_concurrency.py                    # demo, 50 queries, 200 ms per request, 1 / 2 / 4 at once
    python bench/remote_concurrency.py --replicas --levels 1,2,4,8   # replicas answering one request at a time
    python bench/remote_concurrency.py --infinity         # real Infinity serving the QA cross-encoder, 1 / 2 / 4

Without --replicas there is one server that answers any number of requests at once (a GPU server with room, or
replicas behind a load balancer). With --replicas, level N starts N servers that each answer one request at a
time (a GPU busy with one batch) and names them all in the reranker id (`http://a,http://b`, asked in turn), at
WORKBENCH_RERANK_CONCURRENCY 1 (searches at once: one per replica). After the rounds, the largest pool runs once more
with its first replica stopped halfway through: the searches go on on the others, and the figures are the same.
Each server is a process of its own, as a real one is: in this process it would take the
interpreter lock from the evaluation it serves. The levels are interleaved over rounds; each prints its median
wall time, the ideal (requests × delay / N) and the ratio of the two.

With --infinity the server is real Infinity (from .venv-infinity, `scripts/setup.sh --test`) serving the shipped QA
cross-encoder offline on this machine's CPU, which batches requests that arrive together; each level prints its
wall time and its speed-up over one at a time, beside the same model run in this process.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import uvicorn
from _output import add_json_option, keep
from fastapi import FastAPI, Request

from workbench.config import Settings
from workbench.engine import Engine
from workbench.evaluation import evaluate_dataset
from workbench.evaluation.service import Listeners
from workbench.models import resolve_model
from workbench.services.demo import DEMO_COLLECTION, demo_dataset, ensure_demo_collection

INFINITY = Path(__file__).resolve().parents[1] / ".venv-infinity" / "bin" / "infinity_emb"
QA_RERANKER = "minilm-l6-qa-reranker"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def slow_server(delay: float, one_at_a_time: bool = False) -> FastAPI:
    app = FastAPI()
    busy = asyncio.Lock() if one_at_a_time else None

    @app.post("/rerank")
    async def rerank(request: Request) -> dict:
        body = await request.json()
        if busy is None:
            await asyncio.sleep(delay)
        else:
            async with busy:
                await asyncio.sleep(delay)
        scores = [len(set(body["query"].lower().split()) & set(d.lower().split())) for d in body["documents"]]
        top = max(scores) or 1
        ranked = sorted(range(len(scores)), key=lambda i: -scores[i])
        return {"results": [{"index": i, "relevance_score": scores[i] / top} for i in ranked]}

    return app


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--levels", default="1,2,4")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--replicas", action="store_true", help="level N: N one-at-a-time servers, in turn")
    parser.add_argument("--infinity", action="store_true", help="real Infinity serving the QA cross-encoder")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)  # a server's own process: its port
    parser.add_argument("--one-at-a-time", action="store_true", help=argparse.SUPPRESS)
    add_json_option(parser)
    args = parser.parse_args()
    if args.serve:
        uvicorn.run(slow_server(args.delay, args.one_at_a_time), host="127.0.0.1", port=args.serve, log_level="error")
        return 0
    levels = [int(x) for x in args.levels.split(",")]
    servers: list[subprocess.Popen[bytes]] = []

    def started(one_at_a_time: bool) -> str:
        port = free_port()
        command = [sys.executable, __file__, "--serve", str(port), "--delay", str(args.delay)]
        servers.append(subprocess.Popen([*command, *(["--one-at-a-time"] if one_at_a_time else [])]))
        return answering(f"http://127.0.0.1:{port}", 60)

    def started_infinity() -> str:
        port = free_port()
        folder = resolve_model(QA_RERANKER, Settings(), setting="RERANKER_MODEL")
        command = [str(INFINITY), "v2", "--model-id", folder, "--host", "127.0.0.1", "--port", str(port),
                   "--engine", "torch", "--device", "cpu"]  # fmt: skip
        env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": tempfile.mkdtemp(prefix="infinity-"),
               "INFINITY_ANONYMOUS_USAGE_STATS": "0"}  # fmt: skip
        servers.append(subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        return answering(f"http://127.0.0.1:{port}", 240, "/health")

    if args.infinity:
        url = started_infinity()
        reranker_of: dict[int | str, str] = {level: url for level in levels}
        reranker_of["local"] = QA_RERANKER
    elif args.replicas:
        urls = [started(True) for _ in range(max(levels))]
        reranker_of = {level: ",".join(urls[:level]) for level in levels}
    else:
        url = started(False)
        reranker_of = {level: url for level in levels}
    base = Engine(Settings())
    ensure_demo_collection(base)
    dataset = demo_dataset()
    walls: dict[int | str, list[float]] = {level: [] for level in reranker_of}
    afters: dict[int | str, dict[str, float]] = {}
    for _ in range(args.rounds):
        for level in reranker_of:
            at_once = level if isinstance(level, int) and not args.replicas else 1  # replicas: 1 each
            engine = Engine(base.settings.model_copy(update={"rerank_concurrency": at_once}), registry=base.registry,
                            embedder=base.embedder())  # fmt: skip
            plan = engine.plan(collection=DEMO_COLLECTION, k=20, top_n=10, reranker=reranker_of[level])
            begun = time.perf_counter()
            report = evaluate_dataset(engine, dataset, plan, max_queries=args.queries)
            walls[level].append(time.perf_counter() - begun)
            afters[level] = report.after
    same = all(afters[level] == afters[levels[0]] for level in levels)
    stopped: dict[str, float | bool] = {}
    if args.replicas:  # the largest pool once more, its first replica stopped halfway through
        engine = Engine(base.settings.model_copy(update={"rerank_concurrency": 1}), registry=base.registry,
                        embedder=base.embedder())  # fmt: skip
        plan = engine.plan(collection=DEMO_COLLECTION, k=20, top_n=10, reranker=reranker_of[max(levels)])

        def halfway(done: int, total: int) -> None:
            if done == total // 2 and servers[0].poll() is None:
                servers[0].terminate()

        begun = time.perf_counter()
        report = evaluate_dataset(
            engine, dataset, plan, max_queries=args.queries, listeners=Listeners(progress=halfway)
        )
        stopped = {"wall": time.perf_counter() - begun, "same": report.after == afters[levels[0]]}
        same = same and bool(stopped["same"])
    if args.infinity:
        gap = max(abs(afters["local"][name] - afters[levels[0]][name]) for name in afters["local"])
        print(f"{args.queries} queries, k = 20, Infinity serving {QA_RERANKER}; figures the same at every level: "
              f"{same}; largest gap to the local model's figures: {gap:.1e}")  # fmt: skip
        for level in levels:
            wall = statistics.median(walls[level])
            print(f"  concurrency {level}: {wall:.2f} s ({statistics.median(walls[1]) / wall:.2f}× one at a time)")
        print(f"  the same model in this process: {statistics.median(walls['local']):.2f} s")
        keep(args, {
            "server": "infinity", "queries": args.queries, "k": 20, "rounds": args.rounds, "same": same, "gap": gap,
            "levels": {str(level): statistics.median(walls[level]) for level in levels},
            "local": statistics.median(walls["local"]), "local_backend": base.reranker().backend,
        })  # fmt: skip
        stop(servers)
        return 0 if same else 1
    shape = "one-at-a-time replicas, in turn" if args.replicas else "one server"
    print(f"{args.queries} queries, {args.delay * 1000:.0f} ms per request, {shape}; figures the same: {same}")
    for level in levels:
        wall = statistics.median(walls[level])
        ideal = args.queries * args.delay / level
        what = f"{level} replicas at concurrency {level}" if args.replicas else f"concurrency {level}"
        print(f"  {what}: {wall:.2f} s (ideal {ideal:.2f} s, {wall / ideal:.2f}×)")
    if stopped:
        print(f"  {max(levels)} replicas, one stopped halfway: {stopped['wall']:.2f} s; figures the same: "
              f"{stopped['same']}")  # fmt: skip
    keep(args, {
        "server": "replicas" if args.replicas else "one", "queries": args.queries, "k": 20, "rounds": args.rounds,
        "delay_ms": args.delay * 1000, "same": same,
        "levels": {str(level): statistics.median(walls[level]) for level in levels},
        **({"one_stopped": stopped} if stopped else {}),
    })  # fmt: skip
    stop(servers)
    return 0 if same else 1


def answering(url: str, within: float, path: str = "") -> str:
    """`url` once it answers, or exit after `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            httpx.get(url + path, timeout=2)
            return url
        except httpx.TransportError:
            time.sleep(0.2)
    raise SystemExit(f"the server at {url} did not start within {within:.0f} s")


def stop(servers: list[subprocess.Popen[bytes]]) -> None:
    for server in servers:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    raise SystemExit(main())

"""An evaluation against a reranker that is a service: wall time one search at a time against
WORKBENCH_RERANK_CONCURRENCY searches at once, on local Cohere-style `/rerank` servers that take a fixed time per
request, and whether the figures are the same to the last digit.

    python bench/remote_concurrency.py                    # demo, 50 queries, 200 ms per request, 1 / 2 / 4 at once
    python bench/remote_concurrency.py --replicas         # 1 / 2 / 4 replicas, each answering one request at a time

Without --replicas there is one server that answers any number of requests at once (a GPU server with room, or
replicas behind a load balancer). With --replicas, level N starts N servers that each answer one request at a
time (a GPU busy with one batch) and names them all in the reranker id (`http://a,http://b`, asked in turn), at
concurrency N. Each server is a process of its own, as a real one is: in this process it would take the
interpreter lock from the evaluation it serves. The levels are interleaved over rounds; each prints its median
wall time, the ideal (requests × delay / N) and the ratio of the two.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import sys
import time

import httpx
import uvicorn
from fastapi import FastAPI, Request

from workbench.config import Settings
from workbench.engine import Engine
from workbench.evaluation import evaluate_dataset
from workbench.services.demo import DEMO_COLLECTION, demo_dataset, ensure_demo_collection


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
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)  # a server's own process: its port
    parser.add_argument("--one-at-a-time", action="store_true", help=argparse.SUPPRESS)
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
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(url, timeout=1)
                return url
            except httpx.TransportError:
                time.sleep(0.1)
        raise SystemExit(f"the server on port {port} did not start")

    if args.replicas:
        urls = [started(True) for _ in range(max(levels))]
        reranker_of = {level: ",".join(urls[:level]) for level in levels}
    else:
        url = started(False)
        reranker_of = {level: url for level in levels}
    base = Engine(Settings())
    ensure_demo_collection(base)
    dataset = demo_dataset()
    walls: dict[int, list[float]] = {level: [] for level in levels}
    afters: dict[int, dict[str, float]] = {}
    for _ in range(args.rounds):
        for level in levels:
            engine = Engine(base.settings.model_copy(update={"rerank_concurrency": level}), registry=base.registry,
                            embedder=base.embedder())  # fmt: skip
            plan = engine.plan(collection=DEMO_COLLECTION, k=20, top_n=10, reranker=reranker_of[level])
            begun = time.perf_counter()
            report = evaluate_dataset(engine, dataset, plan, max_queries=args.queries)
            walls[level].append(time.perf_counter() - begun)
            afters[level] = report.after
    same = all(after == afters[levels[0]] for after in afters.values())
    shape = "one-at-a-time replicas, in turn" if args.replicas else "one server"
    print(f"{args.queries} queries, {args.delay * 1000:.0f} ms per request, {shape}; figures the same: {same}")
    for level in levels:
        wall = statistics.median(walls[level])
        ideal = args.queries * args.delay / level
        what = f"{level} replicas at concurrency {level}" if args.replicas else f"concurrency {level}"
        print(f"  {what}: {wall:.2f} s (ideal {ideal:.2f} s, {wall / ideal:.2f}×)")
    for server in servers:
        server.terminate()
        server.wait()
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())

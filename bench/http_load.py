"""N concurrent clients x M queries against a running `workbench serve`, then one client alone.

    .venv/bin/workbench serve &                               # the demo collection, on 127.0.0.1:8000
    python bench/http_load.py --clients 8 --queries 50
    python bench/http_load.py --url http://127.0.0.1:8765 --token "$WORKBENCH_API_TOKEN" --top-k 5 --k 50

Each client sends the demo's sample queries in turn (a different starting point per client) to POST /search,
each tagged so that the result cache does not answer it (--repeat sends them as they are).
Prints p50/p95/max latency, throughput and the error count for the concurrent run and for one client.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
from _output import add_json_option, keep

from workbench.services.demo import demo_dir


def run(
    url: str,
    headers: dict[str, str],
    queries: list[str],
    clients: int,
    per_client: int,
    top_k: int,
    k: int,
    distinct: bool = True,
    phase: str = "",
) -> tuple[list[float], int, float]:
    def client(n: int) -> tuple[list[float], int]:
        latencies, errors = [], 0
        with httpx.Client(base_url=url, headers=headers, timeout=120) as http:
            for i in range(per_client):
                query = queries[(n * 7 + i) % len(queries)]
                if distinct:  # a tag makes every request new to the result cache: each one reranks
                    query = f"{query} ({phase}#{n}.{i})"
                started = time.perf_counter()
                try:
                    response = http.post("/search", json={"query": query, "top_k": top_k, "k": k})
                    ok = response.status_code == 200
                except httpx.HTTPError:
                    ok = False
                latencies.append((time.perf_counter() - started) * 1000)
                errors += not ok
        return latencies, errors

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        outcomes = list(pool.map(client, range(clients)))
    wall = time.perf_counter() - started
    latencies = [value for values, _ in outcomes for value in values]
    return latencies, sum(errors for _, errors in outcomes), wall


def report(label: str, latencies: list[float], errors: int, wall: float) -> dict[str, float]:
    """Print one phase's line; its figures."""
    print(
        f"{label:<22} {len(latencies):5d} requests  p50 {statistics.median(latencies):8.1f} ms  "
        f"p95 {float(np.percentile(latencies, 95)):8.1f} ms  max {max(latencies):8.1f} ms  "
        f"{len(latencies) / wall:6.2f} req/s  errors {errors}"
    )
    return {
        "requests": len(latencies), "p50": statistics.median(latencies), "p95": float(np.percentile(latencies, 95)),
        "max": max(latencies), "per_s": len(latencies) / wall, "errors": errors,
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8765")
    parser.add_argument("--token")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--queries", type=int, default=50, help="queries per client")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("-k", type=int, default=50)
    parser.add_argument("--queries-file", type=Path, default=demo_dir() / "queries.jsonl")
    parser.add_argument(
        "--repeat",
        action="store_true",
        help="send the sample queries as they are (the result "
        "cache then answers repeats); by default each request is tagged so that every one reranks",
    )
    add_json_option(parser)
    args = parser.parse_args()

    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    health = httpx.get(f"{args.url}/health", timeout=10).json()
    if health.get("status") != "ready":
        print(f"the server is not ready: {health}", file=sys.stderr)
        return 1
    queries = [json.loads(line)["text"] for line in args.queries_file.read_text().splitlines() if line.strip()]
    # Distinct queries so that the result cache does not answer; the first pass warms the token cache.
    distinct = not args.repeat
    # Each phase tags its queries differently, so that no phase is answered from an earlier one's results.
    run(args.url, headers, queries, 1, 3, args.top_k, args.k, distinct, phase="warm")
    many = run(args.url, headers, queries, args.clients, args.queries, args.top_k, args.k, distinct, phase="many")
    one = run(args.url, headers, queries, 1, max(args.queries // 2, 5), args.top_k, args.k, distinct, phase="one")
    print(f"{args.url} · models {health.get('models')} · top_k {args.top_k}, k {args.k}")
    figures = {"many": report(f"{args.clients} clients x {args.queries}", *many), "one": report("1 client", *one)}
    keep(args, {"clients": args.clients, "per_client": args.queries, "top_k": args.top_k, "k": args.k,
                "models": health.get("models"), **figures})  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

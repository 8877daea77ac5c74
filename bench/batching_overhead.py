"""What the micro-batcher costs and buys, without a model: a run function that takes a fixed time per call plus a
time per pair stands in for the cross-encoder, so the figures are the batcher's own.

    python bench/batching_overhead.py                  # window 0 (continuous batching) and 3 ms, interleaved

Prints, per window: the single-request overhead (submit -> scores, less the run's own time; median and p95 over
300 requests on an idle batcher), and the throughput of 8 clients submitting 50-pair requests back to back for
2 seconds (requests per second and requests per model call).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import numpy as np
from _output import add_json_option, keep

from workbench.rerankers.local.batching import MicroBatcher

CALL_MS = 4.0  # fixed cost of one model call
PAIR_MS = 0.1  # cost per pair


def fake_model(pairs: list, wanted, done) -> list[float]:  # type: ignore[no-untyped-def]
    time.sleep((CALL_MS + PAIR_MS * len(pairs)) / 1000)
    return [0.0] * len(pairs)


def single_overhead(batcher: MicroBatcher, n: int = 300) -> list[float]:
    own = (CALL_MS + PAIR_MS * 50) / 1000
    overheads = []
    for _ in range(n):
        started = time.perf_counter()
        batcher.submit(list(range(50)))
        overheads.append((time.perf_counter() - started - own) * 1000)
        time.sleep(0.002)  # idle between requests
    return overheads


def throughput(batcher: MicroBatcher, clients: int = 8, seconds: float = 2.0) -> tuple[float, float]:
    done = [0] * clients
    stop = time.perf_counter() + seconds
    runs_before, requests_before = batcher.runs, batcher.requests

    def client(i: int) -> None:
        while time.perf_counter() < stop:
            batcher.submit(list(range(50)))
            done[i] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    runs = batcher.runs - runs_before
    return sum(done) / elapsed, (batcher.requests - requests_before) / max(runs, 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per window (default 3)")
    add_json_option(parser)
    args = parser.parse_args()
    windows = {"window 0 ms": 0.0, "window 3 ms": 0.003}
    overhead: dict[str, list[float]] = {name: [] for name in windows}
    rates: dict[str, list[tuple[float, float]]] = {name: [] for name in windows}
    for _ in range(args.rounds):
        for name, window in windows.items():
            batcher = MicroBatcher(fake_model, window, name=name)
            overhead[name] += single_overhead(batcher, 100)
            rates[name].append(throughput(batcher))
    print(f"stand-in model: {CALL_MS} ms a call + {PAIR_MS} ms a pair; 50 pairs a request; {args.rounds} rounds")
    figures: dict[str, dict[str, float]] = {}
    for name in windows:
        o = overhead[name]
        per_second = statistics.median(r for r, _ in rates[name])
        per_call = statistics.median(c for _, c in rates[name])
        print(
            f"{name}: single-request overhead median {statistics.median(o):.2f} ms, p95 {np.percentile(o, 95):.2f} ms; "
            f"8 clients {per_second:.1f} requests/s, {per_call:.2f} requests per model call"
        )
        figures[name] = {
            "window_ms": windows[name] * 1000, "overhead_p50_ms": statistics.median(o),
            "overhead_p95_ms": float(np.percentile(o, 95)), "requests_per_s": per_second, "requests_per_call": per_call,
        }  # fmt: skip
    keep(args, {"call_ms": CALL_MS, "pair_ms": PAIR_MS, "rounds": args.rounds, "windows": figures})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Measure a cached answer through the whole HTTP path against the original search.

    python -m worker.bench.cache_bench                # starts Redis, 2 workers and the API
    python -m worker.bench.cache_bench --url URL      # against a running service

For each of ``-n`` positions of a benchmark set (default ``Test_L1_R2``, whose
solves take a few hundred ms here), not yet in the shared cache: solve it once
over HTTP (``POST /v1/analyses?wait=30``: one request, answered 200 with the
analysis once done), then ask again ``--repeat`` times (a new job each time: the
first has finished), each answered from the shared cache (``"cache": "hit"``; an
exact answer the cache holds is finished at submission, never queued). Prints,
per position, the engine's time of the original search, the end-to-end time of
the original request and the median end-to-end time of the cached ones, and their
ratio; then the median and the least ratio over the positions whose original
search took at least 100 ms, and the machine's load average (other processes'
work slows the HTTP path as much as the workers).

This is the measurement behind the service's cache figure ("a cached answer comes
back through the whole HTTP path at least 20x faster than the original search");
it is a benchmark, never a timed test (tests check ``"cache": "hit"`` only).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx


def _request(http: httpx.Client, position: str) -> tuple[float, dict[str, Any]]:
    """One analysis over HTTP, as a client would ask for it: ``POST ?wait`` (one request),
    then ``GET ?wait`` only while it is not done; (seconds, result)."""
    start = time.perf_counter()
    # ?wait is bounded by the server (PLYBOT_API_MAX_WAIT_S, 30 s by default)
    response = http.post(
        "/v1/analyses",
        params={"wait": 30},
        json={"game": "connect4", "position": position, "mode": "solve"},
    )
    response.raise_for_status()
    analysis = response.json()
    while analysis["status"] not in ("done", "failed"):
        response = http.get(response.headers["Location"], params={"wait": 30})
        response.raise_for_status()
        analysis = response.json()
    elapsed = time.perf_counter() - start
    if analysis["status"] != "done":
        raise RuntimeError(f"{position}: failed: {analysis['error']}")
    return elapsed, analysis["result"]


@contextlib.contextmanager
def _service(workers: int) -> Iterator[str]:
    """Redis, ``workers`` warm workers and ``plybot serve`` of our own; yields the API URL."""
    from worker.process.processes import PLYBOT, WorkerPool
    from worker.process.redis_server import RedisServer, free_port

    with RedisServer() as redis:
        pool = WorkerPool(redis.url, workers)
        port = free_port()
        env = {**os.environ, "REDIS_URL": redis.url, "PLYBOT_API_RATE_LIMIT": "100000"}
        api = subprocess.Popen(
            [PLYBOT, "serve", "--port", str(port), "--log-level", "warning"], env=env
        )
        try:
            pool.wait_ready()
            url = f"http://127.0.0.1:{port}"
            end = time.monotonic() + 60
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(f"{url}/healthz").status_code == 200:
                        break
                if time.monotonic() > end or api.poll() is not None:
                    raise RuntimeError("plybot serve did not start")
                time.sleep(0.1)
            yield url
        finally:
            api.terminate()
            api.wait(15)
            pool.stop()


def run(url: str, positions: list[str], repeat: int) -> int:
    rows = []
    with httpx.Client(base_url=url, timeout=120) as http:
        for position in positions:
            first_s, first = _request(http, position)
            if first["cache"] == "hit":
                print(f"{position}: already in the shared cache; skipped")
                continue
            cached, engine = [], []
            for _ in range(repeat):
                elapsed, result = _request(http, position)
                if result["cache"] != "hit" or result["score"] != first["score"]:
                    print(f"{position}: repeat answered {result['cache']}, score {result['score']}")
                    return 1
                cached.append(elapsed * 1000)
                engine.append(result["time_ms"])
            median = statistics.median
            rows.append(
                (position, first["time_ms"], first_s * 1000, median(cached), median(engine))
            )
    header = ("position", "search ms", "first e2e ms", "cached e2e ms", "(engine ms)", "ratio")
    print("{:<24} {:>10} {:>13} {:>14} {:>12} {:>7}".format(*header))
    for position, search_ms, first_ms, cached_ms, engine_ms in rows:
        print(
            f"{position:<24} {search_ms:>10.1f} {first_ms:>13.1f} {cached_ms:>14.2f} "
            f"{engine_ms:>12.2f} {first_ms / cached_ms:>6.0f}x"
        )
    slow = [r for r in rows if r[1] >= 100]
    if not slow:
        print("no position's search took >= 100 ms; try a harder set (--set Test_L1_R3)")
        return 1
    ratios = [first / cached for _, _, first, cached, _ in slow]
    print(
        f"\n{len(slow)} positions with search >= 100 ms: median search "
        f"{statistics.median(r[1] for r in slow):.0f} ms, median cached answer over HTTP "
        f"{statistics.median(r[3] for r in slow):.2f} ms; end-to-end speed-up median "
        f"{statistics.median(ratios):.0f}x (min {min(ratios):.0f}x)"
    )
    if hasattr(os, "getloadavg"):
        print(f"load average (1 min) at the end: {os.getloadavg()[0]:.2f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m worker.bench.cache_bench", description=__doc__)
    parser.add_argument("--url", help="a running API (default: start a service of our own)")
    parser.add_argument("--set", default="Test_L1_R2", help="benchmark set (default Test_L1_R2)")
    parser.add_argument("-n", type=int, default=8, help="positions (default 8)")
    parser.add_argument("--repeat", type=int, default=5, help="cached requests per position")
    parser.add_argument("--workers", type=int, default=2, help="workers when starting our own")
    parser.add_argument("--seed", type=int, default=None, help="pick positions reproducibly")
    args = parser.parse_args(argv)

    from engine.bench.sets import find_benchmarks

    found = find_benchmarks()
    if found is None or not (Path(found) / args.set).is_file():
        print(
            f"cache_bench: benchmark set {args.set!r} not found (PLYBOT_BENCHMARKS)",
            file=sys.stderr,
        )
        return 2
    lines = (Path(found) / args.set).read_text().split("\n")
    positions = [line.split()[0] for line in lines if line.strip()]
    positions = random.Random(args.seed).sample(positions, min(args.n, len(positions)))
    if args.url:
        return run(args.url, positions, args.repeat)
    with _service(args.workers) as url:
        return run(url, positions, args.repeat)


if __name__ == "__main__":
    sys.exit(main())

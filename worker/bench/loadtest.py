"""The service under load: throughput, latency and queue overhead for 1 and 2 workers
(``plybot loadtest``, :mod:`worker.bench.cli.loadtest`; a benchmark, never imported by
the service).

For each worker count it starts a fresh Redis and ``plybot worker -n W``, sends
``requests`` analysis jobs at ``concurrency`` through the real client (the path
the API takes), and measures per request: end-to-end latency (submit to result
in the client) and engine time (``result.time_ms``, measured in the worker
around the search). Their difference at that concurrency is mostly waiting for
a free worker; the queue's own overhead (enqueue, wake-up, bookkeeping, result
delivery) is measured in a second pass where a worker is always free
(concurrency = workers, and each lane pauses :data:`PROBE_GAP_S` after an
answer, so the worker is back at the queue, its after-job clearing done):
end-to-end minus engine time there. It checks that
every request got exactly one result, from a job that ran exactly once, with the
expected score where the benchmark set knows it (exact solves).

The jobs are distinct positions of a Pons benchmark set, solved exactly by
default (``plybot loadtest``: 40 of Test_L1_R2, the compiled solver, pure CPU, no
I/O; the overhead pass: Test_L2_R2), with the shared position cache off and each
worker's solver table (16 MB) cleared before each job (``fresh_table``,
``PLYBOT_SOLVER_FRESH_TABLE``), so each job costs the same full work whichever
worker runs it: that is what "CPU-bound" means in the 2-workers-vs-1 ratio.
``--cache`` turns the shared cache on, ``--warm-tables`` keeps the tables from job
to job as the service does. (The ``depth`` mode is heavier on memory than on CPU:
the generic search allocates a fresh table per deep search, so two workers contend
for memory bandwidth.)
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from engine.bench.stats import quantile
from worker.core import keys
from worker.core.client import JobClient, JobError
from worker.core.connection import connect
from worker.core.contract import AnalysisRequest
from worker.core.settings import get_settings
from worker.process.processes import WorkerPool
from worker.process.redis_server import RedisServer

__all__ = ["LoadResult", "format_table", "load_positions", "run_load"]

#: Pause of a probe's lane after each answer, so the worker is idle again when the next comes.
PROBE_GAP_S = 0.02


def load_positions(name: str, limit: int | None = None) -> list[tuple[str, int]]:
    """(notation, exact score) pairs of a benchmark set (``engine.bench.sets`` when present)."""
    try:
        from engine.bench.sets import load_set
    except ImportError:  # the engine's benchmark module is optional here
        pass
    else:
        return list(load_set(name, limit))
    root = os.environ.get("PLYBOT_BENCHMARKS") or str(
        Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "connect4"
    )
    path = Path(root) / name
    if not path.is_file():
        raise FileNotFoundError(f"'{name}': no such benchmark set in {root}")
    pairs = []
    for line in path.read_text().splitlines():
        if line.strip():
            notation, score = line.split()
            pairs.append((notation, int(score)))
            if limit is not None and len(pairs) >= limit:
                break
    return pairs


@dataclass
class LoadResult:
    workers: int
    requests: int
    concurrency: int
    wall_s: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    engine_ms: list[float] = field(default_factory=list)
    overhead_ms: list[float] = field(default_factory=list)  # the free-worker pass
    lost: int = 0
    duplicated: int = 0
    wrong: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    by_worker: dict[str, int] = field(default_factory=dict)
    #: The machine's 1-minute load average just before the run (others' work included).
    load_before: float | None = None

    @property
    def throughput(self) -> float:
        return len(self.latencies_ms) / self.wall_s if self.wall_s else 0.0

    @property
    def cache_hit_rate(self) -> float | None:
        total = self.cache_hits + self.cache_misses
        return self.cache_hits / total if total else None


async def _done_count(client: JobClient, *, at_least: int, timeout: float) -> int:
    """Wait until the service's stats count at least ``at_least`` jobs done (or
    ``timeout`` seconds pass), and return the count."""
    deadline = time.monotonic() + timeout
    while True:
        done = int(await client.redis.hget(keys.STATS, "done") or 0)
        if done >= at_least or time.monotonic() > deadline:
            return done
        await asyncio.sleep(0.01)


async def _drive(
    client: JobClient,
    requests: list[tuple[AnalysisRequest, int | None]],
    concurrency: int,
    result: LoadResult,
    timeout: float,
    *,
    overhead_only: bool = False,
) -> None:
    semaphore = asyncio.Semaphore(concurrency)
    seen_jobs: dict[str, int] = {}

    async def one(request: AnalysisRequest, expected: int | None) -> None:
        async with semaphore:
            start = time.perf_counter()
            try:
                answer = await client.analyze(request, timeout=timeout)
            except JobError:
                result.lost += 1
                return
            elapsed = (time.perf_counter() - start) * 1000
            if overhead_only:
                # A worker clears its table after answering (fresh tables): let it get back
                # to the queue, so that the next probe really finds a worker free.
                await asyncio.sleep(PROBE_GAP_S)
        key = request.dedupe_key()  # distinct requests: each must get exactly one answer
        seen_jobs[key] = seen_jobs.get(key, 0) + 1
        if overhead_only:
            result.overhead_ms.append(elapsed - answer.time_ms)
            return
        result.latencies_ms.append(elapsed)
        result.engine_ms.append(answer.time_ms)
        result.by_worker[answer.worker] = result.by_worker.get(answer.worker, 0) + 1
        if expected is not None and answer.exact and answer.score != expected:
            result.wrong += 1

    begin = time.perf_counter()
    await asyncio.gather(*(one(r, e) for r, e in requests))
    if overhead_only:
        return
    result.wall_s = time.perf_counter() - begin
    # The last jobs may be counted a moment after their result was read (see measure()).
    await _done_count(client, at_least=len(seen_jobs), timeout=timeout)
    status = await client.service_status()
    # A job answered twice, or two requests sharing one job, would show here.
    result.duplicated += sum(n - 1 for n in seen_jobs.values())
    result.duplicated += max(0, status.jobs.get("done", 0) - len(seen_jobs))
    result.cache_hits, result.cache_misses = status.cache_hits, status.cache_misses


def run_load(
    *,
    workers: int,
    positions: list[tuple[str, int]],
    concurrency: int,
    probe_positions: list[tuple[str, int]] | None = None,
    probe_mode: str | None = None,
    table_mb: int | None = None,
    fresh_table: bool = False,
    mode: str = "depth",
    depth: int | None = 4,
    time_ms: int | None = None,
    cache: bool = False,
    redis_url: str | None = None,
    timeout: float = 300.0,
    log: bool = False,
    overhead_requests: int = 40,
) -> LoadResult:
    """One measured run with ``workers`` workers on a fresh (or flushed) Redis.

    ``probe_positions`` (default: the second half of ``positions``) feed the
    free-worker pass that measures the queue's overhead, in ``probe_mode``
    (default ``mode``). ``table_mb``: each worker's solver table
    (``PLYBOT_SOLVER_TABLE_MB``; default the settings'). ``fresh_table``: each
    worker clears its solver table before each job (``PLYBOT_SOLVER_FRESH_TABLE``),
    so a job costs the same whichever worker ran which jobs before it.
    """

    def as_requests(
        pairs: list[tuple[str, int]], mode: str
    ) -> list[tuple[AnalysisRequest, int | None]]:
        return [
            (
                AnalysisRequest(
                    game="connect4",
                    position=notation,
                    mode=mode,
                    depth=depth if mode == "depth" else None,
                    time_ms=time_ms if mode == "time" else None,
                ),
                score if mode == "solve" else None,
            )
            for notation, score in pairs
        ]

    requests = as_requests(positions, mode)
    probe = as_requests(
        probe_positions or positions[len(positions) // 2 :][:overhead_requests],
        probe_mode or mode,
    )
    env = {"PLYBOT_CACHE_ENABLED": "1" if cache else "0"}
    if table_mb is not None:
        env["PLYBOT_SOLVER_TABLE_MB"] = str(table_mb)
    if fresh_table:
        env["PLYBOT_SOLVER_FRESH_TABLE"] = "1"
    server = None if redis_url else RedisServer(persistent=False, maxmemory="512mb")
    url = redis_url or server.start()  # type: ignore[union-attr]
    connection = connect(url)
    pool = None
    try:
        connection.flushdb()
        pool = WorkerPool(url, workers, env=env, log_name="worker" if log else None, quiet=not log)
        pool.wait_ready()
        result = LoadResult(workers=workers, requests=len(requests), concurrency=concurrency)
        if hasattr(os, "getloadavg"):
            result.load_before = os.getloadavg()[0]

        async def measure() -> None:
            # The client reads the shared cache at submission only if the workers use it.
            client_settings = get_settings().model_copy(update={"cache_enabled": cache})
            async with JobClient(url, client_settings) as client:
                # Warm-up, not measured: first-use costs of connections and scripts.
                warm = AnalysisRequest(game="tictactoe", position="", mode="depth", depth=1)
                for _ in range(2 * workers):
                    await client.result(await client.submit(warm), timeout=60)
                # A worker counts a job "done" just after RQ records its result, which the
                # client may already have read: wait for the count before clearing it.
                await _done_count(client, at_least=2 * workers, timeout=60)
                await client.redis.delete(keys.STATS, "plybot:cache:stats")
                await _drive(client, requests, concurrency, result, timeout)
                # Second pass, a worker always free: what the queue itself adds to a request.
                await _drive(client, probe, workers, result, timeout, overhead_only=True)

        asyncio.run(measure())
        return result
    finally:
        if pool is not None:
            pool.stop()
        connection.close()
        if server is not None:
            server.close()


def format_table(results: list[LoadResult], description: str) -> str:
    """The side-by-side table ``plybot loadtest`` prints."""

    def fmt(value: float | None, digits: int = 1) -> str:
        return "-" if value is None or value != value else f"{value:.{digits}f}"

    rows: list[tuple[str, list[str]]] = [
        ("requests", [str(r.requests) for r in results]),
        ("concurrency", [str(r.concurrency) for r in results]),
        ("throughput (req/s)", [fmt(r.throughput, 2) for r in results]),
        ("latency p50 (ms)", [fmt(quantile(r.latencies_ms, 0.50)) for r in results]),
        ("latency p95 (ms)", [fmt(quantile(r.latencies_ms, 0.95)) for r in results]),
        ("latency p99 (ms)", [fmt(quantile(r.latencies_ms, 0.99)) for r in results]),
        ("engine time p50 (ms)", [fmt(quantile(r.engine_ms, 0.50)) for r in results]),
        (
            "engine time mean (ms)",
            [fmt(sum(r.engine_ms) / len(r.engine_ms) if r.engine_ms else None) for r in results],
        ),
        ("queue overhead p50 (ms) *", [fmt(quantile(r.overhead_ms, 0.50), 2) for r in results]),
        ("queue overhead p95 (ms) *", [fmt(quantile(r.overhead_ms, 0.95), 2) for r in results]),
        (
            "cache hit rate",
            [fmt(None if r.cache_hit_rate is None else 100 * r.cache_hit_rate) for r in results],
        ),
        ("lost results", [str(r.lost) for r in results]),
        ("duplicated results", [str(r.duplicated) for r in results]),
        ("wrong scores", [str(r.wrong) for r in results]),
        (
            "jobs per worker",
            ["/".join(str(n) for n in sorted(r.by_worker.values())) for r in results],
        ),
        ("load average before **", [fmt(r.load_before, 2) for r in results]),
    ]
    headers = [f"{r.workers} worker{'s' if r.workers > 1 else ''}" for r in results]
    width = max(len(name) for name, _ in rows) + 2
    col = max(12, *(len(h) + 2 for h in headers))
    lines = [description, "", " " * width + "".join(h.rjust(col) for h in headers)]
    for name, values in rows:
        lines.append(name.ljust(width) + "".join(v.rjust(col) for v in values))
    lines.append("")
    lines.append(
        "* end-to-end minus engine time, measured on the probe jobs with a worker always free "
        "(concurrency = workers)"
    )
    lines.append(
        "** the machine's 1-minute load average as the run started: work of other processes "
        "above ~0 takes cores from the workers (on 2 cores, 2 workers need both)"
    )
    if len(results) >= 2 and results[0].throughput:
        ratio = results[-1].throughput / results[0].throughput
        lines.append(
            f"throughput {results[-1].workers} vs {results[0].workers} workers: {ratio:.2f}x"
        )
    return "\n".join(lines)

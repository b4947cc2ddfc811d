"""Faults against a real ``plybot up``: what an operator's bad day does to the jobs.

:func:`run_chaos` starts a Redis of its own (append-only file on, like an
operator's), then ``plybot up`` against it on a free port, and runs, one after
the other:

* **Redis killed**: SIGKILL while jobs are queued and running, down for
  ``outage_s``, started again from its append-only file;
* **worker killed**: SIGKILL of a worker that runs a job;
* **worker hung**: SIGSTOP of a worker that runs a job (SIGCONT once its jobs
  are done elsewhere);
* **Redis full**: ``maxmemory`` lowered and Redis filled with keys that cannot be
  evicted until writes fail, for ``full_s``, then freed;
* **bot moves while busy**: every worker on a long analysis, then bot moves.

Jobs are exact solves of Pons' benchmark positions sent over HTTP, so each
answer's score is checked against the file. Figures per phase: jobs submitted,
done, right, lost (not done), and the phase's time to recover (or the bot
moves' latency).
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis

from worker import keys
from worker.backoff import Backoff
from worker.jobstore import JobStore
from worker.loadtest import load_positions
from worker.processes import PLYBOT, die_with_parent, stop_process
from worker.redis_server import RedisServer, free_port
from worker.settings import get_settings

__all__ = ["PhaseResult", "format_table", "run_chaos"]

#: (position, exact score) pairs of a benchmark set.
Positions = list[tuple[str, int]]


@dataclass
class PhaseResult:
    name: str
    submitted: int = 0
    done: int = 0
    right: int = 0
    lost: int = 0
    figure: str = ""
    notes: list[str] = field(default_factory=list)


class _Service:
    """``plybot up`` on a Redis of our own, seen over HTTP and in Redis."""

    def __init__(self, workers: int, outdir: Path, show_log: bool) -> None:
        self.workers = workers
        self.redis_server = RedisServer(
            data_dir=outdir / "redis", persistent=True, maxmemory="256mb"
        )
        self.url = self.redis_server.start()
        self.port = free_port()
        env = {
            **os.environ,
            "REDIS_URL": self.url,
            "PYTHONUNBUFFERED": "1",
            "PLYBOT_API_RATE_LIMIT": "100000",
            "PLYBOT_API_RATE_LIMIT_READS": "1000000",
        }
        self.log_path = outdir / "up.log"
        log = None if show_log else self.log_path.open("wb")
        self.up = subprocess.Popen(
            [PLYBOT, "up", "--port", str(self.port), "--workers", str(workers)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT if log else None,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=30)
        self.store = JobStore(redis.Redis.from_url(self.url), get_settings())

    # -- waiting for states ----------------------------------------------------------

    def wait_up(self, timeout: float = 300) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.up.poll() is not None:
                raise RuntimeError(f"plybot up exited with {self.up.returncode}")
            try:
                healthy = self.http.get("/healthz").status_code == 200
                if healthy and len(self.live_workers()) >= self.workers:
                    return
            except (httpx.HTTPError, redis.RedisError):
                pass
            time.sleep(0.2)
        raise TimeoutError("plybot up not ready")

    def live_workers(self) -> dict[str, dict]:
        import json

        alive = self.store.alive_workers()
        infos = self.store.redis.hgetall(keys.WORKERS)
        found = {}
        for raw_name, raw in infos.items():
            name = raw_name.decode() if isinstance(raw_name, bytes) else str(raw_name)
            if name in alive:
                found[name] = json.loads(raw)
        return found

    def busy_workers(self) -> dict[str, dict]:
        """Live workers running a job now (from ``plybot:running``): name -> info with ``job``."""
        workers = self.live_workers()
        busy = {}
        for raw_job, raw_worker in self.store.redis.hgetall(keys.RUNNING).items():
            name = raw_worker.decode() if isinstance(raw_worker, bytes) else str(raw_worker)
            if name in workers:
                job = raw_job.decode() if isinstance(raw_job, bytes) else str(raw_job)
                busy[name] = {**workers[name], "job": job}
        return busy

    def wait_for(self, check: Callable[[], Any], timeout: float = 120.0) -> Any:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                value = check()
            except (httpx.HTTPError, redis.RedisError):
                value = None
            if value:
                return value
            time.sleep(0.1)
        return None

    # -- jobs over HTTP --------------------------------------------------------------

    def submit(self, position: str, give_up_s: float = 120.0) -> str | None:
        """POST an exact solve, retrying while the service refuses (503, 429, no answer)."""
        backoff = Backoff(first=0.2, cap=2.0)
        end = time.monotonic() + give_up_s
        body = {"game": "connect4", "position": position, "mode": "solve"}
        while time.monotonic() < end:
            try:
                r = self.http.post("/v1/analyses", json=body)
                if r.status_code in (200, 201, 202):
                    return str(r.json()["id"])
            except httpx.HTTPError:
                pass
            time.sleep(backoff.next())
        return None

    def outcome(self, job_id: str) -> dict | None:
        """The analysis as GET shows it once finished; None while not (or on an error)."""
        try:
            r = self.http.get(f"/v1/analyses/{job_id}")
        except httpx.HTTPError:
            return None
        if r.status_code != 200:
            return None
        view = r.json()
        return view if view["status"] in ("done", "failed") else None

    def settle(self, result: PhaseResult, jobs: dict[str, int | None], timeout: float) -> float:
        """Wait for every job to finish (up to ``timeout``); count; seconds until the last."""
        start = time.monotonic()
        pending = dict(jobs)
        while pending and time.monotonic() - start < timeout:
            for job_id in list(pending):
                view = self.outcome(job_id)
                if view is None:
                    continue
                expected = pending.pop(job_id)
                if view["status"] == "done":
                    result.done += 1
                    score = (view.get("result") or {}).get("score")
                    result.right += expected is None or score == expected
                else:
                    result.notes.append(f"{job_id}: {view.get('error')}")
            time.sleep(0.2)
        result.lost += len(pending)
        return time.monotonic() - start

    def submit_all(self, result: PhaseResult, positions: Positions) -> dict[str, int | None]:
        jobs: dict[str, int | None] = {}
        for position, score in positions:
            job_id = self.submit(position)
            if job_id is None:
                result.notes.append(f"{position}: never accepted")
                continue
            jobs[job_id] = score
            result.submitted += 1
        return jobs

    def close(self) -> None:
        self.http.close()
        stop_process(self.up, timeout=60)
        self.redis_server.close()


def _phase_redis_killed(
    service: _Service,
    quick: Positions,
    long: Positions,
    spare: str,
    outage_s: float,
) -> PhaseResult:
    result = PhaseResult(f"Redis SIGKILLed {outage_s:g} s")
    jobs = service.submit_all(result, [*long, *quick])
    service.wait_for(lambda: len(service.busy_workers()) >= 1)
    service.store.redis.close()
    service.redis_server.process.kill()  # type: ignore[union-attr]
    service.redis_server.process.wait()  # type: ignore[union-attr]
    time.sleep(outage_s)  # the fault itself: Redis down this long
    service.redis_server.start()
    back = time.monotonic()
    probe = service.submit(spare)  # a new job, asked after the outage
    if probe is not None and service.wait_for(lambda: service.outcome(probe), timeout=300):
        result.figure = f"new job done {time.monotonic() - back:.1f} s after Redis restarted"
    service.settle(result, jobs, timeout=600)
    return result


def _phase_worker_signal(
    service: _Service, name: str, sig: int, quick: Positions, long: list
) -> PhaseResult:
    result = PhaseResult(name)
    jobs = service.submit_all(result, [*long, *quick])
    busy = service.wait_for(
        lambda: [i for i in service.busy_workers().values() if i["job"] in jobs]
    )
    if not busy:
        result.notes.append("no worker seen running a job")
        service.settle(result, jobs, timeout=600)
        return result
    pid = int(busy[0]["pid"])
    victim_job = busy[0]["job"]
    hit = time.monotonic()
    os.kill(pid, sig)
    try:
        done = service.wait_for(lambda: service.outcome(victim_job), timeout=600)
        if done:
            result.figure = f"its job done {time.monotonic() - hit:.1f} s after the signal"
        service.settle(result, jobs, timeout=600)
    finally:
        if sig == signal.SIGSTOP:
            os.kill(pid, signal.SIGCONT)
    return result


def _phase_redis_full(
    service: _Service, quick: Positions, long: Positions, full_s: float
) -> PhaseResult:
    result = PhaseResult(f"Redis full (OOM) {full_s:g} s")
    jobs = service.submit_all(result, [*long, *quick])
    service.wait_for(lambda: len(service.busy_workers()) >= 1)
    conn = redis.Redis.from_url(service.url)
    used = int(conn.info("memory")["used_memory"])
    conn.config_set("maxmemory", used + (4 << 20))
    filler, n = "x" * (64 << 10), 0
    try:
        while n < 100_000:  # keys with no TTL: volatile-lru cannot evict them
            conn.set(f"chaos:fill:{n}", filler)
            n += 1
    except redis.exceptions.OutOfMemoryError:
        result.notes.append(f"Redis refused writes (OOM) after {n} keys of 64 KB")
    time.sleep(full_s)  # the fault itself: Redis full this long
    for start in range(0, n, 500):
        conn.delete(*(f"chaos:fill:{i}" for i in range(start, min(n, start + 500))))
    conn.config_set("maxmemory", 256 << 20)
    freed = time.monotonic()
    service.settle(result, jobs, timeout=600)
    result.figure = f"all done {time.monotonic() - freed:.1f} s after memory was freed"
    conn.close()
    return result


def _phase_bot_moves(service: _Service, long: Positions, moves: int) -> PhaseResult:
    result = PhaseResult("bot moves, every worker busy")
    analyses = service.submit_all(result, long)
    service.wait_for(lambda: len(service.busy_workers()) >= service.workers)
    times = []
    for _ in range(moves):
        asked = time.monotonic()
        r = service.http.post(
            "/v1/games", json={"game": "tictactoe", "level": "hard", "first": "bot"}
        )
        if r.status_code == 201 and r.json().get("last_bot_move"):
            times.append(time.monotonic() - asked)
        else:
            result.notes.append(f"move: {r.status_code} {r.text[:80]}")
    times.sort()
    if times:
        p50 = times[len(times) // 2]
        p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
        result.figure = f"{len(times)} moves: p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms"
    service.settle(result, analyses, timeout=900)
    return result


def run_chaos(
    workers: int = 2,
    outage_s: float = 15.0,
    full_s: float = 5.0,
    moves: int = 20,
    log: bool = False,
) -> list[PhaseResult]:
    """Run every phase against a fresh ``plybot up``; one result per phase."""
    quick = load_positions("Test_L1_R2", 60)
    long = load_positions("Test_L1_R3", 40)
    results = []
    with tempfile.TemporaryDirectory(prefix="plybot-chaos-") as tmp:
        service = _Service(workers, Path(tmp), log)
        try:
            service.wait_up()
            results.append(
                _phase_redis_killed(service, quick[0:10], long[0:2], quick[59][0], outage_s)
            )
            service.wait_up()
            results.append(
                _phase_worker_signal(
                    service, "worker SIGKILLed", signal.SIGKILL, quick[10:16], long[2:3]
                )
            )
            service.wait_up()
            results.append(
                _phase_worker_signal(
                    service, "worker SIGSTOPped", signal.SIGSTOP, quick[16:22], long[3:4]
                )
            )
            service.wait_up()
            results.append(_phase_redis_full(service, quick[22:30], long[4:5], full_s))
            service.wait_up()
            results.append(_phase_bot_moves(service, long[10 : 12 + 2 * workers], moves))
            alive = service.up.poll() is None
            results[-1].notes.append(f"plybot up still running at the end: {alive}")
        finally:
            service.close()
    return results


def format_table(results: list[PhaseResult]) -> str:
    head = f"{'fault':<30} {'submitted':>9} {'done':>5} {'right':>6} {'lost':>5}  figure"
    lines = [head, "-" * len(head)]
    for r in results:
        lines.append(
            f"{r.name:<30} {r.submitted:>9} {r.done:>5} {r.right:>6} {r.lost:>5}  {r.figure}"
        )
    notes = [f"  {r.name}: {note}" for r in results for note in r.notes]
    if notes:
        lines += ["", "notes:", *notes]
    return "\n".join(lines)

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
* **bot moves while busy**: every worker on a long analysis, then bot moves,
  and what ``rq info`` shows meanwhile (workers, and the jobs they execute);
* **concurrency 200**: 200 clients at once over event streams, long polls,
  POSTs and game moves (:func:`mixed_load`): every status, none 5xx;
* **slow clients**: 100 connections that never finish their request
  (:func:`open_slow_clients`), while another client's requests are timed;
* **board sizes**: one small analysis on each of ``sizes`` Connect Four board
  sizes (all 170 by default): each worker's resident memory, against
  ``PLYBOT_WORKER_MEMORY_MB``, and how many fresh workers replaced full ones.

Jobs are exact solves of Pons' benchmark positions sent over HTTP, so each
answer's score is checked against the file. Figures per phase: jobs submitted,
done, right, lost (not done), and the phase's time to recover (or the bot
moves' latency).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import ssl
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis

from engine.bench.slow import SLOW
from worker.bench.loadtest import load_positions
from worker.core.connection import connect
from worker.core.jobstore import JobStore
from worker.core.settings import get_settings
from worker.process.backoff import Backoff
from worker.process.processes import PLYBOT, die_with_parent, stop_process
from worker.process.redis_server import RedisServer, free_port

__all__ = [
    "PHASES",
    "PhaseResult",
    "board_sizes",
    "format_table",
    "mixed_load",
    "open_slow_clients",
    "run_chaos",
    "wait_cut_off",
]

#: The API key of the phases' own requests; the load phase's clients use :func:`lane_key`.
CHAOS_KEY = "chaos"
#: Most clients the load phase can run at once (each has a key of its own).
MAX_LANES = 1000


def lane_key(i: int) -> str:
    return f"chaos-lane-{i}"


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

    def __init__(
        self, workers: int, outdir: Path, show_log: bool, env: dict[str, str] | None = None
    ) -> None:
        """``env``: settings of the service beside (or over) the chaos phases' own."""
        self.workers = workers
        self.redis_server = RedisServer(
            data_dir=outdir / "redis", persistent=True, maxmemory="256mb"
        )
        self.url = self.redis_server.start()
        # The position cache on a Redis of its own, as `plybot up` runs it.
        self.cache_server = RedisServer(maxmemory="128mb", maxmemory_policy="allkeys-lru")
        self.cache_url = self.cache_server.start()
        self.port = free_port()
        env = {
            **os.environ,
            "REDIS_URL": self.url,
            "PLYBOT_CACHE_URL": self.cache_url,
            "PYTHONUNBUFFERED": "1",
            "PLYBOT_API_RATE_LIMIT": "100000",
            "PLYBOT_API_RATE_LIMIT_READS": "1000000",
            # Each lane of the load phase holds at most one stream or long poll at a time: the
            # phase measures answers, not the shedding past the default cap (256, then 503).
            "PLYBOT_API_MAX_WAITS": str(MAX_LANES + 16),
            # One key for the phases' own requests, one per client of the load phase.
            "PLYBOT_API_KEYS": ",".join([CHAOS_KEY, *(lane_key(i) for i in range(MAX_LANES))]),
            # The long solves that keep a worker busy to be killed, hung or canceled
            # (engine.bench.slow, ply 10) are long only without the 12-stone database.
            "PLYBOT_SOLVER_DATABASE": "false",
            **(env or {}),
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
        self.http = httpx.Client(
            base_url=f"http://127.0.0.1:{self.port}", timeout=30, headers={"X-API-Key": CHAOS_KEY}
        )
        self.store = JobStore(connect(self.url), get_settings())

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

    def live_workers(self) -> dict[str, dict[str, Any]]:
        return self.store.live_workers()

    def busy_workers(self) -> dict[str, dict[str, Any]]:
        """Live workers running a job now: name -> info with ``job``."""
        return {name: info for name, info in self.live_workers().items() if info.get("job")}

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

    def submit(
        self, position: str, give_up_s: float = 120.0, body: dict[str, Any] | None = None
    ) -> str | None:
        """POST an exact solve of ``position`` (or ``body``), retrying while the service
        refuses (503, 429, no answer)."""
        backoff = Backoff(first=0.2, cap=2.0)
        end = time.monotonic() + give_up_s
        body = body or {"game": "connect4", "position": position, "mode": "solve"}
        while time.monotonic() < end:
            try:
                r = self.http.post("/v1/analyses", json=body)
                if r.status_code in (200, 201, 202):
                    return str(r.json()["id"])
            except httpx.HTTPError:
                pass
            time.sleep(backoff.next())
        return None

    def outcome(self, job_id: str) -> dict[str, Any] | None:
        """The analysis as GET shows it once finished (a 404, its record evicted, as status
        ``evicted``); None while not finished (or on an error)."""
        try:
            r = self.http.get(f"/v1/analyses/{job_id}")
        except httpx.HTTPError:
            return None
        if r.status_code == 404:  # finished, then its record gone (never, at noeviction)
            return {"status": "evicted", "error": "its record was evicted (404)"}
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
                self.count(result, job_id, view, pending.pop(job_id))
            time.sleep(0.2)
        result.lost += len(pending)
        return time.monotonic() - start

    @staticmethod
    def count(result: PhaseResult, job_id: str, view: dict[str, Any], expected: int | None) -> None:
        """Count a finished job (``view``, from :meth:`outcome`) into ``result``: done, and
        right if its score is ``expected`` (any score when ``None``); else a note, and lost
        if its record was evicted."""
        if view["status"] == "done":
            result.done += 1
            score = (view.get("result") or {}).get("score")
            result.right += expected is None or score == expected
        else:
            result.notes.append(f"{job_id}: {view.get('error')}")
            result.lost += view["status"] == "evicted"

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
        self.cache_server.close()


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
    service: _Service, name: str, sig: int, quick: Positions, long: list[Any]
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
    conn = connect(service.url)
    used = int(conn.info("memory")["used_memory"])
    conn.config_set("maxmemory", used + (4 << 20))
    filler, n = "x" * (64 << 10), 0
    try:
        while n < 100_000:  # the job Redis runs at noeviction: it refuses writes when full
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
    rq = os.path.join(os.path.dirname(PLYBOT), "rq")
    shown = subprocess.run([rq, "info", "--url", service.url], capture_output=True, text=True)
    summary = [
        line for line in shown.stdout.splitlines() if "workers" in line or "executing" in line
    ]
    result.notes.append("rq info: " + "; ".join(line.strip() for line in summary))
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


async def mixed_load(
    url: str,
    *,
    lanes: int,
    rounds: int,
    headers: Callable[[int], dict[str, str]] | None = None,
    errors: Counter[str] | None = None,
) -> Counter[int]:
    """``lanes`` clients at once, each ``rounds`` times: POST a small analysis, then follow
    it by its event stream (a third of the lanes), a long poll, or a new game and a move
    awaiting the bot. Each lane is a client of its own, as the clients it stands for are,
    with one connection kept alive and reused. Every HTTP status counted (``0``: no answer
    at all, its exception's name and message counted in ``errors``). ``headers(i)``: lane
    ``i``'s headers.

    Not one pool shared by the lanes: httpcore's pool does its housekeeping over all its
    connections at every request and response (quadratic in them), and at 400 lanes (800
    connections) that was most of this process's CPU; its event loop fell up to 17 s
    behind, and wrote requests into connections the API had already closed (idle past its
    keep-alive, or silent 10 s since connecting): the API's kernel answered them with a
    reset. A lane's own pool holds one connection."""
    statuses: Counter[int] = Counter()
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    tls = ssl.create_default_context()  # one, not one a client (plain HTTP never uses it)

    async def lane(i: int) -> None:
        head = headers(i) if headers else {}
        async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits, verify=tls) as http:
            for n in range(rounds):
                body = {"game": "tictactoe", "position": "1234567"[(i + n) % 7], "mode": "depth",
                        "depth": 1 + (i + n) % 8}  # fmt: skip
                try:
                    await _one_round(http, i, body, head, statuses)
                except httpx.HTTPError as exc:
                    statuses[0] += 1
                    if errors is not None:
                        errors[_what_failed(exc)] += 1

    await asyncio.gather(*(lane(i) for i in range(lanes)))
    return statuses


def _what_failed(exc: httpx.HTTPError) -> str:
    """``ReadError on GET /v1/analyses/{id}/events: ...``: the error and the request it ended,
    job and game ids left out so that like failures count together."""
    try:
        request = (
            f" on {exc.request.method} {re.sub(r'/[0-9a-f]{16,}', '/{id}', exc.request.url.path)}"
        )
    except RuntimeError:  # an error raised before its request was built
        request = ""
    return f"{type(exc).__name__}{request}: {exc}"[:160]


async def _one_round(
    http: httpx.AsyncClient,
    i: int,
    body: dict[str, Any],
    headers: dict[str, str],
    statuses: Counter[int],
) -> None:
    r = await http.post("/v1/analyses", json=body, headers=headers)
    statuses[r.status_code] += 1
    if r.status_code not in (200, 202):
        return
    job = r.json()["id"]
    if i % 3 == 0:
        async with http.stream("GET", f"/v1/analyses/{job}/events", headers=headers) as stream:
            statuses[stream.status_code] += 1
            async for _ in stream.aiter_lines():
                pass
    elif i % 3 == 1:
        r = await http.get(f"/v1/analyses/{job}?wait=20", headers=headers)
        statuses[r.status_code] += 1
    else:
        game = await http.post(
            "/v1/games", json={"game": "tictactoe", "level": "easy"}, headers=headers
        )
        statuses[game.status_code] += 1
        if game.status_code == 201:
            move = await http.post(
                f"/v1/games/{game.json()['id']}/moves", json={"move": "5"}, headers=headers
            )
            statuses[move.status_code] += 1


def open_slow_clients(port: int, count: int) -> list[socket.socket]:
    """``count`` connections that start a request and never finish it: the odd ones send
    half their headers, the even ones their headers and 6 bytes of a 100-byte body."""
    slow = []
    for i in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        if i % 2:
            sock.sendall(b"POST /v1/analyses HTTP/1.1\r\nHost: x\r\n")
        else:
            sock.sendall(
                b"POST /v1/analyses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100\r\n\r\n" + b'{"posi'
            )
        slow.append(sock)
    return slow


def wait_cut_off(sockets: list[socket.socket]) -> int:
    """Wait for the server to close each of ``sockets`` (up to 120 s each), closing it then;
    how many the server closed."""
    cut = 0
    for sock in sockets:
        sock.settimeout(120)
        try:
            while sock.recv(4096):
                pass
            cut += 1
        except OSError:
            pass
        finally:
            sock.close()
    return cut


def board_sizes() -> list[str]:
    """Every Connect Four board the engine accepts (170), small boards first."""
    from engine.connect4 import Connect4

    found = []
    for width in range(1, 10):
        for height in range(1, 64):
            try:
                Connect4._check_size(width, height)
            except ValueError:
                continue
            found.append((width * height, f"{width}x{height}"))
    return [variant for _, variant in sorted(found)]


def _phase_concurrency(service: _Service, lanes: int) -> PhaseResult:
    result = PhaseResult(f"concurrency {lanes}")
    url = f"http://127.0.0.1:{service.port}"
    keys = {i: {"X-API-Key": lane_key(i)} for i in range(lanes)}
    errors: Counter[str] = Counter()
    load = mixed_load(url, lanes=lanes, rounds=3, headers=keys.__getitem__, errors=errors)
    statuses = asyncio.run(load)
    result.notes += [f"{n} x {error}" for error, n in errors.items()]
    result.submitted = sum(statuses.values())
    result.done = result.right = sum(n for s, n in statuses.items() if 200 <= s < 300)
    result.lost = sum(n for s, n in statuses.items() if s >= 500 or s == 0)
    shown = ", ".join(f"{s or 'no answer'}: {n}" for s, n in sorted(statuses.items()))
    result.figure = f"{result.submitted} requests; {result.lost} 5xx or unanswered ({shown})"
    return result


def _median_status_ms(service: _Service, n: int = 40) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        service.http.get("/v1/status").raise_for_status()
        times.append(time.perf_counter() - start)
    return sorted(times)[n // 2] * 1000


def _phase_slow_clients(service: _Service, count: int) -> PhaseResult:
    result = PhaseResult(f"{count} slow clients")
    before = _median_status_ms(service)
    slow = open_slow_clients(service.port, count)
    try:
        during = _median_status_ms(service)
        result.submitted = result.done = result.right = 40
        cut = wait_cut_off(slow)  # the server closes each (after its header or body timeout)
    finally:
        for sock in slow:
            sock.close()
    result.figure = (
        f"/v1/status median {during:.1f} ms (alone {before:.1f} ms); {cut} of {count} cut off"
    )
    return result


def _phase_board_sizes(service: _Service, sizes: list[str], in_flight: int = 8) -> PhaseResult:
    result = PhaseResult(f"{len(sizes)} board sizes")
    seen: dict[str, int] = {}  # worker name -> its largest resident memory seen
    pending: set[str] = set()

    def poll() -> None:
        for name, info in service.live_workers().items():
            seen[name] = max(seen.get(name, 0), int(info.get("rss", 0)))
        for job_id in list(pending):
            view = service.outcome(job_id)
            if view is None:
                continue
            pending.discard(job_id)
            service.count(result, job_id, view, None)

    for variant in sizes:  # a few at a time: each new size compiles for seconds
        while len(pending) >= in_flight:
            poll()
            time.sleep(0.2)
        body = {"game": "connect4", "variant": variant, "position": "", "mode": "depth",
                "depth": 1}  # fmt: skip
        job_id = service.submit("", body=body)
        if job_id is None:
            result.notes.append(f"{variant}: never accepted")
            continue
        pending.add(job_id)
        result.submitted += 1
    end = time.monotonic() + 600
    while pending and time.monotonic() < end:
        poll()
        time.sleep(0.2)
    result.lost += len(pending)
    budget = get_settings().worker_memory_mb
    top = max(seen.values(), default=0) >> 20
    fresh = max(0, len(seen) - service.workers)
    result.figure = (
        f"largest worker {top} MB resident (budget {budget} MB); {fresh} fresh workers took "
        "over from full ones"
    )
    return result


#: The phases, in the order they run (``plybot chaos --phases`` picks some).
PHASES = (
    "redis-killed",
    "worker-killed",
    "worker-stopped",
    "redis-full",
    "bot-moves",
    "load",
    "slow-clients",
    "board-sizes",
)


def run_chaos(
    workers: int = 2,
    outage_s: float = 15.0,
    full_s: float = 5.0,
    moves: int = 20,
    log: bool = False,
    lanes: int = 200,
    slow: int = 100,
    sizes: int = 170,
    phases: tuple[str, ...] = PHASES,
) -> list[PhaseResult]:
    """Run ``phases`` against a fresh ``plybot up``; one result per phase (a phase with a
    count of 0 is left out)."""
    quick = load_positions("Test_L1_R2", 60)
    # Past the opening book, seconds each: a worker is seen running one when a fault comes.
    long = list(SLOW.items())
    runs: dict[str, Callable[[_Service], PhaseResult | None]] = {
        "redis-killed": lambda s: _phase_redis_killed(
            s, quick[0:10], long[0:2], quick[59][0], outage_s
        ),
        "worker-killed": lambda s: _phase_worker_signal(
            s, "worker SIGKILLed", signal.SIGKILL, quick[10:16], long[2:3]
        ),
        "worker-stopped": lambda s: _phase_worker_signal(
            s, "worker SIGSTOPped", signal.SIGSTOP, quick[16:22], long[3:4]
        ),
        "redis-full": lambda s: _phase_redis_full(s, quick[22:30], long[4:5], full_s),
        "bot-moves": lambda s: _phase_bot_moves(s, long[5 : 5 + 2 * workers], moves),
        "load": lambda s: _phase_concurrency(s, lanes) if lanes else None,
        "slow-clients": lambda s: _phase_slow_clients(s, slow) if slow else None,
        "board-sizes": lambda s: _phase_board_sizes(s, board_sizes()[:sizes]) if sizes else None,
    }
    results: list[PhaseResult] = []
    with tempfile.TemporaryDirectory(prefix="plybot-chaos-") as tmp:
        service = _Service(workers, Path(tmp), log)
        try:
            for name in PHASES:
                if name not in phases:
                    continue
                service.wait_up()
                result = runs[name](service)
                if result is not None:
                    results.append(result)
            alive = service.up.poll() is None
            if results:
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

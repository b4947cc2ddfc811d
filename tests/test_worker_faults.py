"""Workers under faults: a Redis outage, a hung worker, leases, cancels, bot moves behind
analyses, memory per board size, secrets on command lines.

Every test runs real worker processes (``plybot worker``) against a real
``redis-server`` and waits for states, never for durations; tests on the shared
Redis flush it first, so that no solve is answered from an earlier test's cache.
An outage is the one fault held for a time: long enough that every lease lapses.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from tests.fixtures.positions import SLOW
from tests.fixtures.service import NO_DATABASE
from tests.fixtures.waiting import wait_for
from worker.core.contract import AnalysisRequest, JobState, MoveRequest
from worker.core.jobstore import JobStore
from worker.core.settings import get_settings
from worker.process.processes import WorkerPool
from worker.process.redis_server import RedisServer

pytestmark = [pytest.mark.redis, pytest.mark.service, pytest.mark.slow]

LEASE_S = 2.0
#: Exact solves of seconds each, past the opening book: the three longest of SLOW (1.3-2.8 s
#: of CPU for a plain solve with the solver of 2026-11-28; the shortest of SLOW take 0.3 s).
LONG = {p: SLOW[p] for p in ("7737333613", "5333361116", "7555222261")}


def benchmark(path: Path, count: int) -> dict[str, int]:
    lines = path.read_text().split("\n")[:count]
    return {p: int(s) for p, s in (line.split() for line in lines)}


def solve(position: str) -> AnalysisRequest:
    return AnalysisRequest(game="connect4", position=position, mode="solve")


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis of the test's own, with its append-only file on (it is killed and restarted)."""
    server = RedisServer(data_dir=tmp_path / "redis", persistent=True)
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def pools() -> Iterator[list[WorkerPool]]:
    started: list[WorkerPool] = []
    yield started
    for pool in started:
        pool.stop()


def start_pool(
    pools: list[WorkerPool], url: str, count: int, env: dict[str, str] | None = None
) -> WorkerPool:
    pool = WorkerPool(
        url, count, env={**NO_DATABASE, "PLYBOT_WORKER_LEASE_S": str(LEASE_S), **(env or {})}
    )
    pools.append(pool)
    return pool


def store_for(url: str) -> JobStore:
    return JobStore(redis.Redis.from_url(url), get_settings())


def state(store: JobStore, job_id: str) -> JobState:
    found = store.state(job_id)
    assert found is not None, job_id
    return found


def running(store: JobStore, job_id: str) -> JobState | None:
    found = state(store, job_id)
    assert not found.finished, found
    return found if found.status == "running" else None


def finished(store: JobStore, job_id: str) -> JobState | None:
    found = state(store, job_id)
    return found if found.finished else None


def children(pid: int) -> set[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as listing:
        return {int(p) for p in listing.read().split()}


def test_a_redis_outage_is_ridden_out_and_costs_no_attempt(
    own_redis: RedisServer, pools: list[WorkerPool], benchmarks_dir: Path
) -> None:
    url = own_redis.url
    pool = start_pool(pools, url, 2)
    pool.wait_ready()
    store = store_for(url)
    expected = dict(list(LONG.items())[:2]) | benchmark(benchmarks_dir / "Test_L1_R2", 6)
    ids = {store.submit(solve(p)).id: p for p in expected}
    long_ids = [i for i, p in ids.items() if p in LONG]
    for job_id in long_ids:  # a job in hand on each worker
        wait_for(lambda j=job_id: running(store, j), f"{job_id} running")
    store.redis.close()

    own_redis.process.kill()  # SIGKILL: no save; it comes back from its append-only file
    own_redis.process.wait()
    down_at = time.monotonic()
    # A worker pool started during the outage: its supervisor and worker wait for Redis.
    late = start_pool(pools, url, 1)
    wait_for(lambda: children(late.pid), "the late pool's worker started")
    while time.monotonic() - down_at < 3 * LEASE_S:  # the fault: every lease lapses
        assert pool.process.poll() is None
        assert late.process.poll() is None
        time.sleep(0.1)
    own_redis.start()

    store = store_for(url)
    for job_id, position in ids.items():
        done = wait_for(lambda j=job_id: finished(store, j), f"{job_id} finished")
        assert isinstance(done, JobState)
        assert done.status == "done", done.error
        assert done.result is not None, position
        assert done.result.score == expected[position], position
        assert done.attempts == 1, (position, done.attempts)  # the outage is no attempt
    assert pool.process.poll() is None
    assert late.process.poll() is None
    late.wait_ready()
    pool.wait_ready()


def test_a_hung_worker_loses_its_job_to_a_live_one(
    own_redis: RedisServer, pools: list[WorkerPool]
) -> None:
    url = own_redis.url
    pool = start_pool(pools, url, 2)
    pool.wait_ready()
    store = store_for(url)
    position, score = next(iter(LONG.items()))
    job_id = store.submit(solve(position)).id
    first = wait_for(lambda: running(store, job_id), "running")
    assert isinstance(first, JobState)
    assert first.worker
    pid = pool.kill_worker(first.worker, signal.SIGSTOP)  # alive to its supervisor, but hung
    try:
        second = wait_for(
            lambda: (s := running(store, job_id)) and s.attempts == 2 and s,
            "run again by the live worker",
            timeout=60,
        )
        assert isinstance(second, JobState)
        assert second.worker != first.worker
        done = wait_for(lambda: finished(store, job_id), "finished")
        assert isinstance(done, JobState)
        assert done.status == "done"
        assert done.worker == second.worker
        assert done.result
        assert done.result.score == score
    finally:
        os.kill(pid, signal.SIGCONT)
    # Woken up, the hung worker cannot answer the job again (it was the other run's),
    # and serves on.
    pool.wait_ready(2)
    again = state(store, job_id)
    assert again.worker == second.worker
    assert again.status == "done"


@pytest.mark.usefixtures("clean_redis")
def test_a_running_analysis_stops_at_its_cancel_and_its_worker_serves_on(
    redis_url: str, worker_pool: Callable[..., WorkerPool]
) -> None:
    pool = worker_pool(1)
    store = store_for(redis_url)
    job_id = store.submit(solve(next(iter(LONG)))).id
    wait_for(lambda: running(store, job_id), "running")
    asked = time.monotonic()
    assert store.withdraw(job_id) == "stopping"
    done = wait_for(lambda: finished(store, job_id), "stopped", timeout=60)
    assert isinstance(done, JobState)
    assert done.status == "failed"
    assert done.error == "canceled by the requester"
    # The worker is free again: nobody's job runs there any more.
    wait_for(lambda: all(not w.get("job") for w in pool.workers().values()), "worker free")
    print(f"cancel to stop: {(time.monotonic() - asked) * 1000:.0f} ms")


@pytest.mark.serial
@pytest.mark.usefixtures("clean_redis")
def test_bot_moves_do_not_wait_behind_analyses(
    redis_url: str, worker_pool: Callable[..., WorkerPool]
) -> None:
    worker_pool(2)
    store = store_for(redis_url)
    analyses = {store.submit(solve(p)).id: s for p, s in LONG.items()}
    wait_for(
        lambda: sum(state(store, j).status == "running" for j in analyses) == 2,
        "every worker busy on an analysis",
    )
    waits = []
    for position in ("1", "12", "123", "1234", "4"):
        asked = time.monotonic()
        move = store.submit(MoveRequest(game="tictactoe", position=position, level="hard")).id
        done = wait_for(lambda m=move: finished(store, m), "the bot's move", timeout=30)
        waits.append(time.monotonic() - asked)
        assert isinstance(done, JobState), done
        assert done.status == "done", done
    print("bot move waits behind busy workers (ms):", [round(w * 1000) for w in waits])
    assert max(waits) <= 1.0, waits
    for job_id, score in analyses.items():  # preempted analyses run on, uncharged
        done = wait_for(lambda j=job_id: finished(store, j), "analysis done", timeout=300)
        assert isinstance(done, JobState)
        assert done.status == "done"
        assert done.result
        assert done.result.score == score
        assert done.attempts == 1


@pytest.mark.usefixtures("clean_redis")
def test_solver_tables_stay_within_the_worker_budget(
    redis_url: str, worker_pool: Callable[..., WorkerPool]
) -> None:
    # 7x6 again after the others, so its table was dropped and remade.
    sizes = ["7x6", "6x5", "5x4", "4x4", "6x5", "7x6", "5x4"]
    budget_mb = 24
    env = {"PLYBOT_WORKER_TABLE_MB": str(budget_mb), "PLYBOT_SOLVER_TABLE_MB": "16"}
    env["PLYBOT_WORKER_LEASE_S"] = "1.5"  # a beat every 0.5 s: fresh figures sooner
    pool = worker_pool(1, env=env)
    ((name, first),) = pool.workers().items()
    store = store_for(redis_url)
    for variant in sizes:
        request = AnalysisRequest(game="connect4", variant=variant, position="1", mode="solve")
        job_id = store.submit(request).id
        done = wait_for(lambda j=job_id: finished(store, j), f"{variant} solved")
        assert isinstance(done, JobState), done.error
        assert done.status == "done", done.error
        info = _fresh_info(pool, name)
        assert 0 < info["table_bytes"] <= budget_mb << 20, (variant, info)
    print(
        f"tables {info['table_bytes'] >> 20} MB, rss {first['rss'] >> 20} -> {info['rss'] >> 20} MB"
    )
    # Seven boards asked (four sizes), the tables of at most two kept: memory grows by far less than
    # one 16 MB table per size.
    assert info["rss"] - first["rss"] < (budget_mb + 48) << 20, (first, info)


@pytest.mark.usefixtures("clean_redis")
def test_a_worker_past_its_memory_budget_makes_way_for_a_fresh_one(
    redis_url: str, worker_pool: Callable[..., WorkerPool]
) -> None:
    # A budget below any Python process: each worker leaves after its first job.
    pool = worker_pool(1, env={"PLYBOT_WORKER_MEMORY_MB": "1"})
    store = store_for(redis_url)
    served_by = []
    for position in ["4", "44"]:
        request = AnalysisRequest(game="connect4", position=position, mode="solve")
        job_id = store.submit(request).id
        done = wait_for(lambda j=job_id: finished(store, j), f"{position} solved")
        assert isinstance(done, JobState), done.error
        assert done.status == "done", done.error
        assert done.attempts == 1  # finished, then replaced: never run twice
        served_by.append(done.result.worker if done.result else "")
        # The supervisor starts the replacement at once, and it takes the next job.
        wait_for(lambda n=served_by[-1]: set(pool.workers()) - {n}, "a fresh worker")
    assert served_by[0] != served_by[1], served_by
    assert all(served_by), served_by
    os.kill(pool.pid, 0)  # the supervisor runs on (this raises if it exited)


def _fresh_info(pool: WorkerPool, name: str) -> dict:
    """The worker's info as renewed after now (its housekeeping renews it every beat)."""
    asked = time.time()
    info = wait_for(lambda: (i := pool.workers().get(name)) and i["at"] > asked and i, "a beat")
    assert isinstance(info, dict)
    return info


def test_the_redis_password_is_on_no_command_line(tmp_path: Path, pools: list[WorkerPool]) -> None:
    secret = "s3cret-on-no-command-line"
    server = RedisServer(data_dir=tmp_path / "redis")
    server.start()
    try:
        redis.Redis(port=server.port).config_set("requirepass", secret)
        url = f"redis://:{secret}@127.0.0.1:{server.port}/0"
        pool = start_pool(pools, url, 2)
        workers = pool.wait_ready()
        pids = [pool.pid, *(int(info["pid"]) for info in workers.values())]
        assert set(pids[1:]) <= children(pool.pid)
        for pid in pids:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                assert secret.encode() not in cmdline.read(), pid
        pool.stop()
    finally:
        server.close()

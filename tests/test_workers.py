"""Warm workers: priority, TTL, graceful stop, recovery from SIGKILL, progress, no fork."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest
from rq import Queue
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from tests.fixtures.waiting import wait_for
from worker.core import keys
from worker.core.client import JobClient, JobFailed
from worker.core.contract import AnalysisRequest, MoveRequest
from worker.core.jobstore import JobStore
from worker.core.kinds import KINDS
from worker.core.settings import get_settings
from worker.process.runner import PlybotWorker

pytestmark = [pytest.mark.redis, pytest.mark.service]

# Seconds of pure-Python search (about 5 s here, depth 8 took 0.1 s on a fast machine: too
# short to be caught running) with a progress event per depth (with the shared cache off:
# what earlier tests left there would end it at once).
LONG = AnalysisRequest(game="connect4", position="44", mode="depth", depth=11)
NO_CACHE = {"PLYBOT_CACHE_ENABLED": "false"}
# A search that runs until the job's timeout: still running whenever a test kills its worker.
ENDLESS = AnalysisRequest(game="connect4", position="44", mode="depth", depth=30)


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


async def wait_running(client: JobClient, job_id: str, *, attempts: int = 1, timeout: float = 60):
    """The job's state once it runs (its ``attempts``-th run) and has published progress."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        state = await client.status(job_id)
        if state.status == "running" and state.attempts == attempts and state.progress:
            return state
        assert not state.finished, state
        await asyncio.sleep(0.05)
    raise TimeoutError(f"job {job_id} not running (attempt {attempts})")


@pytest.mark.usefixtures("clean_redis")
def test_interactive_jobs_are_served_before_analysis(redis_url, worker_pool) -> None:  # type: ignore[no-untyped-def]
    async def go() -> None:
        async with JobClient(redis_url) as client:
            analyses = [
                await client.submit(AnalysisRequest(game="tictactoe", position=p, mode="solve"))
                for p in ("1", "2", "3", "4")
            ]
            move = await client.submit(MoveRequest(game="tictactoe", position="5", level="hard"))
            worker_pool(1, wait=False)  # starts with five jobs waiting
            for job_id in [*analyses, move]:
                await client.result(job_id, timeout=120)
            started = {j: (await client.status(j)).started_at for j in [*analyses, move]}
            assert all(started[move] < started[a] for a in analyses)

    run(go())


def test_one_warm_process_serves_job_after_job(redis_url, worker_pool) -> None:  # type: ignore[no-untyped-def]
    pool = worker_pool(1)
    ((name, info),) = pool.workers().items()

    async def go() -> set[str]:
        async with JobClient(redis_url) as client:
            names = set()
            for position in ("1", "2", "3", "12", "13"):
                result = await client.analyze(
                    AnalysisRequest(game="tictactoe", position=position, mode="solve"), timeout=60
                )
                names.add(result.worker)
            return names

    assert run(go()) == {name}
    # Same process throughout: no fork per job, so its tables stay warm.
    assert pool.workers()[name]["pid"] == info["pid"]


def test_progress_events_arrive_in_order_then_the_result(redis_url, worker_pool) -> None:  # type: ignore[no-untyped-def]
    worker_pool(1)
    request = AnalysisRequest(game="connect4", position="4453", mode="depth", depth=6)

    async def go() -> None:
        async with JobClient(redis_url) as client:
            job_id = await client.submit(request)
            events = [event async for event in client.events(job_id, timeout=120)]
            assert [e.type for e in events][-1] == "done"
            progress = [e.progress for e in events[:-1]]
            assert [p.depth for p in progress] == list(range(1, 7))
            assert [e.seq for e in events[:-1]] == list(range(6))
            assert all(p.pv and p.nodes > 0 for p in progress)
            assert [p.nodes for p in progress] == sorted(p.nodes for p in progress)
            result = events[-1].result
            assert result.depth == 6
            assert result.score == progress[-1].score
            # A late subscriber gets the whole history, then the result.
            late = [event async for event in client.events(job_id, timeout=10)]
            assert [e.progress for e in late[:-1]] == progress
            assert late[-1].result == result
            assert await client.progress(job_id) == progress

    run(go())


def test_sigterm_finishes_the_job_in_hand_and_takes_no_new_one(redis_url, worker_pool) -> None:  # type: ignore[no-untyped-def]
    pool = worker_pool(1, env=NO_CACHE)

    async def go() -> None:
        async with JobClient(redis_url) as client:
            job_id = await client.submit(LONG)
            await wait_running(client, job_id)
            pool.process.send_signal(signal.SIGTERM)
            await asyncio.sleep(0.3)
            later = await client.submit(AnalysisRequest(game="tictactoe", position="9"))
            result = await client.result(job_id, timeout=120)
            assert result.depth == LONG.depth
            assert await asyncio.to_thread(pool.process.wait, 60) == 0
            assert (await client.status(later)).status == "queued"
            await client.cancel(later)

    run(go())
    assert not pool.workers()


def test_a_job_whose_worker_is_killed_completes_on_another(redis_url, worker_pool) -> None:  # type: ignore[no-untyped-def]
    pool = worker_pool(2, env=NO_CACHE)

    async def go() -> None:
        async with JobClient(redis_url) as client:
            job_id = await client.submit(LONG)
            first = await wait_running(client, job_id)
            killed_at = time.monotonic()
            pid = pool.kill_worker(first.worker)
            second = await wait_running(client, job_id, attempts=2, timeout=30)
            assert time.monotonic() - killed_at < 30
            assert second.worker != first.worker
            result = await client.result(job_id, timeout=120)
            assert result.worker == second.worker
            assert result.depth == LONG.depth
            state = await client.status(job_id)
            assert state.attempts == 2
            assert state.status == "done"
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)

    run(go())
    pool.wait_ready(2)  # the supervisor replaced the dead worker


def test_a_second_death_fails_the_job_with_a_clear_error(redis_url, worker_pool) -> None:  # type: ignore[no-untyped-def]
    pool = worker_pool(2, env={"PLYBOT_JOB_MAX_ATTEMPTS": "2"})

    async def go() -> None:
        async with JobClient(redis_url) as client:
            job_id = await client.submit(ENDLESS)
            waiter = asyncio.create_task(client.result(job_id, timeout=120))
            first = await wait_running(client, job_id)
            pool.kill_worker(first.worker)
            second = await wait_running(client, job_id, attempts=2, timeout=30)
            pool.kill_worker(second.worker)
            with pytest.raises(JobFailed) as failed:
                await waiter  # (within the waiter's own 120 s: it fails at once)
            error = failed.value.error
            assert "worker running this job died" in error
            assert "2 times" in error
            assert second.worker in error

    run(go())


def test_an_ended_jobs_records_are_kept_as_long_as_its_result(
    clean_redis, redis_url, worker_pool
) -> None:  # type: ignore[no-untyped-def]
    # While it may still run, plybot's record of a job outlives its runs; once it ended, it
    # goes with RQ's result (result_ttl_s), and its dedupe key at once, so a steady load's
    # keys level off (the soak's growing keys, then its plybot:dedupe).
    async def go() -> None:
        async with JobClient(redis_url) as client:
            request = AnalysisRequest(game="connect4", position="4453", mode="depth", depth=3)
            job_id = await client.submit(request)
            # Looked at before any worker is up: a tiny job may otherwise have ended already.
            held = clean_redis.ttl(keys.job(job_id))
            assert held > client.settings.result_ttl_s  # its runs, then its result's retention
            assert clean_redis.get(keys.dedupe(request.dedupe_key())) == job_id.encode()
            worker_pool(1)
            await client.result(job_id, timeout=60)
            wait_for(
                lambda: 0 < clean_redis.ttl(keys.job(job_id)) <= client.settings.result_ttl_s,
                "the record kept as long as the result",
            )
            assert clean_redis.ttl(keys.progress(job_id)) <= client.settings.result_ttl_s
            # and an ended job is joined by no identical request: its dedupe key is gone
            assert not clean_redis.exists(keys.dedupe(request.dedupe_key()))

    run(go())


def test_a_job_taken_by_a_worker_that_died_at_once_is_not_lost(
    clean_redis, redis_url, worker_pool
) -> None:  # type: ignore[no-untyped-def]
    # A worker popped the id and died before starting the job (RQ's own window): the job is
    # on no queue and nobody runs it. Its waiter sees that and queues it again.
    async def go() -> None:
        async with JobClient(redis_url) as client:
            job_id = await client.submit(AnalysisRequest(game="tictactoe", position="19"))
            queue = Queue(KINDS["analysis"].queue, connection=clean_redis)
            assert clean_redis.lpop(queue.key).decode() == job_id  # the "dead" worker's pop
            worker_pool(1)
            result = await client.result(job_id, timeout=30)
            assert result.exact
            assert (await client.status(job_id)).attempts == 1

    run(go())


def test_a_cancel_between_a_workers_pop_and_its_start_ends_the_job_canceled(
    clean_redis, redis_url, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    # The worker took the job from its queue; the cancel came before RQ started it, and RQ's
    # start wrote "started" over it (the soak's lost cancel: the job stayed running for ever).
    # The worker, in this process, is driven through RQ's own steps with the cancel between.
    monkeypatch.setenv("REDIS_URL", redis_url)
    get_settings.cache_clear()
    store = JobStore(clean_redis)
    job_id = store.submit(AnalysisRequest(game="tictactoe", position="19")).id
    worker = PlybotWorker(
        [KINDS["analysis"].queue], connection=clean_redis, serializer=JSONSerializer
    )
    taken = worker.dequeue_job_and_maintain_ttl(timeout=5)
    assert taken is not None
    job, queue = taken
    assert job.id == job_id
    assert store.cancel(job_id, "canceled by the requester") == "canceled"
    worker.execute_job(job, queue)  # RQ starts it (over the cancel) and runs it
    assert Job.fetch(job_id, connection=clean_redis, serializer=JSONSerializer).get_status() == (
        JobStatus.CANCELED
    )
    state = store.state(job_id, with_progress=False)
    assert state is not None
    assert state.status == "failed"
    assert state.error == "canceled by the requester"
    get_settings.cache_clear()


def test_a_cancel_whose_worker_ended_the_job_canceled_first_is_this_cancels(
    clean_redis, redis_url, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    # The cancel came as a worker took the job, and the worker, seeing the cancel's reason
    # (written first), ran the job and ended it canceled before the cancel's own RQ cancel,
    # which RQ then refused ("already canceled"): the cancel was answered as if the job had
    # ended by itself (a 409, "already finished"). It is this cancel's doing. The worker's
    # steps (RQ's own, in this process) are driven between the two writes of the cancel.
    monkeypatch.setenv("REDIS_URL", redis_url)
    get_settings.cache_clear()
    worker = PlybotWorker(
        [KINDS["analysis"].queue], connection=clean_redis, serializer=JSONSerializer
    )

    class CancelAsTheWorkerRuns(JobStore):
        def _cancel_with_rq(self, job: Job) -> None:
            worker.execute_job(taken_job, queue)  # RQ starts it; it ends canceled
            assert self.job(job.id).get_status() == JobStatus.CANCELED  # type: ignore[union-attr]
            super()._cancel_with_rq(job)

    store = CancelAsTheWorkerRuns(clean_redis)
    job_id = store.submit(AnalysisRequest(game="tictactoe", position="19")).id
    taken = worker.dequeue_job_and_maintain_ttl(timeout=5)
    assert taken is not None
    taken_job, queue = taken
    assert store.withdraw(job_id) == "canceled"
    state = store.state(job_id, with_progress=False)
    assert state is not None
    assert state.status == "failed"
    assert state.error == "canceled by the requester"
    get_settings.cache_clear()


def test_workers_carry_on_after_redis_restarts(redis_server, redis_url, worker_pool) -> None:  # type: ignore[no-untyped-def]
    pool = worker_pool(1)
    redis_server.stop()
    time.sleep(2)
    redis_server.start()  # same port, empty (the tests' Redis keeps no data)

    async def go() -> None:
        async with JobClient(redis_url) as client:
            result = await client.analyze(
                AnalysisRequest(game="tictactoe", position="28"), timeout=60
            )
            assert result.exact
            assert result.worker in pool.workers()

    run(go())
    assert pool.process.poll() is None

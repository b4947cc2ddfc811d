"""The job client against a real Redis and real workers: submit, await, cancel, dedupe, TTL."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis
from rq import Queue
from rq.job import Job
from rq.serializers import JSONSerializer

from engine.analysis import analyze
from engine.game import new_game
from worker.core.client import JobClient, JobFailed, JobTimeout, UnknownJob
from worker.core.contract import AnalysisRequest, AnalysisResult, MoveRequest, MoveResult
from worker.core.kinds import KINDS
from worker.core.settings import Settings

pytestmark = [pytest.mark.redis, pytest.mark.service]

# A Connect Four search long enough to cancel or kill mid-way (progress each depth).
LONG = AnalysisRequest(game="connect4", position="44", mode="depth", depth=14)


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


# Tests without workers come first: the module-scoped `workers` start at their first use.


@pytest.mark.usefixtures("clean_redis")
def test_identical_analyses_in_flight_share_one_job(redis_url: str) -> None:  # type: ignore[no-untyped-def]
    request = AnalysisRequest(game="connect4", position="4453", mode="depth", depth=3)

    async def go() -> tuple[str, str, str, str]:
        async with JobClient(redis_url) as client:
            first = await client.submit(request)
            second = await client.submit(request.model_copy())
            other = await client.submit(request.model_copy(update={"depth": 4}))
            await client.cancel(first)  # finished: an identical request now gets a new job
            third = await client.submit(request)
            return first, second, other, third

    first, second, other, third = run(go())
    assert first == second
    assert other != first
    assert third != first


def test_cancel_a_waiting_job_fails_it_for_every_waiter(clean_redis, redis_url: str) -> None:  # type: ignore[no-untyped-def]
    async def go() -> None:
        async with JobClient(redis_url) as client:
            job_id = await client.submit(AnalysisRequest(game="tictactoe", position="3"))
            waiter = asyncio.create_task(client.result(job_id, timeout=30))
            await asyncio.sleep(0.1)
            assert await client.cancel(job_id)
            with pytest.raises(JobFailed, match="canceled by the requester"):
                await waiter
            assert not await client.cancel(job_id)  # already finished
            assert clean_redis.llen("rq:queue:analysis") == 0

    run(go())


@pytest.mark.usefixtures("clean_redis")
def test_wait_returns_at_its_timeout_and_result_raises(redis_url: str) -> None:  # type: ignore[no-untyped-def]
    async def go() -> None:
        async with JobClient(redis_url) as client:
            job_id = await client.submit(AnalysisRequest(game="tictactoe", position="7"))
            start = time.monotonic()
            state = await client.wait(job_id, timeout=0.3)
            assert state.status == "queued"
            # It waited its timeout out (no worker runs): how much longer a loaded machine
            # took to return is not the client's behaviour.
            assert time.monotonic() - start > 0.25
            with pytest.raises(JobTimeout):
                await client.result(job_id, timeout=0.2)
            await client.cancel(job_id)

    run(go())


def test_a_bot_move_no_worker_takes_in_time_is_dropped_and_reported(
    clean_redis, redis_url: str
) -> None:  # type: ignore[no-untyped-def]
    settings = Settings(interactive_ttl_s=0.5)

    async def go() -> None:
        async with JobClient(redis_url, settings=settings) as client:
            job_id = await client.submit(MoveRequest(position="4", level="easy"))
            with pytest.raises(JobFailed) as failed:
                await client.result(job_id, timeout=10)
            assert failed.value.error.startswith("dropped: no worker started this bot move")
            assert "0.5 s" in failed.value.error
            # RQ dropped it (its job ttl): a worker that comes later skips it.
            assert not Job.exists(job_id, connection=clean_redis)

    run(go())


def test_submit_and_await_gives_the_engines_answer(redis_url: str, workers) -> None:  # type: ignore[no-untyped-def]
    request = AnalysisRequest(game="tictactoe", position="1", mode="solve", moves="all")
    expected = analyze(new_game("tictactoe", "1"), mode="solve", all_moves=True)

    async def go() -> tuple[AnalysisResult, object]:
        async with JobClient(redis_url) as client:
            job_id = await client.submit(request)
            result = await client.result(job_id, timeout=60)
            return result, await client.status(job_id)

    result, state = run(go())
    assert isinstance(result, AnalysisResult)
    assert result.exact
    assert result.score == expected.score
    assert result.moves == {str(m + 1): s for m, s in expected.moves.items()}
    assert result.best_move is not None
    assert result.moves[result.best_move] == result.score
    assert result.worker in workers.workers()
    assert state.status == "done"
    assert state.result == result
    assert state.attempts == 1
    assert state.enqueued_at <= state.started_at <= state.ended_at


def test_bot_move_is_legal_and_comes_from_a_worker(redis_url: str, workers) -> None:  # type: ignore[no-untyped-def]
    async def go() -> MoveResult:
        async with JobClient(redis_url) as client:
            return await client.move(
                MoveRequest(game="tictactoe", position="15", level="perfect", deadline_ms=2000),
                timeout=30,
            )

    move = run(go())
    board = new_game("tictactoe", "15")
    assert board.parse_move(move.move) in board.legal_moves()
    # Perfect play: the move keeps the position's exact value (a draw).
    assert move.exact
    assert move.score == analyze(board, mode="solve").score
    assert move.worker in workers.workers()


@pytest.mark.usefixtures("workers")
def test_a_failing_job_reports_its_error(redis_url: str) -> None:  # type: ignore[no-untyped-def]
    # Validated when made, but a request edited on the wire reaches the worker as-is:
    # the worker's own validation error comes back as a one-line error.
    async def go() -> None:
        async with JobClient(redis_url) as client:
            job_id = await client.submit(AnalysisRequest(game="tictactoe", position="5"))
            await client.result(job_id, timeout=30)

    run(go())  # sanity: a valid one works

    # A request edited on the wire (or enqueued with plain RQ) reaches the worker as-is.
    raw = redis.Redis.from_url(redis_url)
    queue = Queue(KINDS["analysis"].queue, connection=raw, serializer=JSONSerializer)
    job_id = queue.enqueue(
        KINDS["analysis"].function, {"game": "tictactoe", "position": "1425369"}
    ).id

    async def wait() -> None:
        async with JobClient(redis_url) as client:
            await client.result(job_id, timeout=30)

    with pytest.raises(JobFailed) as failed:
        run(wait())
    assert "already over" in failed.value.error
    assert "'1425369'" in failed.value.error


def test_unknown_id(redis_url: str) -> None:
    async def go() -> None:
        async with JobClient(redis_url) as client:
            await client.status("nope")

    with pytest.raises(UnknownJob, match="'nope': no such job"):
        run(go())


@pytest.mark.usefixtures("workers")
def test_cancel_a_running_job_stops_it_at_the_next_depth(redis_url: str) -> None:  # type: ignore[no-untyped-def]
    async def go() -> None:
        async with JobClient(redis_url) as client:
            job_id = await client.submit(LONG)
            async for event in client.events(job_id, timeout=60):
                if event.type == "progress":
                    assert await client.cancel(job_id)
                    break
            state = await client.wait(job_id, timeout=60)
            assert state.status == "failed"
            assert state.error == "canceled by the requester"
            assert state.progress is not None
            assert state.progress.depth < 14

    run(go())

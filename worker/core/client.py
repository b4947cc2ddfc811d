"""The job client: how the API (and so the web page) and the Discord bot reach the workers.

The front ends' games ask for the bot's moves through :mod:`worker.core.bot_moves`, which
uses this client; the book build (a worker-side tool) uses :class:`~worker.core.jobstore.JobStore`,
the synchronous store underneath.

Usage (async; one client per process, opened at start-up, closed at shutdown)::

    from worker.core.client import JobClient, JobFailed, JobTimeout, UnknownJob
    from worker.core.contract import AnalysisRequest, MoveRequest

    client = JobClient(settings=settings)   # the front end's settings; or JobClient(url),
                                            # or: async with JobClient(url) as client:
    # Validates on construction: pydantic.ValidationError names the field (-> HTTP 422).
    request = AnalysisRequest(game="connect4", position="4453", mode="solve")

    job_id = await client.submit(request)     # identical in-flight analyses share one id
    state = await client.status(job_id)       # JobState: status, progress, result, error
    state = await client.wait(job_id, timeout=5)       # finished, or the state at timeout
    result = await client.result(job_id, timeout=30)   # the kind's result model, or raises
    async for event in client.events(job_id):  # history, then live; ends with done/failed
        ...                                    # Event(type="progress"|"done"|"failed", ...)
    await client.cancel(job_id)                # queued: fails now; running: at the next depth
    await client.withdraw(job_id)              # one requester's cancel of a shared job

    submitted = await client.enqueue(request)  # Submitted(id, status, new, state)
    result = await client.analyze(request, timeout=30)  # submit + result, fewest round trips
    move = await client.move(MoveRequest(position="44", level="hard", deadline_ms=1500), timeout=10)
    print(move.move, move.score)              # the bot's move in the game's notation

    status = await client.service_status()    # queues, oldest wait, workers, cache hits/misses
    await client.aclose()

For ``/metrics`` without the async client: ``worker.core.position_cache.cache_stats(redis)``
gives the shared cache's hit and miss counters.

Errors: :class:`UnknownJob` (no such id, or expired), :class:`JobFailed` (the job
failed; ``.error`` is the one-line reason: a bad position, a timeout, "dropped:
no worker started this bot move within 20 s", "canceled by the requester", a
worker that died twice), :class:`JobTimeout` (still running when ``timeout``
ran out; the job goes on). Redis being down raises ``redis.exceptions.ConnectionError``
(the API turns it into 503).

Answered at submission: an exact Connect Four solve whose answer the shared
position cache already holds (the root's exact entry; every child's for
``moves="all"``: :func:`engine.analysis.cached_exact`, as a worker would read it)
is recorded as a finished job at once, never queued: same record, id scheme,
events and webhook as a worker's answer, ``"cache": "hit"``, ``"worker": "cache"``.
Its lookups count in the cache's hits and misses; a lookup that cannot answer is
not counted (the worker that takes the job looks the same keys up and counts
them). Any trouble with the cache or the recording falls through to the queue.

Waiting never polls in a loop: ``wait``/``result``/``analyze``/``move`` read the
state once (a finished job answers at once), then block on the job's own done
list (``BLMOVE`` from it to itself: the final event is seen, not taken, so any
number of waiters share it); ``events`` subscribes to the job's pub/sub channel
before reading its history, so no event is missed. Each rechecks the state once
a second only as a safety net (and to drop a bot move whose time-to-live passed
with no worker to take it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, NamedTuple

import redis
import redis.asyncio as aioredis
from pydantic import BaseModel
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff

from engine.analysis import cached_exact
from engine.connect4 import Connect4
from engine.game import has_exact_solver
from worker.core import keys
from worker.core.contract import (
    AnalysisRequest,
    AnalysisResult,
    Event,
    JobResult,
    JobState,
    MoveRequest,
    MoveResult,
    Progress,
)
from worker.core.jobstore import SUBMIT, JobStore, job_state_from_hash
from worker.core.kinds import QUEUES
from worker.core.position_cache import CACHE_STATS, CacheProbe, RedisPositionCache
from worker.core.settings import Settings, get_settings

__all__ = [
    "JobClient",
    "JobError",
    "JobFailed",
    "JobTimeout",
    "QueueStatus",
    "ServiceStatus",
    "Submitted",
    "UnknownJob",
    "WorkerStatus",
]

log = logging.getLogger(__name__)

_SAFETY_RECHECK_S = 1.0

#: ``JobState.worker`` and ``AnalysisResult.worker`` of a job answered at submission.
CACHE_WORKER = "cache"


class JobError(Exception):
    """Base of the client's errors about a job."""


class UnknownJob(JobError, LookupError):
    """No job has this id (never submitted, or its record expired)."""

    def __init__(self, job_id: str) -> None:
        super().__init__(f"'{job_id}': no such job")
        self.job_id = job_id


class JobFailed(JobError):
    """The job ended in failure; ``error`` says why in one line."""

    def __init__(self, state: JobState) -> None:
        super().__init__(state.error or "failed")
        self.state = state
        self.error = state.error or "failed"


class JobTimeout(JobError, TimeoutError):
    """The job did not finish within the caller's timeout (it goes on running)."""

    def __init__(self, state: JobState, timeout: float) -> None:
        super().__init__(f"job {state.id} still {state.status} after {timeout:g} s")
        self.state = state


class Submitted(NamedTuple):
    """A submitted job: its id, its status then, and whether this call created it.

    ``state``: the finished job's state when the shared cache answered it at
    submission (status ``done``; nothing to read back), else ``None``.
    """

    id: str
    status: str
    new: bool
    state: JobState | None = None


class QueueStatus(BaseModel):
    name: str
    waiting: int
    oldest_wait_s: float = 0.0


class WorkerStatus(BaseModel):
    name: str
    pid: int | None = None
    host: str | None = None
    alive: bool
    busy: bool
    job: str | None = None


class ServiceStatus(BaseModel):
    """What an autoscaler reads: queue depth and age, workers, cache hit rate."""

    queues: list[QueueStatus]
    workers: list[WorkerStatus]
    workers_alive: int
    workers_busy: int
    running: int
    cache_hits: int
    cache_misses: int
    cache_hit_rate: float | None
    jobs: dict[str, int]


class JobClient:
    """Submit jobs, await their results, stream their progress, cancel them."""

    def __init__(
        self,
        url: str | None = None,
        settings: Settings | None = None,
        *,
        max_connections: int | None = None,
        pool_timeout: float = 5.0,
    ) -> None:
        """``max_connections``: bound the asyncio pool (a request then waits up to
        ``pool_timeout`` s for a free connection, and gets ``redis.ConnectionError`` "No
        connection available" past that); ``None``: redis-py's default pool."""
        self.settings = settings or get_settings()
        url = url or self.settings.redis_url
        if not url:
            raise ValueError("JobClient needs a Redis URL (REDIS_URL)")
        self.url = url
        timeout = self.settings.redis_socket_timeout_s
        options: dict[str, Any] = {
            "decode_responses": True,
            "socket_timeout": timeout,
            "socket_connect_timeout": timeout,
        }
        if max_connections is None:
            self.redis = aioredis.Redis.from_url(url, **options)
        else:
            # A stale connection after a Redis restart is retried on a fresh one, not
            # surfaced as an outage; a Redis that stays down is a 503 within ~0.1 s (the
            # client is told to come back), not after seconds of retrying per request.
            retry = Retry(ExponentialWithJitterBackoff(base=0.01, cap=0.1), 3)
            pool = aioredis.BlockingConnectionPool.from_url(
                url, max_connections=max_connections, timeout=pool_timeout, retry=retry, **options
            )
            self.redis = aioredis.Redis.from_pool(pool)  # owns it: aclose() closes the pool
        # For the rarer synchronous steps (cancel, expiry), run in a thread.
        self._sync = redis.Redis.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout
        )
        self.store = JobStore(self._sync, self.settings)
        self._submit = self.redis.register_script(SUBMIT)
        # The workers' shared position cache, read at submission (synchronous, with its
        # short timeout and circuit breaker: called in a thread).
        self.cache: RedisPositionCache | None = None
        if self.settings.cache_enabled:
            self.cache = RedisPositionCache(self.settings.cache_url or url, self.settings)
        self._cache_in_job_redis = self.settings.cache_url in (None, "", url)

    async def __aenter__(self) -> JobClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.redis.aclose()
        self._sync.close()
        if self.cache is not None:
            self.cache.close()

    async def ping(self) -> bool:
        """True if Redis answers (raises ``redis.ConnectionError`` if not)."""
        return bool(await self.redis.ping())

    # -- submit ----------------------------------------------------------------------

    async def submit(self, request: AnalysisRequest | MoveRequest) -> str:
        """Enqueue ``request`` (analysis -> ``analysis`` queue, move -> ``interactive``); its id."""
        return (await self.enqueue(request)).id

    async def enqueue(self, request: AnalysisRequest | MoveRequest) -> Submitted:
        """Like :meth:`submit`, with the job's status then (one round trip for both).

        An analysis the shared cache answers exactly is finished here (status ``done``,
        ``state`` set; see the module docstring); anything else is queued.
        """
        if isinstance(request, AnalysisRequest):
            answered = await self._answer_from_cache(request)
            if answered is not None:
                return answered
        script_keys, args = self.store.prepare_submit(request)
        job_id, status = await self._submit(keys=script_keys, args=args)
        return Submitted(id=str(job_id), status=str(status), new=str(job_id) == str(args[0]))

    # -- read ------------------------------------------------------------------------

    async def status(self, job_id: str) -> JobState:
        """The job's state now; :class:`UnknownJob` if there is none."""
        state = job_state_from_hash(job_id, await self.redis.hgetall(keys.job(job_id)))
        if state is None:
            raise UnknownJob(job_id)
        return state

    async def progress(self, job_id: str) -> list[Progress]:
        """The progress events of the job's current run, oldest first."""
        raw = await self.redis.lrange(keys.progress(job_id), 0, -1)
        return [p for p in (Event.model_validate_json(r).progress for r in raw) if p is not None]

    async def wait(self, job_id: str, timeout: float | None = None) -> JobState:
        """Wait until the job is done or failed, at most ``timeout`` s; returns the state then.

        A finished job costs one round trip; an unfinished one three (the state,
        a blocking wait on its done list, the final state).
        """
        state = await self.status(job_id)
        if state.finished:
            return state
        await self._await_done(job_id, timeout)
        return await self.status(job_id)

    async def result(self, job_id: str, timeout: float | None = None) -> JobResult:
        """The job's result; raises :class:`JobFailed` or :class:`JobTimeout`."""
        state = await self.status(job_id)
        if state.status == "done" and state.result is not None:
            return state.result
        final = None if state.finished else await self._await_done(job_id, timeout)
        if final is not None and final.type == "done" and final.result is not None:
            return final.result
        state = await self.status(job_id)
        if state.status == "done" and state.result is not None:
            return state.result
        if state.status == "failed":
            raise JobFailed(state)
        raise JobTimeout(state, timeout or 0.0)

    async def analyze(
        self, request: AnalysisRequest, timeout: float | None = None
    ) -> AnalysisResult:
        """Submit an analysis and wait for its result (raises like :meth:`result`)."""
        result = await self._submit_and_wait(request, timeout)
        assert isinstance(result, AnalysisResult)
        return result

    async def move(self, request: MoveRequest, timeout: float | None = None) -> MoveResult:
        """Ask the bot for its move and wait for it (raises like :meth:`result`)."""
        result = await self._submit_and_wait(request, timeout)
        assert isinstance(result, MoveResult)
        return result

    async def events(self, job_id: str, timeout: float | None = None) -> AsyncIterator[Event]:
        """The job's events: the progress so far, then live ones, ending with ``done``/``failed``.

        Stops silently after ``timeout`` seconds without the end (the job goes on).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        async with self._subscription(job_id) as pubsub:
            state = await self.status(job_id)
            history = await self.redis.lrange(keys.progress(job_id), 0, -1)
            next_seq = 0
            for raw in history:
                event = Event.model_validate_json(raw)
                next_seq = event.seq + 1
                yield event
            while not state.finished:
                wait_s = _SAFETY_RECHECK_S
                if deadline is not None:
                    wait_s = min(wait_s, deadline - time.monotonic())
                    if wait_s <= 0:
                        return
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=wait_s)
                if message is None:
                    state = await self._recheck(job_id)
                    continue
                event = Event.model_validate_json(message["data"])
                if event.type == "progress":
                    if event.seq >= next_seq:
                        next_seq = event.seq + 1
                        yield event
                    continue
                yield event
                return
            yield _final_event(state)

    # -- act -------------------------------------------------------------------------

    async def cancel(self, job_id: str) -> bool:
        """Cancel the job (False if it is unknown or already finished)."""
        return await asyncio.to_thread(self.store.cancel, job_id)

    async def withdraw(self, job_id: str) -> str:
        """One requester's cancel: the job stops only if no other requester shares it.

        Returns what happened, as :meth:`worker.core.jobstore.JobStore.withdraw`:
        ``"unknown"``, ``"done"``/``"failed"`` (finished, untouched), ``"shared"``
        (it goes on for the others), ``"canceled"`` (it was waiting: failed now) or
        ``"stopping"`` (running: it fails at its next progress event).
        """
        return await asyncio.to_thread(self.store.withdraw, job_id)

    # -- service ---------------------------------------------------------------------

    async def service_status(self) -> ServiceStatus:
        """Queue lengths and oldest wait, workers alive/busy, running jobs, cache hits/misses."""
        r = self.redis
        now = time.time()
        queues = []
        for name in QUEUES:
            waiting = await r.llen(keys.rq_queue(name))
            oldest = 0.0
            if waiting:
                first = await r.lindex(keys.rq_queue(name), 0)
                enqueued = await r.hget(keys.job(str(first)), "enqueued_at") if first else None
                oldest = max(0.0, now - float(enqueued)) if enqueued else 0.0
            queues.append(QueueStatus(name=name, waiting=waiting, oldest_wait_s=round(oldest, 3)))
        running = await r.hgetall(keys.RUNNING)
        busy_workers = set(running.values())
        workers = []
        seconds, micros = await r.time()
        beats = await r.hgetall(keys.HEARTBEATS)
        lease_ms = self.settings.worker_lease_s * 1000
        for raw_name, raw in (await r.hgetall(keys.WORKERS)).items():
            name = str(raw_name)
            info = json.loads(raw)
            beat = beats.get(name)
            alive = beat is not None and seconds * 1000 + micros // 1000 - int(beat) <= lease_ms
            workers.append(
                WorkerStatus(
                    name=name,
                    pid=info.get("pid"),
                    host=info.get("host"),
                    alive=alive,
                    busy=alive and name in busy_workers,
                    job=next((j for j, w in running.items() if w == name), None),
                )
            )
        counters = await r.hgetall(CACHE_STATS)
        hits, misses = int(counters.get("hits", 0)), int(counters.get("misses", 0))
        jobs = {k: int(v) for k, v in (await r.hgetall(keys.STATS)).items()}
        return ServiceStatus(
            queues=queues,
            workers=workers,
            workers_alive=sum(w.alive for w in workers),
            workers_busy=sum(w.busy for w in workers),
            running=len(running),
            cache_hits=hits,
            cache_misses=misses,
            cache_hit_rate=round(hits / (hits + misses), 4) if hits + misses else None,
            jobs=jobs,
        )

    # -- internals -------------------------------------------------------------------

    async def _answer_from_cache(self, request: AnalysisRequest) -> Submitted | None:
        """The job recorded finished if the shared cache answers ``request`` exactly, else
        ``None`` (then it is queued). Never raises: any trouble means ``None``."""
        if self.cache is None or request.mode != "solve" or not self.cache.available:
            return None
        board = request.board()
        if not has_exact_solver(board):
            return None
        try:
            # One hop to a thread for the lookup and the record: redis-py's synchronous
            # round trips cost less than its asyncio ones.
            state = await asyncio.to_thread(self._record_if_cached, board, request)
        except Exception as exc:  # the queue answers it; never fail for the shortcut
            log.warning("answering from the cache at submission failed: %r", exc)
            return None
        if state is None:
            return None
        return Submitted(id=state.id, status="done", new=True, state=state)

    def _record_if_cached(self, board: Connect4, request: AnalysisRequest) -> JobState | None:
        """Synchronous: the exact answer from the shared cache alone (one ``MGET``), recorded
        as a finished job (one script); ``None`` if the cache cannot answer exactly."""
        assert self.cache is not None
        probe = CacheProbe(self.cache)
        start = time.monotonic()
        known = cached_exact(board, probe, all_moves=request.moves == "all", start=start)
        if known is None:
            return None  # not counted: the worker that takes the job looks them up again
        result = AnalysisResult.of(board, known, CACHE_WORKER)
        if not self._cache_in_job_redis:
            state = self.store.answered(request, result)
            self.cache.add_stats(probe.hits, probe.misses)
            return state
        return self.store.answered(request, result, (CACHE_STATS, probe.hits, probe.misses))

    async def _submit_and_wait(
        self, request: AnalysisRequest | MoveRequest, timeout: float | None
    ) -> JobResult:
        """Submit and await in two round trips: the job's final event is also pushed on a
        list of its own (``plybot:done:<id>``) that the submitter alone pops with BLPOP.

        Waiting goes in slices of a second, rechecking the state in between (the
        safety net, and the dropping of a stale bot move when no worker runs).
        """
        submitted = await self.enqueue(request)
        if submitted.state is not None and submitted.state.result is not None:
            return submitted.state.result  # answered at submission
        if not submitted.new:  # an identical analysis in flight: wait for that one
            return await self.result(submitted.id, timeout)
        final = await self._await_done(submitted.id, timeout)
        if final is None:
            raise JobTimeout(await self.status(submitted.id), timeout or 0.0)
        if final.type == "done" and final.result is not None:
            return final.result
        raise JobFailed(await self.status(submitted.id))

    async def _await_done(self, job_id: str, timeout: float | None) -> Event | None:
        """The job's final event (``done``/``failed``), or ``None`` after ``timeout`` s.

        The finish script pushes the final event on the job's own list
        (``plybot:done:<id>``, kept a minute); ``BLMOVE`` from that list to itself
        waits for it without taking it, so any number of waiters (the submitter,
        ``GET ?wait``, a webhook sender) see it. Waiting goes in slices of a second,
        rechecking the state in between (the safety net, and the dropping of a stale
        bot move when no worker runs).
        """
        done = keys.done(job_id)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait_s = _SAFETY_RECHECK_S
            if deadline is not None:
                wait_s = min(wait_s, deadline - time.monotonic())
                if wait_s <= 0:
                    return None
            slice_s = max(wait_s, 0.001)  # Redis takes fractions of a second; 0 means for ever
            raw = await self.redis.blmove(done, done, slice_s, "LEFT", "RIGHT")  # type: ignore[arg-type]
            if raw is not None:
                return Event.model_validate_json(raw)
            state = await self._recheck(job_id)
            if state.finished:  # its list expired, or it ended before the list existed
                return _final_event(state)

    @contextlib.asynccontextmanager
    async def _subscription(self, job_id: str) -> AsyncIterator[aioredis.client.PubSub]:
        pubsub = self.redis.pubsub()
        try:
            await pubsub.subscribe(keys.events(job_id))
            yield pubsub
        finally:
            with contextlib.suppress(Exception):
                await pubsub.unsubscribe()
            await pubsub.aclose()

    async def _recheck(self, job_id: str) -> JobState:
        """The state now; a bot move past its time-to-live with no worker is dropped here."""
        state = await self.status(job_id)
        if (
            state.status == "queued"
            and state.kind == "move"
            and state.enqueued_at is not None
            and time.time() - state.enqueued_at > self.settings.interactive_ttl_s
        ):
            await asyncio.to_thread(self.store.expire_waiting)
            state = await self.status(job_id)
        return state


def _final_event(state: JobState) -> Event:
    if state.status == "done":
        return Event(type="done", job_id=state.id, result=state.result)
    return Event(type="failed", job_id=state.id, error=state.error)

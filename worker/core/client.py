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

Every job is an RQ job (:mod:`worker.core.jobstore`): RQ's ``Job.fetch(id)`` finds every
id this client hands out, and its ``return_value()`` is the result shown here. RQ's API is
synchronous: its calls run on a pool of threads of the client's own.

Answered at submission (:meth:`JobClient.answer_at_once`): an exact Connect Four solve
that what is known answers is an RQ job run at once by RQ in this process
(``is_async=False``), never queued: same record, id scheme, events and webhook as a
worker's answer. First the opening book and the 12-stone database, read by the solver's
lookup ladder without a search (:meth:`engine.solver.Solver.lookup`: every position up to
ply 11 with every column, microseconds; ``"worker": "book"``; its line runs as far as
they name the moves); then the shared position cache (the root's exact entry; every
child's for ``moves="all"``: :func:`engine.analysis.cached_exact`, as a worker would read
it; ``"cache": "hit"``, ``"worker": "cache"``). The cache's lookups count in its hits and
misses; a lookup that cannot answer is not counted (the worker that takes the job looks
the same keys up and counts them). Any trouble falls through to the queue.

Waiting never polls in a loop: ``wait``/``result``/``analyze``/``move`` read the
state once (a finished job answers at once), then block on the job's own done
list (``BLMOVE`` from it to itself: the final event is seen, not taken, so any
number of waiters share it); ``events`` subscribes to the job's pub/sub channel
before reading its history, so no event is missed. Each rechecks the state once
a second as a safety net: a job that ended with no plybot worker to announce it (an
operator's ``rq empty``, a stock RQ worker, a bot move RQ dropped past its time to live)
is seen ending there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import redis.asyncio as aioredis
from pydantic import BaseModel
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff
from rq import Queue, Worker
from rq.registry import StartedJobRegistry
from rq.serializers import JSONSerializer

from engine.analysis import cached_exact, step_of
from engine.answer import Analysis
from engine.connect4 import Connect4
from engine.game import has_exact_solver
from engine.pool import lookup_solver
from worker.core import keys
from worker.core.connection import aclose, close, connect, connect_async
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
from worker.core.jobstore import JobStore, LostJobs, Submitted
from worker.core.kinds import QUEUES
from worker.core.position_cache import CACHE_STATS, CacheProbe, RedisPositionCache
from worker.core.records import announced_state, fetch, final_event, timestamp
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

if TYPE_CHECKING:
    from engine.solver import Solver

log = logging.getLogger(__name__)

_SAFETY_RECHECK_S = 1.0
#: Threads for RQ's synchronous calls (each holds one Redis round trip at a time).
_RQ_THREADS = 32

#: ``JobState.worker`` and ``AnalysisResult.worker`` of a job answered at submission: by the
#: shared cache, or by the opening book and the 12-stone database.
CACHE_WORKER = "cache"
KNOWN_WORKER = "book"
#: What answered, in words (the RQ job's description), by ``worker``.
_ANSWERED_BY = {KNOWN_WORKER: "the opening book and the database", CACHE_WORKER: "the shared cache"}

T = TypeVar("T")


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
        if max_connections is not None:
            # A stale connection after a Redis restart (or a failover) is retried on a fresh
            # one, not surfaced as an outage; a Redis that stays down is a 503 within ~0.1 s
            # (the client is told to come back), not after seconds of retrying per request.
            options["retry"] = Retry(ExponentialWithJitterBackoff(base=0.01, cap=0.1), 3)
        self.redis = connect_async(
            url,
            self.settings,
            max_connections=max_connections,
            pool_timeout=pool_timeout,
            **options,
        )
        # RQ's API is synchronous: its calls run on threads of our own, over this pool.
        self._sync = connect(
            url,
            self.settings,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            max_connections=_RQ_THREADS * 2,
        )
        self._threads = ThreadPoolExecutor(_RQ_THREADS, thread_name_prefix="rq-call")
        #: Queued jobs seen in no queue (see :meth:`_recover_if_lost`).
        self._lost = LostJobs()
        self.store = JobStore(self._sync, self.settings)
        # The workers' shared position cache, read at submission (synchronous, with its
        # short timeout and circuit breaker: called in a thread).
        self.cache: RedisPositionCache | None = None
        if self.settings.cache_enabled:
            self.cache = RedisPositionCache(self.settings.cache_url or url, self.settings)
        self._cache_in_job_redis = self.settings.cache_url in (None, "", url)
        # The lookup solvers answer at submission from the RQ threads: one at a time.
        self._lookup_lock = threading.Lock()

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
        await aclose(self.redis)
        self._threads.shutdown(wait=False, cancel_futures=True)
        close(self._sync)
        if self.cache is not None:
            self.cache.close()

    async def _call(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` (synchronous: RQ's API) on one of the client's threads."""
        return await asyncio.get_running_loop().run_in_executor(self._threads, function, *args)

    async def ping(self) -> bool:
        """True if Redis answers (raises ``redis.ConnectionError`` if not)."""
        return bool(await self.redis.ping())

    # -- submit ----------------------------------------------------------------------

    async def submit(self, request: AnalysisRequest | MoveRequest) -> str:
        """Enqueue ``request`` (analysis -> ``analysis`` queue, move -> ``interactive``); its id."""
        return (await self.enqueue(request)).id

    async def enqueue(self, request: AnalysisRequest | MoveRequest) -> Submitted:
        """Like :meth:`submit`, with the job's status then.

        An analysis that what is known answers exactly is finished here (status ``done``,
        ``state`` set: :meth:`answer_at_once`); anything else is queued with RQ
        (:meth:`queue`).
        """
        if isinstance(request, AnalysisRequest):
            answered = await self.answer_at_once(request)
            if answered is not None:
                return answered
        return await self.queue(request)

    async def queue(self, request: AnalysisRequest | MoveRequest) -> Submitted:
        """Queue ``request`` with RQ, or join an identical analysis in flight (``new`` False)."""
        return await self._call(self.store.submit, request)

    async def answer_at_once(self, request: AnalysisRequest) -> Submitted | None:
        """The job recorded finished if what is known answers ``request`` exactly, else
        ``None`` (then it is for :meth:`queue`): the opening book and the 12-stone database
        (the solver's lookup ladder, no search), then the shared cache. See the module
        docstring. Never raises: any trouble means ``None``."""
        if request.mode != "solve":
            return None
        board = request.board()
        if not has_exact_solver(board):
            return None
        try:
            state = await self._call(self._record_if_known, board, request)
        except Exception as exc:  # the queue answers it; never fail for the shortcut
            log.warning("answering at submission failed: %r", exc)
            return None
        if state is None:
            return None
        return Submitted(id=state.id, status="done", new=True, state=state)

    # -- read ------------------------------------------------------------------------

    async def status(self, job_id: str) -> JobState:
        """The job's state now; :class:`UnknownJob` if there is none."""
        state = await self._call(self.store.state, job_id)
        if state is None:
            raise UnknownJob(job_id)
        if state.status == "queued":
            await self._recover_if_lost(job_id)
        else:
            self._lost.forget(job_id)  # seen started (or ended) since: not lost
        return state

    async def _recover_if_lost(self, job_id: str) -> None:
        """Put a job back on its queue if it was seen waiting in no queue twice
        (:class:`worker.core.jobstore.LostJobs`): a worker took it and died before starting
        it. Every reader of a waiting job's state (a waiter's recheck, a GET) looks, so no
        accepted job is lost.
        """
        mark = await self._call(self.store.lost, job_id)
        if self._lost.seen(job_id, mark, time.monotonic()):
            await self._call(self.store.requeue_lost, job_id)

    async def progress(self, job_id: str) -> list[Progress]:
        """The progress events of the job so far, oldest first."""
        raw = await self.redis.lrange(keys.progress(job_id), 0, -1)
        return [p for p in (Event.model_validate_json(r).progress for r in raw) if p is not None]

    async def wait(
        self, job_id: str, timeout: float | None = None, *, submitted: bool = False
    ) -> JobState:
        """Wait until the job is done or failed, at most ``timeout`` s; returns the state then.

        ``submitted``: the caller has just had ``job_id`` from :meth:`queue` (or
        :meth:`enqueue`), so it is not read first: it was in flight a moment ago, and an end
        since then is on its done list (kept a minute)."""
        if not submitted:
            state = await self.status(job_id)
            if state.finished:
                return state
        final = await self._await_done(job_id, timeout)
        return final if final is not None else await self.status(job_id)

    async def result(self, job_id: str, timeout: float | None = None) -> JobResult:
        """The job's result; raises :class:`JobFailed` or :class:`JobTimeout`."""
        state = await self.status(job_id)
        if state.status == "done" and state.result is not None:
            return state.result
        final = None if state.finished else await self._await_done(job_id, timeout)
        if final is not None and final.status == "done" and final.result is not None:
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
                    state = await self.status(job_id)
                    continue
                event = Event.model_validate_json(message["data"])
                if event.type == "progress":
                    if event.seq >= next_seq:
                        next_seq = event.seq + 1
                        yield event
                    continue
                yield event
                return
            yield final_event(state)

    # -- act -------------------------------------------------------------------------

    async def cancel(self, job_id: str) -> bool:
        """Cancel the job for every requester (False if it is unknown or already finished)."""
        outcome = await self._call(self.store.cancel, job_id, "canceled by the requester")
        return outcome in ("canceled", "stopping")

    async def withdraw(self, job_id: str) -> str:
        """One requester's cancel: the job stops only if no other requester shares it.

        Returns what happened, as :meth:`worker.core.jobstore.JobStore.withdraw`:
        ``"unknown"``, ``"done"``/``"failed"`` (finished, untouched), ``"shared"``
        (it goes on for the others), ``"canceled"`` (it was waiting: it never runs) or
        ``"stopping"`` (running: its worker stops it within a fraction of a second).
        """
        return await self._call(self.store.withdraw, job_id)

    # -- service ---------------------------------------------------------------------

    async def service_status(self) -> ServiceStatus:
        """Queue lengths and oldest wait, workers alive/busy, running jobs, cache hits/misses."""
        status = await self._call(self._service_status)
        counters = await self.redis.hgetall(CACHE_STATS)
        hits, misses = int(counters.get("hits", 0)), int(counters.get("misses", 0))
        jobs = {k: int(v) for k, v in (await self.redis.hgetall(keys.STATS)).items()}
        return status.model_copy(
            update={
                "cache_hits": hits,
                "cache_misses": misses,
                "cache_hit_rate": round(hits / (hits + misses), 4) if hits + misses else None,
                "jobs": jobs,
            }
        )

    def _service_status(self) -> ServiceStatus:
        """Synchronous: the queues, registries and workers, from RQ's API."""
        conn = self._sync
        now = time.time()
        queues, running = [], 0
        for name in QUEUES:
            queue = Queue(name, connection=conn, serializer=JSONSerializer)
            waiting = queue.count
            oldest = 0.0
            head = queue.get_job_ids(0, 1)
            first = fetch(conn, head[0]) if head else None
            enqueued = timestamp(first.enqueued_at) if first is not None else None
            if enqueued is not None:
                oldest = max(0.0, now - enqueued)
            queues.append(QueueStatus(name=name, waiting=waiting, oldest_wait_s=round(oldest, 3)))
            running += StartedJobRegistry(name, connection=conn).count
        workers = []
        for worker in Worker.all(connection=conn, serializer=JSONSerializer):
            raw = conn.get(keys.worker_info(worker.name))
            job = worker.get_current_job_id() if raw else None
            workers.append(
                WorkerStatus(
                    name=worker.name,
                    pid=worker.pid,
                    host=worker.hostname,
                    alive=raw is not None,  # renewed by its housekeeping while it lives
                    busy=raw is not None and job is not None,
                    job=job,
                )
            )
        return ServiceStatus(
            queues=queues,
            workers=workers,
            workers_alive=sum(w.alive for w in workers),
            workers_busy=sum(w.busy for w in workers),
            running=running,
            cache_hits=0,
            cache_misses=0,
            cache_hit_rate=None,
            jobs={},
        )

    # -- internals -------------------------------------------------------------------

    def warm_up(self) -> None:
        """Open what answers at submission now (the 7x6 book and database: tens of
        milliseconds), not at the first request. Synchronous: call it at start-up. Never
        raises: what fails here fails again at submission, where the queue takes over."""
        try:
            with self._lookup_lock:
                self._lookup_solver(7, 6)
        except Exception as exc:
            log.warning("the book and the database could not be opened: %r", exc)

    def _lookup_solver(self, width: int, height: int) -> Solver | None:
        return lookup_solver(width, height, database=self.settings.solver_database)

    def _record_if_known(self, board: Connect4, request: AnalysisRequest) -> JobState | None:
        """Synchronous: the exact answer of the book and the database (no search), else of
        the shared cache alone (one ``MGET``), recorded as an RQ job run at once; ``None``
        if neither answers exactly."""
        start = time.monotonic()
        all_moves = request.moves == "all"
        with self._lookup_lock:
            solver = self._lookup_solver(board.width, board.height)
            known = (
                None if solver is None else solver.lookup(board, all_moves=all_moves, start=start)
            )
        if known is not None:
            return self._answered(board, request, known, KNOWN_WORKER)
        if self.cache is None or not self.cache.available:
            return None
        probe = CacheProbe(self.cache)
        known = cached_exact(board, probe, all_moves=all_moves, start=start)
        if known is None:
            return None  # not counted: the worker that takes the job looks them up again
        state = self._answered(board, request, known, CACHE_WORKER)
        self.cache.add_stats(probe.hits, probe.misses)
        return state

    def _answered(
        self, board: Connect4, request: AnalysisRequest, known: Analysis, worker: str
    ) -> JobState:
        """Synchronous: ``known`` recorded as the answer of ``worker`` (``KNOWN_WORKER``,
        ``CACHE_WORKER``), an RQ job run at once (:meth:`JobStore.answered`)."""
        result = AnalysisResult.of(board, known, worker)
        step = Progress.of(board, step_of(known))
        return self.store.answered(request, result, step, _ANSWERED_BY[worker])

    async def _submit_and_wait(
        self, request: AnalysisRequest | MoveRequest, timeout: float | None
    ) -> JobResult:
        """Submit and await: the job's final event is also pushed on a list of its own
        (``plybot:done:<id>``) that waiters block on."""
        submitted = await self.enqueue(request)
        if submitted.state is not None and submitted.state.result is not None:
            return submitted.state.result  # answered at submission
        if not submitted.new:  # an identical analysis in flight: wait for that one
            return await self.result(submitted.id, timeout)
        final = await self._await_done(submitted.id, timeout)
        if final is None:
            raise JobTimeout(await self.status(submitted.id), timeout or 0.0)
        if final.status == "done" and final.result is not None:
            return final.result
        raise JobFailed(final)

    async def _await_done(self, job_id: str, timeout: float | None) -> JobState | None:
        """The job's final state (done or failed), or ``None`` after ``timeout`` s.

        The worker pushes the end on the job's own list (``plybot:done:<id>``, kept a
        minute) once RQ has recorded it: a job done, its whole state (then nothing is read
        back), else its final event (then the state is read). ``BLMOVE`` from that list to
        itself waits for it without taking it, so any number of waiters (the submitter,
        ``GET ?wait``, a webhook sender) see it. Waiting goes in slices of a second,
        rechecking the state in between (the safety net for an end nobody announced).
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
                announced = announced_state(raw)
                if announced is not None:
                    return announced
            state = await self.status(job_id)
            if state.finished:  # its list expired, or it ended with nobody to announce it
                return state

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

"""Submitting, sharing and ending jobs: RQ's API, and what plybot keeps beside it.

Every job is enqueued with RQ (:meth:`rq.Queue.enqueue_call`, JSON serializer): its
record, queue, registries, results and retries are RQ's, and RQ's tools (``rq info``,
``rq empty``, ``rq requeue``, rq-dashboard) mean what they say about it. Beside RQ's record
plybot keeps only what RQ lacks (see :mod:`worker.core.keys`):

* ``plybot:job:<id>``: the kind and request (so a job whose RQ record an operator
  removed, or a bot move RQ dropped past its time to live, still ends with a clear
  error), the number of requesters sharing it, its dedupe key and a cancel's reason;
* ``plybot:dedupe:<digest>``: the in-flight job of an identical request (analyses and
  book chunks), so identical requests share one job;
* ``plybot:progress:<id>``, ``plybot:events:<id>``, ``plybot:done:<id>``: the progress
  events and the final event, for event streams and waiters
  (:meth:`JobStore.announce`, called by the worker once RQ has recorded the end).

Nothing here writes RQ's keys: RQ's API does. This module is synchronous (redis-py,
``decode_responses=False`` as RQ needs); :mod:`worker.core.client` is the async face.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
import uuid
from typing import Any, NamedTuple

import redis
from rq import Queue, Retry, Worker
from rq.exceptions import InvalidJobOperation
from rq.executions import Execution, ExecutionRegistry
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from worker.core import keys
from worker.core.contract import (
    AnalysisRequest,
    AnalysisResult,
    BookChunkRequest,
    Event,
    JobRequest,
    JobState,
    Progress,
)
from worker.core.keys import as_str
from worker.core.kinds import ANALYSIS, JobKind, kind_of
from worker.core.records import fetch, final_event, job_state, state_of
from worker.core.settings import Settings, get_settings

__all__ = ["IN_FLIGHT", "JobStore", "Submitted", "queue_key", "retry_policy"]

log = logging.getLogger(__name__)

#: RQ statuses of a job that has not ended.
IN_FLIGHT = frozenset(
    {JobStatus.QUEUED, JobStatus.STARTED, JobStatus.DEFERRED, JobStatus.SCHEDULED}
)
_ENDED_FOR_REQUESTER = {"done", "failed"}

#: How long a finished job's final event stays on its done list for late waiters.
DONE_LIST_TTL_S = 60

#: Delete KEYS[1] if it still names job ARGV[1] (a dedupe key an identical request may
#: have taken over since).
_DELETE_IF_NAMES = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
)


class Submitted(NamedTuple):
    """A submitted job: its id, its contract status then, and whether this call created it.

    ``state``: the finished job's state when the shared cache answered it at submission.
    """

    id: str
    status: str
    new: bool
    state: JobState | None = None


def queue_key(name: str) -> str:
    """The Redis list of RQ's queue ``name``, as RQ names it (for an ``LLEN`` from async code)."""
    return Queue.redis_queue_namespace_prefix + name


def retry_policy(settings: Settings) -> Retry | None:
    """RQ's retries of a job whose worker died (RQ calls it abandoned), or ``None`` for one run.

    A failure the job itself raises is not retried (the worker's exception handler says
    so: the same request would fail the same way).
    """
    retries = settings.job_max_attempts - 1
    return Retry(max=retries) if retries >= 1 else None


def _description(request: JobRequest) -> str:
    if isinstance(request, AnalysisRequest):
        return f"analysis {request.game} '{request.position}'"
    if isinstance(request, BookChunkRequest):
        return f"book {request.variant} ply {request.plies} chunk {request.index}"
    return f"move {request.game} '{request.position}'"


def _dedupe_key(request: JobRequest) -> str:
    if isinstance(request, AnalysisRequest):
        return keys.dedupe(request.dedupe_key())
    if isinstance(request, BookChunkRequest):
        # A builder started again while a chunk is in flight joins that job.
        build = keys.book_results(request.variant, request.plies, request.size)
        return keys.dedupe(f"{build}:{request.index}")
    return ""


#: Seconds between the two sightings that make a waiting job lost (see :class:`LostJobs`).
LOST_AFTER_S = 1.0


class LostJobs:
    """Sightings of jobs that RQ says wait in a queue that does not hold them.

    With more than one queue, an RQ worker takes a job with ``BLPOP`` and only then
    registers it as started: a worker that dies in between (RQ's own window of
    milliseconds) leaves the job waiting in no queue, and RQ never looks for it again.
    Whoever waits for a job feeds :meth:`JobStore.lost`'s mark here on each look; two
    sightings of the same mark at least :data:`LOST_AFTER_S` apart make it lost (a job
    enqueued or started again in between has another mark), and the caller puts it back
    with :meth:`JobStore.requeue_lost`.
    """

    def __init__(self) -> None:
        self._since: dict[str, tuple[float, str]] = {}

    def seen(self, job_id: str, mark: str | None, now: float) -> bool:
        """Record a look at ``job_id`` (``mark``: :meth:`JobStore.lost`'s answer); True if
        it is lost now (its sightings are then forgotten)."""
        if mark is None:
            self._since.pop(job_id, None)
            return False
        first, first_mark = self._since.setdefault(job_id, (now, mark))
        if first_mark != mark:  # enqueued or started again since the first sighting
            self._since[job_id] = (now, mark)
            return False
        if now - first >= LOST_AFTER_S:
            self._since.pop(job_id, None)
            return True
        return False

    def forget(self, job_id: str) -> None:
        """``job_id`` was seen started or ended: not lost."""
        self._since.pop(job_id, None)


class JobStore:
    """Jobs over a synchronous Redis connection (bytes, as RQ needs)."""

    def __init__(self, connection: redis.Redis, settings: Settings | None = None) -> None:
        self.redis = connection
        self.settings = settings or get_settings()
        self._queues: dict[tuple[str, bool], Queue] = {}
        #: The last replica wait went unacknowledged (see :meth:`await_replica`).
        self._alone = False
        self._next_unreplicated_log = 0.0

    def queue(self, name: str, *, is_async: bool = True) -> Queue:
        """RQ's queue ``name`` with the JSON serializer (``is_async=False``: RQ runs a job
        enqueued on it at once, in this process)."""
        queue = self._queues.get((name, is_async))
        if queue is None:
            queue = self._queues[(name, is_async)] = Queue(
                name, connection=self.redis, serializer=JSONSerializer, is_async=is_async
            )
        return queue

    def _hold_s(self, kind: JobKind) -> int:
        """How long plybot's record of a job is kept: its runs, then its result's retention."""
        timeout = kind.timeout(self.settings)
        return timeout * (self.settings.job_max_attempts + 1) + self.settings.result_ttl_s + 3600

    # -- requester side ----------------------------------------------------------

    def submit(self, request: JobRequest) -> Submitted:
        """Enqueue ``request`` on its kind's queue, or join an identical job in flight.

        A kind with ``dedupe`` shares one job among identical requests while it runs
        (each requester counted, see :meth:`withdraw`). A bot move carries RQ's ``ttl``:
        no worker started it within ``interactive_ttl_s``, RQ drops it and its requester
        is told so. With sentinels, returns once a replica has the job (see
        :meth:`await_replica`).
        """
        submitted = self._submit(request)
        self.await_replica(submitted.id, self._hold_s(kind_of(request)))
        return submitted

    def await_replica(self, job_id: str, hold: int) -> bool:
        """With sentinels (``PLYBOT_REDIS_SENTINELS``), wait until a replica has the job
        ``job_id`` (Redis ``WAIT 1``), at most ``redis_replica_wait_ms``; True if one
        acknowledged it, or if there is nothing to wait for (no sentinels, or a wait of 0).

        Not acknowledged (no replica connected, or none answered in time): the job stays
        accepted, on the primary alone, and is lost if the primary dies before a replica
        has it; it is counted (``plybot:stats`` field ``unreplicated``, ``/v1/status``'s
        ``jobs.unreplicated``) and logged (at most once a minute). After one such wait,
        submissions do not wait while the primary has no replica connected (one ``INFO``
        instead), so a primary left alone after a failover costs no time per submission.

        ``WAIT`` covers the writes of the connection it is sent on, and the submission's
        went out on another of the pool's: so it follows a write of its own on one
        connection (the job record's TTL set again to ``hold``), which comes after the
        submission's (and every earlier write, a game's move included) on the replication
        stream.
        """
        wait_ms = self.settings.redis_replica_wait_ms
        if not self.settings.redis_sentinels or wait_ms <= 0:
            return True
        if self._alone and not int(self.redis.info("replication").get("connected_slaves", 0)):
            return self._unreplicated(job_id, "the primary has no replica connected")
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.expire(keys.job(job_id), hold)
            pipe.wait(1, wait_ms)
            acked = int(pipe.execute()[-1])
        self._alone = acked < 1
        if acked >= 1:
            return True
        return self._unreplicated(job_id, f"no replica acknowledged it within {wait_ms} ms")

    def _unreplicated(self, job_id: str, why: str) -> bool:
        """Count (and now and then log) a job accepted on the primary alone; False."""
        self.redis.hincrby(keys.STATS, "unreplicated", 1)
        now = time.monotonic()
        if now >= self._next_unreplicated_log:
            self._next_unreplicated_log = now + 60
            log.warning(
                "job %s accepted on the primary alone (%s): it is lost if the primary dies "
                "before a replica has it; such jobs are counted in plybot:stats unreplicated",
                job_id,
                why,
            )
        return False

    def _submit(self, request: JobRequest) -> Submitted:
        """:meth:`submit`, not waiting for a replica."""
        kind = kind_of(request)
        job_id = uuid.uuid4().hex
        dedupe = _dedupe_key(request) if kind.dedupe else ""
        hold = self._hold_s(kind)
        if dedupe:
            joined = self._join(dedupe, job_id, hold)
            if joined is not None:
                return joined
        settings = self.settings
        with self.redis.pipeline() as pipe:  # plybot's record and RQ's job, in one round trip
            pipe.multi()
            self._record(pipe, job_id, kind, request, hold, dedupe=dedupe)
            self.queue(kind.queue).enqueue_call(
                func=kind.function,
                args=[request.model_dump(mode="json")],
                job_id=job_id,
                timeout=kind.timeout(settings),
                result_ttl=settings.result_ttl_s,
                failure_ttl=settings.result_ttl_s,
                ttl=math.ceil(ttl) if (ttl := kind.ttl(settings)) is not None else None,
                description=_description(request),
                retry=retry_policy(settings),
                pipeline=pipe,
            )
            pipe.execute()
        return Submitted(id=job_id, status="queued", new=True)

    @staticmethod
    def _record(
        pipe: redis.client.Pipeline,
        job_id: str,
        kind: JobKind,
        request: JobRequest,
        hold: int,
        *,
        dedupe: str = "",
    ) -> None:
        """Write plybot's record of a job (in ``pipe``)."""
        pipe.hset(
            keys.job(job_id),
            mapping={
                "kind": kind.name,
                "request": request.model_dump_json(),
                "requesters": 1,
                "dedupe": dedupe,
                "enqueued_at": repr(time.time()),
            },
        )
        pipe.expire(keys.job(job_id), hold)
        pipe.hincrby(keys.STATS, "submitted", 1)

    def _join(self, dedupe: str, job_id: str, hold: int) -> Submitted | None:
        """The identical job in flight, one more requester counted; else ``None`` (and the
        dedupe key now names ``job_id``)."""
        for _ in range(3):
            if self.redis.set(dedupe, job_id, nx=True, ex=hold):
                return None
            other = as_str(self.redis.get(dedupe))
            job = fetch(self.redis, other) if other else None
            status = job.get_status(refresh=False) if job is not None else None
            if job is not None and status in IN_FLIGHT:
                self.redis.hincrby(keys.job(other), "requesters", 1)
                state = "running" if status == JobStatus.STARTED else "queued"
                return Submitted(id=other, status=state, new=False)
            # Ended (or gone): this request starts a job of its own.
            if self.redis.set(dedupe, job_id, ex=hold, xx=True):
                return None
        return None

    def answered(
        self, request: AnalysisRequest, result: AnalysisResult, step: Progress, source: str
    ) -> JobState:
        """Record ``request`` as a job answered at submission (``source``: what answered it,
        in words: "the shared cache", "the opening book and the database").

        RQ runs it at once in this process (a queue with ``is_async=False``): the job
        function just returns the answer, so the job is an ordinary finished RQ job
        (``Job.fetch(id).return_value()`` is the result), never queued. ``step`` is its
        one progress event (the answer as a step), published first, as a worker's are.

        Round trips: one for plybot's record, its event and its end, then RQ's own. Its
        end is not told on its channel or done list: nobody knows its id before this
        returns, and whoever asks after finds it ended.
        """
        kind = kind_of(request)
        job_id = uuid.uuid4().hex
        hold = self._hold_s(kind)
        dumped = result.model_dump(mode="json")
        with self.redis.pipeline(transaction=False) as pipe:
            self._record(pipe, job_id, kind, request, hold)
            pipe.hincrby(keys.STATS, "cached", 1)
            self._progress(pipe, job_id, 0, [step])
            self._ended(pipe, job_id, "done", None, "")
            pipe.execute()
        job = self.queue(kind.queue, is_async=False).enqueue_call(
            func=kind.answered_function,
            args=[request.model_dump(mode="json"), dumped],
            job_id=job_id,
            result_ttl=self.settings.result_ttl_s,
            failure_ttl=self.settings.result_ttl_s,
            description=f"{_description(request)} (answered from {source})",
        )
        # RQ's job holds what RQ recorded: the state without reading it back.
        state = state_of(job, self.settings, progress=step, result=dumped)
        assert state is not None, job_id
        assert state.status == "done", state
        self.await_replica(job_id, hold)
        return state

    def state(self, job_id: str, *, with_progress: bool = True) -> JobState | None:
        """What is known of the job now (``None``: no such plybot job)."""
        return job_state(self.redis, job_id, self.settings, with_progress=with_progress)

    def cancel(self, job_id: str, reason: str = "canceled by an operator") -> str:
        """Cancel the job with RQ (:meth:`rq.job.Job.cancel`) for every requester.

        Returns ``"unknown"``, ``"done"``/``"failed"`` (it had ended: left as it is),
        ``"canceled"`` (it was waiting: it never runs) or ``"stopping"`` (it runs: its
        worker sees the cancel and stops within about ``WATCH_INTERVAL_S``). Either way RQ
        records it canceled now and its waiters are told at once. Never raises for a job
        that ends, starts, dies or is canceled by someone else meanwhile.
        """
        job = fetch(self.redis, job_id)
        if job is None:
            state = self.state(job_id, with_progress=False)
            return state.status if state is not None else "unknown"
        status = job.get_status(refresh=False)
        if status not in IN_FLIGHT:
            state = self.state(job_id, with_progress=False)
            return state.status if state is not None else "unknown"
        # First, so that a worker that takes the job now sees the cancel (see canceled()).
        self.redis.hset(keys.job(job_id), "reason", reason)
        try:
            self._cancel_with_rq(job)
        except InvalidJobOperation:
            # RQ's record says canceled already: this cancel's own doing (the worker saw the
            # reason above, stopped the run and settled it canceled first), or another
            # canceller's; or the record is gone.
            current = fetch(self.redis, job_id)
            if current is None or current.get_status(refresh=False) != JobStatus.CANCELED:
                state = self.state(job_id, with_progress=False)
                return state.status if state is not None else "unknown"
        self.redis.hincrby(keys.STATS, "canceled", 1)
        state = self.state(job_id, with_progress=False)
        if state is not None:
            self.announce(state)
        return "stopping" if status == JobStatus.STARTED else "canceled"

    def _cancel_with_rq(self, job: Job) -> None:
        """RQ's :meth:`rq.job.Job.cancel`, past the runs of the job that RQ still lists but
        whose record is gone.

        RQ's cancel of a started job reads the record of each run (RQ's execution) that its
        registry of the job's runs lists, and raises ``ValueError`` ("Execution ... not
        found in Redis") for one that is gone, a ``KeyError`` for one a late heartbeat
        wrote again in part. RQ keeps a run's record for its lease but lists the run 60 s
        longer, so for a minute after a worker died or hung with the job every cancel of it
        raised (a 500 from the API); and so did a cancel whose worker ended the run between
        RQ's two reads (a worker stops at the reason :meth:`cancel` writes first, within
        ``WATCH_INTERVAL_S``). Such a run is dropped from RQ's registries, as RQ's cancel
        would have done had its record been there, and the cancel made again.

        Raises ``InvalidJobOperation`` as RQ does (canceled already, or the record gone).
        """
        for attempt in range(3):
            try:
                job.cancel()
                return
            except (ValueError, KeyError):
                if attempt == 2:
                    raise
                self._forget_gone_runs(job)

    def _forget_gone_runs(self, job: Job) -> None:
        """Drop from RQ's registries (the job's runs, the started jobs) the runs of ``job``
        whose record has gone (or holds no start: written again in part by a late heartbeat)."""
        runs = ExecutionRegistry(job.id, self.redis)
        for run_id in runs.get_execution_ids():
            run = Execution(run_id, job.id, self.redis)
            if self.redis.hexists(run.key, "created_at"):
                continue
            log.info("job %s: its run %s has no record left (its worker died or hung)", job.id,
                     run_id)  # fmt: skip
            with self.redis.pipeline() as pipe:
                runs.remove(run, pipeline=pipe)
                job.started_job_registry.remove_execution(run, pipeline=pipe)
                pipe.execute()

    def canceled(self, job_id: str) -> bool:
        """True if the job was canceled: RQ says so, or plybot's record does (a cancel that
        came as RQ's loop took the job, which then marked it started).

        Reads RQ's status into a Job object of its own: never into one another thread
        holds (RQ's worker writes its job object back whole as the job ends, status
        included, so a status read into it at the wrong moment would be written back).
        """
        if self.redis.hexists(keys.job(job_id), "reason"):
            return True
        job = Job(job_id, connection=self.redis, serializer=JSONSerializer)
        return job.get_status(refresh=True) == JobStatus.CANCELED

    def settle_canceled(self, job_id: str) -> None:
        """Make RQ's record of a canceled job say so again, and tell its waiters.

        A cancel that comes after a worker popped the job but before RQ started it is
        written over by the start (RQ marks it started): the run then stops at the cancel,
        and its worker calls this so that the job ends canceled, not running for ever.
        """
        job = fetch(self.redis, job_id)
        if job is None:
            return
        if job.get_status(refresh=False) != JobStatus.CANCELED:
            with contextlib.suppress(InvalidJobOperation):  # canceled meanwhile: as wanted
                self._cancel_with_rq(job)
        state = self.state(job_id, with_progress=False)
        if state is not None:
            self.announce(state)

    def lost(self, job_id: str) -> str | None:
        """If RQ says the job waits in its queue but it is not there (taken by a worker that
        may have died between RQ's pop and the job's start: RQ's own window of milliseconds),
        a mark of this wait (when RQ enqueued it, when it last started); else ``None``. Two
        sightings with the same mark, a second apart, make it lost: a job enqueued or started
        again in between has another mark."""
        job = fetch(self.redis, job_id)
        if job is None or job.get_status(refresh=False) != JobStatus.QUEUED:
            return None
        if self.queue(job.origin).get_job_position(job_id) is not None:
            return None
        return f"{job.enqueued_at}|{job.started_at}"

    def requeue_lost(self, job_id: str) -> None:
        """Put a :meth:`lost` job back at the front of its queue (RQ's ``enqueue_job``)."""
        job = fetch(self.redis, job_id)
        if job is not None:
            log.warning(
                "job %s was taken by a worker that died before starting it: requeued", job_id
            )
            self.queue(job.origin).enqueue_job(job, at_front=True)

    def withdraw(self, job_id: str) -> str:
        """One requester's cancel of a job that identical requests may share.

        Returns as :meth:`cancel`, or ``"shared"`` (another requester still waits for it:
        it goes on, and identical requests keep joining it).
        """
        if not self.redis.exists(keys.job(job_id)):
            return self.cancel(job_id)
        left = self.redis.hincrby(keys.job(job_id), "requesters", -1)
        if left > 0:
            return "shared"
        dedupe = as_str(self.redis.hget(keys.job(job_id), "dedupe"))
        if dedupe and as_str(self.redis.get(dedupe)) == job_id:
            self.redis.delete(dedupe)  # no identical request joins a job being canceled
        return self.cancel(job_id, "canceled by the requester")

    # -- events ------------------------------------------------------------------

    def publish_progress(
        self, job_id: str, first_seq: int, steps: list[Progress], client: redis.Redis | None = None
    ) -> None:
        """Publish progress events ``first_seq, first_seq + 1, ...`` in one round trip."""
        with (client or self.redis).pipeline(transaction=False) as pipe:
            self._progress(pipe, job_id, first_seq, steps)
            pipe.execute()

    def _progress(
        self, pipe: redis.client.Pipeline, job_id: str, first_seq: int, steps: list[Progress]
    ) -> None:
        """:meth:`publish_progress`'s writes, in ``pipe``."""
        payloads = [
            Event(type="progress", job_id=job_id, seq=first_seq + i, progress=p).model_dump_json(
                exclude_none=True
            )
            for i, p in enumerate(steps)
        ]
        pipe.rpush(keys.progress(job_id), *payloads)
        pipe.ltrim(keys.progress(job_id), -self.settings.progress_history, -1)
        pipe.expire(keys.progress(job_id), self._hold_s(ANALYSIS))
        for payload in payloads:
            pipe.publish(keys.events(job_id), payload)

    def announce(self, state: JobState) -> None:
        """Tell the job's waiters and event streams that it ended (``state`` is final):
        its final event on its channel, and on its done list for a minute (a job done: its
        whole ``state``, so that a waiter needs not read it back). Its dedupe key goes (an
        identical request starts a job of its own once it ended), and its record and
        progress are kept as long as RQ keeps its result."""
        if state.status not in _ENDED_FOR_REQUESTER:
            return
        dedupe = as_str(self.redis.hget(keys.job(state.id), "dedupe"))
        with self.redis.pipeline(transaction=False) as pipe:
            self._ended(pipe, state.id, state.status, state, dedupe)
            pipe.execute()

    def _ended(
        self,
        pipe: redis.client.Pipeline,
        job_id: str,
        status: str,
        state: JobState | None,
        dedupe: str,
    ) -> None:
        """:meth:`announce`'s writes, in ``pipe``; the end told only with ``state``."""
        if dedupe:  # an ended job is joined by no identical request: its key goes now
            pipe.eval(_DELETE_IF_NAMES, 1, dedupe, job_id)
        if state is not None:
            event = final_event(state).model_dump_json(exclude_none=True)
            pipe.publish(keys.events(job_id), event)
            pipe.rpush(keys.done(job_id), state.model_dump_json() if status == "done" else event)
            pipe.expire(keys.done(job_id), DONE_LIST_TTL_S)
        pipe.hset(keys.job(job_id), "ended", 1)
        pipe.expire(keys.job(job_id), DONE_LIST_TTL_S, nx=True)  # a record that had gone
        # Ended: kept as long as RQ keeps its result (no longer than the hold set for its
        # runs), so a steady load's keys level off within result_ttl_s.
        pipe.expire(keys.job(job_id), self.settings.result_ttl_s, lt=True)
        pipe.expire(keys.progress(job_id), self.settings.result_ttl_s, lt=True)
        pipe.hincrby(keys.STATS, status, 1)

    def live_workers(self) -> dict[str, dict[str, Any]]:
        """RQ's workers that are alive: name -> plybot's info of it (``pid``, ``host``,
        ``queues``, ``table_bytes``, ``rss``) and ``job``, the job in hand (RQ's record of
        the worker's execution) or ``None``.

        Alive: RQ lists it and its housekeeping renewed its info within its lease (a hung
        or stopped worker drops out within ``3 * worker_lease_s``).
        """
        workers = Worker.all(connection=self.redis, serializer=JSONSerializer)
        if not workers:
            return {}
        infos = self.redis.mget([keys.worker_info(w.name) for w in workers])
        live = {}
        for worker, raw in zip(workers, infos, strict=True):
            if raw is not None:
                live[worker.name] = {**json.loads(raw), "job": worker.get_current_job_id()}
        return live

    def job(self, job_id: str) -> Job | None:
        """RQ's job (``None``: RQ has no such job)."""
        return fetch(self.redis, job_id)

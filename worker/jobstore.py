"""A job's life in Redis, written in one place for the client, the workers and the reaper.

A job is an RQ job (enqueued with RQ: its record ``rq:job:<id>`` names the job
function and its JSON argument, its id waits in ``rq:queue:<name>``) plus the
contract's view of it in ``plybot:job:<id>`` (see :mod:`worker.keys`). The
workers (:mod:`worker.runner`) pop ids from RQ's queues and keep RQ's record's
status, times and worker name up to date in the same atomic steps as ours.
Status moves ``queued -> running -> done | failed``, or back to ``queued`` when
a worker died; reaching ``done`` or ``failed`` happens exactly once (a Lua
compare-and-set), publishes the final event, and starts the record's TTL.

This module is synchronous (redis-py) and takes a connection with
``decode_responses=False``, as RQ needs; :mod:`worker.client` is the async face.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

import redis
from rq import Queue
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer
from rq.utils import now as rq_now
from rq.utils import utcformat

from worker import keys
from worker.contract import (
    AnalysisRequest,
    AnalysisResult,
    Event,
    JobState,
    MoveRequest,
    MoveResult,
    Progress,
)
from worker.settings import Settings, get_settings

__all__ = ["JobStore", "Started", "job_state_from_hash"]

log = logging.getLogger(__name__)

ANALYSIS_FUNC = "worker.jobs.analysis_job"
MOVE_FUNC = "worker.jobs.move_job"

# Finish a job once: only from queued/running, and (when ARGV[1] is set) only by
# the worker that holds it, so a job run again after a presumed death cannot be
# answered twice.
_FINISH = """
-- the cache's counts (ARGV[13], ARGV[14]) are counted even if this run lost the job
if KEYS[10] ~= '' then
  if ARGV[13] ~= '0' then redis.call('HINCRBY', KEYS[10], 'hits', ARGV[13]) end
  if ARGV[14] ~= '0' then redis.call('HINCRBY', KEYS[10], 'misses', ARGV[14]) end
end
local status = redis.call('HGET', KEYS[1], 'status')
if not status or status == 'done' or status == 'failed' then return 0 end
if ARGV[1] ~= '' and redis.call('HGET', KEYS[1], 'worker') ~= ARGV[1] then return 0 end
-- progress events not yet sent: ARGV[15..]; ARGV[12]: the latest progress;
-- ARGV[11]: how many events the list keeps; ARGV[13], ARGV[14]: the worker's
-- position-cache hits and misses not yet counted (added to KEYS[10] if set)
for i = 15, #ARGV do
  redis.call('RPUSH', KEYS[4], ARGV[i])
  redis.call('PUBLISH', KEYS[3], ARGV[i])
end
if #ARGV >= 15 then
  redis.call('LTRIM', KEYS[4], -tonumber(ARGV[11]), -1)
  redis.call('HSET', KEYS[1], 'progress', ARGV[12])
end
redis.call('HSET', KEYS[1], 'status', ARGV[2], ARGV[3], ARGV[4], 'ended_at', ARGV[5])
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('EXPIRE', KEYS[4], ARGV[6])
redis.call('HDEL', KEYS[2], ARGV[8])
if KEYS[5] ~= '' and redis.call('GET', KEYS[5]) == ARGV[8] then redis.call('DEL', KEYS[5]) end
redis.call('HINCRBY', KEYS[6], ARGV[2], 1)
redis.call('ZREM', KEYS[8], ARGV[8])
if redis.call('EXISTS', KEYS[7]) == 1 then
  redis.call('HSET', KEYS[7], 'status', ARGV[9], 'ended_at', ARGV[10])
  redis.call('EXPIRE', KEYS[7], ARGV[6])
end
redis.call('PUBLISH', KEYS[3], ARGV[7])
redis.call('RPUSH', KEYS[9], ARGV[7])
redis.call('EXPIRE', KEYS[9], 60)
return 1
"""

# Enqueue a job, or return the id of an identical analysis in flight: {id, status}
# (counting one more requester of it). KEYS: dedupe key ('' for none), our record,
# RQ's record, RQ's queue, RQ's set of queues, stats. ARGV: id, dedupe TTL, n, n
# field/value pairs of our record, m, m pairs of RQ's record.
SUBMIT = """
local id = ARGV[1]
if KEYS[1] ~= '' then
  local other = redis.call('GET', KEYS[1])
  if other then
    local status = redis.call('HGET', 'plybot:job:' .. other, 'status')
    if status == 'queued' or status == 'running' then
      redis.call('HINCRBY', 'plybot:job:' .. other, 'requesters', 1)
      return {other, status}
    end
  end
  redis.call('SET', KEYS[1], id, 'EX', ARGV[2])
end
local n = tonumber(ARGV[3])
redis.call('HSET', KEYS[2], unpack(ARGV, 4, 3 + 2 * n))
local m = tonumber(ARGV[4 + 2 * n])
redis.call('HSET', KEYS[3], unpack(ARGV, 5 + 2 * n, 4 + 2 * n + 2 * m))
redis.call('RPUSH', KEYS[4], id)
redis.call('SADD', KEYS[5], KEYS[4])
redis.call('HINCRBY', KEYS[6], 'submitted', 1)
redis.call('ZADD', KEYS[7], ARGV[#ARGV], id)
return {id, 'queued'}
"""

# Record a job answered at submission (from the shared position cache): finished at
# once, as the finish script would leave it, never queued. KEYS: our record, its done
# list, stats, the cache's counters ('' when the cache lives in another Redis).
# ARGV: result TTL, the final event, cache hits, misses, then field/value pairs.
_ANSWERED = """
redis.call('HSET', KEYS[1], unpack(ARGV, 5, #ARGV))
redis.call('EXPIRE', KEYS[1], ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('EXPIRE', KEYS[2], 60)
redis.call('HINCRBY', KEYS[3], 'submitted', 1)
redis.call('HINCRBY', KEYS[3], 'done', 1)
redis.call('HINCRBY', KEYS[3], 'cached', 1)
if KEYS[4] ~= '' then
  if ARGV[3] ~= '0' then redis.call('HINCRBY', KEYS[4], 'hits', ARGV[3]) end
  if ARGV[4] ~= '0' then redis.call('HINCRBY', KEYS[4], 'misses', ARGV[4]) end
end
return 1
"""

# One requester withdraws from a job: 'unknown', the final status ('done'/'failed'),
# 'shared' (other requesters still wait for it: it goes on), or 'cancel' (it was the
# last: the caller cancels it; its dedupe key is dropped first, so that no identical
# request joins a job being canceled). A record without the count has one requester.
_WITHDRAW = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 'unknown' end
if status ~= 'queued' and status ~= 'running' then return status end
if redis.call('HINCRBY', KEYS[1], 'requesters', -1) > 0 then return 'shared' end
local dedupe = redis.call('HGET', KEYS[1], 'dedupe')
if dedupe and dedupe ~= '' and redis.call('GET', dedupe) == ARGV[1] then
  redis.call('DEL', dedupe)
end
return 'cancel'
"""

# Start a queued job: returns {attempt number, enqueued_at}, or {0, ''} if the job
# is not queued (finished, canceled or expired meanwhile).
_START = """
local status = redis.call('HGET', KEYS[1], 'status')
if status ~= 'queued' then return {0} end
local attempts = redis.call('HINCRBY', KEYS[1], 'attempts', 1)
redis.call('HSET', KEYS[1], 'status', 'running', 'worker', ARGV[1], 'started_at', ARGV[2])
redis.call('HSET', KEYS[2], ARGV[3], ARGV[1])
redis.call('ZREM', KEYS[5], ARGV[3])
redis.call('DEL', KEYS[3])
redis.call('HSET', KEYS[4], 'status', 'started', 'started_at', ARGV[4], 'worker_name', ARGV[1])
return {attempts, unpack(redis.call('HMGET', KEYS[1], 'kind', 'request', 'enqueued_at', 'dedupe'))}
"""


def _text(value: bytes | str | None) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def _rq_job(job_id: str) -> str:
    """RQ's record of the job."""
    return f"rq:job:{job_id}"


@dataclass(frozen=True)
class Started:
    """A job a worker has just taken: what to run."""

    job_id: str
    attempt: int
    kind: str
    request: dict
    enqueued_at: float | None
    dedupe: str = ""


def job_state_from_hash(job_id: str, raw: dict) -> JobState | None:
    """The :class:`JobState` stored in a ``plybot:job`` hash (``None`` if the hash is empty)."""
    if not raw:
        return None
    fields: dict[str, str] = {str(_text(k)): str(_text(v)) for k, v in raw.items()}
    kind = fields["kind"]
    request_cls = AnalysisRequest if kind == "analysis" else MoveRequest
    result_cls = AnalysisResult if kind == "analysis" else MoveResult

    def number(name: str) -> float | None:
        value = fields.get(name)
        return float(value) if value else None

    return JobState.model_construct(
        id=job_id,
        kind=kind,  # type: ignore[arg-type]  # written by this module only
        status=fields["status"],  # type: ignore[arg-type]
        request=request_cls.model_construct(**json.loads(fields["request"])),
        progress=Progress.model_validate_json(fields["progress"])
        if fields.get("progress")
        else None,
        result=result_cls.model_validate_json(fields["result"]) if fields.get("result") else None,
        error=fields.get("error") or None,
        worker=fields.get("worker") or None,
        attempts=int(fields.get("attempts") or 0),
        enqueued_at=number("enqueued_at"),
        started_at=number("started_at"),
        ended_at=number("ended_at"),
    )


class JobStore:
    """Job records and queue operations over a synchronous Redis connection."""

    def __init__(self, connection: redis.Redis, settings: Settings | None = None) -> None:
        self.redis = connection
        self.settings = settings or get_settings()
        self._queues: dict[str, Queue] = {}
        self._finish = connection.register_script(_FINISH)
        self._start = connection.register_script(_START)
        self._submit = connection.register_script(SUBMIT)
        self._withdraw = connection.register_script(_WITHDRAW)
        self._answered = connection.register_script(_ANSWERED)

    def queue(self, name: str) -> Queue:
        queue = self._queues.get(name)
        if queue is None:
            queue = self._queues[name] = Queue(
                name, connection=self.redis, serializer=JSONSerializer
            )
        return queue

    # -- requester side ----------------------------------------------------------

    def prepare_submit(self, request: AnalysisRequest | MoveRequest) -> tuple[list[str], list[Any]]:
        """The keys and arguments of the submit script for ``request`` (no I/O).

        The RQ job is built by RQ (``Job.create``, ``to_dict``): its record is
        RQ's own, so RQ's tools see the job queued.
        """
        settings = self.settings
        job_id = uuid.uuid4().hex
        if isinstance(request, AnalysisRequest):
            kind, queue_name, func = "analysis", "analysis", ANALYSIS_FUNC
            timeout = settings.analysis_timeout_s
            dedupe_key = keys.dedupe(request.dedupe_key())
        else:
            kind, queue_name, func = "move", "interactive", MOVE_FUNC
            timeout = settings.interactive_timeout_s
            dedupe_key = ""
        rq_job = Job.create(
            func,
            args=[request.model_dump(mode="json")],
            id=job_id,
            connection=self.redis,
            serializer=JSONSerializer,
            timeout=timeout,
            result_ttl=settings.result_ttl_s,
            failure_ttl=settings.result_ttl_s,
            description=f"{kind} {request.game} '{request.position}'",
            status=JobStatus.QUEUED,
            origin=queue_name,
        )
        rq_job.enqueued_at = rq_now()
        record = {
            "kind": kind,
            "queue": queue_name,
            "request": request.model_dump_json(),
            "status": "queued",
            "attempts": 0,
            "enqueued_at": repr(time.time()),
            "dedupe": dedupe_key,
            "requesters": 1,
        }
        rq_record = {**rq_job.to_dict(), "status": JobStatus.QUEUED.value}
        # Held while the job is in flight; the TTL only guards against a lost job record.
        hold = settings.analysis_timeout_s * (settings.job_max_attempts + 1) + 60
        args: list[Any] = [job_id, hold, len(record)]
        for item in record.items():
            args += item
        args.append(len(rq_record))
        for item in rq_record.items():
            args += item
        args.append(record["enqueued_at"])
        script_keys = [
            dedupe_key,
            keys.job(job_id),
            _rq_job(job_id),
            keys.rq_queue(queue_name),
            "rq:queues",
            keys.STATS,
            keys.WAITING,
        ]
        return script_keys, args

    def submit(self, request: AnalysisRequest | MoveRequest) -> str:
        """Enqueue ``request`` in one round trip; its job id (an identical in-flight
        analysis's id, if any)."""
        script_keys, args = self.prepare_submit(request)
        job_id, _status = self._submit(keys=script_keys, args=args)
        return str(_text(job_id))

    def answered(
        self,
        request: AnalysisRequest,
        result: AnalysisResult,
        cache_counts: tuple[str, int, int] | None = None,
    ) -> JobState:
        """Record a job answered at submission as finished, in one round trip; its state.

        The record is the one a worker's finish leaves (a new id, ``worker`` is
        ``result.worker``, no attempts, no progress events), so ``GET``, the event
        stream, waiters and webhooks treat it like any finished job; it is never
        queued. ``cache_counts``: (counters hash, hits, misses) of the lookup that
        answered, added in the same round trip.
        """
        job_id = uuid.uuid4().hex
        now = time.time()
        state = JobState(
            id=job_id,
            kind="analysis",
            status="done",
            request=request,
            result=result,
            worker=result.worker,
            attempts=0,
            enqueued_at=now,
            started_at=now,
            ended_at=now,
        )
        record = {
            "kind": "analysis",
            "queue": "analysis",
            "request": request.model_dump_json(),
            "status": "done",
            "result": result.model_dump_json(),
            "worker": result.worker,
            "attempts": 0,
            "enqueued_at": repr(now),
            "started_at": repr(now),
            "ended_at": repr(now),
            "dedupe": "",
            "requesters": 1,
        }
        stats_key, hits, misses = cache_counts or ("", 0, 0)
        event = Event(type="done", job_id=job_id, result=result)
        args: list[Any] = [
            self.settings.result_ttl_s,
            event.model_dump_json(exclude_none=True),
            hits,
            misses,
        ]
        for item in record.items():
            args += item
        self._answered(keys=[keys.job(job_id), keys.done(job_id), keys.STATS, stats_key], args=args)
        return state

    def state(self, job_id: str) -> JobState | None:
        return job_state_from_hash(job_id, self.redis.hgetall(keys.job(job_id)))

    def remove_waiting(self, job_id: str, error: str) -> bool:
        """Take a job that no worker has started off its queue and fail it with ``error``.

        True if this call removed it (so exactly one caller reports it).
        """
        queue_name = _text(self.redis.hget(keys.job(job_id), "queue"))
        if not queue_name or not self.redis.lrem(keys.rq_queue(queue_name), 0, job_id):
            return False
        self.finish(job_id, None, error=error)
        return True

    def expire_waiting(self) -> list[str]:
        """Drop bot moves that waited longer than ``interactive_ttl_s``; returns their ids."""
        ttl = self.settings.interactive_ttl_s
        now = time.time()
        dropped = []
        for raw_id in self.redis.lrange(keys.rq_queue("interactive"), 0, -1):
            job_id = str(_text(raw_id))
            enqueued = _text(self.redis.hget(keys.job(job_id), "enqueued_at"))
            if enqueued and now - float(enqueued) > ttl:
                waited = now - float(enqueued)
                error = (
                    f"dropped: no worker started this bot move within {ttl:g} s "
                    f"(waited {waited:.1f} s); are workers running?"
                )
                if self.remove_waiting(job_id, error):
                    dropped.append(job_id)
        return dropped

    def cancel(self, job_id: str) -> bool:
        """Cancel a job: a waiting one fails at once, a running one at its next progress event.

        False if the job is unknown or already finished. Every requester sharing the
        job sees it fail (an operator's cancel); :meth:`withdraw` is one requester's.
        """
        status = _text(self.redis.hget(keys.job(job_id), "status"))
        if status not in ("queued", "running"):
            return False
        self._stop(job_id, status)
        return True

    def withdraw(self, job_id: str) -> str:
        """One requester's cancel of a job that identical requests may share.

        Returns ``"unknown"``; ``"done"`` or ``"failed"`` (already finished, left as
        it is); ``"shared"`` (another requester still waits for it: it goes on, and
        identical requests keep joining it); ``"canceled"`` (it was waiting: it failed
        now, ``canceled by the requester``); or ``"stopping"`` (it is running: it fails
        at its next progress event, unless it finishes first).
        """
        outcome = str(_text(self._withdraw(keys=[keys.job(job_id)], args=[job_id])))
        if outcome != "cancel":
            return outcome
        status = _text(self.redis.hget(keys.job(job_id), "status"))
        if status not in ("queued", "running"):  # finished meanwhile
            return str(status or "unknown")
        return self._stop(job_id, status)

    def _stop(self, job_id: str, status: str | None) -> str:
        """Fail a waiting job now (``"canceled"``), or ask its worker to stop (``"stopping"``)."""
        if status == "queued" and self.remove_waiting(job_id, "canceled by the requester"):
            return "canceled"
        # Running (or taken by a worker since): the worker reads this flag with each
        # batch of progress events it publishes.
        self.redis.set(keys.cancel(job_id), 1, ex=self.settings.analysis_timeout_s + 60)
        return "stopping"

    # -- worker side -------------------------------------------------------------

    def start(self, job_id: str, worker: str) -> Started | None:
        """Mark the job running on ``worker``; what to run, or ``None`` if it must not run."""
        reply = self._start(
            keys=[
                keys.job(job_id),
                keys.RUNNING,
                keys.progress(job_id),
                _rq_job(job_id),
                keys.WAITING,
            ],
            args=[worker, repr(time.time()), job_id, utcformat(rq_now())],
        )
        if not reply or not int(reply[0]):
            return None
        attempt, kind, request, enqueued, dedupe = reply
        return Started(
            job_id=job_id,
            attempt=int(attempt),
            kind=str(_text(kind)),
            request=json.loads(_text(request) or "{}"),
            enqueued_at=float(_text(enqueued) or 0) or None,
            dedupe=_text(dedupe) or "",
        )

    def publish_progress(self, job_id: str, first_seq: int, steps: list[Progress]) -> bool:
        """Publish progress events ``first_seq, first_seq + 1, ...`` in one round trip.

        Returns True if the requester asked to cancel the job (read in the same trip).
        """
        payloads = [
            Event(type="progress", job_id=job_id, seq=first_seq + i, progress=p).model_dump_json(
                exclude_none=True
            )
            for i, p in enumerate(steps)
        ]
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.rpush(keys.progress(job_id), *payloads)
            pipe.ltrim(keys.progress(job_id), -self.settings.progress_history, -1)
            pipe.hset(keys.job(job_id), "progress", steps[-1].model_dump_json())
            for payload in payloads:
                pipe.publish(keys.events(job_id), payload)
            pipe.exists(keys.cancel(job_id))
            return bool(pipe.execute()[-1])

    def cancel_requested(self, job_id: str) -> bool:
        return bool(self.redis.exists(keys.cancel(job_id)))

    def finish(
        self,
        job_id: str,
        result: AnalysisResult | MoveResult | None,
        *,
        error: str | None = None,
        worker: str = "",
        dedupe: str | None = None,
        progress: tuple[int, list[Progress]] = (0, []),
        cache_counts: tuple[str, int, int] | None = None,
    ) -> bool:
        """Record the job's result (or ``error``) and publish it; True if this call finished it.

        With ``worker`` set, only that worker's run may finish the job. ``progress``:
        (first seq, events) not yet published, sent first in the same round trip.
        ``cache_counts``: (counters hash, hits, misses) of the position cache to add
        in the same round trip (when the cache lives in this Redis).
        """
        stats_key, hits, misses = cache_counts or ("", 0, 0)
        if result is not None:
            status, field, payload = "done", "result", result.model_dump_json()
            event = Event(type="done", job_id=job_id, result=result)
        else:
            status, field, payload = "failed", "error", error or "failed"
            event = Event(type="failed", job_id=job_id, error=payload)
        if dedupe is None:
            dedupe = _text(self.redis.hget(keys.job(job_id), "dedupe")) or ""
        done = self._finish(
            keys=[
                keys.job(job_id),
                keys.RUNNING,
                keys.events(job_id),
                keys.progress(job_id),
                dedupe,
                keys.STATS,
                _rq_job(job_id),
                keys.WAITING,
                keys.done(job_id),
                stats_key,
            ],
            args=[
                worker,
                status,
                field,
                payload,
                repr(time.time()),
                self.settings.result_ttl_s,
                event.model_dump_json(exclude_none=True),
                job_id,
                "finished" if status == "done" else "failed",
                utcformat(rq_now()),
                self.settings.progress_history,
                progress[1][-1].model_dump_json() if progress[1] else "",
                hits,
                misses,
                *(
                    Event(
                        type="progress", job_id=job_id, seq=progress[0] + i, progress=p
                    ).model_dump_json(exclude_none=True)
                    for i, p in enumerate(progress[1])
                ),
            ],
        )
        return bool(done)

    def requeue(self, job_id: str) -> None:
        """Put a job whose worker died back at the front of its queue (status ``queued``)."""
        queue_name = _text(self.redis.hget(keys.job(job_id), "queue")) or "analysis"
        with self.redis.pipeline() as pipe:
            pipe.hset(keys.job(job_id), mapping={"status": "queued", "worker": ""})
            pipe.hset(_rq_job(job_id), "status", "queued")
            pipe.hincrby(keys.STATS, "requeued", 1)
            pipe.lpush(keys.rq_queue(queue_name), job_id)
            pipe.zadd(keys.WAITING, {job_id: time.time()})
            pipe.execute()

    def recover_lost(self) -> list[str]:
        """Requeue jobs marked queued that are on no queue: popped by a worker that died
        before it could mark them running (a window of microseconds, closed here)."""
        now = time.time()
        lost = []
        cutoff = now - self.settings.lost_job_after_s
        for raw_id in self.redis.zrangebyscore(keys.WAITING, "-inf", cutoff):
            job_id = raw_id.decode() if isinstance(raw_id, bytes) else str(raw_id)
            fields = self.redis.hmget(keys.job(job_id), "status", "queue")
            status, queue_name = (_text(v) for v in fields)
            if status != "queued" or not queue_name:
                self.redis.zrem(keys.WAITING, job_id)
                continue
            if self.redis.lpos(keys.rq_queue(queue_name), job_id) is None:
                lost.append(job_id)
                self.requeue(job_id)
            else:  # still waiting its turn: look again later
                self.redis.zadd(keys.WAITING, {job_id: now})
        return lost

"""A job's life in Redis, written in one place for the client, the workers and the reaper.

A job is an RQ job (enqueued with RQ: its record ``rq:job:<id>`` names the job
function and its JSON argument, its id waits in ``rq:queue:<name>``) plus the
contract's view of it in ``plybot:job:<id>`` (see :mod:`worker.core.keys`). The
workers (:mod:`worker.process.runner`) pop ids from RQ's queues and keep RQ's record's
status, times and worker name up to date in the same atomic steps as ours.
Status moves ``queued -> running -> done | failed``, or back to ``queued`` when
a worker died; reaching ``done`` or ``failed`` happens exactly once (a Lua
compare-and-set), publishes the final event, and starts the record's TTL.

This module is synchronous (redis-py) and takes a connection with
``decode_responses=False``, as RQ needs; :mod:`worker.core.client` is the async face.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import redis
from rq import Queue
from rq import __version__ as rq_version
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer
from rq.utils import now as rq_now
from rq.utils import utcformat

from worker.core import keys
from worker.core.contract import (
    AnalysisRequest,
    AnalysisResult,
    BookChunkRequest,
    BookChunkResult,
    Event,
    JobRequest,
    JobState,
    MoveResult,
    Progress,
)
from worker.core.keys import as_str
from worker.core.kinds import KINDS, QUEUES, kind_of
from worker.core.settings import Settings, get_settings

__all__ = ["JobStore", "Started", "job_state_from_hash"]

log = logging.getLogger(__name__)

#: A job recorded as running on a live worker that does not hold it, for this long, is
#: an orphan (its finish was lost with Redis's last writes): see ``_BEAT``.
ORPHAN_AFTER_S = 5.0

Request = JobRequest

# Lua, inlined in the scripts below: end run ``run`` of job ``id`` (a worker's, on
# ``queue``) in RQ's own records, RQ's StartedJobRegistry (``rq:wip:<queue>``, member
# ``<id>:<run>``) and its execution (``rq:execution:<id>:<run>``, indexed in
# ``rq:worker:<worker>:executions``), so that RQ's tools stop showing it as executing.
_RQ_END_RUN = """
do
  local composite = id .. ':' .. run
  redis.call('ZREM', 'rq:wip:' .. queue, composite)
  redis.call('DEL', 'rq:execution:' .. composite)
  if worker and worker ~= '' then
    redis.call('SREM', 'rq:worker:' .. worker .. ':executions', composite)
  end
end
"""

# Finish a job once: only from queued/running, and (when ARGV[1] is set) only by
# the worker that holds it, so a job run again after a presumed death cannot be
# answered twice.
_FINISH = (
    """
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
-- kept for the result TTL (ARGV[6]) by the retention set KEYS[11], not by a TTL that
-- volatile-lru could act on before the client read the result
redis.call('ZADD', KEYS[11], tonumber(ARGV[5]) + tonumber(ARGV[6]), ARGV[8])
redis.call('HDEL', KEYS[2], ARGV[8])
if KEYS[5] ~= '' and redis.call('GET', KEYS[5]) == ARGV[8] then redis.call('DEL', KEYS[5]) end
redis.call('HINCRBY', KEYS[6], ARGV[2], 1)
redis.call('ZREM', KEYS[8], ARGV[8])
if redis.call('EXISTS', KEYS[7]) == 1 then
  redis.call('HSET', KEYS[7], 'status', ARGV[9], 'ended_at', ARGV[10])
  redis.call('PERSIST', KEYS[7])
end
-- RQ's registries and worker record, for RQ's own tools (rq info, rq-dashboard): out of
-- StartedJobRegistry (rq:wip:<queue>, member <id>:<run>), into FinishedJobRegistry or
-- FailedJobRegistry (scored by expiry: ended_at ARGV[5] + result TTL ARGV[6])
local fields = redis.call('HMGET', KEYS[1], 'queue', 'attempts', 'worker')
local id, queue, run, worker = ARGV[8], fields[1] or 'analysis', fields[2] or '0', fields[3]
"""
    + _RQ_END_RUN
    + """
local registry = ARGV[2] == 'done' and 'rq:finished:' or 'rq:failed:'
redis.call('ZADD', registry .. queue, tonumber(ARGV[5]) + tonumber(ARGV[6]), ARGV[8])
if ARGV[1] ~= '' and redis.call('EXISTS', 'rq:worker:' .. ARGV[1]) == 1 then
  local count = ARGV[2] == 'done' and 'successful_job_count' or 'failed_job_count'
  redis.call('HINCRBY', 'rq:worker:' .. ARGV[1], count, 1)
  redis.call('HSET', 'rq:worker:' .. ARGV[1], 'state', 'idle', 'current_job', '')
end
redis.call('PUBLISH', KEYS[3], ARGV[7])
redis.call('RPUSH', KEYS[9], ARGV[7])
redis.call('EXPIRE', KEYS[9], 60)
return 1
"""
)

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
# list, stats, the cache's counters ('' when the cache lives in another Redis), the
# retention set. ARGV: when the record goes (Unix seconds), the final event, cache hits,
# misses, job id, then field/value pairs.
_ANSWERED = """
redis.call('HSET', KEYS[1], unpack(ARGV, 6, #ARGV))
redis.call('ZADD', KEYS[5], ARGV[1], ARGV[5])
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

# Delete the records of finished jobs whose retention ended (at most ARGV[2] of them).
# KEYS: the retention set. ARGV: now (Unix seconds), the limit, then the prefixes of the
# keys a job id names (our record, its progress list, RQ's record).
_FORGET = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do
  redis.call('DEL', ARGV[3] .. id, ARGV[4] .. id, ARGV[5] .. id)
  redis.call('ZREM', KEYS[1], id)
end
return #ids
"""

# Start a queued job: returns {attempt number, enqueued_at}, or {0, ''} if the job
# is not queued (finished, canceled or expired meanwhile). A failed job whose RQ record
# says queued again was requeued by an operator (`rq requeue`, rq-dashboard): it runs
# again from a clean record (no error, no attempts, no expiry, no cancel request).
# KEYS: our record, running hash, progress list, RQ's record, waiting set, cancel flag,
# retention set.
_START = """
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'failed' and redis.call('HGET', KEYS[4], 'status') == 'queued' then
  redis.call('DEL', KEYS[6])
  redis.call('HDEL', KEYS[1], 'error', 'ended_at', 'progress')
  redis.call('HSET', KEYS[1], 'status', 'queued', 'attempts', 0)
  redis.call('ZREM', KEYS[7], ARGV[3])
  status = 'queued'
end
if status ~= 'queued' then return {0} end
local attempts = redis.call('HINCRBY', KEYS[1], 'attempts', 1)
redis.call('HSET', KEYS[1], 'status', 'running', 'worker', ARGV[1], 'started_at', ARGV[2])
redis.call('HSET', KEYS[2], ARGV[3], ARGV[1])
redis.call('ZREM', KEYS[5], ARGV[3])
redis.call('DEL', KEYS[3])
redis.call('HSET', KEYS[4], 'status', 'started', 'started_at', ARGV[4], 'worker_name', ARGV[1])
-- RQ's StartedJobRegistry (never expiring: our reaper, not RQ's cleanup, judges a death)
-- and RQ's worker record, so that `rq info` shows the job executing on its worker
local queue = redis.call('HGET', KEYS[1], 'queue') or 'analysis'
local composite = ARGV[3] .. ':' .. attempts
redis.call('ZADD', 'rq:wip:' .. queue, 'inf', composite)
redis.call('HSET', 'rq:execution:' .. composite, 'id', attempts, 'job_id', ARGV[3],
  'created_at', ARGV[2], 'last_heartbeat', ARGV[2], 'worker_name', ARGV[1])
redis.call('SADD', 'rq:worker:' .. ARGV[1] .. ':executions', composite)
if redis.call('EXISTS', 'rq:worker:' .. ARGV[1]) == 1 then
  redis.call('HSET', 'rq:worker:' .. ARGV[1], 'state', 'busy', 'current_job', ARGV[3])
end
return {attempts, unpack(redis.call('HMGET', KEYS[1], 'kind', 'request', 'enqueued_at', 'dedupe'))}
"""

# A worker's heartbeat, stamped with Redis's own clock (no TTL: the lease cannot be
# evicted, and no host's clock matters). It also gives back the worker's orphans:
# jobs recorded as running on it that it no longer holds (their finish was lost
# when Redis restarted from a file missing its last writes), started before ARGV[4]
# (the worker's own clock, which stamped started_at), uncounted, to the front of
# their queue. KEYS: heartbeats hash, workers hash, running hash, waiting set.
# ARGV: worker name, its info as JSON, the job in hand ('' for none), the cutoff,
# now, now in RQ's format, TTL of RQ's record, then RQ's record as field/value pairs.
# Returns {Redis's time in ms, orphans given back}.
_BEAT = (
    """
local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], ms)
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
-- RQ's worker record (rq:worker:<name>, in rq:workers and rq:workers:<queue>), for
-- RQ's tools only: it expires with the lease (ARGV[7]: seconds), and ARGV[8..] are
-- its fields as pairs; the first beat (birth) writes them all, later ones the time.
local worker = 'rq:worker:' .. ARGV[1]
if redis.call('EXISTS', worker) == 0 then
  redis.call('HSET', worker, unpack(ARGV, 8, #ARGV))
  redis.call('SADD', 'rq:workers', worker)
  for queue in string.gmatch(redis.call('HGET', worker, 'queues'), '[^,]+') do
    redis.call('SADD', 'rq:workers:' .. queue, worker)
  end
end
redis.call('HSET', worker, 'last_heartbeat', ARGV[6])
redis.call('EXPIRE', worker, ARGV[7])
local orphans = 0
local running = redis.call('HGETALL', KEYS[3])
for i = 1, #running, 2 do
  local id = running[i]
  if running[i + 1] == ARGV[1] and id ~= ARGV[3] then
    local job = 'plybot:job:' .. id
    local fields = redis.call('HMGET', job, 'status', 'started_at', 'queue')
    if fields[1] == 'running' and tonumber(fields[2] or '0') < tonumber(ARGV[4]) then
      redis.call('HDEL', KEYS[3], id)
      local run, queue, worker = redis.call('HINCRBY', job, 'attempts', -1) + 1, fields[3], ARGV[1]
      """
    + _RQ_END_RUN
    + """
      redis.call('HSET', job, 'status', 'queued', 'worker', '')
      redis.call('HSET', 'rq:job:' .. id, 'status', 'queued')
      redis.call('LPUSH', 'rq:queue:' .. fields[3], id)
      redis.call('ZADD', KEYS[4], ARGV[5], id)
      orphans = orphans + 1
    elseif fields[1] ~= 'running' and fields[1] ~= 'queued' then
      redis.call('HDEL', KEYS[3], id)
    end
  end
end
return {ms, orphans}
"""
)

# Give back a job this worker runs, without counting the run (preempted by a bot
# move): to the front of its queue. KEYS: our record, running hash, RQ's record,
# RQ's queue, waiting set, stats. ARGV: worker, job id, now. 1 if given back.
_RELEASE = (
    """
if redis.call('HGET', KEYS[2], ARGV[2]) ~= ARGV[1] then return 0 end
redis.call('HDEL', KEYS[2], ARGV[2])
if redis.call('HGET', KEYS[1], 'status') ~= 'running' then return 0 end
local id, run, worker = ARGV[2], redis.call('HINCRBY', KEYS[1], 'attempts', -1) + 1, ARGV[1]
local queue = redis.call('HGET', KEYS[1], 'queue')
"""
    + _RQ_END_RUN
    + """
redis.call('HSET', KEYS[1], 'status', 'queued', 'worker', '')
redis.call('HSET', KEYS[3], 'status', 'queued')
redis.call('LPUSH', KEYS[4], ARGV[2])
redis.call('ZADD', KEYS[5], ARGV[3], ARGV[2])
redis.call('HINCRBY', KEYS[6], 'preempted', 1)
return 1
"""
)

# Take the first waiting job of a queue if it has waited since ARGV[1] or before
# (so a free worker, which takes it at once, always comes first). KEYS: RQ's queue,
# waiting set. Returns the job id or nil.
_TAKE_WAITING = """
local head = redis.call('LINDEX', KEYS[1], 0)
if not head then return false end
local since = redis.call('ZSCORE', KEYS[2], head)
if since and tonumber(since) > tonumber(ARGV[1]) then return false end
return redis.call('LPOP', KEYS[1])
"""


def _rq_job(job_id: str) -> str:
    """RQ's record of the job."""
    return f"rq:job:{job_id}"


@dataclass(frozen=True)
class Started:
    """A job a worker has just taken: what to run."""

    job_id: str
    attempt: int
    kind: str
    request: dict[str, Any]
    enqueued_at: float | None
    dedupe: str = ""


def job_state_from_hash(job_id: str, raw: Mapping[bytes | str, bytes | str]) -> JobState | None:
    """The :class:`JobState` stored in a ``plybot:job`` hash (``None`` if the hash is empty)."""
    if not raw:
        return None
    fields = {as_str(k): as_str(v) for k, v in raw.items()}
    kind = KINDS[fields["kind"]]

    def number(name: str) -> float | None:
        value = fields.get(name)
        return float(value) if value else None

    return JobState.model_construct(
        id=job_id,
        kind=kind.name,
        status=fields["status"],  # type: ignore[arg-type]
        request=kind.request.model_construct(**json.loads(fields["request"])),
        progress=Progress.model_validate_json(fields["progress"])
        if fields.get("progress")
        else None,
        result=kind.result.model_validate_json(fields["result"]) if fields.get("result") else None,
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
        self._forget = connection.register_script(_FORGET)
        self._beat = connection.register_script(_BEAT)
        self._release = connection.register_script(_RELEASE)
        self._take_waiting = connection.register_script(_TAKE_WAITING)

    def queue(self, name: str) -> Queue:
        queue = self._queues.get(name)
        if queue is None:
            queue = self._queues[name] = Queue(
                name, connection=self.redis, serializer=JSONSerializer
            )
        return queue

    # -- requester side ----------------------------------------------------------

    def prepare_submit(self, request: Request) -> tuple[list[str], list[Any]]:
        """The keys and arguments of the submit script for ``request`` (no I/O).

        The RQ job is built by RQ (``Job.create``, ``to_dict``): its record is
        RQ's own, so RQ's tools see the job queued.
        """
        settings = self.settings
        job_id = uuid.uuid4().hex
        kind = kind_of(request)
        queue_name, timeout = kind.queue, kind.timeout(settings)
        if isinstance(request, AnalysisRequest):
            dedupe_key = keys.dedupe(request.dedupe_key())
            description = f"analysis {request.game} '{request.position}'"
        elif isinstance(request, BookChunkRequest):
            # A builder started again while a chunk is in flight joins that job.
            build = keys.book_results(request.variant, request.plies, request.size)
            dedupe_key = keys.dedupe(f"{build}:{request.index}")
            description = f"book {request.variant} ply {request.plies} chunk {request.index}"
        else:
            dedupe_key = ""
            description = f"move {request.game} '{request.position}'"
        rq_job = Job.create(
            kind.function,
            args=[request.model_dump(mode="json")],
            id=job_id,
            connection=self.redis,
            serializer=JSONSerializer,
            timeout=timeout,
            result_ttl=settings.result_ttl_s,
            failure_ttl=settings.result_ttl_s,
            description=description,
            status=JobStatus.QUEUED,
            origin=queue_name,
        )
        rq_job.enqueued_at = rq_now()
        record = {
            "kind": kind.name,
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
        hold = timeout * (settings.job_max_attempts + 1) + 60
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

    def submit(self, request: Request) -> str:
        """Enqueue ``request`` in one round trip; its job id (an identical in-flight
        analysis's id, if any)."""
        script_keys, args = self.prepare_submit(request)
        job_id, _status = self._submit(keys=script_keys, args=args)
        return as_str(job_id)

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
            "queue": KINDS["analysis"].queue,
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
            repr(now + self.settings.result_ttl_s),
            event.model_dump_json(exclude_none=True),
            hits,
            misses,
            job_id,
        ]
        for item in record.items():
            args += item
        self._answered(
            keys=[keys.job(job_id), keys.done(job_id), keys.STATS, stats_key, keys.RETAINED],
            args=args,
        )
        return state

    def state(self, job_id: str) -> JobState | None:
        return job_state_from_hash(job_id, self.redis.hgetall(keys.job(job_id)))

    def remove_waiting(self, job_id: str, error: str) -> bool:
        """Take a job that no worker has started off its queue and fail it with ``error``.

        True if this call removed it (so exactly one caller reports it).
        """
        queue_name = as_str(self.redis.hget(keys.job(job_id), "queue"))
        if not queue_name or not self.redis.lrem(keys.rq_queue(queue_name), 0, job_id):
            return False
        self.finish(job_id, None, error=error)
        return True

    def expire_waiting(self) -> list[str]:
        """Drop bot moves that waited longer than ``interactive_ttl_s``; returns their ids."""
        ttl = self.settings.interactive_ttl_s
        now = time.time()
        dropped = []
        for raw_id in self.redis.lrange(keys.rq_queue(KINDS["move"].queue), 0, -1):
            job_id = as_str(raw_id)
            enqueued = as_str(self.redis.hget(keys.job(job_id), "enqueued_at"))
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
        status = as_str(self.redis.hget(keys.job(job_id), "status"))
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
        outcome = as_str(self._withdraw(keys=[keys.job(job_id)], args=[job_id]))
        if outcome != "cancel":
            return outcome
        status = as_str(self.redis.hget(keys.job(job_id), "status"))
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
                keys.cancel(job_id),
                keys.RETAINED,
            ],
            args=[worker, repr(time.time()), job_id, utcformat(rq_now())],
        )
        if not reply or not int(reply[0]):
            return None
        attempt, kind, request, enqueued, dedupe = reply
        return Started(
            job_id=job_id,
            attempt=int(attempt),
            kind=(as_str(kind)),
            request=json.loads(as_str(request) or "{}"),
            enqueued_at=float(as_str(enqueued) or 0) or None,
            dedupe=as_str(dedupe) or "",
        )

    def beat(self, worker: str, info: dict[str, Any], in_hand: str | None) -> int:
        """Record ``worker``'s heartbeat (and its ``info``); the orphans it gave back.

        Only the worker itself calls this, from its own process: a stopped or
        hung process stops beating, and its jobs are reclaimed. ``in_hand``: the
        job it holds (from its pop to its finish), so that any other job recorded
        as running on it, started more than ``ORPHAN_AFTER_S`` ago, is an orphan.
        """
        now = time.time()
        stamp = utcformat(rq_now())
        record = {  # RQ's worker record (``Worker.serialize``), as ``rq info`` reads it
            "birth": stamp,
            "queues": ",".join(info.get("queues", [])),
            "pid": info.get("pid", ""),
            "hostname": info.get("host", ""),
            "ip_address": "",
            "version": rq_version,
            "python_version": sys.version,
            "state": "busy" if in_hand else "idle",
            "current_job": in_hand or "",
        }
        args: list[Any] = [worker, json.dumps(info), in_hand or "", repr(now - ORPHAN_AFTER_S)]
        args += [repr(now), stamp, int(self.settings.worker_lease_s * 2) + 1]
        for item in record.items():
            args += item
        _ms, orphans = self._beat(
            keys=[keys.HEARTBEATS, keys.WORKERS, keys.RUNNING, keys.WAITING], args=args
        )
        return int(orphans)

    def heartbeats(self) -> tuple[int, dict[str, int]]:
        """Redis's time in ms and every worker's last heartbeat, in one round trip."""
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.time()
            pipe.hgetall(keys.HEARTBEATS)
            (seconds, micros), beats = pipe.execute()
        now = int(seconds) * 1000 + int(micros) // 1000
        return now, {(as_str(k)): int(v) for k, v in beats.items()}

    def alive_workers(self) -> set[str]:
        """Workers whose heartbeat is younger than ``worker_lease_s`` (by Redis's clock)."""
        now, beats = self.heartbeats()
        lease_ms = self.settings.worker_lease_s * 1000
        return {name for name, beat in beats.items() if now - beat <= lease_ms}

    def forget_worker(self, worker: str) -> None:
        """Drop a worker that stopped or died: its heartbeat (its jobs are then reclaimable),
        and its record in RQ's worker registry."""
        record = f"rq:worker:{worker}"
        queues = as_str(self.redis.hget(record, "queues")) or ""
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.hdel(keys.HEARTBEATS, worker)
            pipe.hdel(keys.WORKERS, worker)
            pipe.srem("rq:workers", record)
            for queue in filter(None, queues.split(",")):
                pipe.srem(f"rq:workers:{queue}", record)
            pipe.delete(record)
            pipe.execute()

    def release(self, job_id: str, worker: str) -> bool:
        """Put a job ``worker`` runs back at the front of its queue, its run not counted."""
        queue_name = as_str(self.redis.hget(keys.job(job_id), "queue")) or "analysis"
        return bool(
            self._release(
                keys=[
                    keys.job(job_id),
                    keys.RUNNING,
                    _rq_job(job_id),
                    keys.rq_queue(queue_name),
                    keys.WAITING,
                    keys.STATS,
                ],
                args=[worker, job_id, repr(time.time())],
            )
        )

    def watch(self, job_id: str, take_from: str | None, waited_s: float) -> tuple[bool, str | None]:
        """One round trip for a running job: (cancel requested, a job taken from ``take_from``).

        A job is taken from queue ``take_from`` only if it has waited ``waited_s``
        or more (a free worker would have taken it by then).
        """
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.exists(keys.cancel(job_id))
            if take_from is not None:
                self._take_waiting(
                    keys=[keys.rq_queue(take_from), keys.WAITING],
                    args=[repr(time.time() - waited_s)],
                    client=pipe,
                )
            replies = pipe.execute()
        taken = (as_str(replies[1]) or None) if take_from is not None else None
        return bool(replies[0]), taken

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

    def forget_expired(self, now: float | None = None, limit: int = 500) -> int:
        """Delete the records of finished jobs past their retention (``result_ttl_s`` after
        their end; at most ``limit`` per call); how many. Every worker's reaper calls it."""
        when = repr(time.time() if now is None else now)
        args = [when, str(limit), keys.job(""), keys.progress(""), _rq_job("")]
        return int(self._forget(keys=[keys.RETAINED], args=args))

    def cancel_requested(self, job_id: str) -> bool:
        return bool(self.redis.exists(keys.cancel(job_id)))

    def finish(
        self,
        job_id: str,
        result: AnalysisResult | MoveResult | BookChunkResult | None,
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
            dedupe = as_str(self.redis.hget(keys.job(job_id), "dedupe")) or ""
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
                keys.RETAINED,
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
        queue, attempts, worker = self.redis.hmget(keys.job(job_id), "queue", "attempts", "worker")
        queue_name = as_str(queue) or "analysis"
        run = f"{job_id}:{as_str(attempts) or 0}"  # RQ's records of the run end (_RQ_END_RUN)
        with self.redis.pipeline() as pipe:
            pipe.zrem(f"rq:wip:{queue_name}", run)
            pipe.delete(f"rq:execution:{run}")
            pipe.srem(f"rq:worker:{as_str(worker)}:executions", run)
            pipe.hset(keys.job(job_id), mapping={"status": "queued", "worker": ""})
            pipe.hset(_rq_job(job_id), "status", "queued")
            pipe.hincrby(keys.STATS, "requeued", 1)
            pipe.lpush(keys.rq_queue(queue_name), job_id)
            pipe.zadd(keys.WAITING, {job_id: time.time()})
            pipe.execute()

    def trim_registries(self) -> None:
        """Drop expired entries of RQ's Finished and Failed registries (scored by expiry), as
        RQ's own cleanup would: they are kept for RQ's tools, never past the result TTL."""
        now = time.time()
        with self.redis.pipeline(transaction=False) as pipe:
            for queue in QUEUES:
                pipe.zremrangebyscore(f"rq:finished:{queue}", 0, now)
                pipe.zremrangebyscore(f"rq:failed:{queue}", 0, now)
            pipe.execute()

    def recover_lost(self) -> list[str]:
        """Requeue jobs marked queued that are on no queue: popped by a worker that died
        before it could mark them running (a window of microseconds, closed here)."""
        now = time.time()
        lost = []
        cutoff = now - self.settings.lost_job_after_s
        for raw_id in self.redis.zrangebyscore(keys.WAITING, "-inf", cutoff):
            job_id = as_str(raw_id)
            fields = self.redis.hmget(keys.job(job_id), "status", "queue")
            status, queue_name = (as_str(v) for v in fields)
            if status != "queued" or not queue_name:
                self.redis.zrem(keys.WAITING, job_id)
                continue
            if self.redis.lpos(keys.rq_queue(queue_name), job_id) is None:
                lost.append(job_id)
                self.requeue(job_id)
            else:  # still waiting its turn: look again later
                self.redis.zadd(keys.WAITING, {job_id: now})
        return lost

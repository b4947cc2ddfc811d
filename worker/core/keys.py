"""Every Redis key plybot's job machinery uses, in one place.

RQ keeps its own keys (``rq:queue:<name>``, ``rq:job:<id>``, its registries; the
workers keep RQ's worker records ``rq:worker:<name>``, ``rq:workers``, its
``rq:wip:<queue>``, ``rq:execution:<id>:<run>``, ``rq:finished:<queue>`` and
``rq:failed:<queue>`` up to date in the same scripts, for RQ's tools);
the contract's view of a job lives beside them under ``plybot:``:

``plybot:job:<id>``        hash: kind, queue, request, status, worker, attempts,
                           enqueued_at, started_at, ended_at, progress, result, error
``plybot:events:<id>``     pub/sub channel: one JSON ``Event`` (worker.core.contract) a message
``plybot:progress:<id>``   list: the progress events so far (capped), for late subscribers
``plybot:done:<id>``       list: the final event once more, for the one requester that
                           submitted the job and waits with BLPOP (expires after a minute)
``plybot:cancel:<id>``     flag: cancel requested while running
``plybot:dedupe:<digest>`` id of the in-flight job of an identical analysis request
``plybot:running``         hash: job id -> name of the worker running it
``plybot:waiting``         sorted set: queued job id -> when it was (re)queued
``plybot:heartbeats``      hash: worker name -> its last heartbeat, in ms of Redis ``TIME``;
                           no TTL (``volatile-lru`` can never evict a lease): a worker is
                           alive while its own heartbeat is younger than its lease
``plybot:workers``         hash: worker name -> JSON (pid, host, queues, job, table bytes, rss)
``plybot:retained``        sorted set: finished job id -> when its records go (Unix seconds).
                           A finished job's records (``job``, ``progress``, RQ's ``rq:job``)
                           carry no TTL, so ``volatile-lru`` never evicts a result that its
                           client may not have read; the workers' reapers delete them when
                           due (:meth:`worker.core.jobstore.JobStore.forget_expired`)
``plybot:stats``           hash: job counters
``plybot:book:<build>``    hash: chunk index -> JSON lines of an opening-book build's
                           solved chunks (no TTL: dropped when the build is written)
"""

from __future__ import annotations

PREFIX = "plybot:"
RUNNING = PREFIX + "running"
WAITING = PREFIX + "waiting"
WORKERS = PREFIX + "workers"
HEARTBEATS = PREFIX + "heartbeats"
STATS = PREFIX + "stats"
RETAINED = PREFIX + "retained"


def job(job_id: str) -> str:
    return f"{PREFIX}job:{job_id}"


def events(job_id: str) -> str:
    return f"{PREFIX}events:{job_id}"


def progress(job_id: str) -> str:
    return f"{PREFIX}progress:{job_id}"


def done(job_id: str) -> str:
    return f"{PREFIX}done:{job_id}"


def cancel(job_id: str) -> str:
    return f"{PREFIX}cancel:{job_id}"


def dedupe(digest: str) -> str:
    return f"{PREFIX}dedupe:{digest}"


def rq_queue(name: str) -> str:
    """RQ's list of waiting job ids for queue ``name``."""
    return f"rq:queue:{name}"


def book_results(variant: str, plies: int, size: int) -> str:
    """The solved chunks of the book build of ``variant`` at ``plies`` in chunks of ``size``."""
    return f"{PREFIX}book:{variant}:{plies}:{size}"


def as_str(value: object) -> str:
    """A value read from Redis as ``str``: bytes decoded (UTF-8), ``None`` as ``""``.

    Every connection here returns bytes (RQ needs ``decode_responses=False``), so every
    reader of a name, id or field goes through this one helper.
    """
    if isinstance(value, bytes):
        return value.decode()
    return "" if value is None else str(value)

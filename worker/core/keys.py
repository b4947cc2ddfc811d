"""Every Redis key plybot itself uses, in one place; RQ owns and names its own.

A job is an RQ job: its record, queue, registries, results and worker records are
RQ's, read and written through RQ's API only (plybot depends on no RQ key name).
Beside them plybot keeps what RQ lacks:

``plybot:job:<id>``        hash: kind, request, requesters (identical requests sharing the
                           job), dedupe (its dedupe key), reason (why it was canceled),
                           enqueued_at; expires with the job's retention
``plybot:events:<id>``     pub/sub channel: one JSON ``Event`` (worker.core.contract) a message
``plybot:progress:<id>``   list: the progress events so far (capped), for late subscribers
``plybot:done:<id>``       list: the final event, for waiters (BLMOVE from it to itself, so
                           any number of them see it); expires after a minute
``plybot:dedupe:<digest>`` id of the in-flight job of an identical request; deleted as the
                           job ends
``plybot:preempt:<id>``    the worker that makes way for bot move ``<id>`` (one per move)
``plybot:reaper:<queue>``  short lock: one worker at a time runs RQ's cleanup of abandoned
                           jobs of ``<queue>``
``plybot:worker:<name>``   JSON (pid, host, queues, job, table bytes, resident memory) of a
                           live worker, renewed by its housekeeping (RQ's record lacks memory)
``plybot:stats``           hash: job counters
``plybot:book:<build>``    hash: chunk index -> JSON lines of an opening-book build's
                           solved chunks (no TTL: dropped when the build is written)
"""

from __future__ import annotations

PREFIX = "plybot:"
STATS = PREFIX + "stats"


def job(job_id: str) -> str:
    return f"{PREFIX}job:{job_id}"


def events(job_id: str) -> str:
    return f"{PREFIX}events:{job_id}"


def progress(job_id: str) -> str:
    return f"{PREFIX}progress:{job_id}"


def done(job_id: str) -> str:
    return f"{PREFIX}done:{job_id}"


def preempt(job_id: str) -> str:
    return f"{PREFIX}preempt:{job_id}"


def reaper(queue: str) -> str:
    return f"{PREFIX}reaper:{queue}"


def worker_info(name: str) -> str:
    return f"{PREFIX}worker:{name}"


def dedupe(digest: str) -> str:
    return f"{PREFIX}dedupe:{digest}"


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

"""Every Redis key plybot's job machinery uses, in one place.

RQ keeps its own keys (``rq:queue:<name>``, ``rq:job:<id>``, its registries);
the contract's view of a job lives beside them under ``plybot:``:

``plybot:job:<id>``        hash: kind, queue, request, status, worker, attempts,
                           enqueued_at, started_at, ended_at, progress, result, error
``plybot:events:<id>``     pub/sub channel: one JSON :class:`~worker.contract.Event` per message
``plybot:progress:<id>``   list: the progress events so far (capped), for late subscribers
``plybot:done:<id>``       list: the final event once more, for the one requester that
                           submitted the job and waits with BLPOP (expires after a minute)
``plybot:cancel:<id>``     flag: cancel requested while running
``plybot:dedupe:<digest>`` id of the in-flight job of an identical analysis request
``plybot:running``         hash: job id -> name of the worker running it
``plybot:waiting``         sorted set: queued job id -> when it was (re)queued
``plybot:alive:<worker>``  a worker's lease (expires unless renewed)
``plybot:workers``         hash: worker name -> JSON (pid, host, queues, started, job)
``plybot:stats``           hash: job counters
"""

from __future__ import annotations

PREFIX = "plybot:"
QUEUES = ("interactive", "analysis")  # every worker serves them in this order
RUNNING = PREFIX + "running"
WAITING = PREFIX + "waiting"
WORKERS = PREFIX + "workers"
STATS = PREFIX + "stats"


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


def alive(worker: str) -> str:
    return f"{PREFIX}alive:{worker}"


def rq_queue(name: str) -> str:
    """RQ's list of waiting job ids for queue ``name``."""
    return f"rq:queue:{name}"

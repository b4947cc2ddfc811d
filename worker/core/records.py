"""A job as the contract shows it, read from RQ's own record through RQ's API.

A plybot job *is* an RQ job: its status, times, worker, result and failure live in
RQ's record, read with :meth:`rq.job.Job.fetch`, :meth:`~rq.job.Job.get_status` and
:meth:`~rq.job.Job.latest_result`. Beside it plybot keeps only what RQ lacks
(:mod:`worker.core.keys`): the requesters that share a job, why it was canceled, and
its progress events. :func:`job_state` maps the two onto :class:`JobState`:

================================  ==========  =========================================
RQ status                         contract    ``error``
================================  ==========  =========================================
queued, deferred, scheduled       queued
started                           running
finished                          done
failed                            failed      the worker's one-line reason (job meta
                                              ``error``), else the last line of RQ's
                                              ``exc_string``
stopped                           failed      ``stopped by an operator ...``
canceled                          failed      the reason the canceller gave
(record gone, plybot's kept)      failed      dropped (a bot move past its time to
                                              live) or removed by an operator
================================  ==========  =========================================
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import redis
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from worker.core import keys
from worker.core.contract import Event, JobState, Progress
from worker.core.contract import JobStatus as ContractStatus
from worker.core.keys import as_str
from worker.core.kinds import KINDS, JobKind, kind_of_function
from worker.core.settings import Settings

__all__ = [
    "META_ERROR",
    "fetch",
    "final_event",
    "job_state",
    "kind_of_job",
    "one_line",
    "runs",
    "state_of",
    "timestamp",
]

#: Job meta (RQ's extension point) the worker writes: why a run failed, in one line.
META_ERROR = "error"

#: What a job of each kind is, in a sentence to its requester.
_NOUN = {"move": "bot move", "analysis": "analysis", "book": "book chunk"}

_STATUS: dict[str, ContractStatus] = {
    JobStatus.QUEUED.value: "queued",
    JobStatus.DEFERRED.value: "queued",
    JobStatus.SCHEDULED.value: "queued",
    JobStatus.CREATED.value: "queued",
    JobStatus.STARTED.value: "running",
    JobStatus.FINISHED.value: "done",
    JobStatus.FAILED.value: "failed",
    JobStatus.STOPPED.value: "failed",
    JobStatus.CANCELED.value: "failed",
}


def fetch(connection: redis.Redis, job_id: str) -> Job | None:
    """RQ's job ``job_id`` (JSON serializer), or ``None`` if RQ has no such job."""
    try:
        return Job.fetch(job_id, connection=connection, serializer=JSONSerializer)
    except NoSuchJobError:
        return None


def one_line(exc_string: str | None) -> str:
    """The last non-empty line of a traceback (``"ValueError: ..."``): what went wrong."""
    lines = [line.strip() for line in (exc_string or "").splitlines() if line.strip()]
    return lines[-1] if lines else "failed"


def timestamp(value: datetime | None) -> float | None:
    """Unix time of one of RQ's datetimes (UTC, aware or naive)."""
    if value is None:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()


def job_state(
    connection: redis.Redis, job_id: str, settings: Settings, *, with_progress: bool = True
) -> JobState | None:
    """What is known of job ``job_id`` now, or ``None`` if neither RQ nor plybot knows it
    (or it is not a plybot job: its function is none of :data:`~worker.core.kinds.KINDS`).

    Round trips: RQ's record, its latest result when it ended, and one for plybot's own
    record and the latest progress event.
    """
    job = fetch(connection, job_id)
    with connection.pipeline(transaction=False) as pipe:
        pipe.hgetall(keys.job(job_id))
        if with_progress:
            pipe.lindex(keys.progress(job_id), -1)
        replies = pipe.execute()
    ours = {as_str(k): as_str(v) for k, v in replies[0].items()}
    latest = progress_of(replies[1]) if with_progress and replies[1] else None
    if job is None:
        return _gone(job_id, ours, settings)
    return state_of(job, settings, ours=ours, progress=latest)


def state_of(
    job: Job,
    settings: Settings,
    *,
    ours: Mapping[str, str] | None = None,
    progress: Progress | None = None,
    result: Any = None,
) -> JobState | None:
    """The state of an RQ job as it stands in ``job`` (no round trip, but for a finished
    job's result when ``result`` is not given, and a failure's reason when its meta has
    none); ``ours``: plybot's record of it. ``None`` if it is not a plybot job."""
    kind = kind_of_job(job)
    if kind is None:
        return None
    ours = ours or {}
    status = job.get_status(refresh=False)
    status_value = status.value if status is not None else JobStatus.QUEUED.value
    state = _STATUS.get(status_value, "queued")
    error = None
    if state == "done":
        value = result if result is not None else job.return_value()
        result = kind.result.model_validate(value) if value is not None else None
    else:
        result = None
        if state == "failed":
            error = _error(job, status_value, ours)
    return JobState.model_construct(
        id=job.id,
        kind=kind.name,
        status=state,
        request=_request(kind, job.args[0] if job.args else ours.get("request")),
        progress=progress,
        result=result,
        error=error,
        worker=job.worker_name or None,
        attempts=0 if job.func_name == kind.answered_function else runs(job, settings),
        enqueued_at=timestamp(job.enqueued_at) or _number(ours.get("enqueued_at")),
        started_at=timestamp(job.started_at),
        ended_at=timestamp(job.ended_at),
    )


def announced_state(raw: bytes | str) -> JobState | None:
    """The final state a job's done list holds (:meth:`JobStore.announce`), or ``None`` where
    it holds the final event instead (a job that failed: its state is read). Its request
    was validated at submission: it is rebuilt as :func:`job_state` rebuilds it, not
    validated again (no position parsed)."""
    data = json.loads(raw)
    kind = KINDS.get(data.get("kind", "")) if isinstance(data, dict) else None
    if kind is None or not isinstance(data.get("request"), Mapping):
        return None
    return JobState.model_validate({**data, "request": _request(kind, data["request"])})


def final_event(state: JobState) -> Event:
    """The last event of a finished job's stream."""
    if state.status == "done":
        return Event(type="done", job_id=state.id, result=state.result)
    return Event(type="failed", job_id=state.id, error=state.error)


def progress_of(raw: bytes | str) -> Progress | None:
    """The progress carried by one stored event."""
    return Event.model_validate_json(raw).progress


def runs(job: Job, settings: Settings) -> int:
    """Times a worker started the job: once if it started, plus each retry RQ made of it
    after a worker died (``retries_left`` counts down from ``job_max_attempts - 1``)."""
    if job.started_at is None:
        return 0
    if job.retries_left is None:
        return 1
    return 1 + max(0, settings.job_max_attempts - 1 - job.retries_left)


def kind_of_job(job: Job) -> JobKind | None:
    """The kind of an RQ job, by the function its record names; ``None`` for a job that is
    not plybot's, or whose record RQ cannot read back (a foreign serializer, a broken
    payload)."""
    try:
        name = job.func_name
    except Exception:  # RQ raises DeserializationError, or the serializer's own error
        return None
    return kind_of_function(name) if isinstance(name, str) else None


def _request(kind: JobKind, value: Any) -> Any:
    raw = json.loads(value) if isinstance(value, str) else value
    return kind.request.model_construct(**raw) if isinstance(raw, Mapping) else raw


def _number(value: str | None) -> float | None:
    return float(value) if value else None


def _error(job: Job, status: str, ours: Mapping[str, str]) -> str:
    if status == JobStatus.CANCELED.value:
        return ours.get("reason") or "canceled by an operator (RQ's Job.cancel)"
    if status == JobStatus.STOPPED.value:
        return "stopped by an operator (RQ's send_stop_job_command)"
    reason = job.meta.get(META_ERROR)
    if reason:
        return str(reason)
    latest = job.latest_result()
    return one_line(latest.exc_string if latest is not None else None)


def _gone(job_id: str, ours: Mapping[str, str], settings: Settings) -> JobState | None:
    """The state of a job whose RQ record is gone while plybot's is kept: a bot move that
    waited past its time to live (RQ's job ``ttl``), or a job an operator removed."""
    if not ours.get("kind") or ours["kind"] not in KINDS:
        return None
    kind = KINDS[ours["kind"]]
    enqueued = _number(ours.get("enqueued_at"))
    ttl = kind.ttl(settings)
    if ttl is not None and enqueued is not None and time.time() - enqueued >= ttl:
        error = (
            f"dropped: no worker started this {_NOUN[kind.name]} within {ttl:g} s; "
            "are workers running?"
        )
    else:
        error = "removed from its queue by an operator (rq empty, or the job deleted)"
    return JobState.model_construct(
        id=job_id,
        kind=kind.name,
        status="failed",
        request=_request(kind, ours.get("request", "{}")),
        error=error,
        enqueued_at=enqueued,
    )

"""The kinds of job, in one table: each one's models, queue, job function and timeout.

Everything else is derived from :data:`KINDS`: the queues and the order every worker
serves them in (:data:`QUEUES`), what the job store writes in a job's record and RQ's,
how a record is read back, which function a worker runs and under which timeout.

The job function is named by its dotted path, as RQ's record names it: the core never
imports the worker process (:mod:`worker.process.runner` resolves the names once).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args

from worker.core.contract import (
    AnalysisRequest,
    AnalysisResult,
    BookChunkRequest,
    BookChunkResult,
    JobRequest,
    JobResult,
    KindName,
    MoveRequest,
    MoveResult,
)
from worker.core.settings import Settings

__all__ = ["KINDS", "QUEUES", "JobKind", "kind_of"]


@dataclass(frozen=True)
class JobKind:
    """One kind of job."""

    #: Its name in job records, ``JobState.kind`` and the logs.
    name: KindName
    #: The request it is submitted with, and the result it finishes with.
    request: type[JobRequest]
    result: type[JobResult]
    #: The RQ queue it waits on.
    queue: str
    #: The job function, by dotted path (RQ's record carries it; the worker resolves it).
    function: str
    #: The ``Settings`` field holding its timeout in seconds (a hard stop of one run).
    timeout_setting: str

    def timeout(self, settings: Settings) -> int:
        """Its timeout under ``settings``, in seconds."""
        return int(getattr(settings, self.timeout_setting))


#: Every kind, in the order every worker serves their queues: a bot move first, a book chunk
#: only when no bot move or analysis waits.
KINDS: dict[str, JobKind] = {
    kind.name: kind
    for kind in (
        JobKind(
            name="move",
            request=MoveRequest,
            result=MoveResult,
            queue="interactive",
            function="worker.process.jobs.move_job",
            timeout_setting="interactive_timeout_s",
        ),
        JobKind(
            name="analysis",
            request=AnalysisRequest,
            result=AnalysisResult,
            queue="analysis",
            function="worker.process.jobs.analysis_job",
            timeout_setting="analysis_timeout_s",
        ),
        JobKind(
            name="book",
            request=BookChunkRequest,
            result=BookChunkResult,
            queue="book",
            function="worker.process.jobs.book_chunk_job",
            timeout_setting="book_timeout_s",
        ),
    )
}
assert set(KINDS) == set(get_args(KindName)), "contract.KindName and KINDS disagree"

#: The queues, in the order every worker serves them.
QUEUES: tuple[str, ...] = tuple(kind.queue for kind in KINDS.values())

_BY_REQUEST = {kind.request: kind for kind in KINDS.values()}


def kind_of(request: JobRequest) -> JobKind:
    """The kind of job a request model is submitted as."""
    return _BY_REQUEST[type(request)]

"""The kinds of job, in one table: all that differs between them.

Everything else is derived from :data:`KINDS`: the queues and the order every worker
serves them in (:data:`QUEUES`), the job function RQ's record names and its timeout,
which kinds share identical requests in flight (``dedupe``), which kind a waiting bot
move may preempt (``preemptible``), and which kinds make way for interactive work
(``gives_way``).

The job function is named by its dotted path, as RQ's record names it: the core never
imports the worker process. Any Python program can enqueue one with plain RQ::

    Queue("analysis", connection=redis, serializer=JSONSerializer).enqueue(
        KINDS["analysis"].function, {"position": "4453", "mode": "solve"})
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

__all__ = [
    "ANALYSIS",
    "BOOK",
    "INTERACTIVE",
    "KINDS",
    "MOVE",
    "QUEUES",
    "JobKind",
    "kind_of",
    "kind_of_function",
]


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
    #: Identical requests in flight share one job (their requesters are counted).
    dedupe: bool = False
    #: A bot move that waits while every worker is busy may interrupt a job of this kind,
    #: which goes back to the front of its queue, the run not counted.
    preemptible: bool = False
    #: The job stops its work as soon as a job of another kind waits (its caller resends).
    gives_way: bool = False
    #: The ``Settings`` field holding how long a job of this kind may wait for a worker before
    #: RQ drops it (its ``ttl``), and its requester is told; ``""``: as long as it takes.
    ttl_setting: str = ""
    #: The function of a job of this kind answered at submission (from the shared cache),
    #: run by RQ in the submitting process (``is_async=False``); ``""``: never answered so.
    answered_function: str = ""

    def timeout(self, settings: Settings) -> int:
        """Its timeout under ``settings``, in seconds."""
        return int(getattr(settings, self.timeout_setting))

    def ttl(self, settings: Settings) -> float | None:
        """How long it may wait for a worker under ``settings``, in seconds (``None``: no limit)."""
        return float(getattr(settings, self.ttl_setting)) if self.ttl_setting else None


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
            ttl_setting="interactive_ttl_s",
        ),
        JobKind(
            name="analysis",
            request=AnalysisRequest,
            result=AnalysisResult,
            queue="analysis",
            function="worker.process.jobs.analysis_job",
            timeout_setting="analysis_timeout_s",
            dedupe=True,
            preemptible=True,
            answered_function="worker.core.answers.answered",
        ),
        JobKind(
            name="book",
            request=BookChunkRequest,
            result=BookChunkResult,
            queue="book",
            function="worker.process.jobs.book_chunk_job",
            timeout_setting="book_timeout_s",
            dedupe=True,
            gives_way=True,
        ),
    )
}
assert set(KINDS) == set(get_args(KindName)), "contract.KindName and KINDS disagree"

#: The queues, in the order every worker serves them.
QUEUES: tuple[str, ...] = tuple(kind.queue for kind in KINDS.values())

#: Each kind, by name, for code that means one of them.
MOVE, ANALYSIS, BOOK = KINDS["move"], KINDS["analysis"], KINDS["book"]
#: The queue of bot moves: the one a busy worker watches for a move to preempt for.
INTERACTIVE: str = MOVE.queue

_BY_REQUEST = {kind.request: kind for kind in KINDS.values()}
_BY_FUNCTION = {
    name: kind
    for kind in KINDS.values()
    for name in (kind.function, kind.answered_function)
    if name
}


def kind_of(request: JobRequest) -> JobKind:
    """The kind of job a request model is submitted as."""
    return _BY_REQUEST[type(request)]


def kind_of_function(func_name: str) -> JobKind | None:
    """The kind of an RQ job by the function its record names (``None``: not plybot's)."""
    return _BY_FUNCTION.get(func_name)

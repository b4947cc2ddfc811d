"""plybot's worker package: the job contract, the client, the queues and the warm workers.

``api/`` and ``bot/`` use only :mod:`worker.contract` and :mod:`worker.client`
(plus :mod:`worker.settings`); neither calls RQ directly.
"""

from worker.client import JobClient, JobError, JobFailed, JobTimeout, ServiceStatus, UnknownJob
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

__all__ = [
    "AnalysisRequest",
    "AnalysisResult",
    "Event",
    "JobClient",
    "JobError",
    "JobFailed",
    "JobState",
    "JobTimeout",
    "MoveRequest",
    "MoveResult",
    "Progress",
    "ServiceStatus",
    "Settings",
    "UnknownJob",
    "get_settings",
]

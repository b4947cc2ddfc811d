"""plybot's worker package: the service core (the job contract, the client, games, settings,
keys, the position cache) and the warm worker processes (runner, jobs, supervisor).

``api/`` and ``bot/`` use the core: :mod:`worker.contract`, :mod:`worker.client`,
:mod:`worker.games`, :mod:`worker.bot_moves`, :mod:`worker.settings`; neither calls
RQ directly. Nothing is imported here (``import worker.keys`` loads no Redis client,
no pydantic and no engine); the names below are loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> the module that defines it (imported on first access).
_LAZY = {
    "AnalysisRequest": "worker.contract",
    "AnalysisResult": "worker.contract",
    "Event": "worker.contract",
    "JobState": "worker.contract",
    "MoveRequest": "worker.contract",
    "MoveResult": "worker.contract",
    "Progress": "worker.contract",
    "JobClient": "worker.client",
    "JobError": "worker.client",
    "JobFailed": "worker.client",
    "JobTimeout": "worker.client",
    "ServiceStatus": "worker.client",
    "UnknownJob": "worker.client",
    "Settings": "worker.settings",
    "get_settings": "worker.settings",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'worker' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)

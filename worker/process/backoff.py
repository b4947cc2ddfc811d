"""Riding out a Redis outage: which errors are passing, and how long to wait between tries.

A worker, the supervisor and ``plybot up`` never give up on Redis: a refused
connection, a timeout, a Redis still loading its append-only file, a full Redis
(``OOM``) or one that cannot persist (``MISCONF``) are waited out with
exponential backoff, and the work in hand is kept (a popped job, a result not
yet recorded). Such an error is never a job's failure and never counts as one
of its attempts.
"""

from __future__ import annotations

from typing import TypeVar

import redis

__all__ = ["Backoff", "is_transient", "patient"]

T = TypeVar("T")


def is_transient(exc: BaseException) -> bool:
    """True for a Redis error that passes by itself (down, restarting, loading, full)."""
    if isinstance(exc, redis.ConnectionError | redis.TimeoutError | ConnectionError | TimeoutError):
        return True  # (BusyLoadingError, a Redis loading its data, is a ConnectionError)
    if isinstance(exc, redis.exceptions.OutOfMemoryError | redis.exceptions.ReadOnlyError):
        return True
    return isinstance(exc, redis.ResponseError) and str(exc).startswith(("MISCONF", "LOADING"))


#: The errors redis-py retries on a :func:`patient` connection: Redis down or restarting,
#: loading its data (``BusyLoadingError`` is a ``ConnectionError``), full or read-only.
PATIENT_ERRORS: tuple[type[Exception], ...] = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.exceptions.OutOfMemoryError,
    redis.exceptions.ReadOnlyError,
)


def patient(connection: redis.Redis, cap: float = 2.0) -> redis.Redis:
    """Make every command of ``connection`` wait out a passing Redis error, for ever.

    redis-py's own retry (exponential backoff up to ``cap`` seconds, no limit on tries)
    on the errors of :data:`PATIENT_ERRORS`: so RQ's worker loop, which would otherwise
    quit on a Redis outage or a full Redis, rides it out, with the work in hand kept.
    Returns ``connection``, changed in place (new connections of its pool retry too).
    """
    from redis.backoff import ExponentialBackoff
    from redis.retry import Retry

    connection.set_retry(Retry(ExponentialBackoff(cap=cap, base=0.05), -1, PATIENT_ERRORS))
    return connection


class Backoff:
    """Exponential backoff with a cap: ``first``, ``2 * first``, ... ``cap`` seconds."""

    def __init__(self, first: float = 0.1, cap: float = 2.0) -> None:
        self.first = first
        self.cap = cap
        self.delay = first
        self.failures = 0

    def next(self) -> float:
        """The wait before the next try (and doubles the one after)."""
        delay = self.delay
        self.failures += 1
        self.delay = min(self.delay * 2, self.cap)
        return delay

    def reset(self) -> None:
        self.delay = self.first
        self.failures = 0

"""A warm process's memory: what it holds resident, and what a finished request gives back.

A worker keeps its 7x6 solver and table from one job to the next; each further board size
it is asked about adds its solver's table, at most :data:`engine.pool.OTHER_BOARD_TABLE_BYTES`
and a quarter more for the near-end region (2.5 MB). Everything else a request makes is
given back when it ends: the generic search's table is its own and grows with what it stores
(:mod:`engine.table`), and :func:`release`, called after every job, drops what no further
request needs.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable


def rss_bytes() -> int:
    """This process's resident memory (``VmRSS``; Linux, 0 elsewhere)."""
    return _status_bytes("VmRSS")


def peak_rss_bytes() -> int:
    """This process's highest resident memory so far (``VmHWM``; Linux, 0 elsewhere)."""
    return _status_bytes("VmHWM")


def _status_bytes(field: str) -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                name, _, value = line.partition(":")
                if name == field:
                    return int(value.split()[0]) << 10
    except (OSError, ValueError, IndexError):
        pass
    return 0


def release() -> None:
    """Give back what a finished request leaves and no further one needs.

    The solvers of boards other than 7x6 whose exact keys made their tables larger than
    such a board's are dropped (:meth:`engine.pool.SolverPool.release`: 128 MB for 8x7,
    unmapped), and the C heap's free pages go back to the system (glibc's
    ``malloc_trim``; tens of microseconds): the records of a generic search, freed by
    Python when it ends, would otherwise leave pages that glibc keeps for later.
    """
    from engine.pool import solvers

    solvers.release()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or ``None`` where the C library has none (musl, macOS)."""
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return None
    return trim

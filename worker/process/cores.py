"""The cores the rest of the machine leaves idle: how many threads a job may take.

A worker alone on a machine settles an analysis's columns in several threads
(:attr:`engine.solver.Solver.threads`); workers busy side by side take one each,
since more threads would only share the same cores and split work one table
could have saved. What decides is what the *others* used lately: the machine's
busy time (``/proc/stat``) less this process's own (``os.times``), over the last
second or so, sampled by the worker's housekeeping thread (:meth:`CoreUse.sample`)
and read as a job starts (:meth:`CoreUse.threads`). A snapshot of the tasks
running at the job's start would not do: the API that just handed the job over
is one of them for a moment.

Linux only; elsewhere (no ``/proc/stat``), one thread.
"""

from __future__ import annotations

import os
import threading
import time

__all__ = ["SAMPLE_EVERY_S", "CoreUse", "machine"]

#: The window a sample covers: long enough to see a busy neighbour between its jobs.
SAMPLE_EVERY_S = 1.0


def _busy_seconds() -> float:
    """Seconds every core of the machine has been busy since boot (not idle, not waiting)."""
    with open("/proc/stat", encoding="ascii") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")  # to steal, not guests


def _own_seconds() -> float:
    times = os.times()
    return times.user + times.system


class CoreUse:
    """The cores this process may run on, and how many of them the others kept busy lately."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: tuple[float, float, float] | None = None
        try:
            self.cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not Linux
            self.cores = os.cpu_count() or 1
        #: Cores the others used over the last sample's window; ``None`` before two samples.
        self.others: float | None = None

    def sample(self) -> None:
        """Take a sample; every :data:`SAMPLE_EVERY_S` or so, the window ends and ``others`` is
        updated. Never raises (unreadable: ``others`` stays ``None``)."""
        try:
            now, busy, own = time.monotonic(), _busy_seconds(), _own_seconds()
        except (OSError, ValueError, IndexError):
            return
        with self._lock:
            if self._last is None:
                self._last = (now, busy, own)
                return
            then, busy_then, own_then = self._last
            if now - then < SAMPLE_EVERY_S:
                return
            others = ((busy - busy_then) - (own - own_then)) / (now - then)
            self.others = max(0.0, others)
            self._last = (now, busy, own)

    def threads(self, wanted: int) -> int:
        """Threads for a job starting now: ``wanted`` at most, one for each core the others
        left idle (rounded), at least 1; 1 before the first window ends."""
        if wanted <= 1 or self.others is None:
            return 1
        spare = round(self.cores - self.others)
        return max(1, min(wanted, spare))


#: This process's view (a worker's housekeeping samples it).
machine = CoreUse()

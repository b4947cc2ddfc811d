"""The cores the rest of the machine leaves idle: how many threads a job may take.

A worker alone on a machine settles an analysis's columns in several threads
(:attr:`engine.solver.Solver.threads`); workers busy side by side take one each,
since more threads would only share the same cores and split work one table
could have saved. What decides is the tasks running or runnable on the machine as
the job starts (the kernel's ``procs_running``, ``/proc/stat``; this worker is one
of them), against the cores this process may run on. An average over the last
second would not do: with several workers taking turns, the worker that ran the
previous job looks busy for a second after it ended. Measured on 2 cores, 155
analyses one at a time over HTTP with 2 workers: 139 found themselves alone, the
rest a moment's other task (the API finishing its reply).

Linux only; elsewhere (no ``/proc/stat``), one thread.
"""

from __future__ import annotations

import os

__all__ = ["cores", "running_tasks", "spare_threads"]


def running_tasks() -> int | None:
    """Tasks running or runnable on the machine now (the caller among them), or ``None``
    where the kernel does not say (not Linux)."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            for line in f:
                if line.startswith("procs_running "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def spare_threads(wanted: int, running: int | None = None, available: int | None = None) -> int:
    """Threads for a job starting now: ``wanted`` at most, one for each core no other task
    is running on (``running``: the tasks running now, the caller among them; ``available``:
    the cores; both read from the machine by default), at least 1; 1 where unknown."""
    if wanted <= 1:
        return 1
    running = running_tasks() if running is None else running
    if running is None:
        return 1
    idle = (cores() if available is None else available) - (running - 1)
    return max(1, min(wanted, idle))

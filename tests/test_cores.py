"""How many threads a worker's job may take (worker/process/cores.py): one for each core
no other task runs on as the job starts."""

from __future__ import annotations

import sys

import pytest

from worker.process.cores import cores, running_tasks, spare_threads


def test_threads_follow_the_cores_no_other_task_runs_on() -> None:
    for running, available, wanted, threads in [
        (1, 2, 2, 2),  # alone on two cores: both
        (1, 8, 2, 2),  # never more than wanted
        (1, 4, 8, 4),  # never more than the cores
        (2, 2, 2, 1),  # a neighbour's search: one each
        (3, 4, 4, 2),
        (6, 2, 2, 1),  # an overloaded machine: still one
        (1, 2, 1, 1),  # one wanted: one
    ]:
        assert spare_threads(wanted, running, available) == threads, (running, available, wanted)


@pytest.mark.skipif(sys.platform != "linux", reason="/proc/stat is Linux's")
def test_the_machine_is_read() -> None:
    running = running_tasks()
    assert running is not None
    assert running >= 1  # this test, at least
    assert 1 <= spare_threads(2) <= min(2, cores())

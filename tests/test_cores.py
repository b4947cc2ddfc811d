"""How many threads a worker's job may take (worker/process/cores.py): one a core the rest
of the machine left idle over the last window, from /proc/stat less the worker's own time."""

from __future__ import annotations

import sys

import pytest

from worker.process import cores
from worker.process.cores import SAMPLE_EVERY_S, CoreUse


def test_threads_follow_the_cores_the_others_left_idle() -> None:
    use = CoreUse()
    use.cores = 4
    assert use.threads(2) == 1  # no window seen yet: one
    for others, wanted, threads in [
        (0.1, 2, 2),  # a quiet machine
        (0.1, 8, 4),  # never more than its cores
        (1.2, 4, 3),
        (2.9, 4, 1),  # a neighbour's search or two: one thread each
        (3.6, 2, 1),
        (6.0, 2, 1),  # an overloaded machine: still one
        (0.0, 1, 1),  # one wanted: one
    ]:
        use.others = others
        assert use.threads(wanted) == threads, (others, wanted)


@pytest.mark.skipif(sys.platform != "linux", reason="/proc/stat is Linux's")
def test_a_window_counts_the_others_busy_time_not_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = [100.0]
    busy = [5000.0]
    own = [40.0]
    monkeypatch.setattr(cores.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(cores, "_busy_seconds", lambda: busy[0])
    monkeypatch.setattr(cores, "_own_seconds", lambda: own[0])
    use = CoreUse()
    use.cores = 2
    use.sample()
    assert use.others is None
    # Half a window on: not yet. A whole one: the machine was busy 1.8 s a second, 0.9 of it
    # this process's (its search): the others kept 0.9 core busy.
    clock[0] += SAMPLE_EVERY_S / 2
    use.sample()
    assert use.others is None
    clock[0] += SAMPLE_EVERY_S / 2
    busy[0] += 1.8 * SAMPLE_EVERY_S
    own[0] += 0.9 * SAMPLE_EVERY_S
    use.sample()
    assert use.others == pytest.approx(0.9)
    assert use.threads(2) == 1
    # The next window, the neighbour idle: a core to spare.
    clock[0] += SAMPLE_EVERY_S
    busy[0] += 0.95 * SAMPLE_EVERY_S
    own[0] += 0.9 * SAMPLE_EVERY_S
    use.sample()
    assert use.others == pytest.approx(0.05)
    assert use.threads(2) == 2


@pytest.mark.skipif(sys.platform != "linux", reason="/proc/stat is Linux's")
def test_the_real_machine_is_read() -> None:
    assert cores._busy_seconds() > 0
    assert cores._own_seconds() > 0

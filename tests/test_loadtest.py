"""`plybot loadtest` on a tiny load: the table, and zero lost or duplicated results."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.service, pytest.mark.redis, pytest.mark.benchmarks]

PLYBOT = str(Path(sys.executable).parent / "plybot")


@pytest.mark.usefixtures("benchmarks_dir")
def test_loadtest_runs_1_and_2_workers_and_loses_nothing() -> None:
    done = subprocess.run(
        [PLYBOT, "loadtest", "--set", "Test_L2_R2", "--requests", "8", "--concurrency", "4"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {
        line[:28].strip(): line[28:].split()
        for line in done.stdout.splitlines()
        if len(line) > 28 and not line.startswith(" ")
    }
    assert rows["requests"] == ["8", "8"]
    assert rows["lost results"] == ["0", "0"]
    assert rows["duplicated results"] == ["0", "0"]
    assert rows["wrong scores"] == ["0", "0"]  # exact solves, checked against the set
    assert all(float(v) > 0 for v in rows["throughput (req/s)"])
    assert "1 worker" in done.stdout
    assert "2 workers" in done.stdout
    assert "throughput 2 vs 1 workers" in done.stdout


def test_loadtest_rejects_bad_options_in_one_line() -> None:
    done = subprocess.run(
        [PLYBOT, "loadtest", "--set", "No_Such_Set", "--requests", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert "'No_Such_Set'" in done.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--phases", "load,nope"], "--phases nope: unknown (phases: redis-killed"),
        (["--lanes", "5000"], "--lanes 5000: between 0 and 1000"),
        (["--soak", "0"], "--soak 0: between 0 and 1440 minutes"),
    ],
)
def test_chaos_rejects_bad_options_naming_them(args: list[str], says: str) -> None:
    done = subprocess.run([PLYBOT, "chaos", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert says in done.stderr.strip().splitlines()[-1], done.stderr

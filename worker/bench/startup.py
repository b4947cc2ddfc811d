"""How soon ``plybot up`` serves: its log, timestamped line by line as it is written.

One run starts ``plybot up`` as a user's first ``make up`` does (``REDIS_URL`` unset: a fresh
embedded Redis in a new data folder, the API on a free port) and reads its one log stream,
noting when each line arrives: the job Redis answering (``plybot up``'s own "ready" line,
printed once redis-server answers PING), each worker's "serving" line (printed once the
engine is warm and RQ has registered it), and "plybot is up". It then stops the service.
"""

from __future__ import annotations

import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from worker.process.processes import PLYBOT, stop_process
from worker.process.redis_server import free_port

__all__ = ["StartupRun", "format_runs", "measure_startup"]


@dataclass(frozen=True)
class StartupRun:
    """Seconds since ``plybot up`` was started."""

    redis_ready_s: float
    serving_s: tuple[float, ...]  # each worker's, in order
    up_s: float

    @property
    def after_redis_s(self) -> float:
        """From the job Redis answering to the last worker serving."""
        return max(self.serving_s) - self.redis_ready_s


def measure_startup(workers: int = 2, timeout: float = 300.0) -> StartupRun:
    """One timed start of ``plybot up --workers workers``; raises ``RuntimeError`` if it exits
    or is not up within ``timeout`` s."""
    with tempfile.TemporaryDirectory(prefix="plybot-startbench-") as data:
        env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "PLYBOT_CACHE_URL")}
        env.update(PLYBOT_REDIS_DATA_DIR=str(Path(data) / "redis"), PYTHONUNBUFFERED="1")
        lines: queue.Queue[tuple[float, str]] = queue.Queue()
        start = time.monotonic()
        process = subprocess.Popen(
            [PLYBOT, "up", "--port", str(free_port()), "--workers", str(workers)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

        def read() -> None:
            assert process.stdout is not None
            for raw in iter(process.stdout.readline, b""):
                lines.put((time.monotonic() - start, raw.decode(errors="replace")))

        threading.Thread(target=read, daemon=True).start()
        redis_ready: float | None = None
        serving: list[float] = []
        try:
            while True:
                try:
                    at, line = lines.get(timeout=max(0.0, start + timeout - time.monotonic()))
                except queue.Empty:
                    raise RuntimeError(f"plybot up was not up within {timeout:g} s") from None
                name, _, message = line.partition("|")
                if name.strip() == "up" and message.startswith(" Redis (jobs)"):
                    redis_ready = at
                elif name.strip() == "worker" and "engine warm in" in message:
                    serving.append(at)
                elif name.strip() == "up" and "plybot is up" in message:
                    break
                if process.poll() is not None and lines.empty():
                    raise RuntimeError(f"plybot up exited with {process.returncode}")
        finally:
            stop_process(process, timeout=60)
        if redis_ready is None or len(serving) != workers:
            raise RuntimeError(
                f"plybot up's log: Redis ready {redis_ready}, {len(serving)} of {workers} "
                "workers serving"
            )
        return StartupRun(redis_ready, tuple(serving), at)


def format_runs(runs: list[StartupRun]) -> str:
    """One line per run, then the medians."""

    def row(name: str, redis: float, last: float, after: float, up: float) -> str:
        return f"{name:<8}{redis:>14.3f}{last:>16.3f}{after:>18.3f}{up:>10.3f}"

    out = [f"{'run':<8}{'Redis ready':>14}{'last serving':>16}{'after Redis':>18}{'up':>10}"]
    for i, r in enumerate(runs, 1):
        out.append(row(str(i), r.redis_ready_s, max(r.serving_s), r.after_redis_s, r.up_s))
    med = statistics.median
    out.append(
        row(
            "median",
            med(r.redis_ready_s for r in runs),
            med(max(r.serving_s) for r in runs),
            med(r.after_redis_s for r in runs),
            med(r.up_s for r in runs),
        )
    )
    out.append("(seconds since `plybot up` was started; load average " + _load() + ")")
    return "\n".join(out)


def _load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use `plybot startbench`")

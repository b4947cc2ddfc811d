"""Time to an exact analysis of every column, over HTTP, by ply (`plybot analysisbench`).

The positions are drawn uniformly from all distinct positions of each ply
(:func:`engine.sampling.uniform_positions`, seeded), not from games: what a
user exploring openings and middle games meets. Each is sent alone
(``POST /v1/analyses?wait=...`` with ``mode: solve, moves: all``, then
``GET ?wait`` until it ends), so the time is the service's latency for one
request: HTTP, queue, book, cache and search. A result that is not exact
counts as a miss.

Also the ``perfect`` level's move time, in this process (the opening book,
then the solver; what a worker runs for a bot move), on positions of plies
``0..12``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from engine.bench.stats import quantile
from engine.sampling import uniform_positions

__all__ = ["PlyFigures", "format_table", "perfect_move_times", "run_bench", "start_service"]


@dataclass
class PlyFigures:
    """Seconds to an exact analysis of every column, for the positions of one ply."""

    ply: int
    seconds: list[float] = field(default_factory=list)
    not_exact: list[str] = field(default_factory=list)


def analyse_over_http(client: httpx.Client, position: str, timeout: float) -> tuple[float, bool]:
    """Seconds until the exact analysis of every column of ``position`` ends; was it exact."""
    body = {"game": "connect4", "position": position, "mode": "solve", "moves": "all"}
    start = time.perf_counter()
    reply = client.post("/v1/analyses", params={"wait": 20}, json=body)
    while True:
        reply.raise_for_status()
        state = reply.json()
        if state["status"] in ("done", "failed"):
            break
        if time.perf_counter() - start > timeout:
            return time.perf_counter() - start, False
        reply = client.get(f"/v1/analyses/{state['id']}", params={"wait": 20})
    seconds = time.perf_counter() - start
    result = state.get("result") or {}
    return seconds, state["status"] == "done" and bool(result.get("exact"))


def run_bench(
    base_url: str,
    plies: range,
    per_ply: int,
    seed: int,
    timeout: float = 120.0,
    on_result: Callable[[int, str, float, bool], None] | None = None,
) -> list[PlyFigures]:
    """Analyse ``per_ply`` uniform positions of each ply in ``plies``, one request at a time."""
    figures = []
    with httpx.Client(base_url=base_url, timeout=timeout + 30) as client:
        for ply in plies:
            row = PlyFigures(ply)
            for position in uniform_positions(ply, per_ply, seed):
                notation = position.notation()
                seconds, exact = analyse_over_http(client, notation, timeout)
                row.seconds.append(seconds)
                if not exact:
                    row.not_exact.append(notation)
                if on_result is not None:
                    on_result(ply, notation, seconds, exact)
            figures.append(row)
    return figures


def perfect_move_times(
    plies: range, per_ply: int, seed: int, deadline_s: float = 10.0
) -> tuple[list[float], list[str]]:
    """Seconds per ``perfect`` move (book, then solver; in this process) on uniform positions,
    and the positions whose move was not exact within ``deadline_s``."""
    from engine.levels import choose_move

    times, inexact = [], []
    choose_move(uniform_positions(0, 1, seed)[0], "perfect")  # load the book and solver first
    for ply in plies:
        for position in uniform_positions(ply, per_ply, seed + 1):
            start = time.perf_counter()
            choice = choose_move(position, "perfect", deadline=time.monotonic() + deadline_s)
            times.append(time.perf_counter() - start)
            if not choice.exact:
                inexact.append(position.notation())
    return times, inexact


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms" if seconds < 1 else f"{seconds:,.2f} s"


def format_table(figures: list[PlyFigures]) -> str:
    """One row per ply and one overall: positions, exact, p50, p99, max."""
    lines = [f"{'ply':>7} {'positions':>9} {'exact':>6} {'p50':>11} {'p99':>11} {'max':>11}"]

    def row(name: str, seconds: list[float], misses: int) -> str:
        return (
            f"{name:>7} {len(seconds):>9} {len(seconds) - misses:>6} "
            f"{_ms(statistics.median(seconds)):>11} {_ms(quantile(seconds, 0.99)):>11} "
            f"{_ms(max(seconds)):>11}"
        )

    for f in figures:
        lines.append(row(str(f.ply), f.seconds, len(f.not_exact)))
    every = [s for f in figures for s in f.seconds]
    lines.append(row("overall", every, sum(len(f.not_exact) for f in figures)))
    return "\n".join(lines)


def start_service(workers: int, port: int) -> tuple[subprocess.Popen[bytes], Path]:
    """``plybot up`` with a fresh embedded Redis (REDIS_URL unset) on ``port``; its log file."""
    data = Path(tempfile.mkdtemp(prefix="plybot-bench-"))
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env.update(
        PLYBOT_REDIS_DATA_DIR=str(data / "redis"),
        PLYBOT_API_RATE_LIMIT="1000000",
        PLYBOT_API_RATE_LIMIT_READS="1000000",
    )
    log = data / "up.log"
    plybot = str(Path(sys.executable).with_name("plybot"))
    process = subprocess.Popen(
        [plybot, "up", "--port", str(port), "--workers", str(workers)],
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    return process, log


def wait_ready(base_url: str, workers: int, timeout: float = 300.0) -> None:
    """Until the API answers and ``workers`` workers are warm (``/v1/status``)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            status = httpx.get(f"{base_url}/v1/status", timeout=5).json()
            if len(status.get("workers", [])) >= workers:
                return
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.2)
    raise TimeoutError(f"the service at {base_url} was not ready in {timeout:.0f} s")

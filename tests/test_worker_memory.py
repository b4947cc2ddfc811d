"""A warm worker's memory: a further board size asked about adds its small table, not more.

Issue 20's bound, each further board size at most 5 MB of resident memory, checked on a
real worker process (``plybot worker``, fed through Redis): memory, not speed, so the
figure does not depend on how fast the machine is (a slow one answers the moves from the
generic search instead of the solver, within the same bounded tables).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine.vocabulary import LEVELS
from worker.core.client import JobClient
from worker.core.contract import AnalysisRequest, MoveRequest

pytestmark = [pytest.mark.redis, pytest.mark.service]

#: Issue 20's bound on what a further board size adds to a warm worker.
FURTHER_BOARD_BYTES = 5 << 20


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name == "VmRSS":
            return int(value.split()[0]) << 10
    raise AssertionError(f"no VmRSS for process {pid}")


async def _ask_about(client: JobClient, variant: str, positions: tuple[str, ...]) -> None:
    """An exact analysis of every column and a bot move at every level, of each position."""
    for position in positions:
        await client.analyze(
            AnalysisRequest(
                game="connect4", variant=variant, position=position, mode="solve", moves="all"
            ),
            timeout=300,
        )
        for level in LEVELS:
            await client.move(
                MoveRequest(game="connect4", variant=variant, position=position, level=level),
                timeout=300,
            )


def test_a_further_board_size_adds_at_most_5_mb_to_a_warm_worker(
    redis_url: str, worker_pool
) -> None:  # type: ignore[no-untyped-def]
    pool = worker_pool(1, env={"PLYBOT_CACHE_ENABLED": "false"})  # every request searched
    ((_, info),) = pool.workers().items()
    pid = int(info["pid"])

    async def go() -> tuple[int, int]:
        async with JobClient(redis_url) as client:
            # The same requests on 7x6 first: every code path a request takes is loaded.
            await _ask_about(client, "7x6", ("4453", "445362"))
            before = _rss(pid)
            await _ask_about(client, "5x4", ("", "3", "33"))
            return before, _rss(pid)

    before, after = asyncio.run(go())
    assert [w["pid"] for w in pool.workers().values()] == [pid]  # the same process
    grown = after - before
    print(f"5x4 added {grown / (1 << 20):.1f} MB to a warm worker ({before >> 20} MB before)")
    assert grown <= FURTHER_BOARD_BYTES

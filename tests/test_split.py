"""One position, many workers: an exact analysis of every column split across idle workers."""

from __future__ import annotations

import asyncio

import pytest
import redis

from engine.connect4 import Connect4
from engine.solver import Solver
from worker.core import keys
from worker.core.client import JobClient
from worker.core.contract import AnalysisRequest
from worker.core.jobstore import JobStore
from worker.core.settings import Settings

pytestmark = [pytest.mark.redis, pytest.mark.service]

# Seven columns of 0.1 to 0.5 s each on one core without the databases: worth splitting, quick
# for a test. (With the 13-stone database its every column is a lookup, answered at submission:
# the client submits without it, as the workers search.)
POSITION = "371277617456"


def test_idle_workers_share_the_columns_and_the_answer_is_one_workers(
    clean_redis: redis.Redis,
    redis_url: str,
    worker_pool,  # type: ignore[no-untyped-def]
) -> None:
    position = Connect4.parse(POSITION)
    expected = Solver(table_bytes=16 << 20).analyze(position)
    assert expected.moves is not None
    pool = worker_pool(2, env={"PLYBOT_CACHE_ENABLED": "false", "PLYBOT_SPLIT_ANALYSES": "true"})

    async def go() -> None:
        async with JobClient(redis_url, Settings(solver_database=False)) as client:
            request = AnalysisRequest(position=POSITION, mode="solve", moves="all")
            job_id = await client.submit(request)
            result = await client.result(job_id, timeout=300)
            events = await client.progress(job_id)
        assert result.exact
        assert result.moves is not None
        assert result.moves == {str(c + 1): s for c, s in expected.moves.items()}  # type: ignore[union-attr]
        assert (result.best_move, result.score) == (str(expected.best_move + 1), expected.score)  # type: ignore[union-attr,operator]
        assert result.bounds == {m: (s, s) for m, s in result.moves.items()}  # type: ignore[union-attr]

        # Columns went to the other worker as jobs of their own, and ran there.
        parent = result.worker  # type: ignore[union-attr]
        children = {}
        store = JobStore(clean_redis)
        for key in clean_redis.scan_iter(match=keys.job("*")):
            job_id = key.decode().removeprefix(keys.job(""))
            state = store.state(job_id, with_progress=False)
            assert state is not None
            asked = state.request.position
            if asked != POSITION:
                children[asked] = state.worker or ""
        assert children
        assert set(children) <= {POSITION + str(c + 1) for c in range(7)}
        assert any(worker and worker != parent for worker in children.values())

        # Each column's exact score was published as it came, one by one.
        solved = [
            sum(lo == hi for lo, hi in e.bounds.values()) for e in events if e.bounds is not None
        ]
        assert solved == sorted(solved)
        assert solved[-1] == 7
        assert any(0 < n < 7 for n in solved)
        assert set(pool.workers()) == {parent, *(w for w in children.values() if w)}

    asyncio.run(go())

"""One position, many workers: an exact analysis of every column, split into one job per column.

When an exact analysis of every column (``mode: solve, moves: all``) of a
Connect Four position starts and other workers are idle, the worker running it
(the *parent*) sends some columns to the ``analysis`` queue as ordinary jobs
(an exact solve of the position after that column: the queue, the leases, the
dedupe and the shared cache all apply to them as to any request), and solves
the others itself, centre first. So N idle workers answer up to N times sooner.

The parent takes back a column job that no worker has started when it comes
to that column (``withdraw``, then off the queue), solves it itself, and
waits only for column jobs already running elsewhere (or taken by another
requester). A column job that fails (its worker died twice, say) is solved
by the parent. Each column's exact score is published as a progress event as
soon as it is known (``bounds``: every column's proven bounds so far). The
combined result is what one worker's analysis gives: the same scores, the
best move the first column in the game's order that reaches the score.

Not split: positions the book or the shared cache answer, positions with fewer
than two columns to search, late positions, positions the parent solves alone
within :data:`QUICK_NODES` (splitting them would only add round trips), or
when no worker is idle.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from rq import Worker
from rq.job import JobStatus
from rq.registry import StartedJobRegistry

from engine.analysis import Analysis
from engine.connect4 import Connect4
from engine.solver import Solver
from worker.core import keys
from worker.core.contract import AnalysisRequest, AnalysisResult, Progress
from worker.core.kinds import ANALYSIS
from worker.process.jobs import JobContext

__all__ = ["SPLIT_BEFORE_PLY", "split_analysis"]

log = logging.getLogger("plybot.worker")

#: Positions with at least this many stones are not split: their columns solve in milliseconds.
SPLIT_BEFORE_PLY = 24
#: Nodes the parent first spends alone (about 40 ms): most positions are solved within them,
#: and splitting those would only add the queue's round trips.
QUICK_NODES = 300_000
#: How long the parent waits on the column jobs' done lists between two looks at their state.
WAIT_SLICE_S = 0.2


@dataclass
class _Column:
    column: int
    child: Connect4
    job_id: str | None = None  # a column job sent to the queue
    score: int | None = None  # exact, from the side to move of the parent
    pv: tuple[int, ...] = ()
    nodes: int = 0


def idle_workers(context: JobContext) -> int:
    """Workers serving analyses that run no job now (this one excluded: it runs the parent)."""
    conn = context.store.redis
    queue = ANALYSIS.queue
    serving = Worker.count(connection=conn, queue=context.store.queue(queue))
    running = StartedJobRegistry(queue, connection=conn).count
    return max(0, serving - running)


def split_analysis(
    board: Connect4,
    solver: Solver,
    context: JobContext,
    deadline: float,
) -> Analysis | None:
    """The exact analysis of every column, with idle workers' help; ``None`` if not worth it.

    ``None`` also when a column could not be solved by ``deadline``: the caller
    then runs the usual analysis (whose fallback is honest about bounds).
    Raises :class:`worker.process.jobs.JobCanceled` if the requester cancels (the column
    jobs are withdrawn too).
    """
    if board.ply >= SPLIT_BEFORE_PLY or board.winning_moves():
        return None
    columns: list[_Column] = []
    for column in board.legal_moves():
        child = board.copy()
        child.push(column)
        columns.append(_Column(column, child))
    if any(c.child.outcome() is not None for c in columns):
        return None  # a full board: nothing to gain
    for c, known in zip(columns, solver.known([c.child for c in columns]), strict=True):
        if known is not None:
            c.score = -known
    todo = [c for c in columns if c.score is None]
    helpers = min(idle_workers(context), len(todo) - 1)
    if helpers < 1:
        return None
    if solver.analyze(board, node_limit=QUICK_NODES, deadline=deadline).exact:
        return None  # cheap: the usual analysis answers from the warm table at once
    helpers = min(idle_workers(context), len(todo) - 1)  # looked at again, after that try
    if helpers < 1:
        return None
    start = time.monotonic()
    store = context.store
    # Every column but the centre's goes on the queue, far ones first: the helpers take
    # them from the edges while the parent works outwards from the centre, taking back
    # each one nobody has started when it gets there. So the work balances itself.
    for c in reversed(todo[1:]):
        request = AnalysisRequest(
            game="connect4", variant=board.variant, position=c.child.notation(), mode="solve"
        )
        c.job_id = store.submit(request).id
    log.info(
        "job %s: %d columns offered to %d idle workers", context.job_id, len(todo) - 1, helpers
    )
    try:
        _publish(board, columns, context, start)
        for c in todo:
            if c.job_id is None or _take_back(context, c):
                _solve(solver, c, deadline)
            else:
                _read(context, c)
            _publish(board, columns, context, start)
        while any(c.score is None for c in columns):
            if time.monotonic() >= deadline:
                return None
            waiting = [c for c in columns if c.score is None and c.job_id is not None]
            if not waiting:  # a column of the parent's own ran out of time
                return None
            store.redis.blpop([keys.done(c.job_id) for c in waiting if c.job_id], WAIT_SLICE_S)
            for c in waiting:
                if _read(context, c) or _take_back(context, c):
                    if c.score is None:
                        _solve(solver, c, deadline)
                    _publish(board, columns, context, start)
    finally:  # canceled, out of time or done: what is still queued or running is not needed
        for c in columns:
            if c.job_id is not None and c.score is None:
                store.withdraw(c.job_id)
    if any(c.score is None for c in columns):
        return None
    scores = {c.column: c.score for c in columns if c.score is not None}
    score = max(scores.values())
    best = next(c for c in columns if c.score == score)
    if len(best.pv) <= 1 and best.child.outcome() is None:  # solved here without its line
        best.pv = tuple(solver.solve(best.child, deadline=deadline).pv)  # from the warm table
    return Analysis(
        best_move=best.column,
        score=score,
        exact=True,
        pv=[best.column, *best.pv],
        moves=dict(sorted(scores.items())),
        depth=board.width * board.height - board.ply,
        nodes=sum(c.nodes for c in columns),
        time_ms=(time.monotonic() - start) * 1000,
        cache_hit=False,
        lower=score,
        upper=score,
        bounds={c: (s, s) for c, s in sorted(scores.items())},
    )


def _take_back(context: JobContext, c: _Column) -> bool:
    """Withdraw column job ``c`` if no worker has started it; True: the parent solves it.

    A job another requester also waits for is left to run (the parent waits for it).
    """
    assert c.job_id is not None
    store = context.store
    job = store.job(c.job_id)
    if job is None or job.get_status(refresh=False) != JobStatus.QUEUED:
        return False  # running, or finished: read it
    # "canceled": it was still waiting; "stopping": it started just now and its worker
    # stops it. Either way it is the parent's to solve.
    return store.withdraw(c.job_id) in ("canceled", "stopping")


def _read(context: JobContext, c: _Column) -> bool:
    """Take the score of column job ``c`` if it ended; True if it ended (done or failed)."""
    assert c.job_id is not None
    state = context.store.state(c.job_id)
    if state is None or not state.finished:
        return False
    result = state.result
    if isinstance(result, AnalysisResult) and result.exact:
        c.score = -result.score
        c.pv = tuple(int(m) - 1 for m in result.pv)
        c.nodes = result.nodes
    return True  # failed or not exact: the parent solves it


def _solve(solver: Solver, c: _Column, deadline: float) -> None:
    result = solver.solve(c.child, deadline=deadline, pv=False)  # the best column's PV: at the end
    c.nodes += result.nodes
    if result.exact:
        c.score = -result.score
        c.pv = tuple(result.pv)


def _publish(board: Connect4, columns: list[_Column], context: JobContext, start: float) -> None:
    """A progress event with every column's bounds: exact where known (may raise JobCanceled)."""
    floor, ceiling = board.score_range()
    bounds = {
        board.move_name(c.column): (c.score, c.score) if c.score is not None else (floor, ceiling)
        for c in sorted(columns, key=lambda c: c.column)
    }
    solved = [c.score for c in columns if c.score is not None]
    context.pending.append(
        Progress(
            depth=len(solved),
            score=max(solved) if solved else floor,
            exact=len(solved) == len(columns),
            nodes=sum(c.nodes for c in columns),
            time_ms=round((time.monotonic() - start) * 1000, 3),
            bounds=bounds,
        )
    )
    context.flush()

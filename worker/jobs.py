"""The job functions: plain functions that RQ runs, one per kind of job.

Each takes the request as a JSON dict (the contract's model dumped), runs the
engine, and returns the result as a JSON dict. They run in a warm worker
process (:mod:`worker.runner`): the engine's compiled code and the solver's
transposition table are kept from one job to the next, and the shared Redis
position cache is the second level. Outside a worker (a direct call) they run
the same, without progress events or the shared cache.

Limits: every search gets a deadline from :class:`~worker.settings.Settings`
(``solve_deadline_ms`` for a solve, ``time_ms`` for a timed search, the job
timeout for a depth search), so no request can keep a worker busy without bound.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.cache import PositionCache
from engine.connect4 import Connect4
from engine.game import Game
from worker.contract import AnalysisRequest, AnalysisResult, MoveRequest, MoveResult, Progress
from worker.jobstore import JobStore
from worker.settings import Settings, get_settings

__all__ = [
    "JobCanceled",
    "JobContext",
    "JobDropped",
    "analysis_job",
    "clear_tables",
    "move_job",
    "warm_up",
]


class JobCanceled(Exception):
    """The requester canceled the job while it ran."""


class JobDropped(Exception):
    """A bot move that waited in the queue past its time-to-live."""


@dataclass
class JobContext:
    """What the worker running a job lends it: where to publish, the cache, its name."""

    store: JobStore
    worker: str
    cache: PositionCache | None
    job_id: str = ""
    attempt: int = 1
    enqueued_at: float | None = None
    seq: int = field(default=0)
    #: Progress not yet published: sent by the next flush, or with the result.
    pending: list[Progress] = field(default_factory=list)
    last_flush: float = field(default_factory=time.monotonic)

    def flush(self) -> None:
        """Publish the buffered progress events; raise :class:`JobCanceled` if asked to."""
        if not self.pending:
            return
        steps, self.pending = self.pending, []
        canceled = self.store.publish_progress(self.job_id, self.seq, steps)
        self.seq += len(steps)
        self.last_flush = time.monotonic()
        if canceled:
            raise JobCanceled("canceled by the requester")


#: Set by the worker around each job (one job at a time per process).
current: JobContext | None = None

#: The process's Connect Four solvers, one per board size: their tables outlive the jobs.
_solvers: dict[tuple[int, int], Any] = {}


def _solver(board: Game, cache: PositionCache | None) -> Any:
    """This process's solver for a Connect Four board (``None`` for other games)."""
    if not isinstance(board, Connect4):
        return None
    size = (board.width, board.height)
    solver = _solvers.get(size)
    if solver is None or solver.cache is not cache:
        from engine.book import shipped_book
        from engine.solver import Solver

        table_bytes = _settings().solver_table_mb << 20
        book = shipped_book(*size)
        solver = _solvers[size] = Solver(*size, table_bytes=table_bytes, cache=cache, book=book)
        solver.warm_up()
    return solver


def _settings() -> Settings:
    return current.store.settings if current is not None else get_settings()


#: Progress events are sent at most this often (each in order, none dropped): a search's
#: shallow depths take microseconds, and a round trip each would cost more than they do.
PROGRESS_INTERVAL_S = 0.05


def _on_progress(board: Game) -> Callable[[Any], None] | None:
    """A callback for the engine's progress that publishes each step and honours cancels."""
    context = current
    if context is None or not context.job_id:
        return None

    def publish(step: Any) -> None:
        context.pending.append(
            Progress(
                depth=step.depth,
                score=step.score,
                exact=step.exact,
                pv=[board.move_name(m) for m in step.pv],
                nodes=step.nodes,
                time_ms=round(step.time_ms, 3),
            )
        )
        if time.monotonic() - context.last_flush >= PROGRESS_INTERVAL_S:
            context.flush()

    return publish


def analysis_job(request: dict[str, Any]) -> dict[str, Any]:
    """Analyse a position (an :class:`AnalysisRequest` as a dict); an :class:`AnalysisResult`."""
    from engine.analysis import analyze

    req = AnalysisRequest.model_validate(request)
    settings = _settings()
    board = req.board()
    now = time.monotonic()
    if req.mode == "solve":
        deadline = now + settings.solve_deadline_ms / 1000
    else:  # depth, time: the job timeout is the outer bound (time mode also stops at time_ms)
        deadline = now + settings.analysis_timeout_s * 0.9
    cache = current.cache if current is not None else None
    solver = _solver(board, cache)
    analysis = analyze(
        board,
        mode=req.mode,
        depth=req.depth,
        time_ms=req.time_ms,
        all_moves=req.moves == "all",
        deadline=deadline,
        cache=cache,
        solver=solver,
        on_progress=_on_progress(board),
    )
    result = AnalysisResult.of(board, analysis, current.worker if current is not None else "")
    return result.model_dump(mode="json")


def move_job(request: dict[str, Any]) -> dict[str, Any]:
    """The bot's move (a :class:`MoveRequest` as a dict); a :class:`MoveResult`."""
    from engine.levels import choose_move

    req = MoveRequest.model_validate(request)
    settings = _settings()
    if current is not None and current.attempt == 1 and current.enqueued_at is not None:
        waited = time.time() - current.enqueued_at
        if waited > settings.interactive_ttl_s:
            raise JobDropped(
                f"dropped: no worker started this bot move within "
                f"{settings.interactive_ttl_s:g} s (waited {waited:.1f} s)"
            )
    board = req.board()
    start = time.monotonic()
    cache = current.cache if current is not None else None
    choice = choose_move(
        board,
        req.level,
        deadline=start + req.deadline_ms / 1000,
        cache=cache,
        solver=_solver(board, cache),
    )
    result = MoveResult(
        move=board.move_name(choice.move),
        score=choice.score,
        exact=choice.exact,
        depth=choice.depth,
        nodes=choice.nodes,
        time_ms=round(choice.time_ms, 3),
        cache="miss",
        worker=current.worker if current is not None else "",
        note=choice.note,
    )
    return result.model_dump(mode="json")


def clear_tables() -> None:
    """Forget what this process's solvers proved (``solver_fresh_table``: between jobs)."""
    for solver in _solvers.values():
        solver.reset()


def warm_up(cache: PositionCache | None = None) -> float:
    """Compile and load the engine once per process (before the first job); seconds taken.

    ``cache`` is the one the jobs will use: the solver is made with it, once.
    """
    from engine.analysis import analyze
    from engine.game import new_game

    start = time.monotonic()
    for game, position in (("tictactoe", "5"), ("connect4", "4444")):
        analyze(new_game(game, position), mode="depth", depth=2)
    board = new_game("connect4", "4444445525")  # the compiled solver: load it, fill its table
    analyze(board, mode="solve", solver=_solver(board, cache), deadline=time.monotonic() + 60)
    return time.monotonic() - start

"""One entry point for analysis: what the service's worker (and ``plybot analyze``) calls.

This module dispatches; each path is a module of its own: :mod:`engine.exact`
(the exact solver, the shared cache, honest fallbacks), :mod:`engine.searched`
(the generic search), :mod:`engine.answer` (what an analysis answers),
:mod:`engine.pool` (the process's solvers) and :mod:`engine.scores` (scores in
words). Their public names are also importable from here.

Modes:

* ``"solve"``: the exact value. A game with an exact solver
  (``Game.exact_solver``: Connect Four) goes to the compiled solver
  (``engine.solver``), whose progress events are each narrowing of its
  window; any other game gets a generic search to the end of every line.
* ``"depth"``: the generic search (``engine.search``) to ``depth`` plies.
* ``"time"``: the generic search for ``time_ms``. With an exact solver, when the
  solver is loaded in this process (or given), it first gets
  :data:`SOLVER_SHARE` of the budget (an exact answer is worth more than two
  more plies of heuristic search); when it cannot finish, the generic search
  gets the rest and its deepest result is reported, with a note saying so.
  A cold solver is not loaded inside a time budget.

An absolute ``deadline`` (``time.monotonic()``) bounds every mode and is never
overrun: a solve that cannot finish by then falls back the same way as the
``"time"`` mode. Scores are from the side to move in the game's convention
(Connect Four 7x6: Pascal Pons', ``22 - stones`` of the winner).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from engine.answer import Analysis, Progress, ProgressCallback
from engine.cache import PositionCache
from engine.errors import PlybotError
from engine.exact import SOLVER_SHARE, cached_exact, solve_exact, solve_then_search, solver_share
from engine.game import Game, has_exact_solver, require_ongoing
from engine.pool import default_solver, warm_solver
from engine.scores import moves_to_end, score_words
from engine.search import SearchLimits
from engine.searched import run_search, searched
from engine.vocabulary import MODES, Mode

if TYPE_CHECKING:
    from engine.solver import Solver

__all__ = [
    "MODES",
    "SOLVER_SHARE",
    "Analysis",
    "Mode",
    "Progress",
    "ProgressCallback",
    "analyze",
    "cached_exact",
    "default_solver",
    "moves_to_end",
    "run_search",
    "score_words",
    "solve_exact",
    "solver_share",
    "step_of",
    "warm_solver",
    "warm_up",
]


def analyze(
    position: Game,
    *,
    mode: Mode | str,
    depth: int | None = None,
    time_ms: int | float | None = None,
    all_moves: bool = False,
    deadline: float | None = None,
    cache: PositionCache | None = None,
    solver: Solver | None = None,
    on_progress: ProgressCallback | None = None,
) -> Analysis:
    """Analyse ``position`` (left unchanged) in ``mode``; see the module docstring.

    ``on_progress`` gets at least one step before the answer is returned: an
    answer found with no step of its own (from the book, the database or the
    shared cache, nothing searched) is reported as one step, the answer itself,
    so a caller that shows progress always has one to show.

    Raises ``GameOverError`` for a finished position, and ``PlybotError``
    (a ``ValueError``) for an unknown mode or a missing/invalid ``depth`` or
    ``time_ms``.
    """
    if on_progress is None:
        return _dispatch(position, mode, depth, time_ms, all_moves, deadline, cache, solver, None)
    steps = 0
    relay = on_progress

    def counted(step: Progress) -> None:
        nonlocal steps
        steps += 1
        relay(step)

    answer = _dispatch(position, mode, depth, time_ms, all_moves, deadline, cache, solver, counted)
    if steps == 0:
        on_progress(step_of(answer))
    return answer


def step_of(answer: Analysis) -> Progress:
    """An answer reached with no step of its own, as the one step that reports it."""
    return Progress(
        depth=answer.depth,
        score=answer.score,
        exact=answer.exact,
        pv=list(answer.pv),
        nodes=answer.nodes,
        time_ms=answer.time_ms,
        lower=answer.lower,
        upper=answer.upper,
        bounds=answer.bounds,
    )


def _dispatch(
    position: Game,
    mode: Mode | str,
    depth: int | None,
    time_ms: int | float | None,
    all_moves: bool,
    deadline: float | None,
    cache: PositionCache | None,
    solver: Solver | None,
    on_progress: ProgressCallback | None,
) -> Analysis:
    """:func:`analyze`, each mode to its path."""
    require_ongoing(position)
    start = time.monotonic()
    if mode == "depth":
        if depth is None or depth < 1:
            raise PlybotError(f"'{depth}': the depth mode needs a depth of at least 1")
        limits = SearchLimits(depth=depth, deadline=deadline)
        return searched(position, limits, all_moves, cache, on_progress, start)
    if mode == "time":
        if time_ms is None or time_ms <= 0:
            raise PlybotError(f"'{time_ms}': the time mode needs a time_ms above 0")
        budget_end = start + time_ms / 1000
        end = budget_end if deadline is None else min(deadline, budget_end)
        if has_exact_solver(position):
            solver = solver or warm_solver(position.width, position.height, cache)
        if has_exact_solver(position) and solver is not None:
            return solve_then_search(
                position, end, all_moves, cache, solver, on_progress, start, "time"
            )
        limits = SearchLimits(deadline=end)
        return searched(position, limits, all_moves, cache, on_progress, start)
    if mode == "solve":
        if has_exact_solver(position):
            return solve_then_search(
                position, deadline, all_moves, cache, solver, on_progress, start, "solve"
            )
        limits = SearchLimits(deadline=deadline)
        return searched(position, limits, all_moves, cache, on_progress, start)
    raise PlybotError(f"'{mode}': unknown analysis mode (known: {', '.join(MODES)})")


def warm_up(solver: Solver | None = None) -> None:
    """Run each path of an analysis once, so that no first request pays for loading one:
    the generic search on tic-tac-toe and on Connect Four, and an exact solve by
    ``solver`` (the process's 7x6 solver if ``None``; made if it is not loaded)."""
    from engine.game import new_game

    for game, position in (("tictactoe", "5"), ("connect4", "4444")):
        analyze(new_game(game, position), mode="depth", depth=2)
    board = new_game("connect4", "4444")
    analyze(board, mode="solve", solver=solver, deadline=time.monotonic() + 60)

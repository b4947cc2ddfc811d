"""What an analysis answers: :class:`Analysis`, and :class:`Progress` while it runs.

The one shape of every path that produces them (the exact solver,
:mod:`engine.solver`, for a solve, an analysis and each position of a batch;
:mod:`engine.searched`; :mod:`engine.exact`) and of the dispatch
(:mod:`engine.analysis`); the service turns them into its contract's models.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass  # not frozen: a frozen init took 1.4 us of the 9 of an analysis read, not searched
class Analysis:
    """The answer about one position, from the side to move.

    ``exact``: ``score`` is the game's exact value (for Connect Four, Pons'
    convention; a win ``> 0`` is ``max stones + 1 - winner's stones``).
    Otherwise it is the heuristic value of a ``depth``-ply search. ``moves``
    (when asked) maps each legal move (0-based) to its score on the same
    footing; ``depth`` is the plies searched (the remaining plies of the game
    for an exact solve). ``note`` explains a fallback (e.g. a deadline) and
    says which figures are estimates.

    Proven bounds (Connect Four's solver, exact units): ``lower <= exact score
    <= upper`` (``None`` when nothing is proven), and ``bounds`` maps each move
    to its proven ``(lower, upper)`` (equal: that move is exact). Invariants:
    an estimate never contradicts a proven bound (it is clamped into it), and
    ``best_move`` is never a move proven worse than another.

    The solver's own answer (:class:`engine.solver.Solver`) always has
    ``lower`` and ``upper``; ``bounds`` and ``moves`` for an analysis of every
    column. Where a limit came first (a deadline, a node limit, an interrupt)
    it is not ``exact``: ``score`` is the proven ``lower``, ``depth`` is 0 (no
    search depth was completed), ``moves`` maps each column to its proven
    lower bound, ``best_move`` is a move not proven worse (``None`` if the
    search named none yet) and ``note`` says so. A weak solve
    (``weak=True``) answers only the sign: ``score``, ``lower``, ``upper``,
    ``moves`` and ``bounds`` are in ``{-1, 0, 1}``, and ``exact`` says the
    sign is proven.

    A value: nothing changes an analysis once it is made (copy it with
    ``dataclasses.replace``).
    """

    best_move: int | None
    score: int
    exact: bool
    pv: list[int]
    moves: dict[int, int] | None
    depth: int
    nodes: int
    time_ms: float
    cache_hit: bool
    note: str = ""
    lower: int | None = None
    upper: int | None = None
    bounds: dict[int, tuple[int, int]] | None = None


@dataclass(frozen=True)
class Progress:
    """A step of an analysis under way: a completed depth, or a narrower solver window.

    For a solver step (:meth:`engine.solver.Solver.iter_solve`) ``lower``/``upper``
    bound the exact score (a weak solve's: its sign), ``score`` is ``lower``,
    ``exact`` is ``lower == upper``, ``pv`` is empty and ``depth`` counts the
    null-window searches so far; ``bounds`` (an analysis of every column) each
    column's proven ``(lower, upper)`` so far.
    """

    depth: int
    score: int
    exact: bool
    pv: list[int]
    nodes: int
    time_ms: float
    lower: int | None = None
    upper: int | None = None
    bounds: dict[int, tuple[int, int]] | None = None


ProgressCallback = Callable[[Progress], None]


def elapsed_ms(start: float) -> float:
    """Milliseconds since ``start`` (``time.monotonic()``)."""
    return (time.monotonic() - start) * 1000


def join_notes(*parts: str) -> str:
    """Notes joined with ``; ``, empty ones left out."""
    return "; ".join(p for p in parts if p)

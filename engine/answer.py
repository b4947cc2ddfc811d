"""What an analysis answers: :class:`Analysis`, and :class:`Progress` while it runs.

Shared by the paths that produce them (:mod:`engine.searched`, :mod:`engine.exact`)
and by the dispatch (:mod:`engine.analysis`); the service turns them into its
contract's models.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
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

    For a solver step ``lower``/``upper`` bound the exact score, ``score`` is
    ``lower`` and ``depth`` counts the window's narrowings; ``bounds`` (an
    analysis of every column) each column's proven ``(lower, upper)`` so far.
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

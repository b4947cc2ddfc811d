"""What a solve answers: :class:`SolveResult`, :class:`SolveProgress` and a batch's :class:`Batch`.

Scores are Pons' (and :mod:`engine.game`'s): from the side to move, ``22 -
stones`` of the winner at the win on 7x6, negative for a loss, 0 for a draw.
A weak solve answers only the sign: its ``score``, ``lower`` and ``upper``
are in ``{-1, 0, 1}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.connect4 import Connect4
from engine.errors import PlybotError
from engine.game import require_ongoing
from engine.solver._core import ABORTED, FULL, OK


def settled(lo: int, hi: int, weak: bool) -> bool:
    """True once ``lo <= s <= hi`` answers the question (the score, or if ``weak`` its sign)."""
    if lo >= hi:
        return True
    return weak and (lo >= 1 or hi <= -1 or (lo >= 0 and hi <= 0))


def weak_value(lo: int, hi: int) -> int:
    """The sign of a score whose bounds are ``settled(lo, hi, True)``: 1, 0 or -1."""
    if lo >= 1:
        return 1
    if hi <= -1:
        return -1
    return 0


@dataclass(frozen=True)
class SolveResult:
    """The outcome of a solve; ``score is None`` (``complete`` False) if a limit came first.

    ``nodes`` counts the solve's nodes; ``seconds`` is wall time, the
    principal variation's extra searches included. ``bounds`` (an analysis
    only) holds every playable column's proven ``(lower, upper)``: equal for
    a column solved exactly, wider where a limit came first.
    """

    score: int | None
    lower: int
    upper: int
    complete: bool
    best_move: int | None
    pv: list[int] = field(default_factory=list)
    moves: dict[int, int] | None = None
    nodes: int = 0
    seconds: float = 0.0
    cache_hit: bool = False
    bounds: dict[int, tuple[int, int]] | None = None


@dataclass(frozen=True)
class SolveProgress:
    """Bounds proven so far, after each null-window search (``iteration`` counts them).

    ``bounds`` (an analysis only): every column's proven ``(lower, upper)`` now.
    """

    lower: int
    upper: int
    nodes: int
    seconds: float
    iteration: int
    bounds: dict[int, tuple[int, int]] | None = None


@dataclass(frozen=True)
class Batch:
    """Raw results of :meth:`Solver.run_batch`, one row per notation.

    ``status[i]`` is ``OK`` or why position ``i`` was not solved (see
    :meth:`error`); ``columns[i][c]`` is column ``c``'s score (analysis only,
    ``FULL`` for a full column).
    """

    notations: Sequence[str]
    variant: str
    status: Sequence[int]
    score: Sequence[int]
    lower: Sequence[int]
    upper: Sequence[int]
    best: Sequence[int]
    nodes: Sequence[int]
    seconds: Sequence[float]
    columns: Sequence[Sequence[int]] | None

    def error(self, i: int) -> PlybotError | None:
        """Why notation ``i`` was not solved (``Connect4.parse``'s own error), or ``None``."""
        status = int(self.status[i])
        if status == OK:
            return None
        if status == ABORTED:
            return PlybotError(f"'{self.notations[i]}': not solved before the deadline")
        try:
            require_ongoing(Connect4.parse(self.notations[i], self.variant))
        except PlybotError as exc:
            return exc
        return PlybotError(
            f"'{self.notations[i]}': cannot be solved"
        )  # statuses agree: unreachable

    def aborted(self, i: int) -> bool:
        """Position ``i`` was not solved for want of time (a deadline, or an interrupt)."""
        return int(self.status[i]) == ABORTED

    def result(self, i: int) -> SolveResult:
        error = self.error(i)
        if error is not None:
            raise error
        moves = None
        if self.columns is not None:
            moves = {c: int(s) for c, s in enumerate(self.columns[i]) if s != FULL}
        best = int(self.best[i])
        return SolveResult(
            score=int(self.score[i]),
            lower=int(self.lower[i]),
            upper=int(self.upper[i]),
            complete=True,
            best_move=best if best >= 0 else None,
            pv=[best] if best >= 0 else [],
            moves=moves,
            nodes=int(self.nodes[i]),
            seconds=float(self.seconds[i]),
        )

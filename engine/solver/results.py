"""The solver's answers made of what its core returns, and the bound arithmetic.

Every answer of the solver is an :class:`engine.answer.Analysis` and every step
an :class:`engine.answer.Progress` (their contract there). Here: an unfinished
solve's answer (:func:`unfinished`); a batch's raw rows (:class:`Batch`, each
position's answer by :meth:`Batch.result`); :func:`settled` and :func:`weak_value`.

Scores are Pons' (and :mod:`engine.game`'s): from the side to move, ``22 -
stones`` of the winner at the win on 7x6, negative for a loss, 0 for a draw.
A weak solve answers only the sign: its ``score``, ``lower`` and ``upper``
are in ``{-1, 0, 1}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.answer import Analysis
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


def unfinished(
    lo: int,
    hi: int,
    best: int | None,
    nodes: int,
    time_ms: float,
    bounds: dict[int, tuple[int, int]] | None = None,
) -> Analysis:
    """The answer of a solve a limit stopped, proven ``lo <= score <= hi``: not exact.

    Its score is the proven lower bound; with ``bounds`` (an analysis) each
    column's figure is its own proven lower bound, and ``best`` must be a
    column not proven worse than another.
    """
    if bounds is None:
        moves = None
        known = "the score shown is its proven lower bound"
    else:
        moves = {c: lower for c, (lower, _) in bounds.items()}
        known = "every figure shown is a proven lower bound"
    return Analysis(
        best_move=best,
        score=lo,
        exact=False,
        pv=[] if best is None else [best],
        moves=moves,
        depth=0,
        nodes=nodes,
        time_ms=time_ms,
        cache_hit=False,
        note=(
            "a limit came first: the exact solve did not finish; the exact score is proven "
            f"between {lo} and {hi}, {known}"
        ),
        lower=lo,
        upper=hi,
        bounds=bounds,
    )


@dataclass(frozen=True)
class Batch:
    """Raw results of :meth:`Solver.run_batch`, one row per notation.

    The low-level rows a benchmark or a book build reads by the thousand
    without making an object per position; :meth:`result` makes position
    ``i``'s :class:`~engine.answer.Analysis`. ``cells`` is the board's cell
    count (a notation is one digit a move: ``cells - len(notation)`` plies
    remain). ``status[i]`` is ``OK`` or why position ``i`` was not solved
    (see :meth:`error`); an ``OK`` row's ``lower`` and ``upper`` equal its
    ``score``; ``seconds[i]`` is position ``i``'s time inside the compiled
    loop; ``columns[i][c]`` is column ``c``'s score (analysis only, ``FULL``
    for a full column).
    """

    notations: Sequence[str]
    variant: str
    cells: int
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

    def result(self, i: int) -> Analysis:
        """Position ``i``'s exact answer, ``pv`` its best move alone; raises :meth:`error`'s
        error if it was not solved. An analysis batch's carries ``moves`` and ``bounds``."""
        if self.status[i] != OK:
            error = self.error(i)
            assert error is not None
            raise error
        score = self.score[i]
        best = self.best[i]
        moves = bounds = None
        if self.columns is not None:
            moves = {c: s for c, s in enumerate(self.columns[i]) if s != FULL}
            bounds = {c: (s, s) for c, s in moves.items()}
        # Positional, in the field order: the hot path of a one-position batch.
        return Analysis(
            best if best >= 0 else None,
            score,
            True,
            [best] if best >= 0 else [],
            moves,
            self.cells - len(self.notations[i]),
            self.nodes[i],
            self.seconds[i] * 1000,
            False,
            "",
            score,
            score,
            bounds,
        )

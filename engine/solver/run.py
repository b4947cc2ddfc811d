"""One solve of one position: the driver loop in Python around the compiled steps.

A :class:`Run` asks the compiled core (:class:`engine.solver._core.Core`)
null-window questions (``Core.init``, then ``Core.step``) until the root's
bounds settle, or a limit comes first; it reports each narrowing (a
:class:`~engine.answer.Progress`) and answers an :class:`~engine.answer.Analysis`,
with a principal variation while that stays cheap. What the book and the shared
cache know is read and written by :mod:`engine.solver.cache_io`, through
:meth:`Run.seed` and :meth:`Run.cap`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from engine.answer import Analysis, Progress
from engine.connect4 import Connect4
from engine.solver import cache_io
from engine.solver._core import FULL, OK
from engine.solver.results import settled, unfinished, weak_value

if TYPE_CHECKING:
    from engine.solver.solver import Solver

#: The principal variation may cost this many nodes, or as many as the solve, whichever is more.
#: Where the book and the database answer the root, the line is lookups until it leaves them,
#: and then each step is a search of its own: 200,000 nodes made an analysis of plies 1-8 take
#: 7-25 ms for lines mostly no longer (median lengths the same from 2,000 to 200,000 nodes on
#: positions of random games), where 2,000 nodes take about 0.2 ms.
PV_MIN_NODES = 2_000

#: A node limit that is never reached.
NO_LIMIT = 1 << 62

#: An analysis first asks for every column in one compiled call of at most this many nodes
#: (about 1-2 ms here), and steps column by column from Python, reporting each, only if that
#: call did not finish: where the database is a few plies down (plies 9-11), Python's steps
#: cost several times the search (a ply-9 analysis: 0.59 ms stepped, 0.11 ms in one call,
#: medians of 10 positions). What the call proved stays in the table for the steps.
QUICK_NODES = 20_000


def _bounds(lower: dict[int, int], upper: dict[int, int]) -> dict[int, tuple[int, int]]:
    """Every column's ``(lower, upper)``, by column."""
    return {c: (lower[c], upper[c]) for c in sorted(lower)}


def _best_proven(legal: list[int], lower: dict[int, int], upper: dict[int, int]) -> int | None:
    """A column not proven worse than another: the highest lower bound among those (then
    upper bound, then the game's order); ``None`` only for no columns."""
    floor = max(lower.values())
    candidates = [c for c in legal if upper[c] >= floor]
    return max(candidates, key=lambda c: (lower[c], upper[c])) if candidates else None


def _weak_bounds(lo: int, hi: int) -> tuple[int, int]:
    """Score bounds as bounds on the sign."""
    lower = 1 if lo >= 1 else (0 if lo >= 0 else -1)
    upper = -1 if hi <= -1 else (0 if hi <= 0 else 1)
    return lower, upper


class Run:
    """One solve of one position: the driver loop in Python around the compiled steps.

    ``start``: the ``time.monotonic()`` its answers' ``time_ms`` count from.
    """

    def __init__(
        self,
        solver: Solver,
        position: Connect4,
        weak: bool,
        deadline: float | None,
        node_limit: int | None,
        start: float,
    ) -> None:
        self.solver = solver
        self.core = solver._core
        self.position = position
        self.weak = weak
        self.deadline = deadline
        self.start = start
        #: Nodes searched so far, and where the search stops (``node_limit`` from the start).
        self.nodes = 0
        self.node_limit = NO_LIMIT if node_limit is None else node_limit
        # A deadline of the core is read afresh by the search: Solver.interrupt moves it.
        self.core.deadline = math.inf if deadline is None else deadline
        self.iteration = 0
        self.want_pv = True
        #: ``(lower, upper, move)`` proven for the root by the book or the shared cache
        #: (``move`` -1 if none), set by :func:`engine.solver.cache_io.read`; None if unknown.
        self.root_known: tuple[int, int, int] | None = None

    def elapsed_ms(self) -> float:
        return (time.monotonic() - self.start) * 1000

    def depth(self) -> int:
        """The plies left to the end of the game: an exact answer's depth."""
        p = self.position
        return p.width * p.height - p.ply

    # -- the driver ---------------------------------------------------------------

    def narrow(self, cur: int, mask: int, ply: int) -> Iterator[tuple[int, int]]:
        """Ask null-window questions about a position until settled; yield ``(lo, hi)`` after each.

        The final ``(lo, hi, best, aborted)`` is left in ``self.state``.
        """
        core = self.core
        lo, hi, best = core.init(cur, mask, ply)
        self.state = (lo, hi, best, False)
        while not settled(lo, hi, self.weak):
            lo, hi, best, aborted, self.nodes = core.step(
                cur, mask, ply, lo, hi, best, self.weak, self.nodes, self.node_limit
            )
            self.state = (lo, hi, best, aborted)
            if aborted:
                return
            self.iteration += 1
            yield lo, hi

    def solve(self) -> Iterator[Progress | Analysis]:
        p = self.position
        for lo, hi in self.narrow(p.current, p.mask, p.ply):
            yield self.progress(lo, hi)
        lo, hi, best, aborted = self.state
        if aborted:
            lo, hi = _weak_bounds(lo, hi) if self.weak else (lo, hi)
            yield unfinished(lo, hi, best if best >= 0 else None, self.nodes, self.elapsed_ms())
            return
        if best < 0 and not self.weak and lo > p.score_range()[0]:
            # The score came with no move reaching it (the root's parents in the database
            # bound it, Core.init): one question just under it names one.
            _, _, best, aborted, self.nodes = self.core.step(
                p.current, p.mask, p.ply, lo - 1, lo, -1, False, self.nodes, self.node_limit
            )
            if aborted:
                yield unfinished(lo, hi, None, self.nodes, self.elapsed_ms())
                return
        if best < 0:
            best = self.fallback_move(p)
        score = weak_value(lo, hi) if self.weak else lo
        nodes = self.nodes  # the solve's; the principal variation's searches come on top
        pv = [best] if self.weak or not self.want_pv else self.principal_variation(p, score, best)
        cache_io.write(self, score, best, {})
        yield Analysis(
            best_move=best,
            score=score,
            exact=True,
            pv=pv,
            moves=None,
            depth=self.depth(),
            nodes=nodes,
            time_ms=self.elapsed_ms(),
            cache_hit=False,
            lower=score,
            upper=score,
        )

    def analyze(self, moves: dict[int, int] | None = None) -> Iterator[Progress | Analysis]:
        """Every column's value. ``moves``: :meth:`known_columns`, if already read (else it
        is read here)."""
        p = self.position
        legal = p.legal_moves()  # centre first
        # What the book or the shared cache proved about the root: no column is worth more
        # than its upper bound, which narrows every other column's window from the start.
        known = None if self.weak else self.root_known
        if moves is None:
            moves = self.known_columns()
        if len(moves) < len(legal):
            quick = self.quick_columns()
            if quick is not None:
                moves = quick
        if len(moves) == len(legal):
            # One step, as where columns are left to search: every analysis reports progress.
            best = max(moves.values())
            yield self.progress(best, best, True, _bounds(moves, moves))
            yield self.answer(legal, moves)
            return
        # Bounds of each column's value from our side (weak: of its sign).
        floor, ceiling = (-1, 1) if self.weak else p.score_range()
        lower = dict.fromkeys(legal, floor)
        upper = dict.fromkeys(legal, ceiling if known is None else min(ceiling, known[1]))
        for column, value in moves.items():
            lower[column] = upper[column] = value
        if moves:
            # What is settled already, in one step: every analysis reports progress (a caller
            # streaming it shows these columns at once), however little is left to search.
            yield self.columns_progress(lower, upper)
        todo = [c for c in legal if c not in moves]
        if self.solver.threads > 1 and self.node_limit == NO_LIMIT:
            yield from self.settle_in_threads(legal, todo, moves, lower, upper)
            return
        for column in todo:
            child = self.capped_child(column)
            for lo, hi in self.narrow(child.current, child.mask, child.ply):
                lo, hi = _weak_bounds(lo, hi) if self.weak else (lo, hi)
                lower[column], upper[column] = -hi, -lo
                yield self.columns_progress(lower, upper)
            lo, hi, _, aborted = self.state
            if aborted:
                yield self.columns_unfinished(legal, lower, upper)
                return
            moves[column] = -(weak_value(lo, hi) if self.weak else lo)
            lower[column] = upper[column] = moves[column]
            # Each column as its search settles it: a caller shows it at once.
            yield self.columns_progress(lower, upper)
        yield self.answer(legal, dict(sorted(moves.items())))

    def capped_child(self, column: int) -> Connect4:
        """The position after ``column``, capped in the table by the root's upper bound where
        the book or the shared cache proved one (:meth:`cap`): no column is worth more."""
        child = self.position.copy()
        child.push(column)
        known = None if self.weak else self.root_known
        if known is not None:
            self.cap(child, known[1])
        return child

    def settle_in_threads(
        self,
        legal: list[int],
        todo: list[int],
        moves: dict[int, int],
        lower: dict[int, int],
        upper: dict[int, int],
    ) -> Iterator[Progress | Analysis]:
        """:meth:`analyze`'s columns ``todo`` settled in the solver's threads sharing the
        table (:meth:`Core.settle_columns`: the first ``threads`` columns a call, any thread
        left over helping them), a step reported as each settles, then the answer.
        ``legal``, ``moves``, ``lower`` and ``upper`` as :meth:`analyze` has them (the last
        three updated here)."""
        p = self.position
        threads = self.solver.threads
        for column in todo:
            self.capped_child(column)
        while todo:
            batch = todo[:threads]
            rows, nodes, aborted = self.core.settle_columns(
                p.current, p.mask, p.ply, batch, self.weak, threads
            )
            self.nodes += nodes
            self.iteration += 1
            for column, (lo, hi, done) in zip(batch, rows, strict=True):
                if done:
                    moves[column] = -(weak_value(lo, hi) if self.weak else lo)
                    lower[column] = upper[column] = moves[column]
                else:
                    lo, hi = _weak_bounds(lo, hi) if self.weak else (lo, hi)
                    lower[column], upper[column] = -hi, -lo
            yield self.columns_progress(lower, upper)
            if aborted:
                yield self.columns_unfinished(legal, lower, upper)
                return
            todo = [c for c in todo if c not in moves]
        yield self.answer(legal, dict(sorted(moves.items())))

    def columns_progress(self, lower: dict[int, int], upper: dict[int, int]) -> Progress:
        """The step of an analysis whose columns are proven within ``lower`` and ``upper``."""
        return self.progress(max(lower.values()), max(upper.values()), True, _bounds(lower, upper))

    def columns_unfinished(
        self, legal: list[int], lower: dict[int, int], upper: dict[int, int]
    ) -> Analysis:
        """The answer of an analysis a limit stopped, its columns proven within ``lower``
        and ``upper``."""
        return unfinished(
            max(lower.values()),
            max(upper.values()),
            _best_proven(legal, lower, upper),
            self.nodes,
            self.elapsed_ms(),
            _bounds(lower, upper),
        )

    def known_columns(self) -> dict[int, int]:
        """The columns settled before any search, by column (weak: each value's sign): a win
        now, the book, the database and the table (one compiled call, :meth:`Core.settled`),
        and the root's best move where the book or the shared cache proved the root exact
        (its value is the root's score)."""
        p = self.position
        moves = self.core.settled(p.current, p.mask, p.ply)
        if self.weak:
            return {c: (v > 0) - (v < 0) for c, v in moves.items()}
        known = self.root_known
        if known is not None and known[0] == known[1] and known[2] not in moves and known[2] >= 0:
            moves[known[2]] = known[0]
            return dict(sorted(moves.items()))
        return moves

    def quick_columns(self) -> dict[int, int] | None:
        """Every playable column's value (weak: its sign) from one compiled call of at most
        :data:`QUICK_NODES` nodes, or ``None`` if it did not finish (or the run's own node
        limit leaves less than that). The nodes count towards the run's either way."""
        budget = self.node_limit - self.nodes
        if budget <= QUICK_NODES:
            return None
        p = self.position
        status, _score, _lo, _hi, _best, nodes, _seconds, columns = self.core.batch(
            [p.notation()], self.weak, True, True, QUICK_NODES
        )
        self.nodes += nodes[0]
        if status[0] != OK or columns is None:
            return None
        return {c: v for c, v in enumerate(columns[0]) if v != FULL}

    def answer(self, legal: list[int], moves: dict[int, int]) -> Analysis:
        """The exact analysis of every column (``moves``: each legal column's value, in
        column order, kept as the answer's): the best move is the first of ``legal`` (the
        game's order) that reaches the score."""
        p = self.position
        score = max(moves.values())
        best = next(c for c in legal if moves[c] == score)
        nodes = self.nodes  # the solve's; the principal variation's searches come on top
        pv = [best] if self.weak or not self.want_pv else self.principal_variation(p, score, best)
        cache_io.write(self, score, best, moves)
        return Analysis(
            best_move=best,
            score=score,
            exact=True,
            pv=pv,
            moves=moves,
            depth=self.depth(),
            nodes=nodes,
            time_ms=self.elapsed_ms(),
            cache_hit=False,
            lower=score,
            upper=score,
            bounds={c: (m, m) for c, m in moves.items()},
        )

    def progress(
        self,
        lo: int,
        hi: int,
        weak_units: bool = False,
        bounds: dict[int, tuple[int, int]] | None = None,
    ) -> Progress:
        """The step after a null-window search: the root's ``lo <= score <= hi`` (a weak
        solve's in score units unless ``weak_units``: made bounds on the sign)."""
        if self.weak and not weak_units:
            lo, hi = _weak_bounds(lo, hi)
        return Progress(
            depth=self.iteration,
            score=lo,
            exact=lo == hi,
            pv=[],
            nodes=self.nodes,
            time_ms=self.elapsed_ms(),
            lower=lo,
            upper=hi,
            bounds=bounds,
        )

    @staticmethod
    def fallback_move(p: Connect4) -> int:
        """A best move where no search named one (the score is a bound every safe move reaches)."""
        wins = p.winning_moves()
        if wins:
            return wins[0]
        safe = p.non_losing_moves()
        return safe[0] if safe else p.legal_moves()[0]

    def principal_variation(self, p: Connect4, score: int, best: int) -> list[int]:
        """The line from ``best`` to the end of the game, while it stays cheap.

        Walked by the core (:meth:`Core.line`): at each position of known score ``s``
        the move the book, the database or the table names, else one null-window
        search with the window ``(s - 1, s)`` names a move that reaches ``s``.
        """
        budget = max(PV_MIN_NODES, self.nodes)
        self.node_limit = min(self.node_limit, self.nodes + budget)
        q = p.copy()
        q.push(best)
        if q.outcome() is not None:
            return [best]
        rest, _aborted, self.nodes = self.core.line(
            q.current, q.mask, q.ply, -score, self.nodes, self.node_limit
        )
        return [best, *rest]

    # -- what is known, put in the table ------------------------------------------

    def cap(self, child: Connect4, parent_upper: int) -> None:
        """Record in the table that the move to ``child`` is worth at most ``parent_upper``
        to the parent: ``child``'s value (its side to move) is at least ``-parent_upper``."""
        lo, hi, move = self.core.init(child.current, child.mask, child.ply)
        lower = max(lo, -parent_upper)
        if lower > lo and lower <= hi:
            self.seed(child, lower, hi, move)

    def seed(self, q: Connect4, lower: int, upper: int, move: int) -> None:
        """Put known bounds of ``q`` into the table, as costly knowledge (kept first)."""
        empty = q.width * q.height - q.ply
        self.core.put(q.current + q.mask, empty, lower, upper, move, 63)

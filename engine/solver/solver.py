"""The Python face of the exact Connect Four solver: :class:`Solver`.

A :class:`Solver` owns a transposition table (numpy, filled by the compiled
core) that lives as long as the solver: keep one per process (a worker, the
CLI) and every solve starts from what earlier ones proved. Not thread-safe:
one solve at a time per solver.

Scores are Pons' (and :mod:`engine.game`'s): from the side to move, ``22 -
stones`` of the winner at the win on 7x6, negative for a loss, 0 for a draw.
A weak solve answers only the sign: its ``score``, ``lower`` and ``upper``
are in ``{-1, 0, 1}``.

The optional external cache (:class:`engine.cache.PositionCache`, the
service's Redis) is read once per solve, in one ``get_many``: the root, its
children and (early in the game) its grandchildren, by canonical key. An exact
root answers at once; the other bounds seed the table. A finished solve
writes the root (and, for an analysis, the children) back as exact entries.
The cache can never make a solve fail or be wrong: errors and malformed
entries are ignored. An opening book (:mod:`engine.book`), when given, is
read the same way, before the cache; it is never written.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.book import Tiered
from engine.cache import EXACT_DEPTH, CacheEntry, PositionCache
from engine.connect4 import Connect4
from engine.errors import NotationError, PlybotError
from engine.game import require_ongoing
from engine.solver.kernels import BEST, LOWER, NODES, OUT_FIELDS, SCORE, STATUS, UPPER, kernels
from engine.solver.root import ABORTED, FULL, OK, settled, weak_value
from engine.solver.table import new_table

#: Default size of the transposition table: 64 MB (4M entries of 8 bytes, 2 per bucket).
DEFAULT_TABLE_BYTES = 64 << 20
#: The principal variation may cost this many nodes, or as many as the solve, whichever is more.
PV_MIN_NODES = 200_000
#: Grandchildren are read from the external cache below this ply (where searches are costly).
GRANDCHILDREN_BEFORE_PLY = 16

_NO_LIMIT = float(1 << 62)
_settled = settled.py_func


def _weak_value(lo: int, hi: int) -> int:
    return int(weak_value.py_func(lo, hi))


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

    ``status[i]`` is ``root.OK`` or why position ``i`` was not solved (see
    :meth:`error`); ``columns[i, c]`` is column ``c``'s score (analysis only,
    ``root.FULL`` for a full column).
    """

    notations: Sequence[str]
    variant: str
    status: np.ndarray
    score: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    best: np.ndarray
    nodes: np.ndarray
    seconds: np.ndarray
    columns: np.ndarray | None

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


class Solver:
    """Exact solver of Connect Four positions of one board size, with a persistent table."""

    def __init__(
        self,
        width: int = 7,
        height: int = 6,
        table_bytes: int = DEFAULT_TABLE_BYTES,
        cache: PositionCache | None = None,
        book: PositionCache | None = None,
    ) -> None:
        self._k = kernels(width, height)
        self.width = width
        self.height = height
        self.cache = cache
        # What a solve reads before searching: the book first, then the shared cache.
        self._known: PositionCache | None = cache
        if book is not None:
            self._known = book if cache is None else Tiered(book, cache)
        self._table, self._layout = new_table(self._k.board.key_bits, table_bytes)
        #: The limits of the single solve in progress, for :meth:`interrupt`.
        self._limits: np.ndarray | None = None

    def interrupt(self) -> None:
        """End the solve in progress now (safe from another thread): its compiled search
        returns within a few thousand nodes, and the solve reports the bounds proven so far."""
        limits = self._limits
        if limits is not None:
            limits[1] = -math.inf

    @property
    def variant(self) -> str:
        return f"{self.width}x{self.height}"

    @property
    def table_bytes(self) -> int:
        return int(self._table.nbytes)

    def reset(self) -> None:
        """Forget everything the table holds."""
        self._table.fill(0)

    def warm_up(self) -> None:
        """Load the compiled entry points of single solves now, so that no deadline pays for it.

        numba loads (or, with no on-disk cache, compiles) each entry point at its
        first call, a second or more. A solve from the book or the cache calls
        none of them, so a solve cannot stand in for this. The table keeps only
        what a tiny search of the empty board proves. (The batch entry
        point of ``solve_batch`` loads at its first call: batches have no deadline.)
        """
        position = Connect4(self.width, self.height)
        run = _Run(self, position, weak=False, deadline=None, node_limit=1000)
        for _ in run.solve():  # init and step, past the book and the cache
            pass
        run.seed(position, *position.score_range(), -1)  # put: says nothing new
        empty = self.width * self.height - position.ply
        self._k.get(self._table, self._layout, np.uint64(position.current + position.mask), empty)

    def known(self, positions: Sequence[Connect4]) -> list[int | None]:
        """Each position's exact score from the book or the external cache, else ``None``.

        One ``get_many``, no search; a malformed or impossible entry is ``None``.
        """
        if self._known is None or not positions:
            return [None] * len(positions)
        try:
            entries = list(
                self._known.get_many("connect4", self.variant, [p.key() for p in positions])
            )
        except Exception:
            return [None] * len(positions)
        if len(entries) != len(positions):
            return [None] * len(positions)
        out: list[int | None] = []
        for q, entry in zip(positions, entries, strict=True):
            lowest, highest = q.score_range()
            ok = (
                isinstance(entry, CacheEntry)
                and entry.exact
                and type(entry.lower) is int
                and lowest <= entry.lower <= highest
            )
            out.append(entry.lower if ok and entry is not None else None)
        return out

    # -- single positions ---------------------------------------------------------

    def solve(
        self,
        position: Connect4,
        *,
        weak: bool = False,
        deadline: float | None = None,
        node_limit: int | None = None,
        pv: bool = True,
    ) -> SolveResult:
        """The exact score of ``position`` (or its sign if ``weak``), a best move and a PV.

        ``deadline`` is absolute, on ``time.monotonic()``; it is never overrun
        by more than a fraction of a millisecond. On expiry (or after
        ``node_limit`` nodes) the result has ``complete=False``, ``score=None``
        and the bounds proven so far. With ``pv=False`` the line is only the
        best move (the principal variation's searches are skipped). Raises
        ``GameOverError`` for a finished position.
        """
        return self._last(
            self.iter_solve(position, weak=weak, deadline=deadline, node_limit=node_limit, pv=pv)
        )

    def analyze(
        self,
        position: Connect4,
        *,
        weak: bool = False,
        deadline: float | None = None,
        node_limit: int | None = None,
    ) -> SolveResult:
        """Like :meth:`solve`, with ``moves``: every playable column's exact score (or sign)."""
        return self._last(
            self.iter_solve(
                position, weak=weak, deadline=deadline, node_limit=node_limit, analyze=True
            )
        )

    def iter_solve(
        self,
        position: Connect4,
        *,
        weak: bool = False,
        deadline: float | None = None,
        analyze: bool = False,
        node_limit: int | None = None,
        pv: bool = True,
    ) -> Iterator[SolveProgress | SolveResult]:
        """Yield a :class:`SolveProgress` after each null-window search, then the result."""
        self._check(position)
        require_ongoing(position)
        run = _Run(self, position, weak, deadline, node_limit)
        run.want_pv = pv
        hit = run.read_cache(analyze)
        if hit is not None:
            yield hit
            return
        if analyze:
            yield from run.analyze()
        else:
            yield from run.solve()

    # -- many positions in one compiled call --------------------------------------

    def solve_batch(
        self, notations: Sequence[str], weak: bool = False, analyze: bool = False
    ) -> list[SolveResult]:
        """Solve every notation in one compiled call (fast for many small positions).

        Raises the error of the first bad notation (``Connect4.parse``'s
        message, or ``GameOverError``) before solving any. Results carry ``pv=[best_move]``; the
        external cache is not used.
        """
        batch = self.run_batch(notations, weak=weak, analyze=analyze, strict=True)
        return [batch.result(i) for i in range(len(notations))]

    def iter_batches(
        self,
        notations: Sequence[str],
        *,
        weak: bool = False,
        analyze: bool = False,
        chunk_seconds: float = 0.1,
    ) -> Iterator[tuple[int, Batch]]:
        """:meth:`run_batch` over consecutive chunks of ``notations``: yields ``(offset, batch)``.

        Chunks start at one position and are then sized from the measured
        pace to take about ``chunk_seconds`` each, so a caller can stream
        results and report progress without paying for many compiled calls.
        """
        done = 0
        chunk = 1
        while done < len(notations):
            part = notations[done : done + chunk]
            started = time.perf_counter()
            batch = self.run_batch(part, weak=weak, analyze=analyze)
            per_position = max((time.perf_counter() - started) / len(part), 1e-7)
            yield done, batch
            done += len(part)
            chunk = max(1, min(10_000, int(chunk_seconds / per_position)))

    def run_batch(
        self,
        notations: Sequence[str],
        *,
        weak: bool = False,
        analyze: bool = False,
        strict: bool = False,
        deadline: float | None = None,
    ) -> Batch:
        """Parse and solve ``notations`` in one compiled call; a bad one gets a status, not a raise.

        Each position is timed inside the compiled loop (``Batch.seconds``).
        With ``strict``, nothing is solved if any notation is bad.
        """
        encoded = [n.encode("ascii", "replace") for n in notations]
        lengths = np.fromiter((len(e) for e in encoded), dtype=np.int64, count=len(encoded))
        ends = np.cumsum(lengths)
        starts = ends - lengths
        buf = np.frombuffer(b"".join(encoded) or b"\0", dtype=np.uint8)
        count = len(encoded)
        out = np.zeros((count, OUT_FIELDS), dtype=np.int64)
        seconds = np.zeros(count, dtype=np.float64)
        columns = np.zeros((count if analyze else 1, self.width), dtype=np.int64)
        limits = _limits(None, deadline, 0)
        self._k.batch(
            self._table,
            self._layout,
            buf,
            starts,
            ends,
            weak,
            analyze,
            strict,
            limits,
            out,
            seconds,
            columns,
        )
        return Batch(
            notations=notations,
            variant=self.variant,
            status=out[:, STATUS],
            score=out[:, SCORE],
            lower=out[:, LOWER],
            upper=out[:, UPPER],
            best=out[:, BEST],
            nodes=out[:, NODES],
            seconds=seconds,
            columns=columns if analyze else None,
        )

    # -- helpers ------------------------------------------------------------------

    def _check(self, position: Connect4) -> None:
        if not isinstance(position, Connect4) or position.variant != self.variant:
            raise NotationError(
                f"'{getattr(position, 'variant', type(position).__name__)}': "
                f"this solver plays Connect Four {self.variant}"
            )

    @staticmethod
    def _last(items: Iterator[SolveProgress | SolveResult]) -> SolveResult:
        *_, last = items
        assert isinstance(last, SolveResult)
        return last


def _limits(node_limit: int | None, deadline: float | None, nodes: int) -> np.ndarray:
    return np.array(
        [
            _NO_LIMIT if node_limit is None else float(nodes + node_limit),
            math.inf if deadline is None else float(deadline),
        ],
        dtype=np.float64,
    )


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


class _Run:
    """One solve of one position: the driver loop in Python around the compiled steps."""

    def __init__(
        self,
        solver: Solver,
        position: Connect4,
        weak: bool,
        deadline: float | None,
        node_limit: int | None,
    ) -> None:
        self.solver = solver
        self.k = solver._k
        self.table = solver._table
        self.layout = solver._layout
        self.position = position
        self.weak = weak
        self.deadline = deadline
        self.start = time.perf_counter()
        self.counters = np.zeros(1, dtype=np.int64)
        self.limits = solver._limits = _limits(node_limit, deadline, 0)
        self.iteration = 0
        self.want_pv = True
        #: ``(lower, upper, move)`` proven for the root by the book or the shared cache
        #: (``move`` -1 if none), read by :meth:`read_cache`; None if nothing is known.
        self.root_known: tuple[int, int, int] | None = None

    @property
    def nodes(self) -> int:
        return int(self.counters[0])

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    # -- the driver ---------------------------------------------------------------

    def narrow(self, cur: int, mask: int, ply: int) -> Iterator[tuple[int, int]]:
        """Ask null-window questions about a position until settled; yield ``(lo, hi)`` after each.

        The final ``(lo, hi, best, aborted)`` is left in ``self.state``.
        """
        cur_u, mask_u = np.uint64(cur), np.uint64(mask)
        lo, hi, best = (int(v) for v in self.k.init(self.table, self.layout, cur_u, mask_u, ply))
        self.state = (lo, hi, best, False)
        while not _settled(lo, hi, self.weak):
            lo, hi, best, aborted = self.k.step(
                self.table,
                self.layout,
                cur_u,
                mask_u,
                ply,
                lo,
                hi,
                best,
                self.weak,
                self.limits,
                self.counters,
            )
            lo, hi, best = int(lo), int(hi), int(best)
            self.state = (lo, hi, best, bool(aborted))
            if aborted:
                return
            self.iteration += 1
            yield lo, hi

    def solve(self) -> Iterator[SolveProgress | SolveResult]:
        p = self.position
        for lo, hi in self.narrow(p.current, p.mask, p.ply):
            yield self.progress(lo, hi)
        lo, hi, best, aborted = self.state
        if aborted:
            yield self.incomplete(lo, hi, best if best >= 0 else None)
            return
        if best < 0:
            best = self.fallback_move(p)
        score = _weak_value(lo, hi) if self.weak else lo
        nodes = self.nodes  # the solve's; the principal variation's searches come on top
        pv = [best] if self.weak or not self.want_pv else self.principal_variation(p, score, best)
        result = SolveResult(
            score=score,
            lower=score,
            upper=score,
            complete=True,
            best_move=best,
            pv=pv,
            nodes=nodes,
            seconds=self.elapsed(),
        )
        self.write_cache(result, {})
        yield result

    def analyze(self) -> Iterator[SolveProgress | SolveResult]:
        p = self.position
        wins = set(p.winning_moves())
        legal = p.legal_moves()  # centre first
        # Bounds of each column's value from our side (weak: of its sign).
        floor, ceiling = (-1, 1) if self.weak else p.score_range()
        # What the book or the shared cache proved about the root: its best move's value is
        # the root's exact score (no search), and no column is worth more than its upper
        # bound, which narrows every other column's window from the start.
        known = None if self.weak else self.root_known
        lower = dict.fromkeys(legal, floor)
        upper = dict.fromkeys(legal, ceiling if known is None else min(ceiling, known[1]))
        moves: dict[int, int] = {}
        for column in legal:
            if column in wins:
                moves[column] = ceiling  # a win now: the best there is (weak: 1)
            elif known is not None and known[0] == known[1] and column == known[2]:
                moves[column] = known[0]
            else:
                child = p.copy()
                child.push(column)
                if known is not None:
                    self.cap(child, known[1])
                for lo, hi in self.narrow(child.current, child.mask, child.ply):
                    lo, hi = _weak_bounds(lo, hi) if self.weak else (lo, hi)
                    lower[column], upper[column] = -hi, -lo
                    yield self.progress(
                        max(lower.values()), max(upper.values()), True, _bounds(lower, upper)
                    )
                lo, hi, _, aborted = self.state
                if aborted:
                    yield self.incomplete(
                        max(lower.values()),
                        max(upper.values()),
                        _best_proven(legal, lower, upper),
                        moves,
                        True,
                        _bounds(lower, upper),
                    )
                    return
                moves[column] = -(_weak_value(lo, hi) if self.weak else lo)
            lower[column] = upper[column] = moves[column]
            # Each column as it is settled: a caller shows it at once.
            yield self.progress(
                max(lower.values()), max(upper.values()), True, _bounds(lower, upper)
            )
        score = max(moves.values())
        best = next(c for c in legal if moves[c] == score)
        nodes = self.nodes  # the solve's; the principal variation's searches come on top
        pv = [best] if self.weak else self.principal_variation(p, score, best)
        result = SolveResult(
            score=score,
            lower=score,
            upper=score,
            complete=True,
            best_move=best,
            pv=pv,
            moves=dict(sorted(moves.items())),
            nodes=nodes,
            seconds=self.elapsed(),
            bounds={c: (m, m) for c, m in sorted(moves.items())},
        )
        self.write_cache(result, moves)
        yield result

    def progress(
        self,
        lo: int,
        hi: int,
        weak_units: bool = False,
        bounds: dict[int, tuple[int, int]] | None = None,
    ) -> SolveProgress:
        if self.weak and not weak_units:
            lo, hi = _weak_bounds(lo, hi)
        return SolveProgress(lo, hi, self.nodes, self.elapsed(), self.iteration, bounds)

    def incomplete(
        self,
        lo: int,
        hi: int,
        best: int | None,
        moves: dict[int, int] | None = None,
        weak_units: bool = False,
        bounds: dict[int, tuple[int, int]] | None = None,
    ) -> SolveResult:
        if self.weak and not weak_units:
            lo, hi = _weak_bounds(lo, hi)
        return SolveResult(
            score=None,
            lower=lo,
            upper=hi,
            complete=False,
            best_move=best,
            pv=[best] if best is not None else [],
            moves=dict(sorted(moves.items())) if moves is not None else None,
            nodes=self.nodes,
            seconds=self.elapsed(),
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

        At each position of known score ``s`` one null-window search with the
        window ``(s - 1, s)`` fails high on a move that reaches ``s``.
        """
        budget = max(PV_MIN_NODES, self.nodes)
        self.limits[0] = min(self.limits[0], float(self.nodes + budget))
        line = [best]
        q = p.copy()
        q.push(best)
        s = -score
        while q.outcome() is None:
            cur, mask = np.uint64(q.current), np.uint64(q.mask)
            lo, hi, move = (int(v) for v in self.k.init(self.table, self.layout, cur, mask, q.ply))
            if not (lo == hi == s and move >= 0):
                lo, hi, move, aborted = self.k.step(
                    self.table,
                    self.layout,
                    cur,
                    mask,
                    q.ply,
                    s - 1,
                    s,
                    -1,
                    False,
                    self.limits,
                    self.counters,
                )
                if aborted:
                    break
                if int(move) < 0:
                    move = self.fallback_move(q)
            line.append(int(move))
            q.push(int(move))
            s = -s
        return line

    # -- the external cache -------------------------------------------------------

    def _bounds_ok(self, entry: Any, q: Connect4) -> bool:
        """A well-formed exact-depth entry: bounds possible in ``q``, a playable move or None."""
        try:
            lo_limit, hi_limit = q.score_range()
            return (
                isinstance(entry, CacheEntry)
                and entry.depth == EXACT_DEPTH
                and type(entry.lower) is int
                and type(entry.upper) is int
                and lo_limit <= entry.lower <= entry.upper <= hi_limit
                and (entry.best_move is None or self._move_ok(entry, q) >= 0)
            )
        except Exception:
            return False

    @staticmethod
    def _move_ok(entry: CacheEntry, q: Connect4) -> int:
        """The entry's best move in ``q``'s orientation, or -1 if absent or not playable."""
        move = entry.best_move
        if type(move) is not int or not 0 <= move < q.width:
            return -1
        move = q.from_canonical(move)
        return move if q.can_play(move) else -1

    def cap(self, child: Connect4, parent_upper: int) -> None:
        """Record in the table that the move to ``child`` is worth at most ``parent_upper``
        to the parent: ``child``'s value (its side to move) is at least ``-parent_upper``."""
        cur, mask = np.uint64(child.current), np.uint64(child.mask)
        lo, hi, move = (int(v) for v in self.k.init(self.table, self.layout, cur, mask, child.ply))
        lower = max(lo, -parent_upper)
        if lower > lo and lower <= hi:
            self.seed(child, lower, hi, move)

    def seed(self, q: Connect4, lower: int, upper: int, move: int) -> None:
        """Put known bounds of ``q`` into the table, as costly knowledge (kept first)."""
        empty = q.width * q.height - q.ply
        key = np.uint64(q.current + q.mask)
        self.k.put(self.table, self.layout, key, empty, lower, upper, move, 63)

    def read_cache(self, analyze: bool) -> SolveResult | None:
        """Read the root and its neighbourhood in one call; the result if the root answers it."""
        cache = self.solver._known
        if cache is None:
            return None
        p = self.position
        positions = [p]
        for column in p.legal_moves():
            child = p.copy()
            child.push(column)
            if child.outcome() is not None:
                continue
            positions.append(child)
            if p.ply < GRANDCHILDREN_BEFORE_PLY:
                for reply in child.legal_moves():
                    grandchild = child.copy()
                    grandchild.push(reply)
                    if grandchild.outcome() is None:
                        positions.append(grandchild)
        try:
            entries = list(cache.get_many(p.name, p.variant, [q.key() for q in positions]))
        except Exception:
            return None
        if len(entries) != len(positions):
            return None
        for q, entry in zip(positions[1:], entries[1:], strict=True):
            if entry is not None and self._bounds_ok(entry, q):
                self.seed(q, entry.lower, entry.upper, self._move_ok(entry, q))
        root = entries[0]
        if root is None or not self._bounds_ok(root, p):
            return None
        move = self._move_ok(root, p)
        self.root_known = (root.lower, root.upper, move)
        if move >= 0 or root.lower == root.upper:
            self.seed(p, root.lower, root.upper, move)
        if analyze or move < 0:
            return None
        lo, hi = root.lower, root.upper
        if self.weak and _settled(lo, hi, True):
            score = _weak_value(lo, hi)
        elif lo == hi and not self.weak:
            score = lo
        else:
            return None
        return SolveResult(
            score=score,
            lower=score,
            upper=score,
            complete=True,
            best_move=move,
            pv=[move],
            nodes=0,
            seconds=self.elapsed(),
            cache_hit=True,
        )

    def write_cache(self, result: SolveResult, moves: dict[int, int]) -> None:
        cache = self.solver.cache
        if cache is None or result.score is None or result.best_move is None:
            return
        p = self.position
        lo_limit, hi_limit = p.score_range()
        if self.weak:
            lo, hi = {1: (1, hi_limit), 0: (0, 0), -1: (lo_limit, -1)}[result.score]
        else:
            lo = hi = result.score
        items = [(p.key(), CacheEntry(lo, hi, EXACT_DEPTH, p.to_canonical(result.best_move)))]
        wins = set(p.winning_moves())
        for column, score in moves.items():
            if column in wins:
                continue
            child = p.copy()
            child.push(column)
            if self.weak:
                c_lo, c_hi = {1: (-1, -1), 0: (0, 0), -1: (1, 1)}[score]
                if c_lo != 0:  # a sign, not a score: keep it a bound
                    c_lo, c_hi = (c_lo, 99) if c_lo > 0 else (-99, c_hi)
                    lowest, highest = child.score_range()
                    c_lo, c_hi = max(c_lo, lowest), min(c_hi, highest)
            else:
                c_lo = c_hi = -score
            items.append((child.key(), CacheEntry(c_lo, c_hi, EXACT_DEPTH, None)))
        try:
            cache.put_many(p.name, p.variant, items)
        except Exception:
            return

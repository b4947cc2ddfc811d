"""The Python face of the exact Connect Four solver: :class:`Solver`.

A :class:`Solver` owns a compiled core (:class:`engine.solver._core.Core`:
the search and its transposition table) that lives as long as the solver:
keep one per process (a worker, the CLI; :mod:`engine.pool`) and every solve
starts from what earlier ones proved. Not thread-safe: one solve at a time
per solver (:meth:`Solver.interrupt` is the exception: any thread may call it).

The solver owns its lookup ladder, asked in this order: the opening book
(:class:`engine.book.OpeningBook`, given as ``book``) and the stones databases
(:mod:`engine.database`, given as ``databases``: 12 and 13 stones), all held by the
compiled core and asked by the search itself at every node of their plies; then the
transposition table; then the shared cache (``cache``), read once per solve
around the root (:mod:`engine.solver.cache_io`) and written after.
:meth:`Solver.known` answers "what is known about these positions" from the
same ladder, without search. So a search from shortly after the book's depth,
or before ply 12, is a few plies away from exact answers, and each column of a
12-stone position is one lookup.

A solve answers an :class:`engine.answer.Analysis` and reports
:class:`engine.answer.Progress`, the shape of every analysis (its contract
there). Scores are Pons' (and :mod:`engine.game`'s): from the side to move,
``22 - stones`` of the winner at the win on 7x6, negative for a loss, 0 for a
draw. A weak solve answers only the sign: its ``score``, ``lower`` and
``upper`` are in ``{-1, 0, 1}``.

One concern per module behind it: :mod:`engine.solver.results` (a batch's raw
rows, and an unfinished solve's answer), :mod:`engine.solver.run` (the driver of one solve) and
:mod:`engine.solver.cache_io` (the optional shared cache,
:class:`engine.cache.PositionCache`: read once per solve, written after; it
can never make a solve fail or be wrong).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from engine import known as known_
from engine.answer import Analysis, Progress
from engine.book import OpeningBook
from engine.cache import PositionCache
from engine.connect4 import Connect4
from engine.errors import NotationError
from engine.game import require_ongoing
from engine.solver import cache_io
from engine.solver._core import Core
from engine.solver.results import Batch
from engine.solver.run import NO_LIMIT, Run

if TYPE_CHECKING:
    from engine.database import StoneDatabase
    from engine.known import Neighbourhood

__all__ = ["DEFAULT_TABLE_BYTES", "Batch", "Solver"]

#: Default size of the transposition table: 64 MB (4M entries of 8 bytes, 2 per bucket).
DEFAULT_TABLE_BYTES = 64 << 20


class Solver:
    """Exact solver of Connect Four positions of one board size, with a persistent table."""

    def __init__(
        self,
        width: int = 7,
        height: int = 6,
        table_bytes: int = DEFAULT_TABLE_BYTES,
        cache: PositionCache | None = None,
        book: PositionCache | None = None,
        databases: Sequence[StoneDatabase] = (),
    ) -> None:
        # Raises ValueError naming the size if the core cannot play it.
        self._core = Core(width, height, table_bytes)
        self.width = width
        self.height = height
        #: ``"WxH"``, as :attr:`Connect4.variant` spells it (compared on every call).
        self.variant = f"{width}x{height}"
        self.cache = cache
        self.book = book
        if isinstance(book, OpeningBook) and book.variant == self.variant:
            # The core keeps the book's arrays alive and asks them inside the search.
            self._core.add_known(*book.columns())
        #: Threads an analysis of every column may settle its columns in (sharing the
        #: table; engine/solver/csrc/columns.h); 1: one column after another, in this thread.
        self.threads = 1
        self.databases = tuple(d for d in databases if d.variant == self.variant)
        for database in self.databases:
            # Asked at every node with its stone count, after the book, before the table.
            self._core.add_database(database.stones, database.values)

    def interrupt(self) -> None:
        """End the solve in progress now (safe from another thread): its compiled search
        returns within a few thousand nodes (well under a millisecond), and the solve
        reports the bounds proven so far. The next solve starts with its own deadline."""
        self._core.interrupt()

    @property
    def table_bytes(self) -> int:
        return self._core.table_bytes

    def reset(self) -> None:
        """Forget everything the table holds."""
        self._core.reset()

    def warm_up(self) -> None:
        """Fault the whole table in now, for a solver that will serve many solves.

        The core is compiled ahead of time, so nothing is loaded or compiled at a first
        solve. The table is mapped with huge pages where the kernel allows and, left alone,
        its pages fault in as the search first writes them: a process holds only the table
        it used (``plybot solve`` of one position: about 30 MB), but each of the first
        searches pays a few 2 MB pages zeroed, 25-55 ms over the first few analyses of a
        64 MB table. After this call the process holds the whole table (the 7x6 one: 80
        MB with its near-end region) and no search pays for it. What the table holds is
        unchanged."""
        self._core.populate()

    def known(self, positions: Sequence[Connect4]) -> list[int | None]:
        """Each position's exact score, else ``None``: the solver's lookup ladder, no search.

        The ladder, in order: the book and the database (the compiled core's known
        tiers, the same the search asks at every node), then the shared cache,
        asked only for the rest in one ``get_many`` (a malformed or impossible
        entry is ``None``: :func:`engine.known.read`).
        """
        scores: list[int | None] = []
        rest: list[int] = []
        for i, q in enumerate(positions):
            found = (
                self._core.known(q.current, q.mask, q.ply) if q.variant == self.variant else None
            )
            scores.append(None if found is None else found[0])
            if found is None:
                rest.append(i)
        records = known_.read(self.cache, [positions[i] for i in rest])
        for i, record in zip(rest, records, strict=True):
            if record is not None and record.exact:
                scores[i] = record.lower
        return scores

    def settles(self, position: Connect4, all_moves: bool) -> bool:
        """Whether this solver answers ``position`` exactly at once, before the shared cache
        and without a search: the root (``all_moves``: every playable column) settled by the
        rules, the book, the database (up to two plies down) or the table. Then the cache is
        not read (a round trip slower than the answer). Precondition: ``position`` is
        ongoing and of this solver's size."""
        if not all_moves:
            lo, hi, best = self._core.init(position.current, position.mask, position.ply)
            return lo == hi and best >= 0
        settled = self._core.settled(position.current, position.mask, position.ply)
        return len(settled) == len(position.legal_moves())

    def lookup(
        self, position: Connect4, *, all_moves: bool, start: float | None = None
    ) -> Analysis | None:
        """The exact answer of the lookup ladder alone, or ``None`` where it takes a search.

        Answers where :meth:`settles` (a solve also where every column settles: up to
        three plies before the database), the shared cache not asked; its line runs as far
        as the book, the databases and the table name the moves (to 13 or 14 stones from
        a position before the databases), since no node is searched. For a caller that must
        not search: the service answering at submission. Precondition: ``position`` is
        ongoing and of this solver's size.
        """
        if self.settles(position, all_moves):
            answer = self.analyze if all_moves else self.solve
            return answer(position, node_limit=0, start=start)
        if not all_moves and self.settles(position, True):
            # Three plies above the database: the root is not read, but its columns are.
            analysis = self.analyze(position, node_limit=0, start=start)
            return replace(analysis, moves=None, bounds=None)
        return None

    # -- single positions ---------------------------------------------------------

    def solve(
        self,
        position: Connect4,
        *,
        weak: bool = False,
        deadline: float | None = None,
        node_limit: int | None = None,
        pv: bool = True,
        known: Neighbourhood | None = None,
        start: float | None = None,
    ) -> Analysis:
        """The exact score of ``position`` (or its sign if ``weak``), a best move and a PV.

        ``exact`` with ``depth`` the plies left to the end of the game.
        ``deadline`` is absolute, on ``time.monotonic()``; it is never overrun
        by more than a fraction of a millisecond. On expiry (or after
        ``node_limit`` nodes, or :meth:`interrupt`) the answer is not
        ``exact``: ``lower`` and ``upper`` are the bounds proven so far and
        ``score`` is ``lower`` (:class:`engine.answer.Analysis` says the rest).
        With ``pv=False`` the line is only the best move (the principal
        variation's searches are skipped). ``start``: the ``time.monotonic()``
        that ``time_ms`` counts from (default: this call). Raises
        ``GameOverError`` for a finished position.
        """
        return self._last(
            self.iter_solve(
                position,
                weak=weak,
                deadline=deadline,
                node_limit=node_limit,
                pv=pv,
                known=known,
                start=start,
            )
        )

    def analyze(
        self,
        position: Connect4,
        *,
        weak: bool = False,
        deadline: float | None = None,
        node_limit: int | None = None,
        pv: bool = True,
        known: Neighbourhood | None = None,
        start: float | None = None,
    ) -> Analysis:
        """Like :meth:`solve`, with ``moves``: every playable column's exact score (or sign),
        and ``bounds``: each column's ``(score, score)``. Where a limit came first, each
        column's proven ``(lower, upper)`` in ``bounds``, its lower bound in ``moves``.
        With ``pv=False`` the line is only the best move."""
        begun = self._begin(position, weak, deadline, node_limit, pv, True, known, start)
        if isinstance(begun, Analysis):
            return begun
        run, columns = begun
        if columns is not None:
            # Every column read, none searched: the answer, without iter_solve's step (a
            # quarter of the time of a ply-11 analysis, where every column is a lookup).
            return run.answer(position.legal_moves(), columns)
        return self._last(run.analyze())

    def iter_solve(
        self,
        position: Connect4,
        *,
        weak: bool = False,
        deadline: float | None = None,
        analyze: bool = False,
        node_limit: int | None = None,
        pv: bool = True,
        known: Neighbourhood | None = None,
        start: float | None = None,
    ) -> Iterator[Progress | Analysis]:
        """Yield a :class:`~engine.answer.Progress` after each null-window search (and, with
        ``analyze``, after each column settled), then the answer, an
        :class:`~engine.answer.Analysis` (:meth:`solve`'s, or with ``analyze``
        :meth:`analyze`'s).

        ``known``: ``position``'s neighbourhood as already read from this solver's
        cache (:func:`engine.known.neighbourhood`), so it is not read twice.
        ``start``: the ``time.monotonic()`` every ``time_ms`` counts from
        (default: this call).

        The lookup ladder: the core's known tiers (the book, the database) answer the
        root at once (microseconds); then the shared cache's neighbourhood seeds the
        table; then the search, which asks the known tiers and the table at every node.
        """
        begun = self._begin(position, weak, deadline, node_limit, pv, analyze, known, start)
        if isinstance(begun, Analysis):
            yield begun
            return
        run, columns = begun
        if analyze:
            yield from run.analyze(columns)
        else:
            yield from run.solve()

    def _begin(
        self,
        position: Connect4,
        weak: bool,
        deadline: float | None,
        node_limit: int | None,
        pv: bool,
        analyze: bool,
        known: Neighbourhood | None,
        start: float | None,
    ) -> Analysis | tuple[Run, dict[int, int] | None]:
        """The lookup ladder before any search: the answer if it answers, else the run to
        search with and, for an analysis whose every column is settled already, their values
        (:meth:`Run.known_columns`; else ``None``)."""
        self._check(position)
        require_ongoing(position)
        run = Run(
            self, position, weak, deadline, node_limit, time.monotonic() if start is None else start
        )
        run.want_pv = pv
        found = self._core.known(position.current, position.mask, position.ply)
        if found is not None:
            run.root_known = (found[0], found[0], found[1])
            if not analyze and found[1] >= 0:
                hit = cache_io.answer(run, found[0], found[0], found[1])
                if hit is not None:
                    return hit
        # Every column known already: nothing to read (the answer is still written, so that
        # the service answers it again from the cache before queueing it), and the columns
        # read here are the analysis's own (no cache seeds came in between).
        columns = run.known_columns() if analyze and not weak else None
        if columns is None or len(columns) < len(position.legal_moves()):
            hit = cache_io.read(run, analyze, known)  # nothing to read without a cache
            if hit is not None:
                return hit
            columns = None
        return run, columns

    # -- many positions in one compiled call --------------------------------------

    def solve_batch(
        self, notations: Sequence[str], weak: bool = False, analyze: bool = False
    ) -> list[Analysis]:
        """Solve every notation in one compiled call (fast for many small positions).

        Raises the error of the first bad notation (``Connect4.parse``'s
        message, or ``GameOverError``) before solving any. Each answer is
        exact (:meth:`Batch.result`): ``pv=[best_move]``, ``time_ms`` its time
        inside the compiled loop, ``moves`` and ``bounds`` with ``analyze``;
        the external cache is not used.
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
        With ``strict``, nothing is solved if any notation is bad. :meth:`interrupt` ends
        it as a deadline would: the position in hand and those after it are ``ABORTED``.
        """
        self._core.deadline = math.inf if deadline is None else deadline
        # The core's columns, in Batch's field order: status, score, lower, upper, best,
        # nodes, seconds, columns.
        columns = self._core.batch(list(notations), weak, analyze, strict, NO_LIMIT)
        return Batch(notations, self.variant, self.width * self.height, *columns)

    # -- helpers ------------------------------------------------------------------

    def _check(self, position: Connect4) -> None:
        # The type itself, not the capability: the compiled core reads Connect4's bitboards.
        if not isinstance(position, Connect4) or position.variant != self.variant:
            raise NotationError(
                f"'{getattr(position, 'variant', type(position).__name__)}': "
                f"this solver plays Connect Four {self.variant}"
            )

    @staticmethod
    def _last(items: Iterator[Progress | Analysis]) -> Analysis:
        *_, last = items
        assert isinstance(last, Analysis)
        return last

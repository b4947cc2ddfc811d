"""The process's exact solvers: one per board size, kept warm, their tables within one budget.

A solver's transposition table is worth keeping from one solve to the next
(every solve starts from what earlier ones proved), so a process keeps its
solvers in one :class:`SolverPool`, :data:`solvers`. The analysis, the levels
and the CLI take theirs from it; a worker configures it (:meth:`SolverPool.configure`:
its memory budget for tables, the table a board gets) and uses the same pool.
Making a solver maps and touches its table (tens of milliseconds for 64 MB), so a
time budget asks :meth:`SolverPool.warm`, which never makes one.

Each solver reads the shipped opening book (:func:`engine.book.shipped_book`)
before its ``cache``; the cache is fixed at construction, so asking with another
cache object replaces the board size's solver. Not thread-safe: the pool is
used from one thread per process (a worker runs one job at a time).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

from engine.cache import PositionCache

if TYPE_CHECKING:
    from engine.solver import Solver

#: The table a board size gets when nobody said otherwise: 64 MB (the solver's default).
DEFAULT_TABLE_BYTES = 64 << 20
#: The smallest table a solver gets, however tight the budget.
MIN_TABLE_BYTES = 1 << 16
#: The largest table of a board other than 7x6 (which has the book, the database and the
#: configured table): a worker asked about many sizes grows by at most this (and its near-end
#: region, a quarter of it) for each, however long it serves them. Measured on 5x5 to 8x6,
#: 2 MB searches at most 6% more nodes than 4 MB, and no more time (the table stays in cache).
OTHER_BOARD_TABLE_BYTES = 2 << 20
#: Such a table with its near-end region (a quarter of it): the largest the pool keeps from job
#: to job; a larger one (a board of 58 key bits or more) is dropped after each (:meth:`release`).
OTHER_BOARD_KEPT_BYTES = OTHER_BOARD_TABLE_BYTES + OTHER_BOARD_TABLE_BYTES // 4


class SolverPool:
    """Solvers by board size, least recently used first, their tables within ``budget_bytes``."""

    def __init__(
        self, table_bytes: int = DEFAULT_TABLE_BYTES, budget_bytes: int | None = None
    ) -> None:
        self._solvers: OrderedDict[tuple[int, int], Solver] = OrderedDict()
        self.table_bytes_each = table_bytes
        self.budget_bytes = budget_bytes
        self.database = True

    def configure(
        self, *, table_bytes: int, budget_bytes: int | None, database: bool = True
    ) -> None:
        """Set the table a board size gets, the budget of all tables (``None``: unbounded) and
        whether solvers read the shipped database (else the book alone).

        Solvers already made keep their tables and what they read; these apply when one is made.
        """
        self.table_bytes_each = table_bytes
        self.budget_bytes = budget_bytes
        self.database = database

    def table_bytes_for(self, width: int, height: int) -> int:
        """The table a board size gets: the configured size for 7x6, at most
        :data:`OTHER_BOARD_TABLE_BYTES` for another, less for a small board.

        A board of ``c`` cells has fewer than ``2**c`` positions worth keeping apart;
        16 bytes per 2-slot bucket make ``2**(c + 4)`` bytes plenty. Never more than
        the whole budget less the solver's fixed near-end region.
        """
        from engine.solver._core import NEAR_END_BYTES

        wanted = min(self.table_bytes_each, 1 << (width * height + 4))
        if (width, height) != (7, 6):
            wanted = min(wanted, OTHER_BOARD_TABLE_BYTES)
        if self.budget_bytes is not None:
            wanted = min(wanted, self.budget_bytes - NEAR_END_BYTES)
        return max(MIN_TABLE_BYTES, wanted)

    def solver(
        self, width: int, height: int, cache: PositionCache | None, *, any_cache: bool = False
    ) -> Solver:
        """The solver of this board size made with ``cache`` (any cache if ``any_cache``).

        Made if there is none, and warmed up (:meth:`Solver.warm_up`: its table faulted in)
        if the pool keeps it from job to job; solvers of
        other sizes are dropped, least recently used first, until its table fits
        in the budget with theirs.
        """
        found = self.warm(width, height, cache, any_cache=any_cache)
        if found is not None:
            return found
        from engine.book import shipped_book
        from engine.database import shipped_databases
        from engine.solver import Solver
        from engine.solver._core import NEAR_END_BYTES

        size = (width, height)
        self._solvers.pop(size, None)
        wanted = self.table_bytes_for(width, height)
        if self.budget_bytes is not None:
            while (
                self._solvers and self.table_bytes() + wanted + NEAR_END_BYTES > self.budget_bytes
            ):
                self._solvers.popitem(last=False)  # its table is unmapped once it is dropped
        book = shipped_book(width, height)
        databases = shipped_databases(width, height) if self.database else ()
        solver = Solver(
            width, height, table_bytes=wanted, cache=cache, book=book, databases=databases
        )
        if self._kept(size, solver):  # a table dropped after each job faults in as written
            solver.warm_up()
        self._solvers[size] = solver
        return solver

    @staticmethod
    def _kept(size: tuple[int, int], solver: Solver) -> bool:
        """Whether ``solver`` is kept from job to job (:meth:`release` drops the others)."""
        return size == (7, 6) or solver.table_bytes <= OTHER_BOARD_KEPT_BYTES

    def warm(
        self, width: int, height: int, cache: PositionCache | None, *, any_cache: bool = False
    ) -> Solver | None:
        """The solver of this board size if it is loaded (with ``cache``), else ``None``."""
        solver = self._solvers.get((width, height))
        if solver is None or not (any_cache or solver.cache is cache):
            return None
        self._solvers.move_to_end((width, height))
        return solver

    def release(self) -> None:
        """Drop the solvers of boards other than 7x6 whose tables outgrew
        :data:`OTHER_BOARD_TABLE_BYTES` and its near-end region: boards of 58 key bits or
        more (8x7, 9x6, 6x9, tall boards), whose exact keys need at least ``2**(bits - 42)``
        buckets in each region (``table.h``), 128 MB for 8x7. Their tables are unmapped;
        the next solve of such a size makes its solver again (its table is faulted in as it
        is written)."""
        for size, solver in list(self._solvers.items()):
            if not self._kept(size, solver):
                del self._solvers[size]

    def table_bytes(self) -> int:
        """Bytes of the pool's tables."""
        return sum(solver.table_bytes for solver in self._solvers.values())

    def interrupt(self) -> None:
        """End the solve in progress now, whichever solver runs it (safe from another thread)."""
        for solver in list(self._solvers.values()):
            solver.interrupt()

    def reset(self) -> None:
        """Forget what every table proved."""
        for solver in self._solvers.values():
            solver.reset()


#: The process's pool.
solvers = SolverPool()

#: The process's lookup solvers (:func:`lookup_solver`), by board size and database.
_lookup_solvers: dict[tuple[int, int, bool], Solver] = {}


def lookup_solver(width: int, height: int, *, database: bool = True) -> Solver | None:
    """The process's solver for answers of the lookup ladder alone (:meth:`Solver.lookup`),
    or ``None`` for a board with no shipped book (nothing to look up).

    It reads the shipped book and, with ``database``, the shipped databases (mapped:
    one copy on a machine, whichever processes read it), has the smallest table and no
    cache, and is never asked to search: for a process that answers what is known and
    queues the rest (the service's API). Made at the first call for a size (milliseconds).
    Not thread-safe, like any solver: one caller at a time.
    """
    from engine.book import shipped_book

    book = shipped_book(width, height)
    if book is None:
        return None
    key = (width, height, database)
    found = _lookup_solvers.get(key)
    if found is None:
        from engine.database import shipped_databases
        from engine.solver import Solver

        found = Solver(
            width,
            height,
            table_bytes=MIN_TABLE_BYTES,
            book=book,
            databases=shipped_databases(width, height) if database else (),
        )
        _lookup_solvers[key] = found
    return found


def default_solver(width: int, height: int, cache: PositionCache | None = None) -> Solver:
    """The process's solver for this board size, made with ``cache`` (any if ``None``).

    The first call for a board size makes its solver (maps its table and reads
    the shipped book: tens of milliseconds; a worker does it at start).
    """
    return solvers.solver(width, height, cache, any_cache=cache is None)


def warm_solver(width: int, height: int, cache: PositionCache | None = None) -> Solver | None:
    """The process's solver if it is already loaded (with this cache, or any if ``None``).

    For time-boxed work that may do without it: loading must never eat a time budget.
    """
    return solvers.warm(width, height, cache, any_cache=cache is None)

"""``engine.pool``: the process's solvers, one per board size, their tables within a budget."""

from __future__ import annotations

import os

import pytest

from engine.cache import MemoryCache
from engine.connect4 import Connect4
from engine.database import shipped_databases
from engine.pool import MIN_TABLE_BYTES, OTHER_BOARD_TABLE_BYTES, SolverPool
from engine.solver import Solver
from engine.solver._core import NEAR_END_BYTES


def test_a_small_board_gets_a_small_table_and_the_budget_caps_all() -> None:
    pool = SolverPool(table_bytes=64 << 20)
    assert pool.table_bytes_for(7, 6) == 64 << 20
    assert pool.table_bytes_for(4, 4) == 1 << (16 + 4)
    assert pool.table_bytes_for(6, 5) == OTHER_BOARD_TABLE_BYTES  # not 7x6: a small table
    assert pool.table_bytes_for(8, 7) == OTHER_BOARD_TABLE_BYTES
    pool.configure(table_bytes=64 << 20, budget_bytes=8 << 20)
    assert pool.table_bytes_for(7, 6) == (8 << 20) - NEAR_END_BYTES
    pool.configure(table_bytes=1, budget_bytes=None)
    assert pool.table_bytes_for(7, 6) == MIN_TABLE_BYTES


def test_solvers_are_kept_by_size_and_cache_and_dropped_least_recent_first() -> None:
    pool = SolverPool(table_bytes=1 << 20, budget_bytes=(2 << 20) + 2 * NEAR_END_BYTES)
    cache = MemoryCache()
    a = pool.solver(5, 4, cache)
    assert pool.solver(5, 4, cache) is a
    assert pool.warm(5, 4, cache) is a
    assert pool.warm(5, 4, None) is None
    assert pool.warm(5, 4, None, any_cache=True) is a
    b = pool.solver(6, 5, cache)
    assert pool.warm(5, 4, cache) is a  # both fit: a is now the most recent
    pool.solver(7, 6, cache)  # no room for three: the least recently used (b) goes
    assert pool.warm(6, 5, cache) is None
    assert pool.warm(5, 4, cache) is a
    assert b is not None
    assert pool.table_bytes() <= (2 << 20) + 2 * NEAR_END_BYTES
    other = pool.solver(5, 4, MemoryCache())  # another cache: a new solver for the size
    assert other is not a
    assert other.cache is not cache


def test_release_drops_only_the_tables_that_keys_made_large() -> None:
    """8x7's 64-bit keys need 2**22 buckets in each region (table.h: 42 check bits), far
    more than another board's table: released after each job; 5x4's and 7x6's are kept."""
    pool = SolverPool(table_bytes=1 << 20)
    small = pool.solver(5, 4, None)
    wide = pool.solver(8, 7, None)
    assert small.table_bytes <= OTHER_BOARD_TABLE_BYTES * 5 // 4
    assert wide.table_bytes == 128 << 20  # mapped; resident only as the search writes it
    main = pool.solver(7, 6, None)
    pool.release()
    assert pool.warm(8, 7, None) is None
    assert pool.warm(5, 4, None) is small
    assert pool.warm(7, 6, None) is main
    assert pool.solver(8, 7, None).table_bytes == 128 << 20  # made again when asked again


def _resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads /proc (Linux)")
def test_warm_up_faults_the_whole_table_in_and_keeps_what_it_holds() -> None:
    """A worker's solver pays its table's page faults once, at warm-up, not in its first
    searches; what the table held is still there."""
    solver = Solver(table_bytes=32 << 20)
    p = Connect4.parse("4453")
    key, empty = p.current + p.mask, p.width * p.height - p.ply
    solver._core.put(key, empty, -3, -1, 2, 20)  # as the search stores a node
    entry = solver._core.get(key, empty)
    assert entry != 0
    before = _resident_bytes()
    solver.warm_up()
    assert _resident_bytes() - before > (32 << 20) * 9 // 10  # the pages the solve left out
    assert solver._core.get(key, empty) == entry


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads /proc (Linux)")
def test_the_pool_warms_the_tables_it_keeps_and_not_one_it_drops_after_each_job() -> None:
    pool = SolverPool(table_bytes=16 << 20)
    before = _resident_bytes()
    big = pool.solver(8, 7, None)  # 58 key bits: at least 128 MB, dropped after each job
    assert big.table_bytes >= 128 << 20
    assert _resident_bytes() - before < 16 << 20  # left to fault in as it is written
    pool.release()
    assert pool.warm(8, 7, None) is None
    before = _resident_bytes()
    pool.solver(7, 6, None)  # kept: its 16 MB table (and near-end region) faulted in now
    assert _resident_bytes() - before > 16 << 20


def test_the_pool_reads_the_database_unless_told_not_to() -> None:
    pool = SolverPool(table_bytes=1 << 20)
    assert pool.solver(7, 6, None).databases == shipped_databases(7, 6)
    pool = SolverPool(table_bytes=1 << 20)
    pool.configure(table_bytes=1 << 20, budget_bytes=None, database=False)
    solver = pool.solver(7, 6, None)
    assert solver.databases == ()
    assert solver.book is not None  # the book alone

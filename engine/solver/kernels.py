"""The compiled entry points of the solver, one set per board size, cached on disk.

``kernels(width, height)`` builds the entry points as closures over the
board's constants, so numba compiles one specialisation per board (every
shift and mask a constant; 7x6 is the one that has to be fast) and caches
each on disk (``cache=True``): a worker or the CLI loads them instead of
compiling again (compiling takes seconds; loading, milliseconds).

numba checks a cached closure against its own source file and the values it
closes over, not the files of the helpers inlined into it. So every entry
point closes over ``SOURCE_DIGEST``, a hash of all the solver's compiled
sources: any edit there compiles afresh instead of loading stale code.

Entry points (``table``/``layout`` from :func:`engine.solver.table.new_table`;
``limits`` = float64 ``[node_limit, deadline]``, read afresh at each check, so another
thread can end a search by moving the deadline; ``counters[0]`` = nodes, added to).
Each entry point releases the GIL (``nogil``): a process's other threads (a worker's
heartbeat) run while it searches:

* ``init(table, layout, cur, mask, ply) -> (lo, hi, best)``
* ``step(table, layout, cur, mask, ply, lo, hi, best, weak, limits, counters)
  -> (lo, hi, best, aborted)``: one null-window question.
* ``batch(table, layout, buf, starts, ends, weak, analyze, strict, limits, out, seconds,
  columns) -> None``: parse and solve many positions in one call (with ``strict``,
  none if any is bad); ``out[i]`` holds ``STATUS, SCORE, LOWER, UPPER, BEST, NODES``.
* ``put(table, layout, key, empty, lower, upper, move, work)`` and
  ``get(table, layout, key, empty) -> entry`` (``empty``: the position's empty cells).
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from engine.solver.bitboard import Board
from engine.solver.intrinsics import monotonic
from engine.solver.negamax import workspace
from engine.solver.root import (
    ABORTED,
    OK,
    analyze_position,
    parse_moves,
    root_init,
    root_step,
    solve_position,
    weak_value,
)
from engine.solver.table import canonical, oriented, probe, store

_COMPILED_SOURCES = (
    "intrinsics.py",
    "bitboard.py",
    "table.py",
    "movesorter.py",
    "negamax.py",
    "root.py",
    "kernels.py",
)


def _digest() -> int:
    here = Path(__file__).parent
    h = hashlib.sha256()
    for name in _COMPILED_SOURCES:
        h.update((here / name).read_bytes())
    return int.from_bytes(h.digest()[:7], "little")


#: Part of every cached kernel's key: a change to any compiled source recompiles.
SOURCE_DIGEST = _digest()

# Columns of the int64 output of ``batch``, one row per position.
STATUS, SCORE, LOWER, UPPER, BEST, NODES = range(6)
OUT_FIELDS = 6


class Kernels(NamedTuple):
    board: Board
    init: Any
    step: Any
    batch: Any
    put: Any
    get: Any


@functools.cache
def kernels(width: int, height: int) -> Kernels:
    """The compiled entry points for a ``width`` x ``height`` board (compiled or loaded once)."""
    b = Board(width, height)
    b.validate()
    digest = SOURCE_DIGEST
    W = b.width
    H1 = np.uint64(b.h1)
    BOTTOM = np.uint64(b.bottom)
    BOARD = np.uint64(b.board)
    CELLS = b.cells
    MAXS = b.max_stones
    KMASK = np.uint64((1 << b.key_bits) - 1)
    ORDER = np.array(b.order, dtype=np.int64)
    COLMASK = np.array([b.column_mask(c) for c in range(W)], dtype=np.uint64)

    @njit(cache=True, nogil=True)
    def init(table, layout, cur, mask, ply):
        _ = digest
        geo = (W, H1, BOTTOM, BOARD, CELLS, MAXS, KMASK, ORDER, COLMASK)
        return root_init(geo, table, layout, cur, mask, ply)

    @njit(cache=True, nogil=True)
    def step(table, layout, cur, mask, ply, lo, hi, best, weak, limits, counters):
        _ = digest
        geo = (W, H1, BOTTOM, BOARD, CELLS, MAXS, KMASK, ORDER, COLMASK)
        ws = workspace(W, CELLS)
        return root_step(
            geo, table, layout, ws, cur, mask, ply, lo, hi, best, weak, limits, counters
        )

    @njit(cache=True, nogil=True)
    def batch(
        table, layout, buf, starts, ends, weak, analyze, strict, limits, out, seconds, columns
    ):
        _ = digest
        geo = (W, H1, BOTTOM, BOARD, CELLS, MAXS, KMASK, ORDER, COLMASK)
        ws = workspace(W, CELLS)
        counters = np.zeros(1, dtype=np.int64)
        aborted = False
        bad = False
        for p in range(starts.shape[0]):
            status = parse_moves(geo, buf, starts[p], ends[p])[3]
            out[p, STATUS] = status
            bad = bad or status != OK
        if strict and bad:
            return
        for p in range(starts.shape[0]):
            cur, mask, ply, status = parse_moves(geo, buf, starts[p], ends[p])
            if status != OK:
                continue
            if aborted:
                out[p, STATUS] = ABORTED
                continue
            start_nodes = counters[0]
            t0 = monotonic()
            if analyze:
                best, aborted = analyze_position(
                    geo, table, layout, ws, cur, mask, ply, weak, limits, counters, columns[p]
                )
                lo = np.int64(-99)
                for c in range(W):
                    lo = max(lo, columns[p, c])
                hi = lo
            else:
                lo, hi, best, aborted = solve_position(
                    geo, table, layout, ws, cur, mask, ply, weak, limits, counters
                )
                if weak and not aborted:
                    lo = weak_value(lo, hi)
                    hi = lo
            seconds[p] = monotonic() - t0
            out[p, NODES] = counters[0] - start_nodes
            if aborted:
                out[p, STATUS] = ABORTED
                continue
            out[p, SCORE] = lo
            out[p, LOWER] = lo
            out[p, UPPER] = hi
            out[p, BEST] = best

    @njit(cache=True, nogil=True)
    def put(table, layout, key, empty, lower, upper, move, work):
        _ = digest
        filed, flipped = canonical(key, empty, layout, W, H1)
        move = oriented(move, flipped, W)
        store(table, filed, empty, lower, upper, move, work, layout, KMASK)

    @njit(cache=True, nogil=True)
    def get(table, layout, key, empty):
        _ = digest
        return probe(table, canonical(key, empty, layout, W, H1)[0], empty, layout, KMASK)

    return Kernels(b, init, step, batch, put, get)

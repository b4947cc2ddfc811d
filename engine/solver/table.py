"""The solver's transposition table: proven bounds of positions, in one uint64 per entry.

Invariant of every entry, for the position ``p`` it belongs to::

    lower <= s(p) <= upper      (s = the exact score, Pons' convention)

Bounds are facts about positions, not about a search (the solver has no depth
limit and no heuristic), so an entry never goes stale: the table survives from
one solve to the next, and a later solve of a related position starts from
everything proven before. Storing merges with what is there (the higher lower
bound, the lower upper bound), so both bounds of a position accumulate.

Entry layout (``0`` means empty; an occupied entry is never 0 because the
bound fields hold ``bound + 32`` and every score lies in ``[-29, 29]``)::

     63 .............. 22 21 .. 16 15 .. 10 9 .. 6 5 .. 0
    |  check             | upper+32| lower+32| move+1|work |

* ``work``: ``bit_length`` of the nodes the search spent below the position
  (how costly it was to learn): the replacement priority.
* ``move``: the column that proved ``lower`` (``-1`` if none is known).
* ``check``: the hashed key's bits that the index does not use, so a hit is
  exact: the key is ``h = key * ODD mod 2**K`` (a bijection of K-bit keys,
  ``K = W*(H+1)``); the top bits of ``h`` pick a bucket, the rest must fit the
  42-bit check field, so a table has at least ``2**(K-42)`` buckets.

Two regions, because a probe that misses the CPU caches costs more than a
node: positions with at most ``near_end_cells`` empty cells (the great
majority of nodes, each cheap to search again) live in a small region that
stays in the core's L2 cache; the others in the main region, whose buckets
the search prefetches for all children of a node at once. Both regions are
keyed exactly, so the split costs a few nodes, never a wrong answer.

Early in the game (more than ``mirror_cells`` empty cells) a position and
its mirror image share one entry: it is filed under the smaller of the two
keys, its move mirrored (later, mirror images hardly ever meet in a search,
and computing them would cost more than it saves).

Buckets are two slots side by side (one cache line). Replacement rule: a
position already in the bucket is updated in place (bounds merged, work =
max). A new position goes to slot 0 if its work is at least slot 0's, moving
slot 0's entry down to slot 1 (which it overwrites); otherwise it overwrites
slot 1. So slot 0 keeps the costliest knowledge and slot 1 the most recent.
"""

from __future__ import annotations

import ctypes
import mmap

import numpy as np
from numba import njit

from engine.solver.bitboard import mirror
from engine.solver.intrinsics import prefetch

#: An odd multiplier: ``key * ODD mod 2**K`` mixes every key bit into the top bits.
ODD = np.uint64(0x9E3779B97F4A7C15)
#: Added to a bound before it is stored, so that fields are never 0.
OFFSET = 32
CHECK_SHIFT = np.uint64(22)
CHECK_BITS = 42
_U1 = np.uint64(1)
_F6 = np.uint64(63)
_F4 = np.uint64(15)
_LOWER = np.uint64(10)
_UPPER = np.uint64(16)
_MOVE = np.uint64(6)


def bucket_bits(key_bits: int, table_bytes: int) -> int:
    """log2 of the number of 2-slot buckets (16 bytes each) for about ``table_bytes``.

    At least ``2**(key_bits - 42)`` (the check field's limit); at most
    ``2**(key_bits - 1)`` (a small board needs no more).
    """
    fit = max(1, table_bytes // 16).bit_length() - 1
    return max(min(fit, key_bits - 1), key_bits - CHECK_BITS, 1)


_HUGE = 2 << 20  # a huge page

#: Bytes of the near-end region (see the module doc): fits a core's L2 cache.
NEAR_END_BYTES = 1 << 20
#: Positions with at most this many empty cells go to the near-end region.
NEAR_END_CELLS = 18
#: Positions with more empty cells than this share an entry with their mirror image.
MIRROR_CELLS = 28


def new_table(
    key_bits: int,
    table_bytes: int,
    near_end_cells: int = NEAR_END_CELLS,
    mirror_cells: int = MIRROR_CELLS,
    etc_cells: int = NEAR_END_CELLS,
) -> tuple[np.ndarray, tuple[np.uint64, np.uint64, np.int64, np.int64, np.int64, np.int64]]:
    """A zeroed table for ``key_bits``-bit keys in about ``table_bytes``, and its layout.

    The layout is ``(main_shift, near_shift, near_base, near_end_cells, mirror_cells,
    etc_cells)``:
    a shift is ``key_bits - bucket_bits`` of its region (the hashed key's bits
    below the bucket index, which are the ones checked); the near-end region
    starts at slot ``near_base``. The memory is asked for in huge pages where
    the kernel allows it (random probes then miss the TLB far less often) and
    touched at once, so that no search pays for the page faults.
    """
    near_bytes = min(NEAR_END_BYTES, max(table_bytes // 4, 16))
    main_bits = bucket_bits(key_bits, table_bytes)
    near_bits = bucket_bits(key_bits, near_bytes)
    slots = (2 << main_bits) + (2 << near_bits)
    try:
        # 2 MB more than needed, so the table can start on a huge-page boundary.
        memory = mmap.mmap(-1, slots * 8 + _HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        if hasattr(mmap, "MADV_HUGEPAGE"):
            memory.madvise(mmap.MADV_HUGEPAGE)
        start = ctypes.addressof(ctypes.c_char.from_buffer(memory))
        table = np.frombuffer(memory, dtype=np.uint64, count=slots, offset=-start % _HUGE)
    except (OSError, ValueError, AttributeError):  # no anonymous mmap here: plain memory
        table = np.zeros(slots, dtype=np.uint64)
    table[::512] = 0
    layout = (
        np.uint64(key_bits - main_bits),
        np.uint64(key_bits - near_bits),
        np.int64(2 << main_bits),
        np.int64(near_end_cells),
        np.int64(mirror_cells),
        np.int64(etc_cells),
    )
    return table, layout


@njit
def _slot(key, empty, layout, kmask):
    h = (key * ODD) & kmask
    if empty <= layout[3]:
        shift = layout[1]
        base = layout[2]
    else:
        shift = layout[0]
        base = np.int64(0)
    return base + np.int64(h >> shift) * 2, h & ((_U1 << shift) - _U1)


@njit
def canonical(key, empty, layout, width, h1):
    """The key a position's entry is filed under, and whether that is its mirror image's.

    Callers mirror the entry's move when ``flipped`` (see :func:`oriented`).
    """
    if empty > layout[4]:
        image = mirror(key, width, h1)
        if image < key:
            return image, True
    return key, False


@njit
def oriented(move, flipped, width):
    """``move`` (or -1) seen from the other orientation when ``flipped``."""
    if flipped and move >= 0:
        return width - 1 - move
    return move


@njit(inline="always")  # on the search's hot path: never a call
def probe(table, key, empty, layout, kmask):
    """The entry filed under ``key`` (``empty`` empty cells), or 0."""
    i, check = _slot(key, empty, layout, kmask)
    e = table[i]
    if e != 0 and (e >> CHECK_SHIFT) == check:
        return e
    e = table[i + 1]
    if e != 0 and (e >> CHECK_SHIFT) == check:
        return e
    return np.uint64(0)


@njit
def lower_of(e):
    return np.int64((e >> _LOWER) & _F6) - OFFSET


@njit
def upper_of(e):
    return np.int64((e >> _UPPER) & _F6) - OFFSET


@njit
def move_of(e):
    return np.int64((e >> _MOVE) & _F4) - 1


@njit
def _pack(check, lower, upper, move, work):
    return (
        (check << CHECK_SHIFT)
        | (np.uint64(upper + OFFSET) << _UPPER)
        | (np.uint64(lower + OFFSET) << _LOWER)
        | (np.uint64(move + 1) << _MOVE)
        | work
    )


@njit(inline="always")  # on the search's hot path: never a call
def store(table, key, empty, lower, upper, move, work, layout, kmask):
    """Record ``lower <= s(key) <= upper``; ``move`` (or -1) proves ``lower``; see the module doc.

    ``work`` is at most 63. Bounds outside the position's range may be passed
    (e.g. an upper bound of +99 for "unknown") and are clamped to +-31.
    """
    lower = max(lower, -31)
    upper = min(upper, 31)
    w = np.uint64(work)
    i, check = _slot(key, empty, layout, kmask)
    e0 = table[i]
    e1 = table[i + 1]
    slot = -1
    old = np.uint64(0)
    if e0 != 0 and (e0 >> CHECK_SHIFT) == check:
        slot = i
        old = e0
    elif e1 != 0 and (e1 >> CHECK_SHIFT) == check:
        slot = i + 1
        old = e1
    if slot < 0:
        entry = _pack(check, lower, upper, move, w)
        if w >= (e0 & _F6):
            table[i + 1] = e0
            table[i] = entry
        else:
            table[i + 1] = entry
        return
    old_lower = lower_of(old)
    old_move = move_of(old)
    if lower < old_lower or (lower == old_lower and move < 0):
        lower = old_lower
        move = old_move
    upper = min(upper, upper_of(old))
    table[slot] = _pack(check, lower, upper, move, max(w, old & _F6))


@njit
def prefetch_slot(table, key, empty, layout, kmask):
    """Start loading the bucket filed under ``key`` (a child searched soon) into the cache."""
    i, _ = _slot(key, empty, layout, kmask)
    prefetch(table, i)

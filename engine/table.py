"""The generic search's transposition table: a bounded map from positions to tiny records.

Each record is an :class:`Entry` ``(lower, upper, depth, move)`` about the
position from the side to move, in the search's *internal* score scale (see
``engine.search``). Invariant::

    lower <= s(pos) <= upper

where ``s`` is the value of a ``depth``-ply search of ``pos``; when ``depth``
is :data:`EXHAUSTIVE` no heuristic leaf took part, so the bounds hold for the
true game value and for a search of any depth. ``move`` is the best (or
refuting) move found, in the position's own orientation, or ``None``.

The table has a fixed (prime) number of slots; a position goes to slot
``hash(key) % size``. Replacement rule (one slot, one record): a new record
replaces the one in its slot when it is the same position, when the slot is
empty or was written by an earlier search (an older :attr:`generation`), or
when it is at least as deep. So deep results of the current search survive
shallow ones, and a new search reclaims the table without clearing it.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import NamedTuple

#: ``depth`` of a record whose bounds hold for the true game value.
EXHAUSTIVE = 1 << 20

#: Default number of slots (about 100 bytes each in CPython, so ~100 MB at most).
DEFAULT_SIZE = 1 << 20


def _prime_at_least(n: int) -> int:
    def is_prime(k: int) -> bool:
        if k < 2:
            return False
        i = 2
        while i * i <= k:
            if k % i == 0:
                return False
            i += 1
        return True

    while not is_prime(n):
        n += 1
    return n


class Entry(NamedTuple):
    """What a search learnt of one position: ``lower <= s(pos) <= upper`` at ``depth``."""

    lower: int
    upper: int
    depth: int
    move: int | None


class TranspositionTable:
    """A fixed-size table of :class:`Entry` records keyed by an exact position key.

    Keys must be exact (equal keys, equal positions): a slot also stores its
    key, so a lookup never returns another position's record.
    """

    __slots__ = (
        "_entries",
        "_generations",
        "_keys",
        "generation",
        "size",
        "stored",
        "visible_from",
    )

    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        if size < 1:
            raise ValueError(f"a transposition table needs at least one slot, not {size}")
        # A prime number of slots spreads structured keys (bitboards) over all slots.
        size = _prime_at_least(size)
        self.size = size
        self._keys: list[Hashable | None] = [None] * size
        self._entries: list[Entry | None] = [None] * size
        self._generations = [0] * size
        #: Bumped by :meth:`new_search`; older records are the first to go.
        self.generation = 0
        #: Number of occupied slots (forgotten records included).
        self.stored = 0
        #: Records of generations older than this are forgotten (see :meth:`forget`).
        self.visible_from = 0

    def new_search(self) -> None:
        """Mark the records so far as from an earlier search (still readable, first replaced)."""
        self.generation += 1

    def forget(self) -> None:
        """Start a new search that sees none of the records so far: the table then
        behaves exactly as a new one of its size (same reads, same replacements),
        without the cost of allocating one."""
        self.new_search()
        self.visible_from = self.generation

    def get(self, key: Hashable) -> Entry | None:
        """The record of ``key``, or ``None``."""
        slot = hash(key) % self.size
        if self._keys[slot] == key and self._generations[slot] >= self.visible_from:
            return self._entries[slot]
        return None

    def put(self, key: Hashable, entry: Entry) -> None:
        """Store ``entry`` for ``key`` under the replacement rule of the module docstring."""
        slot = hash(key) % self.size
        old_key = self._keys[slot]
        if old_key is None:
            self.stored += 1
        elif old_key != key and self._generations[slot] == self.generation:
            old = self._entries[slot]
            if old is not None and old.depth > entry.depth:
                return
        self._keys[slot] = key
        self._entries[slot] = entry
        self._generations[slot] = self.generation

    def clear(self) -> None:
        self._keys = [None] * self.size
        self._entries = [None] * self.size
        self._generations = [0] * self.size
        self.stored = 0
        self.generation = self.visible_from = 0

    def __len__(self) -> int:
        return self.stored

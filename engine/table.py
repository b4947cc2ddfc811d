"""The generic search's transposition table: a bounded map from positions to tiny records.

Each record is an :class:`Entry` ``(lower, upper, depth, move)`` about the
position from the side to move, in the search's *internal* score scale (see
``engine.search``). Invariant::

    lower <= s(pos) <= upper

where ``s`` is the value of a ``depth``-ply search of ``pos``; when ``depth``
is :data:`EXHAUSTIVE` no heuristic leaf took part, so the bounds hold for the
true game value and for a search of any depth. ``move`` is the best (or
refuting) move found, in the position's own orientation, or ``None``.

The table has a (prime) number of slots; a position goes to slot
``hash(key) % size``. Replacement rule (one slot, one record): a new record
replaces the one in its slot when it is the same position, when the slot is
empty or was written by an earlier search (an older :attr:`generation`), or
when it is at least as deep. So deep results of the current search survive
shallow ones, and a new search reclaims the table without clearing it.

A table made with ``initial`` slots grows as it fills (fourfold, whenever more
than half its slots are taken) up to its ``size``: it holds memory in proportion
to what was stored, not to the most it may store. A search that visits a few
thousand positions makes a table of a few thousand slots, and its memory goes
back when the search ends (48 bytes a slot: 12 MB for the search's 2**18).
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable
from typing import NamedTuple

#: ``depth`` of a record whose bounds hold for the true game value.
EXHAUSTIVE = 1 << 20

#: Default number of slots (48 bytes each).
DEFAULT_SIZE = 1 << 20
#: The generation of an empty slot.
_EMPTY = -1


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
    """A bounded table of :class:`Entry` records keyed by an exact position key.

    Keys must be exact (equal keys, equal positions): a slot also stores its
    key, so a lookup never returns another position's record. Records are kept
    unboxed, in machine-integer arrays (48 bytes a slot, no Python object per
    record), and so are keys while every key is an ``int`` in ``[0, 2**64)`` (the
    registered games' ``table_key()``); any other key turns the key column into a
    list. A long search so leaves nothing in Python's small-object arenas: none of
    them stays pinned, half empty, by an object made meanwhile once the search ends.
    """

    __slots__ = (
        "_depth",
        "_generations",
        "_initial",
        "_keys",
        "_lower",
        "_move",
        "_upper",
        "capacity",
        "generation",
        "size",
        "stored",
        "visible_from",
    )

    def __init__(self, size: int = DEFAULT_SIZE, *, initial: int | None = None) -> None:
        """A table of ``size`` slots (rounded up to a prime); with ``initial``, one that
        starts with about that many and grows to ``size`` as it fills."""
        if size < 1:
            raise ValueError(f"a transposition table needs at least one slot, not {size}")
        # A prime number of slots spreads structured keys (bitboards) over all slots.
        #: The most slots the table grows to.
        self.capacity = _prime_at_least(size)
        start = self.capacity if initial is None else _prime_at_least(max(1, initial))
        self._initial = min(start, self.capacity)
        self._allocate(self._initial)
        #: Bumped by :meth:`new_search`; older records are the first to go.
        self.generation = 0
        #: Number of occupied slots (forgotten records included).
        self.stored = 0
        #: Records of generations older than this are forgotten (see :meth:`forget`).
        self.visible_from = 0

    def _allocate(self, size: int) -> None:
        """``size`` empty slots (generation -1), integer keys."""
        #: The slots it has now.
        self.size = size
        self._keys: array[int] | list[Hashable] = array("Q", [0]) * size
        self._lower = array("q", [0]) * size
        self._upper = array("q", [0]) * size
        self._depth = array("q", [0]) * size
        self._move = array("q", [0]) * size  # -1: no move
        self._generations = array("q", [_EMPTY]) * size

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
        if self._generations[slot] >= self.visible_from and self._keys[slot] == key:
            move = self._move[slot]
            return Entry(
                self._lower[slot], self._upper[slot], self._depth[slot], None if move < 0 else move
            )
        return None

    def put(self, key: Hashable, entry: Entry) -> None:
        """Store ``entry`` for ``key`` under the replacement rule of the module docstring."""
        slot = hash(key) % self.size
        there = self._generations[slot]
        if there == _EMPTY:
            if self.size < self.capacity and (self.stored + 1) * 2 > self.size:
                self._grow()  # fourfold: the record then finds a table at most an eighth full
                self.put(key, entry)
                return
            self.stored += 1
        elif (
            there == self.generation and self._keys[slot] != key and self._depth[slot] > entry.depth
        ):
            return
        self._write(slot, key, entry.lower, entry.upper, entry.depth, entry.move)
        self._generations[slot] = self.generation

    def _write(
        self, slot: int, key: Hashable, lower: int, upper: int, depth: int, move: int | None
    ) -> None:
        try:
            self._keys[slot] = key  # type: ignore[call-overload]
        except (OverflowError, TypeError):  # not an int in [0, 2**64): keys as objects
            self._keys = list(self._keys)
            self._keys[slot] = key
        self._lower[slot] = lower
        self._upper[slot] = upper
        self._depth[slot] = depth
        self._move[slot] = -1 if move is None else move

    def _grow(self) -> None:
        """Fourfold the slots (at most :attr:`capacity`), the visible records moved over.

        Two records meeting in a new slot keep the rule's order: the newer search's,
        then the deeper.
        """
        keys, lower, upper, depth, move = (
            self._keys,
            self._lower,
            self._upper,
            self._depth,
            self._move,
        )
        generations = self._generations
        self._allocate(min(self.capacity, _prime_at_least(self.size * 4)))
        if isinstance(keys, list):
            self._keys = list(self._keys)
        size = self.size
        stored = 0
        visible_from = self.visible_from
        new_generations, new_depth = self._generations, self._depth
        for old, generation in enumerate(generations):
            if generation < visible_from:  # empty (-1) or forgotten
                continue
            key = keys[old]
            slot = hash(key) % size
            there = new_generations[slot]
            if there == _EMPTY:
                stored += 1
            elif there > generation or (there == generation and new_depth[slot] > depth[old]):
                continue
            self._write(slot, key, lower[old], upper[old], depth[old], move[old])
            new_generations[slot] = generation
        self.stored = stored

    def clear(self) -> None:
        """Forget every record; a growing table goes back to its initial slots."""
        self._allocate(self._initial)
        self.stored = 0
        self.generation = self.visible_from = 0

    def __len__(self) -> int:
        return self.stored

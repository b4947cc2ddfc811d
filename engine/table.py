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
back when the search ends (a full table of :data:`DEFAULT_SIZE` slots holds up
to about 50 MB of records).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import NamedTuple

#: ``depth`` of a record whose bounds hold for the true game value.
EXHAUSTIVE = 1 << 20

#: Default number of slots (up to about 200 bytes of records each in CPython).
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
    """A bounded table of :class:`Entry` records keyed by an exact position key.

    Keys must be exact (equal keys, equal positions): a slot also stores its
    key, so a lookup never returns another position's record.
    """

    __slots__ = (
        "_entries",
        "_generations",
        "_initial",
        "_keys",
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
        self._initial = size = min(start, self.capacity)
        #: The slots it has now.
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
            if self.size < self.capacity and (self.stored + 1) * 2 > self.size:
                self._grow()  # fourfold: the record then finds a table at most an eighth full
                self.put(key, entry)
                return
            self.stored += 1
        elif old_key != key and self._generations[slot] == self.generation:
            old = self._entries[slot]
            if old is not None and old.depth > entry.depth:
                return
        self._keys[slot] = key
        self._entries[slot] = entry
        self._generations[slot] = self.generation

    def _grow(self) -> None:
        """Fourfold the slots (at most :attr:`capacity`), the visible records moved over.

        Two records meeting in a new slot keep the rule's order: the newer search's,
        then the deeper.
        """
        keys, entries, generations = self._keys, self._entries, self._generations
        size = min(self.capacity, _prime_at_least(self.size * 4))
        new_keys: list[Hashable | None] = [None] * size
        new_entries: list[Entry | None] = [None] * size
        new_generations = [0] * size
        stored = 0
        visible_from = self.visible_from
        for key, entry, generation in zip(keys, entries, generations, strict=True):
            if key is None or entry is None or generation < visible_from:
                continue
            slot = hash(key) % size
            if new_keys[slot] is None:
                stored += 1
            else:
                there = new_generations[slot]
                old = new_entries[slot]
                if there > generation or (
                    there == generation and old is not None and old.depth > entry.depth
                ):
                    continue
            new_keys[slot] = key
            new_entries[slot] = entry
            new_generations[slot] = generation
        self._keys, self._entries, self._generations = new_keys, new_entries, new_generations
        self.size = size
        self.stored = stored

    def clear(self) -> None:
        """Forget every record; a growing table goes back to its initial slots."""
        self.size = self._initial
        self._keys = [None] * self.size
        self._entries = [None] * self.size
        self._generations = [0] * self.size
        self.stored = 0
        self.generation = self.visible_from = 0

    def __len__(self) -> int:
        return self.stored

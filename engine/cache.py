"""The seam for a second cache level shared between processes (the service puts Redis behind it).

The engine's own transposition tables are the first level and live in the
process. A :class:`PositionCache` is consulted near the root only: the solver
and the search read the root and its children in one batched call, and write
back results worth keeping when a search finishes. Implementations must never
make a search fail: on any trouble they answer "nothing known" and drop writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

#: ``depth`` of an entry whose bounds come from a complete (exact) solve.
EXACT_DEPTH = 255


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """What is known of a position, from the side to move.

    Invariant: ``lower <= s(pos) <= upper`` where ``s`` is the true score
    (for decided positions) when ``depth == EXACT_DEPTH``, and the value of a
    ``depth``-ply search otherwise. ``best_move`` is in the canonical
    orientation (see ``Game.to_canonical``), or ``None``.
    """

    lower: int
    upper: int
    depth: int
    best_move: int | None = None

    def __post_init__(self) -> None:
        if self.lower > self.upper:
            raise ValueError(f"cache entry with lower {self.lower} > upper {self.upper}")

    @property
    def exact(self) -> bool:
        """A solved position with its score pinned down."""
        return self.depth == EXACT_DEPTH and self.lower == self.upper


class PositionCache(Protocol):
    """A shared store of searched positions, keyed by game, variant and canonical key."""

    def get_many(self, game: str, variant: str, keys: Sequence[str]) -> list[CacheEntry | None]:
        """One entry (or ``None``) per key, in order, in one round trip."""
        ...

    def put_many(self, game: str, variant: str, items: Sequence[tuple[str, CacheEntry]]) -> None:
        """Store entries; a newer entry replaces an older one only if it is at least as deep."""
        ...


class MemoryCache:
    """A :class:`PositionCache` in a dict: for tests and single-process use."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str, str], CacheEntry] = {}
        self.reads = 0
        self.hits = 0

    def get_many(self, game: str, variant: str, keys: Sequence[str]) -> list[CacheEntry | None]:
        found = [self.entries.get((game, variant, k)) for k in keys]
        self.reads += len(keys)
        self.hits += sum(e is not None for e in found)
        return found

    def put_many(self, game: str, variant: str, items: Sequence[tuple[str, CacheEntry]]) -> None:
        for key, entry in items:
            old = self.entries.get((game, variant, key))
            if old is None or entry.depth >= old.depth:
                self.entries[(game, variant, key)] = entry

"""Bitboard kernels of the compiled solver (the layout of :mod:`engine.connect4`).

Same layout as the pure-Python position, drawn here once more for 7x6::

      .  .  .  .  .  .  .     <- sentinel row (bit H of each column, always 0)
      5 12 19 26 33 40 47
      4 11 18 25 32 39 46
      3 10 17 24 31 38 45
      2  9 16 23 30 37 44
      1  8 15 22 29 36 43
      0  7 14 21 28 35 42     <- bottom row

A position is ``(current, mask)``: the stones of the side to move and every
stone, as uint64. ``current + mask`` is an exact key below ``2**(W*(H+1))``.

The helpers take the board's constants as arguments; the kernels of
:mod:`engine.solver.kernels` pass compile-time constants and LLVM inlines the
helpers, folding the shifts and masks. They are not cached on their own:
only the kernels are (see ``kernels.SOURCE_DIGEST``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

U1 = np.uint64(1)


@dataclass(frozen=True)
class Board:
    """The constants of one board size, as the kernels want them."""

    width: int
    height: int

    @property
    def h1(self) -> int:
        return self.height + 1

    @property
    def key_bits(self) -> int:
        """Bits of the key ``current + mask``: ``W * (H + 1)`` (at most 64)."""
        return self.width * self.h1

    @property
    def cells(self) -> int:
        return self.width * self.height

    @property
    def max_stones(self) -> int:
        """Stones the first player has on a full board; scores are ``max_stones + 1 - stones``."""
        return (self.cells + 1) // 2

    @property
    def bottom(self) -> int:
        return sum(1 << (c * self.h1) for c in range(self.width))

    @property
    def board(self) -> int:
        return self.bottom * ((1 << self.height) - 1)

    def column_mask(self, column: int) -> int:
        return ((1 << self.height) - 1) << (column * self.h1)

    @property
    def order(self) -> list[int]:
        """Columns centre first (ties: left first), as :class:`engine.connect4.Geometry`."""
        centre = (self.width - 1) / 2
        return sorted(range(self.width), key=lambda c: (abs(c - centre), c))

    def validate(self) -> None:
        if not (1 <= self.width <= 9 and self.height >= 1 and self.key_bits <= 64):
            raise ValueError(
                f"'{self.width}x{self.height}': the solver needs 1 <= width <= 9, "
                "height >= 1 and (height + 1) * width <= 64"
            )


@njit
def winning_cells(stones, mask, h1, board):
    """Empty cells (playable or not) that would complete four for ``stones``.

    Pons' ``compute_winning_position``: vertical (three below), then for the
    horizontal and both diagonals every gap pattern (xxx_, xx_x, x_xx, _xxx).
    """
    r = (stones << U1) & (stones << np.uint64(2)) & (stones << np.uint64(3))
    for s in (h1, h1 - U1, h1 + U1):
        p = (stones << s) & (stones << (s + s))
        r |= p & (stones << (s + s + s))
        r |= p & (stones >> s)
        p = (stones >> s) & (stones >> (s + s))
        r |= p & (stones << s)
        r |= p & (stones >> (s + s + s))
    return r & (board ^ mask)


@njit
def possible(mask, bottom, board):
    """The lowest empty cell of every column that is not full."""
    return (mask + bottom) & board


@njit
def mirror(bits, width, h1):
    """``bits`` with the columns in reverse order (the board's only symmetry)."""
    column = (U1 << h1) - U1
    out = np.uint64(0)
    for c in range(width):
        here = np.uint64(c) * h1
        there = np.uint64(width - 1 - c) * h1
        out |= ((bits >> here) & column) << there
    return out


@njit
def alignment(stones, h1):
    """True if ``stones`` hold four in a row (vertical, horizontal or diagonal)."""
    pairs = stones & (stones >> U1)
    if pairs & (pairs >> np.uint64(2)):
        return True
    for s in (h1, h1 - U1, h1 + U1):
        pairs = stones & (stones >> s)
        if pairs & (pairs >> (s + s)):
            return True
    return False

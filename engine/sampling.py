"""Connect Four positions drawn uniformly from all distinct positions of a ply (benchmarks).

Random games do not sample positions uniformly: they favour positions reached
by many lines and positions near the centre. Here a position is drawn by
rejection, each distinct position (mirror images merged) equally likely:

1. every way to fill the columns with ``ply`` stones (a height per column) is
   equally likely, because each has the same number of colourings
   (``ply`` choose the first player's stones);
2. a uniform colouring of those cells;
3. rejected if either side has four in a row (a finished game), or if no line
   of play reaches it (gravity and turns);
4. a position that is not its own mirror image has two representatives, so it
   is kept with probability one half.

Reproducible: the same ``seed`` gives the same positions.
"""

from __future__ import annotations

import random
from functools import cache

from engine.connect4 import Connect4, Geometry
from engine.errors import NotationError


@cache
def _fillings(ply: int, width: int, height: int) -> tuple[tuple[int, ...], ...]:
    """Every height vector of ``width`` columns of at most ``height`` summing to ``ply``."""
    if width == 0:
        return ((),) if ply == 0 else ()
    out = []
    for h in range(min(height, ply) + 1):
        out += [(h, *rest) for rest in _fillings(ply - h, width - 1, height)]
    return tuple(out)


def uniform_positions(
    ply: int, count: int, seed: int = 1, width: int = 7, height: int = 6
) -> list[Connect4]:
    """``count`` ongoing positions after ``ply`` moves, each distinct position equally likely.

    Draws are independent (the same position may come twice). Precondition:
    ``0 <= ply < width * height``.
    """
    if not 0 <= ply < width * height:
        raise ValueError(f"'{ply}': a ply in 0..{width * height - 1}")
    rng = random.Random(f"{seed}:{ply}:{width}x{height}")
    g = Geometry.of(width, height)
    fillings = _fillings(ply, width, height)
    out: list[Connect4] = []
    while len(out) < count:
        heights = rng.choice(fillings)
        cells = [c * g.h1 + r for c in range(width) for r in range(heights[c])]
        first = sum(1 << cell for cell in rng.sample(cells, (ply + 1) // 2))
        mask = sum(1 << cell for cell in cells)
        second = mask ^ first
        if g.alignment(first) or g.alignment(second):
            continue
        current = first if ply % 2 == 0 else second  # the side to move's stones
        key = current + mask
        mirrored = g.mirror(key)
        if mirrored != key and rng.random() < 0.5:
            continue
        try:
            out.append(Connect4.from_key(key, width, height))
        except NotationError:
            continue  # no line of play reaches it
    return out

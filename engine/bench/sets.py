"""Pascal Pons' Connect Four benchmark sets: finding them and reading them.

The sets are shared, not part of the project: ``PLYBOT_BENCHMARKS`` names
their folder, else ``../shared/benchmarks/connect4`` beside the repository.
Each line is ``<moves> <score>`` (see the folder's README): moves are 1-based
columns from the empty 7x6 board, the score is for the side to move.
"""

from __future__ import annotations

import os
from pathlib import Path

from engine.errors import PlybotError

#: The six sets, easy to hard.
SETS = ("Test_L3_R1", "Test_L2_R1", "Test_L2_R2", "Test_L1_R1", "Test_L1_R2", "Test_L1_R3")


class BenchmarkError(PlybotError):
    """A benchmark set that cannot be found or read."""


def find_benchmarks() -> Path | None:
    """The sets' folder: ``PLYBOT_BENCHMARKS``, else ``../shared/benchmarks/connect4``; or None."""
    override = os.environ.get("PLYBOT_BENCHMARKS")
    if override:
        candidates = [Path(override)]
    else:
        root = Path(__file__).resolve().parents[2]
        candidates = [root.parent / "shared" / "benchmarks" / "connect4"]
    for folder in candidates:
        if folder.is_dir() and any((folder / name).is_file() for name in SETS):
            return folder
    return None


def set_name(text: str) -> str:
    """``"L2_R1"`` or ``"test_l2_r1"`` -> ``"Test_L2_R1"``; ``BenchmarkError`` if unknown."""
    wanted = text.lower().removeprefix("test_").replace("_", "")
    for name in SETS:
        if name.lower().removeprefix("test_").replace("_", "") == wanted:
            return name
    raise BenchmarkError(f"'{text}': unknown benchmark set (known: {', '.join(SETS)})")


def require_benchmarks() -> Path:
    """The sets' folder (:func:`find_benchmarks`); ``BenchmarkError`` saying where to put it."""
    folder = find_benchmarks()
    if folder is None:
        raise BenchmarkError(
            "Pons' benchmark sets not found: set PLYBOT_BENCHMARKS or put "
            "../shared/benchmarks/connect4 beside the checkout"
        )
    return folder


def load_set(name: str, limit: int | None = None) -> list[tuple[str, int]]:
    """The first ``limit`` (default: all) ``(moves, score)`` lines of set ``name``."""
    name = set_name(name)
    path = require_benchmarks() / name
    items: list[tuple[str, int]] = []
    with path.open(encoding="ascii") as lines:
        for number, line in enumerate(lines, 1):
            if limit is not None and len(items) >= limit:
                break
            fields = line.split()
            if not fields:
                continue
            try:
                moves, score = fields[0], int(fields[1])
            except (IndexError, ValueError):
                raise BenchmarkError(f"{path}:{number}: expected '<moves> <score>'") from None
            items.append((moves, score))
    return items

"""A warm worker's resident memory, and what each further board size asked about adds to it.

    plybot bench --memory [BOARD ...] [--move-ms MS]

Runs in a fresh process, as a worker serves (:mod:`worker.process.jobs`): the engine
warmed up (:func:`engine.analysis.warm_up`: the 7x6 solver and its table made), then for
each BOARD (``WxH`` for Connect Four, or a game's name, e.g. ``tictactoe``) an exact
analysis of every column of its empty board (up to :data:`ANALYSIS_SECONDS`, the solver
then the generic search) and a bot move at every level (``--move-ms`` each), each followed
by :func:`engine.memory.release` as a worker's job is. Prints the resident memory
(``VmRSS``) warm, then after each board its growth and the process's peak so far.
Resident memory is the kernel's count, not a time: the figures do not depend on the
machine's speed (the 7x6 table's pages, and so the warm figure, on what the warm-up wrote).
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time

from engine.game import Game, new_game
from engine.memory import peak_rss_bytes, release, rss_bytes

#: The boards measured when none is named: the smallest, the common, the largest ones.
DEFAULT_BOARDS = ("4x4", "5x4", "6x5", "8x7", "9x6", "tictactoe")
#: How long an analysis of every column may take (a worker's default is 60 s; the memory a
#: longer one holds is bounded the same: its tables have a most).
ANALYSIS_SECONDS = 10.0


def _mb(n: int) -> str:
    return f"{n / (1 << 20):.1f} MB"


def run_fresh(boards: list[str], move_ms: int) -> int:
    """:func:`measure` in a fresh interpreter (its output passed through); its exit code."""
    command = [sys.executable, "-m", "engine.bench.memory", "--move-ms", str(move_ms), *boards]
    return subprocess.run(command, check=False).returncode


def measure(boards: list[str], move_ms: int) -> int:
    """Warm up, then ask about each board in turn; print the memory as it goes. 0, or 2 for
    a board that is not one."""
    from engine.analysis import analyze, warm_up
    from engine.errors import PlybotError
    from engine.levels import LEVELS, choose_move

    try:
        positions = [_board(name) for name in boards]
    except PlybotError as exc:
        print(f"plybot bench: {exc}", file=sys.stderr)
        return 2
    warm_up()
    release()
    warm = before = rss_bytes()
    print(f"a worker, warm (the 7x6 solver and its table made): {_mb(warm)} resident")
    print(
        f"then each board: an exact analysis of every column of the empty board "
        f"(up to {ANALYSIS_SECONDS:g} s), a bot move at each level ({move_ms} ms each)"
    )
    print(f"{'board':<10} {'resident':>10} {'growth':>10} {'peak so far':>12}")
    rng = random.Random(1)
    for name, position in zip(boards, positions, strict=True):
        analyze(
            position,
            mode="solve",
            all_moves=True,
            deadline=time.monotonic() + ANALYSIS_SECONDS,
        )
        release()
        for level in LEVELS:
            choose_move(position, level, deadline=time.monotonic() + move_ms / 1000, rng=rng)
            release()
        after = rss_bytes()
        grown = after - before
        sign = "+" if grown >= 0 else "-"
        print(
            f"{name:<10} {_mb(after):>10} {sign + _mb(abs(grown)):>10} {_mb(peak_rss_bytes()):>12}",
            flush=True,
        )
        before = after
    print(f"{'all':<10} {_mb(before):>10} {'+' + _mb(before - warm):>10}")
    return 0


def _board(name: str) -> Game:
    """The empty board that ``name`` names: ``WxH`` (Connect Four) or a game's name."""
    if name[:1].isdigit():
        return new_game("connect4", "", name)
    return new_game(name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine.bench.memory")
    parser.add_argument("boards", nargs="*", metavar="BOARD")
    parser.add_argument("--move-ms", type=int, default=2000)
    args = parser.parse_args(argv)
    return measure(args.boards or list(DEFAULT_BOARDS), args.move_ms)


if __name__ == "__main__":
    sys.exit(main())

"""Pascal Pons' Connect Four benchmark sets: finding them, reading them, running the solver on them.

The sets are shared, not part of the project: ``PLYBOT_BENCHMARKS`` names
their folder, else ``../shared/benchmarks/connect4`` beside the repository.
Each line is ``<moves> <score>`` (see the folder's README).

:func:`run_set` solves a set the way Pons' C++ benchmark does: one solver,
whose transposition table is kept from one position to the next (and is
fresh for each set), strong solve. Each position is timed inside the
compiled loop; positions go to the compiled core in chunks of about a tenth
of a second (:meth:`engine.solver.Solver.iter_batches`), so a progress
report can follow along.
"""

from __future__ import annotations

import os
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import PlybotError

if TYPE_CHECKING:
    from engine.solver import Solver

#: The six sets, easy to hard.
SETS = ("Test_L3_R1", "Test_L2_R1", "Test_L2_R2", "Test_L1_R1", "Test_L1_R2", "Test_L1_R3")

#: Pons' C++ solver (no opening book) on this kind of machine: mean and median seconds per position.
CPP_MEAN = {
    "Test_L3_R1": 16e-6,
    "Test_L2_R1": 79e-6,
    "Test_L2_R2": 6.3e-3,
    "Test_L1_R1": 0.44e-3,
    "Test_L1_R2": 185e-3,
    "Test_L1_R3": 10.0,
}
CPP_MEDIAN = {
    "Test_L3_R1": 10e-6,
    "Test_L2_R1": 17e-6,
    "Test_L2_R2": 1.9e-3,
    "Test_L1_R1": 0.04e-3,
    "Test_L1_R2": 71e-3,
    "Test_L1_R3": 2.4,
}
#: ``--all`` runs only this many positions of the hardest set (as the C++ figure).
DEFAULT_LIMITS = {"Test_L1_R3": 100}


class BenchmarkError(PlybotError):
    """A benchmark set that cannot be found or read."""


def find_benchmarks() -> Path | None:
    """The sets' folder: ``PLYBOT_BENCHMARKS``, else ``../shared/benchmarks/connect4``; or None."""
    override = os.environ.get("PLYBOT_BENCHMARKS")
    if override:
        candidates = [Path(override)]
    else:
        root = Path(__file__).resolve().parents[1]
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


def load_set(name: str, limit: int | None = None) -> list[tuple[str, int]]:
    """The first ``limit`` (default: all) ``(moves, score)`` lines of set ``name``."""
    name = set_name(name)
    folder = find_benchmarks()
    if folder is None:
        raise BenchmarkError(
            "Pons' benchmark sets not found: set PLYBOT_BENCHMARKS or put "
            "../shared/benchmarks/connect4 beside the checkout"
        )
    path = folder / name
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


@dataclass
class Mismatch:
    line: int
    moves: str
    expected: int
    got: int | None
    error: str = ""


@dataclass
class SetReport:
    """What one set's run measured; times in seconds per position."""

    name: str
    seconds: list[float] = field(default_factory=list)
    nodes: list[int] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def positions(self) -> int:
        return len(self.seconds)

    @property
    def matches(self) -> int:
        return self.positions - len(self.mismatches)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.seconds) if self.seconds else 0.0

    @property
    def median(self) -> float:
        return statistics.median(self.seconds) if self.seconds else 0.0

    @property
    def mean_nodes(self) -> float:
        return statistics.fmean(self.nodes) if self.nodes else 0.0

    @property
    def nodes_per_second(self) -> float:
        total = sum(self.seconds)
        return sum(self.nodes) / total if total > 0 else 0.0

    @property
    def ratio(self) -> float:
        """Mean time per position over the C++ solver's."""
        return self.mean / CPP_MEAN[self.name]


def run_set(
    solver: Solver,
    name: str,
    limit: int | None = None,
    on_progress: Callable[[SetReport, int], None] | None = None,
    chunk_seconds: float = 0.1,
) -> SetReport:
    """Solve the first ``limit`` positions of set ``name`` with ``solver`` and compare.

    ``on_progress(report, total)`` is called after every chunk.
    """
    name = set_name(name)
    items = load_set(name, limit)
    report = SetReport(name)
    notations = [moves for moves, _ in items]
    for offset, batch in solver.iter_batches(notations, chunk_seconds=chunk_seconds):
        for i, moves in enumerate(batch.notations):
            expected = items[offset + i][1]
            error = batch.error(i)
            got = None if error else int(batch.score[i])
            report.seconds.append(float(batch.seconds[i]))
            report.nodes.append(int(batch.nodes[i]))
            if got != expected:
                report.mismatches.append(
                    Mismatch(offset + i + 1, moves, expected, got, str(error or ""))
                )
        if on_progress is not None:
            on_progress(report, len(items))
    return report


def format_seconds(seconds: float) -> str:
    """``0.000016`` -> ``"16.0 µs"``; three significant figures in a fitting unit."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale or unit == "µs":
            return f"{seconds / scale:.3g} {unit}"
    raise AssertionError("unreachable")


def format_table(reports: list[SetReport]) -> str:
    """The benchmark table: one row per set."""
    header = (
        "set",
        "positions",
        "exact",
        "mean",
        "median",
        "mean nodes",
        "nodes/s",
        "C++ mean",
        "ratio",
    )
    rows = [header]
    for r in reports:
        rows.append(
            (
                r.name,
                str(r.positions),
                str(r.matches),
                format_seconds(r.mean),
                format_seconds(r.median),
                f"{r.mean_nodes:,.0f}",
                f"{r.nodes_per_second / 1e6:.2f} M",
                format_seconds(CPP_MEAN[r.name]),
                f"{r.ratio:.2f}x",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for n, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


# -- the perfect level in play --------------------------------------------------------------


@dataclass
class GamesReport:
    """``perfect`` against ``opponent``: results and the time of each of perfect's moves by ply."""

    opponent: str
    move_s: float
    games: int = 0
    won: int = 0
    drawn: int = 0
    lost: int = 0
    not_exact: int = 0
    times: dict[int, list[float]] = field(default_factory=dict)
    start_ply: int = 0
    #: Games perfect began to move in a position it could win (or draw) and did not.
    worse_than_start: int = 0

    @property
    def all_times(self) -> list[float]:
        return sorted(t for ts in self.times.values() for t in ts)


#: The opponent that plays a uniformly random legal move (not a level of the bot's).
RANDOM = "random"


def play_games(games: int, opponent: str, move_s: float, start_ply: int = 0) -> GamesReport:
    """Play ``perfect`` against ``opponent`` on 7x6, ``games`` games, sides alternating.

    Each of perfect's moves gets ``move_s`` seconds (its deadline); the
    opponent (a level, or :data:`RANDOM`) is seeded by the game's number, so a
    run is repeatable but for where a deadline falls. With ``start_ply``, game
    ``n`` starts from a position drawn uniformly from all positions of a ply
    in ``0..start_ply`` (:mod:`engine.sampling`): perfect may start lost, so
    the report counts the games it ends worse than its first exact score said.
    Perfect uses the process's solver with the shipped opening book, as a worker does.
    """
    from engine.connect4 import Connect4
    from engine.levels import choose_move, warm_up
    from engine.sampling import uniform_positions

    warm_up(Connect4(), "perfect")
    report = GamesReport(opponent, move_s, start_ply=start_ply)
    for number in range(games):
        rng = random.Random(number)
        perfect = number % 2
        game = Connect4()
        if start_ply:
            game = uniform_positions(rng.randint(0, start_ply), 1, seed=number)[0]
        promised: int | None = None  # the sign of perfect's first exact score
        while game.outcome() is None:
            if game.side_to_move == perfect:
                start = time.monotonic()
                choice = choose_move(game, "perfect", deadline=start + move_s)
                report.times.setdefault(game.ply, []).append(time.monotonic() - start)
                report.not_exact += not choice.exact
                if promised is None and choice.exact and choice.score is not None:
                    promised = (choice.score > 0) - (choice.score < 0)
                move = choice.move
            elif opponent == RANDOM:
                move = rng.choice(game.legal_moves())
            else:
                move = choose_move(game, opponent, rng=rng).move
            game.push(move)
        outcome = game.outcome()
        assert outcome is not None
        report.games += 1
        result = 0 if outcome.winner is None else (1 if outcome.winner == perfect else -1)
        report.won += result == 1
        report.drawn += result == 0
        report.lost += result == -1
        report.worse_than_start += promised is not None and result < promised
    return report


def format_games(report: GamesReport) -> str:
    """The result of :func:`play_games`, and perfect's move times (overall and by ply)."""
    times = report.all_times
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    start = f", from random positions of plies 0-{report.start_ply}" if report.start_ply else ""
    lines = [
        f"perfect vs {report.opponent}, {report.games} games{start}, {report.move_s:g} s a move: "
        f"won {report.won}, drawn {report.drawn}, lost {report.lost}; "
        f"worse than its first exact score said: {report.worse_than_start}",
        f"perfect's moves: {len(times)}, not exact {report.not_exact}; "
        f"median {format_seconds(statistics.median(times))}, p99 {format_seconds(p99)}, "
        f"max {format_seconds(times[-1])}",
        "ply  moves   median      max",
    ]
    for ply in sorted(report.times):
        ts = report.times[ply]
        lines.append(
            f"{ply:>3}  {len(ts):>5}  {format_seconds(statistics.median(ts)):>7}  "
            f"{format_seconds(max(ts)):>7}"
        )
    return "\n".join(lines)

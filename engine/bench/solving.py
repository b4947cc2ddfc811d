"""Running the solver on Pons' benchmark sets, and the table it prints.

:func:`run_set` solves a set the way Pons' C++ benchmark does: one solver,
whose transposition table is kept from one position to the next (and is
fresh for each set), strong solve. Each position is timed inside the
compiled loop; positions go to the compiled core in chunks of about a tenth
of a second (:meth:`engine.solver.Solver.iter_batches`), so a progress
report can follow along.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.bench.sets import load_set, set_name

if TYPE_CHECKING:
    from engine.solver import Solver

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
    rows: list[Sequence[str]] = [header]
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
    return format_rows(rows)


def format_rows(rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table of ``rows`` (the first is the header, underlined): the first column
    left-aligned, the others right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)

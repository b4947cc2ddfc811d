"""Side by side with another solver: the same positions, in turn, by plybot and by a peer program.

The peer is any program, given by its path, that reads one position per line on standard input
and answers each with a line whose first two fields are ``<position> <score>`` (Pons' ``c4solver``
does, as does any solver that prints his benchmark files' format). Nothing of the peer is imported:
it runs as a child process, started once per set and kept, so its table lives from one position
to the next as plybot's does (:func:`engine.bench.solving.run_set`). It runs in an empty
temporary directory: a solver that loads an opening book from its working directory (Pons' looks
for ``7x6.book``) finds none there, and says so on standard error, which it shares with ours.

Positions alternate which side goes first (odd lines plybot, even lines the peer), so drift and
background load hit both alike. Each position is timed the same way for both, around one call:
plybot's is one compiled call for the position, the peer's is writing the line and reading its
answer. Two clocks: the CPU time the solving thread used (plybot's thread's own clock; the peer's
from ``/proc/<pid>/schedstat``, in nanoseconds, so Linux only) and wall time
(``time.perf_counter``). The CPU time is what the table compares: on a shared machine the wall
time also counts the time other processes held the cores. The peer's wall time includes a pipe
round trip (some tens of microseconds; nothing next to the hard sets' milliseconds and seconds).
Where there is no ``/proc``, the CPU columns fall back to wall time, and the table says so.
"""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from engine.bench.sets import BenchmarkError, load_set, set_name
from engine.bench.solving import Mismatch, SetReport, format_rows, format_seconds

if TYPE_CHECKING:
    from engine.solver import Solver


class PeerError(BenchmarkError):
    """The peer program could not be started, ended early, or answered out of format."""


class Peer:
    """A peer solver running as a child process in an empty temporary directory."""

    def __init__(self, command: Sequence[str]) -> None:
        self.command = list(command)
        self._dir = tempfile.TemporaryDirectory(prefix="plybot-peer-")
        try:
            self._process = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                cwd=self._dir.name,
                text=True,
                bufsize=1,
            )
        except OSError as exc:
            self._dir.cleanup()
            raise PeerError(f"'{self.command[0]}': cannot run the peer: {exc}") from None

    def cpu_seconds(self) -> float | None:
        """The CPU time the peer's main thread has used so far; None where it cannot be read."""
        try:
            with open(f"/proc/{self._process.pid}/schedstat", encoding="ascii") as stat:
                return int(stat.read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            return None

    def solve(self, moves: str) -> tuple[int, float, float | None]:
        """``(score, wall seconds, CPU seconds or None)`` of one position: its answer line's
        second field, and the two clocks around writing the line and reading the answer."""
        process = self._process
        assert process.stdin is not None
        assert process.stdout is not None
        cpu = self.cpu_seconds()
        started = time.perf_counter()
        try:
            process.stdin.write(moves + "\n")
            process.stdin.flush()
        except BrokenPipeError:
            raise PeerError(f"'{self.command[0]}' ended before '{moves}'") from None
        line = process.stdout.readline()
        seconds = time.perf_counter() - started
        cpu_after = self.cpu_seconds()
        used = cpu_after - cpu if cpu is not None and cpu_after is not None else None
        fields = line.split()
        if not line:
            raise PeerError(f"'{self.command[0]}' ended without answering '{moves}'")
        if len(fields) < 2 or fields[0] != moves:
            raise PeerError(
                f"'{self.command[0]}' answered '{line.strip()}' to '{moves}' "
                "(expected '<position> <score> ...')"
            )
        try:
            return int(fields[1]), seconds, used
        except ValueError:
            raise PeerError(
                f"'{self.command[0]}' answered '{line.strip()}' to '{moves}': no score"
            ) from None

    def close(self) -> None:
        """Close its input (it ends as at the end of a file), wait for it, remove its directory."""
        with contextlib.suppress(OSError):
            if self._process.stdin is not None:
                self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._dir.cleanup()


@contextlib.contextmanager
def running(command: Sequence[str]) -> Iterator[Peer]:
    """A :class:`Peer` for the length of a ``with`` block."""
    peer = Peer(command)
    try:
        yield peer
    finally:
        peer.close()


@dataclass
class PairedReport:
    """One set solved by both: plybot's times and the peer's, seconds per position.

    ``ours.seconds`` and ``theirs.seconds`` are CPU time (wall time if ``cpu`` is False: the
    peer's could not be read); ``ours_wall`` and ``theirs_wall`` are wall time.
    """

    ours: SetReport
    theirs: SetReport
    ours_wall: list[float] = field(default_factory=list)
    theirs_wall: list[float] = field(default_factory=list)
    cpu: bool = True

    @property
    def name(self) -> str:
        return self.ours.name

    @property
    def mean_ratio(self) -> float:
        """plybot's mean time per position over the peer's."""
        return self.ours.mean / self.theirs.mean if self.theirs.mean > 0 else 0.0

    @property
    def median_ratio(self) -> float:
        """plybot's median time per position over the peer's."""
        return self.ours.median / self.theirs.median if self.theirs.median > 0 else 0.0

    @property
    def wall_mean_ratio(self) -> float:
        """plybot's mean wall time per position over the peer's."""
        theirs = statistics.fmean(self.theirs_wall) if self.theirs_wall else 0.0
        return statistics.fmean(self.ours_wall) / theirs if theirs > 0 else 0.0

    @property
    def paired_median_ratio(self) -> float:
        """The median over positions of plybot's time over the peer's on the same position."""
        ratios = [
            a / b for a, b in zip(self.ours.seconds, self.theirs.seconds, strict=True) if b > 0
        ]
        return statistics.median(ratios) if ratios else 0.0


def run_pair(
    solver: Solver,
    peer: Peer,
    name: str,
    limit: int | None = None,
    on_progress: Callable[[SetReport, int], None] | None = None,
    times: TextIO | None = None,
) -> PairedReport:
    """Solve the first ``limit`` positions of set ``name`` by ``solver`` and ``peer`` in turn.

    Both keep their tables across the set's positions. Every position's score is checked
    against the set's, for both (``SetReport.mismatches``). ``times``, if given, gets one
    tab-separated line per position: set, line, moves, expected score, plybot's score, wall
    and CPU seconds, the peer's score, wall and CPU seconds (empty where unknown).
    ``on_progress(plybot's report, total)`` is called after every position.
    """
    name = set_name(name)
    items = load_set(name, limit)
    report = PairedReport(SetReport(name), SetReport(name))
    ours, theirs = report.ours, report.theirs
    for number, (moves, expected) in enumerate(items, 1):
        if number % 2:
            mine, my_seconds, my_cpu, my_nodes = _solve_ours(solver, moves)
            peers, peer_seconds, peer_cpu = peer.solve(moves)
        else:
            peers, peer_seconds, peer_cpu = peer.solve(moves)
            mine, my_seconds, my_cpu, my_nodes = _solve_ours(solver, moves)
        report.cpu = report.cpu and peer_cpu is not None
        ours.seconds.append(my_cpu)
        ours.nodes.append(my_nodes)
        theirs.seconds.append(peer_cpu if peer_cpu is not None else peer_seconds)
        report.ours_wall.append(my_seconds)
        report.theirs_wall.append(peer_seconds)
        if not isinstance(mine, int) or mine != expected:
            got, error = (None, mine) if isinstance(mine, str) else (mine, "")
            ours.mismatches.append(Mismatch(number, moves, expected, got, error))
        if peers != expected:
            theirs.mismatches.append(Mismatch(number, moves, expected, peers))
        if times is not None:
            times.write(
                f"{name}\t{number}\t{moves}\t{expected}\t{mine}\t{my_seconds:.9f}\t{my_cpu:.9f}"
                f"\t{peers}\t{peer_seconds:.9f}\t{_fixed(peer_cpu)}\n"
            )
            times.flush()
        if on_progress is not None:
            on_progress(ours, len(items))
    if not report.cpu:  # CPU time for one side only: compare wall times
        ours.seconds[:] = report.ours_wall
    return report


def _fixed(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds:.9f}"


def _solve_ours(solver: Solver, moves: str) -> tuple[int | str, float, float, int]:
    """``(score or error text, wall seconds, CPU seconds, nodes)`` of one position by one
    compiled call (which runs in this thread: its CPU clock counts the search)."""
    cpu = time.thread_time()
    started = time.perf_counter()
    batch = solver.run_batch([moves])
    seconds = time.perf_counter() - started
    used = time.thread_time() - cpu
    error = batch.error(0)
    score: int | str = str(error) if error is not None else int(batch.score[0])
    return score, seconds, used, int(batch.nodes[0])


def format_pairs(reports: list[PairedReport]) -> str:
    """The side-by-side table: one row per set."""
    header = (
        "set",
        "positions",
        "exact",
        "peer exact",
        "mean",
        "median",
        "peer mean",
        "peer median",
        "ratio of means",
        "ratio of medians",
        "median ratio",
        "wall ratio of means",
    )
    rows: list[Sequence[str]] = [header]
    for r in reports:
        rows.append(
            (
                r.name,
                str(r.ours.positions),
                str(r.ours.matches),
                str(r.theirs.matches),
                format_seconds(r.ours.mean),
                format_seconds(r.ours.median),
                format_seconds(r.theirs.mean),
                format_seconds(r.theirs.median),
                f"{r.mean_ratio:.2f}x",
                f"{r.median_ratio:.2f}x",
                f"{r.paired_median_ratio:.2f}x",
                f"{r.wall_mean_ratio:.2f}x",
            )
        )
    return format_rows(rows)

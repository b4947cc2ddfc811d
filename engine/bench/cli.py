"""Run Pons' Connect Four benchmark sets and print times, nodes and the ratio to his C++ solver.

    plybot bench [SET ...] [--all] [--limit N] [--table-mb MB]
    plybot bench [SET ...] --peer PATH [--peer-arg ARG ...] [--times FILE]
    plybot bench --games N [--opponent LEVEL] [--move-ms MS]
    plybot bench --vs-bitbully PYTHON [--per-ply N] [--plies A-B] [--seed S]
    plybot bench --memory [BOARD ...] [--move-ms MS]

SET is a set's name (``Test_L2_R1`` or just ``L2_R1``). With no SET, the five
quicker sets run; ``--all`` adds Test_L1_R3 (its first 100 positions unless
``--limit`` says otherwise). ``--limit N`` runs the first N positions of
each set. One solver per set, its transposition table kept from one
position to the next (as Pons' C++ benchmark does). A position whose score
differs from the file's is an error: named on standard error, exit 1.

``--peer PATH`` runs another solver side by side (:mod:`engine.bench.peer`):
the program at PATH, with the ``--peer-arg`` arguments, reads positions on
standard input and answers ``<position> <score>`` per line (Pons' c4solver,
which then runs without his opening book). Both solve each position in turn,
both keep their tables, both are checked against the set; the table gives
each one's mean and median (CPU time per position) and plybot's over the
peer's, and the ratio of their mean wall times. ``--times FILE`` writes
every position's figures, tab-separated.

``--games N`` instead plays the ``perfect`` level (opening book, then the
solver) against ``--opponent`` (default ``easy``) for N games, sides
alternating, ``--move-ms`` (default 2000) per move of perfect's, and prints
the results and perfect's move times by ply.

``--vs-bitbully PYTHON`` analyses every column of positions of plies A..B side
by side with bitbully (:mod:`engine.bench.bitbully`).

``--memory`` measures a fresh worker-like process (:mod:`engine.bench.memory`): its
resident memory warm, then what each BOARD (``WxH``, or ``tictactoe``; by default
4x4 5x4 6x5 8x7 9x6 tictactoe) adds once an analysis of every column and a bot move
at each level (``--move-ms`` each) were asked about it.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import TYPE_CHECKING, TextIO

from engine.cli.analyze import ArgumentParser, add_table_mb, fail

if TYPE_CHECKING:
    from engine.bench.solving import SetReport


def parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="plybot bench",
        description="Run Pons' Connect Four benchmark sets (strong solve) and print a table.",
    )
    p.add_argument("sets", nargs="*", metavar="SET", help="e.g. Test_L2_R1 or L2_R1")
    p.add_argument(
        "--all",
        action="store_true",
        help="all six sets (Test_L1_R3: first 100 positions unless --limit)",
    )
    p.add_argument("--limit", type=int, metavar="N", help="first N positions of each set")
    add_table_mb(p)
    p.add_argument(
        "--peer",
        metavar="PATH",
        help="a solver program to run side by side (reads positions, prints '<pos> <score>')",
    )
    p.add_argument(
        "--peer-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="an argument for the peer (repeatable)",
    )
    p.add_argument("--times", metavar="FILE", help="with --peer: every position's times (TSV)")
    p.add_argument("--games", type=int, metavar="N", help="play perfect against --opponent")
    p.add_argument(
        "--opponent", default="easy", help="a level, or 'random', that perfect plays (default easy)"
    )
    p.add_argument(
        "--start-ply",
        type=int,
        default=0,
        metavar="N",
        help="start each game from a uniformly drawn position of a ply in 0..N (default 0)",
    )
    p.add_argument(
        "--move-ms",
        type=int,
        default=2000,
        help="perfect's time a move; with --memory, every level's (default 2000)",
    )
    p.add_argument(
        "--memory",
        action="store_true",
        help="a fresh worker-like process's memory warm, then what each board (the SETs' "
        "place: WxH or tictactoe) adds",
    )
    p.add_argument(
        "--vs-bitbully",
        metavar="PYTHON",
        help="analyse every column side by side with bitbully, run by this interpreter "
        "(make tools: .tools/bitbully/bin/python)",
    )
    p.add_argument("--per-ply", type=int, default=15, help="--vs-bitbully: positions per kind")
    p.add_argument("--plies", default="0-20", help="--vs-bitbully: plies A-B (default 0-20)")
    p.add_argument("--seed", type=int, default=1, help="--vs-bitbully: random seed (default 1)")
    return p


class ProgressBar:
    """A one-line progress bar on standard error, redrawn at most ten times a second."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.last = 0.0

    def __call__(self, report: SetReport, total: int) -> None:
        now = time.monotonic()
        done = report.positions
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        width = 30
        filled = width * done // max(total, 1)
        bar = "#" * filled + "." * (width - filled)
        self.stream.write(f"\r{report.name:<11} [{bar}] {done}/{total}")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()


def main(argv: list[str]) -> int:
    """Run the benchmark sets; see the module's doc."""
    args = parser().parse_args(argv)
    from engine.bench.sets import SETS, BenchmarkError, require_benchmarks, set_name
    from engine.bench.solving import DEFAULT_LIMITS, format_table, run_set

    if args.memory:
        from engine.bench.memory import DEFAULT_BOARDS, run_fresh

        if args.move_ms <= 0:
            return fail("plybot bench", f"'{args.move_ms}': --move-ms must be positive")
        return run_fresh(args.sets or list(DEFAULT_BOARDS), args.move_ms)
    if args.games is not None:
        return _games(args.games, args.opponent, args.move_ms, args.start_ply)
    if args.vs_bitbully is not None:
        return _vs_bitbully(args.vs_bitbully, args.plies, args.per_ply, args.seed)
    if args.limit is not None and args.limit <= 0:
        return fail("plybot bench", f"'{args.limit}': --limit must be positive")
    if args.table_mb <= 0:
        return fail("plybot bench", f"'{args.table_mb}': --table-mb must be positive")
    try:
        names = [set_name(s) for s in args.sets]
    except BenchmarkError as exc:
        return fail("plybot bench", str(exc))
    if not names:
        names = list(SETS) if args.all else [s for s in SETS if s not in DEFAULT_LIMITS]
    try:
        require_benchmarks()
    except BenchmarkError as exc:
        return fail("plybot bench", str(exc))

    from engine.solver import Solver

    if args.peer is not None:
        return _side_by_side(names, args.limit, args.table_mb, args.peer, args.peer_arg, args.times)
    reports = []
    failed = 0
    for name in names:
        limit = args.limit if args.limit is not None else DEFAULT_LIMITS.get(name)
        solver = Solver(table_bytes=args.table_mb << 20)  # a fresh table per set
        report = run_set(solver, name, limit, on_progress=ProgressBar())
        reports.append(report)
        for m in report.mismatches:
            failed += 1
            got = m.error or f"solved {m.got}"
            print(
                f"plybot bench: {name} line {m.line}: '{m.moves}': {got}, expected {m.expected}",
                file=sys.stderr,
            )
    print(
        f"strong solve, table {args.table_mb} MB kept across the positions of a set; "
        "times per position, measured inside the compiled loop"
    )
    print(format_table(reports))
    return 1 if failed else 0


def _vs_bitbully(python: str, plies: str, per_ply: int, seed: int) -> int:
    from engine.bench.bitbully import run

    prog = "plybot bench"
    first, _, last = plies.partition("-")
    try:
        span = range(int(first), int(last or first) + 1)
    except ValueError:
        return fail(prog, f"'{plies}': --plies must be A-B, e.g. 0-20")
    if not span or span.start < 0 or span.stop > 42:
        return fail(prog, f"'{plies}': --plies must lie in 0..41")
    if per_ply <= 0:
        return fail(prog, f"'{per_ply}': --per-ply must be positive")
    try:
        figures = run(python, span, per_ply, seed)
    except (OSError, RuntimeError) as exc:
        return fail(prog, str(exc))
    disagreements = [d for row in figures for d in row.disagreements]
    for line in disagreements:
        print(f"plybot bench: disagreement: {line}", file=sys.stderr)
    return 1 if disagreements else 0


def _side_by_side(
    names: list[str],
    limit: int | None,
    table_mb: int,
    peer: str,
    peer_args: list[str],
    times_path: str | None,
) -> int:
    """Each set by plybot and by the peer in turn; the side-by-side table. 1 on any mismatch."""
    from engine.bench.peer import PeerError, format_pairs, run_pair, running
    from engine.bench.solving import DEFAULT_LIMITS
    from engine.solver import Solver

    reports = []
    failed = 0
    with contextlib.ExitStack() as stack:
        times = None
        if times_path is not None:
            times = stack.enter_context(open(times_path, "w", encoding="utf-8"))
        for name in names:
            solver = Solver(table_bytes=table_mb << 20)  # a fresh table per set, as the peer's
            try:
                with running([peer, *peer_args]) as other:
                    report = run_pair(
                        solver,
                        other,
                        name,
                        limit if limit is not None else DEFAULT_LIMITS.get(name),
                        on_progress=ProgressBar(),
                        times=times,
                    )
            except PeerError as exc:
                return fail("plybot bench", str(exc))
            reports.append(report)
            for who, side in (("plybot", report.ours), ("the peer", report.theirs)):
                for m in side.mismatches:
                    failed += 1
                    got = m.error or f"solved {m.got}"
                    print(
                        f"plybot bench: {name} line {m.line}: '{m.moves}': {who} {got}, "
                        f"expected {m.expected}",
                        file=sys.stderr,
                    )
    clock = "CPU time" if all(r.cpu for r in reports) else "wall time (the peer's CPU time unread)"
    print(
        f"strong solve, side by side with {peer}; each position by both in turn, each keeping "
        f"its table (plybot's {table_mb} MB) across a set; {clock} per position"
    )
    print(format_pairs(reports))
    return 1 if failed else 0


def _games(games: int, opponent: str, move_ms: int, start_ply: int) -> int:
    from engine.bench.games import RANDOM, format_games, play_games
    from engine.errors import PlybotError
    from engine.levels import get_level

    if games <= 0:
        return fail("plybot bench", f"'{games}': --games must be positive")
    if move_ms <= 0:
        return fail("plybot bench", f"'{move_ms}': --move-ms must be positive")
    if not 0 <= start_ply <= 41:
        return fail("plybot bench", f"'{start_ply}': --start-ply must be in 0..41")
    try:
        if opponent != RANDOM:
            get_level(opponent)
    except PlybotError as exc:
        return fail("plybot bench", f"{exc} (or '{RANDOM}')")
    print(format_games(play_games(games, opponent, move_ms / 1000, start_ply)))
    return 0

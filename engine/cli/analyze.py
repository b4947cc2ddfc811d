"""Analyse a position: best move, score, principal variation, every move's score.

    plybot analyze POSITION [--game G] [--variant V] [--depth N | --time-ms T | --level L] [--all]

With no --depth, --time-ms or --level the position is solved exactly (Connect
Four by the compiled solver), for at most --max-time-ms; past that the deepest
search is reported and a note says so. Bad input: one line on standard error,
exit 2.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from engine.game import Game


class ArgumentParser(argparse.ArgumentParser):
    """``argparse`` with plybot's convention for bad arguments: one line on stderr, exit 2."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message}", file=sys.stderr)
        raise SystemExit(2)


def fail(prog: str, message: str) -> int:
    """Report bad input the plybot way; returns the exit code 2."""
    print(f"{prog}: {message}", file=sys.stderr)
    return 2


def add_table_mb(p: argparse.ArgumentParser) -> None:
    """``--table-mb MB``: the solver's transposition table (default 64); the command checks
    that it is positive."""
    p.add_argument(
        "--table-mb",
        type=int,
        default=64,
        metavar="MB",
        help="transposition table size (default 64)",
    )


def parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="plybot analyze",
        description="Analyse a position: best move, score, principal variation, "
        "every move's score, depth, nodes and speed.",
    )
    p.add_argument(
        "position",
        nargs="?",
        default="",
        help="the moves from the start, e.g. 4453 (Connect Four columns 1-7, "
        "tic-tac-toe cells 1-9); empty for the start",
    )
    p.add_argument("--game", default="connect4", help="connect4 (default) or tictactoe")
    p.add_argument("--variant", default=None, help="board variant, e.g. 7x6 (default) or 6x5")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--depth", type=int, metavar="N", help="heuristic search to N plies")
    mode.add_argument("--time-ms", type=float, metavar="T", help="search for T milliseconds")
    mode.add_argument("--level", metavar="L", help="the move level L would play")
    p.add_argument("--all", action="store_true", help="score every legal move")
    p.add_argument(
        "--max-time-ms",
        type=float,
        default=60_000,
        metavar="T",
        help="cap of an exact solve (default 60000); then the deepest search is reported",
    )
    p.add_argument("--seed", type=int, default=None, help="random seed of the easy level")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    prog = "plybot analyze"

    from engine.analysis import analyze
    from engine.errors import PlybotError
    from engine.game import new_game, require_ongoing
    from engine.scores import score_words

    try:
        position = new_game(args.game, args.position, args.variant)
        require_ongoing(position)
        if args.depth is not None and args.depth < 1:
            return fail(prog, f"'{args.depth}': --depth must be at least 1")
        if args.time_ms is not None and args.time_ms <= 0:
            return fail(prog, f"'{args.time_ms:g}': --time-ms must be above 0")
        if args.max_time_ms <= 0:
            return fail(prog, f"'{args.max_time_ms:g}': --max-time-ms must be above 0")
        if args.level is not None:
            from engine.levels import get_level

            get_level(args.level)  # an unknown level is bad input, before any work
    except PlybotError as exc:
        return fail(prog, str(exc))

    out = sys.stdout
    side = "first" if position.side_to_move == 0 else "second"
    title = f"{position.name} {position.variant}, position '{position.notation()}'"
    print(f"{title}, the {side} player to move", file=out)
    print(position.render(), file=out)
    print(file=out)

    from engine.game import has_exact_solver

    if args.level is not None:
        from engine.levels import warm_up

        warm_up(position, args.level)
        return _show_level(position, args.level, args.seed, args.max_time_ms)
    if has_exact_solver(position) and args.depth is None:
        from engine.analysis import default_solver

        default_solver(position.width, position.height)  # loaded before the clock starts

    start = time.monotonic()
    if args.depth is not None:
        result = analyze(position, mode="depth", depth=args.depth, all_moves=args.all)
    elif args.time_ms is not None:
        result = analyze(position, mode="time", time_ms=args.time_ms, all_moves=args.all)
    else:
        deadline = start + args.max_time_ms / 1000
        result = analyze(position, mode="solve", all_moves=args.all, deadline=deadline)
    name = position.move_name
    rows = [
        ("best move", "-" if result.best_move is None else name(result.best_move)),
        ("score", score_words(position, result.score, result.exact)),
        ("pv", " ".join(name(m) for m in result.pv) or "-"),
    ]
    if result.moves is not None:
        rows.append(("moves", _moves_text(position, result.moves, result.exact)))
    seconds = max(result.time_ms / 1000, 1e-9)
    rows += [
        ("depth", f"{result.depth} plies"),
        ("nodes", f"{result.nodes:,}"),
        ("nodes/s", f"{result.nodes / seconds:,.0f}"),
        ("time", f"{result.time_ms / 1000:.3f} s"),
    ]
    if result.cache_hit:
        rows.append(("cache", "hit"))
    if result.note:
        rows.append(("note", result.note))
    for label, value in rows:
        print(f"{label:<10} {value}", file=out)
    return 0


def _moves_text(position: Game, moves: dict[int, int], exact: bool) -> str:
    """``1:-2  2:-1  3:+3 ...`` in the game's move order by name; scores from the mover's side."""
    parts = [f"{position.move_name(m)}:{moves[m]:+d}" for m in sorted(moves)]
    return "  ".join(parts) + ("" if exact else "  (heuristic)")


def _show_level(position: Game, level: str, seed: int | None, max_time_ms: float) -> int:
    import random

    from engine.levels import choose_move
    from engine.scores import score_words

    deadline = time.monotonic() + max_time_ms / 1000
    choice = choose_move(position, level, deadline=deadline, rng=random.Random(seed))
    seconds = max(choice.time_ms / 1000, 1e-9)
    rows = [
        ("level", level),
        ("plays", position.move_name(choice.move)),
        (
            "score",
            "-" if choice.score is None else score_words(position, choice.score, choice.exact),
        ),
        ("depth", f"{choice.depth} plies"),
        ("nodes", f"{choice.nodes:,}"),
        ("nodes/s", f"{choice.nodes / seconds:,.0f}"),
        ("time", f"{choice.time_ms / 1000:.3f} s"),
    ]
    if choice.note:
        rows.append(("note", choice.note))
    for label, value in rows:
        print(f"{label:<10} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

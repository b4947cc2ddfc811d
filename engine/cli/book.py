"""Build or check the Connect Four opening book (exact scores of early positions).

    plybot book build [--plies N] [--out PATH] [--variant WxH] [--table-mb MB]
    plybot book verify [--book PATH] [--variant WxH] [--sample N] [--seed S]

``build`` solves, with this package's solver and no deadline, every position
where a perfect player is to move on its own lines before ply N (see
``engine.book``), appending each line to PATH as it goes: run it again to
resume an interrupted build. ``verify`` solves a random sample of a book's
positions again (with a fresh table) and exits 1 if any line disagrees.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

from engine.cli.analyze import ArgumentParser, fail


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="plybot book", description="Build or check the opening book.")
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    b = sub.add_parser("build", help="solve the book's positions, appending to the file")
    b.add_argument("--plies", type=int, default=10, help="positions before this ply (default 10)")
    b.add_argument("--out", type=Path, default=None, help="book file (default: the shipped one)")
    b.add_argument("--variant", default="7x6", help="board WIDTHxHEIGHT (default 7x6)")
    b.add_argument("--table-mb", type=int, default=1024, metavar="MB", help="default 1024")
    v = sub.add_parser("verify", help="solve a sample of the book again and compare")
    v.add_argument("--book", type=Path, default=None, help="book file (default: the shipped one)")
    v.add_argument("--variant", default="7x6", help="board WIDTHxHEIGHT (default 7x6)")
    v.add_argument("--sample", type=int, default=20, help="positions to check (default 20)")
    v.add_argument("--seed", type=int, default=1, help="random seed of the sample (default 1)")
    return p


def main(argv: list[str]) -> int:
    """Build or verify a book; see the module's doc."""
    args = parser().parse_args(argv)
    from engine import book
    from engine.connect4 import Connect4
    from engine.errors import PlybotError
    from engine.solver import Solver

    try:
        width, height = Connect4.parse_variant(args.variant)
    except PlybotError as exc:
        return fail("plybot book", str(exc))
    if args.action == "build":
        if not 1 <= args.plies <= 42:
            return fail("plybot book", f"'{args.plies}': --plies must be in 1..42")
        if args.table_mb <= 0:
            return fail("plybot book", f"'{args.table_mb}': --table-mb must be positive")
        if args.out is None and (width, height) != (7, 6):
            return fail("plybot book", f"'{args.variant}': give --out for a book of another board")
        path = args.out or book.SHIPPED_PATH
        try:
            done = book.read(path, args.variant)
        except book.BookError as exc:
            return fail("plybot book", f"{path}: {exc}")
        solver = Solver(width, height, table_bytes=args.table_mb << 20)
        start = time.monotonic()
        with path.open("a", encoding="ascii") as out:
            if not done:
                out.write(
                    f"# plybot opening book, Connect Four {args.variant}: <moves> <score> <best>\n"
                    "# built by `plybot book build`; scores exact, from the side to move\n"
                )

            def record(line: book.BookLine, seconds: float) -> None:
                out.write(line.text() + "\n")
                out.flush()
                total = time.monotonic() - start
                print(f"{line.text():<16} {seconds:8.2f} s   ({total:,.0f} s)", flush=True)

            built = book.build(solver, args.plies, done, on_line=record)
        print(f"{len(built)} positions in {path}", file=sys.stderr)
        return 0

    path = args.book or book.SHIPPED_PATH
    try:
        lines = book.read(path, args.variant)
    except book.BookError as exc:
        return fail("plybot book", f"{path}: {exc}")
    if not lines:
        return fail("plybot book", f"{path}: no book there")
    sample = random.Random(args.seed).sample(lines, min(args.sample, len(lines)))
    wrong = 0
    for line in sample:
        solver = Solver(width, height)  # a fresh table: nothing carried over from the build
        position = Connect4.parse(line.moves, args.variant)
        score = solver.solve(position).score
        position.push(line.best)  # the best move must keep the score
        after = (
            position.terminal_score()
            if position.outcome() is not None
            else solver.solve(position).score
        )
        ok = score == line.score and after is not None and -after == line.score
        wrong += not ok
        said = "ok" if ok else f"WRONG: the solver says {score}, and {after} after the move"
        print(f"{line.text():<16} {said}")
    print(f"{len(sample) - wrong}/{len(sample)} agree", file=sys.stderr)
    return 1 if wrong else 0

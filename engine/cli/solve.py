"""Solve Connect Four positions exactly: `<position> <score>` per line, as in Pons' benchmark files.

    plybot solve [POSITION ...] [--weak] [--analyze] [--variant WxH] [--table-mb MB] [--no-book]

With no POSITION, reads one per line from standard input (only the first
field of a line counts, so a benchmark file can be piped in as it is; blank
lines are skipped). Scores are Pons': from the side to move, 22 minus the
winner's stones at the win on 7x6, 0 for a draw. ``--weak`` prints 1, 0 or
-1; ``--analyze`` appends every column's score, ``x`` for a full column.
The shipped opening book (:func:`engine.book.shipped_book`) answers the
positions it holds at once and is asked inside the search at its plies;
``--no-book`` solves by search alone (runs comparable with Pons' solver).
A bad line gets one line on standard error naming it; the others are still
answered, and the exit status is then 2.
"""

from __future__ import annotations

import sys

from engine.cli.analyze import ArgumentParser, add_table_mb, fail


def parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="plybot solve",
        description="Solve Connect Four positions exactly; prints '<position> <score>' per line.",
    )
    p.add_argument(
        "positions",
        nargs="*",
        metavar="POSITION",
        help="moves as 1-based column digits, e.g. 4453 (default: read stdin)",
    )
    p.add_argument("--weak", action="store_true", help="win/draw/loss only: 1, 0 or -1")
    p.add_argument(
        "--analyze", action="store_true", help="append every column's score ('x' for a full column)"
    )
    p.add_argument("--variant", default="7x6", help="board WIDTHxHEIGHT (default 7x6)")
    p.add_argument(
        "--no-book",
        action="store_true",
        help="search alone, without the opening book (as Pons' solver does)",
    )
    add_table_mb(p)
    return p


def main(argv: list[str]) -> int:
    """Solve positions; see the module's doc."""
    args = parser().parse_args(argv)
    from engine.connect4 import Connect4
    from engine.errors import PlybotError

    try:
        width, height = Connect4.parse_variant(args.variant)
    except PlybotError as exc:
        return fail("plybot solve", str(exc))
    if args.table_mb <= 0:
        return fail("plybot solve", f"'{args.table_mb}': --table-mb must be positive")

    if args.positions:
        where = "position"
        numbered = list(enumerate(args.positions, 1))
    else:
        where = "line"
        text = sys.stdin.buffer.read().decode("ascii", errors="replace")
        numbered = [
            (n, line.split()[0]) for n, line in enumerate(text.splitlines(), 1) if line.strip()
        ]

    from engine.book import shipped_book
    from engine.database import shipped_databases
    from engine.solver import Solver
    from engine.solver._core import FULL

    book = None if args.no_book else shipped_book(width, height)
    databases = () if args.no_book else shipped_databases(width, height)
    solver = Solver(width, height, table_bytes=args.table_mb << 20, book=book, databases=databases)
    notations = [notation for _, notation in numbered]
    bad = 0
    out = sys.stdout
    for offset, batch in solver.iter_batches(notations, weak=args.weak, analyze=args.analyze):
        lines: list[str] = []
        for i, notation in enumerate(batch.notations):
            error = batch.error(i)
            if error is not None:
                out.write("".join(lines))
                lines = []
                out.flush()
                print(f"plybot solve: {where} {numbered[offset + i][0]}: {error}", file=sys.stderr)
                bad += 1
                continue
            line = f"{notation} {batch.score[i]}"
            if batch.columns is not None:
                line += " " + " ".join("x" if s == FULL else str(s) for s in batch.columns[i])
            lines.append(line + "\n")
        out.write("".join(lines))
        out.flush()
    return 2 if bad else 0

"""Build (with the workers) or check the complete Connect Four opening book.

    plybot book build [--plies N] [--variant WxH] [--chunk-size C] [--layer PATH] [--out PATH]
    plybot book verify [--book PATH] [--sample N] [--seed S]
    plybot book add LAYER [--book PATH] [--variant WxH]

``build`` sends the unsolved chunks of the layer at ply N to the ``book``
queue (served by every ``plybot worker`` when no bot move or analysis waits;
needs ``REDIS_URL``), appends the solved lines to the layer file as they come,
shows positions done, positions/s and the ETA, and writes the book once the
layer is complete (see :mod:`worker.process.book_build`). Run it again to resume.

``verify`` checks that every entry below the book's complete ply equals the
negamax of its children (a lookup each, the whole book), then solves a random
sample again with fresh tables (the score, and that the best move keeps it).
Exit 1 if anything disagrees.

``add`` puts the solved positions of a layer file, complete or not, into the
book as exact entries beyond its complete ply (entries it already has are
kept), so a build spanning several sessions answers what it has solved so far.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from engine.cli.analyze import ArgumentParser, fail

if TYPE_CHECKING:
    from engine.book import OpeningBook
    from engine.connect4 import Connect4

#: The layer ply of the shipped 7x6 book.
DEFAULT_PLIES = 8


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="plybot book", description="Build or check the opening book.")
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    b = sub.add_parser("build", help="solve the layer with the workers, then write the book")
    b.add_argument("--plies", type=int, default=DEFAULT_PLIES, help="the layer's ply (default 8)")
    b.add_argument("--variant", default="7x6", help="board WIDTHxHEIGHT (default 7x6)")
    b.add_argument("--chunk-size", type=int, default=None, help="positions per job (default 64)")
    b.add_argument("--layer", type=Path, default=None, help="layer file (progress; resumable)")
    b.add_argument("--out", type=Path, default=None, help="book file (default: the shipped one)")
    b.add_argument("--redis-url", default=None, help="Redis URL (default: REDIS_URL)")
    v = sub.add_parser("verify", help="check the book: negamax consistency and a sample re-solved")
    v.add_argument("--book", type=Path, default=None, help="book file (default: the shipped one)")
    v.add_argument("--sample", type=int, default=20, help="positions to solve again (default 20)")
    v.add_argument("--seed", type=int, default=1, help="random seed of the sample (default 1)")
    a = sub.add_parser("add", help="add a layer file's solved positions to the book")
    a.add_argument("layer", type=Path, help="layer file (as `build` writes it; may be partial)")
    a.add_argument("--book", type=Path, default=None, help="book file (default: the shipped one)")
    a.add_argument("--variant", default="7x6", help="board WIDTHxHEIGHT (default 7x6)")
    return p


def main(argv: list[str]) -> int:
    """Build or verify a book; see the module's doc."""
    args = parser().parse_args(argv)
    actions = {"build": build, "verify": verify, "add": add}
    return actions[str(args.action)](args)


def build(args: argparse.Namespace) -> int:
    from engine import book
    from engine.connect4 import Connect4
    from engine.errors import PlybotError
    from engine.layer import CHUNK_SIZE
    from worker.core.connection import connect
    from worker.core.settings import get_settings
    from worker.process.book_build import BookBuild, BuildError, BuildProgress

    prog = "plybot book build"
    try:
        width, height = Connect4.parse_variant(args.variant)
    except PlybotError as exc:
        return fail(prog, str(exc))
    if not 1 <= args.plies < width * height:
        return fail(prog, f"'{args.plies}': --plies must be in 1..{width * height - 1}")
    size = CHUNK_SIZE if args.chunk_size is None else args.chunk_size
    if size < 1:
        return fail(prog, f"'{size}': --chunk-size must be positive")
    shipped = (width, height) == (7, 6)
    if args.out is None and not shipped:
        return fail(prog, f"'{args.variant}': give --out for a book of another board")
    out = args.out or book.SHIPPED_PATH
    layer = args.layer or out.with_name(f"connect4-{args.variant}-ply{args.plies}.layer")
    settings = get_settings()
    url = args.redis_url or settings.redis_url
    if not url:
        return fail(prog, "no Redis: set REDIS_URL or pass --redis-url (and run plybot worker)")
    try:
        connection = connect(url, settings, socket_timeout=10, socket_connect_timeout=5)
    except ValueError as exc:
        return fail(prog, f"--redis-url: {exc}")
    run = BookBuild(connection, settings, width, height, args.plies, layer, out, size)
    tty = sys.stderr.isatty()
    last = [0.0]

    def report(p: BuildProgress) -> None:
        now = time.monotonic()
        if not tty and now - last[0] < 10 and p.done < p.total:
            return
        last[0] = now
        eta = "-" if p.eta_s is None else _duration(p.eta_s)
        line = (
            f"{p.done:,}/{p.total:,} positions ({100 * p.done / max(p.total, 1):.1f}%)  "
            f"{p.rate:.2f}/s  ETA {eta}  chunks in flight {p.chunks_waiting}"
            + (f"  {p.note}" if p.note else "")
        )
        print(("\r" + line + "\033[K") if tty else line, end="" if tty else "\n", file=sys.stderr)
        sys.stderr.flush()

    try:
        built = run.run(report)
    except BuildError as exc:
        print(file=sys.stderr)
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"\n{prog}: stopped; run it again to resume ({layer})", file=sys.stderr)
        return 130
    if tty:
        print(file=sys.stderr)
    size_mb = out.stat().st_size / 1e6
    print(
        f"{len(built):,} positions, complete to ply {built.complete}, in {out} ({size_mb:.2f} MB)"
    )
    return 0


def verify(args: argparse.Namespace) -> int:
    from engine import book
    from engine.solver import Solver

    prog = "plybot book verify"
    path = args.book or book.SHIPPED_PATH
    if not path.is_file():
        return fail(prog, f"{path}: no book there")
    try:
        opened = book.OpeningBook.load(path)
    except book.BookError as exc:
        return fail(prog, str(exc))
    if args.sample < 0:
        return fail(prog, f"'{args.sample}': --sample must be >= 0")
    wrong = 0
    entries = list(opened.positions())
    below = [e for e in entries if e[0].ply < opened.complete]
    for position, score, _best in below:
        derived = negamax(opened, position)
        if derived != score:
            wrong += 1
            print(f"{position.notation() or '-'}: {score} in the book, {derived} from its children")
    print(
        f"{len(below) - wrong}/{len(below)} entries below ply {opened.complete} agree with "
        "their children",
        file=sys.stderr,
    )
    sample = random.Random(args.seed).sample(entries, min(args.sample, len(entries)))
    bad = 0
    for position, score, best in sample:
        solver = Solver(opened.width, opened.height)  # fresh: nothing carried over
        solved = solver.solve(position).score
        after = position.copy()
        after.push(best)  # the best move must keep the score
        kept = after.terminal_score() if after.outcome() is not None else solver.solve(after).score
        ok = solved == score and kept is not None and -kept == score
        bad += not ok
        said = "ok" if ok else f"WRONG: the solver says {solved}, and {kept} after the move"
        print(f"{position.notation() or '-'} {score} {best + 1}  {said}")
    print(f"{len(sample) - bad}/{len(sample)} re-solved agree", file=sys.stderr)
    return 1 if wrong or bad else 0


def add(args: argparse.Namespace) -> int:
    from engine import book
    from engine.errors import PlybotError
    from worker.process.book_build import merged

    prog = "plybot book add"
    path = args.book or book.SHIPPED_PATH
    if not args.layer.is_file():
        return fail(prog, f"{args.layer}: no layer file there")
    if not path.is_file():
        return fail(prog, f"{path}: no book there")
    try:
        opened = book.OpeningBook.load(path)
        if opened.variant != args.variant:
            return fail(prog, f"{path}: a {opened.variant} book, not {args.variant}")
        lines = book.read(args.layer, args.variant)
    except PlybotError as exc:
        return fail(prog, str(exc))
    layer = book.OpeningBook.from_lines(opened.width, opened.height, lines)
    out = merged(opened, layer)
    out.save(path)
    print(
        f"{len(out) - len(opened):,} entries added from {len(lines):,} layer lines: "
        f"{len(out):,} entries, complete to ply {out.complete} ({path.stat().st_size:,} bytes)",
        file=sys.stderr,
    )
    return 0


def negamax(opened: OpeningBook, position: Connect4) -> int | None:
    """The score of ``position`` from its children's book entries (``None`` if one is missing)."""
    best: int | None = None
    for column in position.legal_moves():
        child = position.copy()
        child.push(column)
        if child.outcome() is not None:
            score = -child.terminal_score()
        else:
            found = opened.lookup(child)
            if found is None:
                return None
            score = -found[0]
        best = score if best is None else max(best, score)
    return best


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"

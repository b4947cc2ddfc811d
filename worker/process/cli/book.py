"""Build (with the workers) or check the complete Connect Four opening book.

    plybot book build [--plies N] [--variant WxH] [--chunk-size C] [--layer PATH] [--out PATH]
    plybot book verify [--book PATH] [--sample N] [--seed S]
    plybot book verify --database [DIR] [--variant WxH] [--plies S] [--sample N] [--seed S]
    plybot book build --database [--plies 12] [--out DIR]
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
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from engine.cli.analyze import ArgumentParser, fail

if TYPE_CHECKING:
    from engine.book import OpeningBook
    from engine.connect4 import Connect4
    from engine.database import StoneDatabase

#: The layer ply of the shipped 7x6 book, and the stones of its shipped database.
DEFAULT_PLIES = 8
DATABASE_STONES = 12


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="plybot book", description="Build or check the opening book.")
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    b = sub.add_parser("build", help="solve the layer with the workers, then write the book")
    b.add_argument(
        "--plies",
        type=int,
        default=None,
        help="the layer's ply (default 8; a database's stones: 12, or 13)",
    )
    b.add_argument("--variant", default="7x6", help="board WIDTHxHEIGHT (default 7x6)")
    b.add_argument("--chunk-size", type=int, default=None, help="positions per job (default 64)")
    b.add_argument("--layer", type=Path, default=None, help="layer file (progress; resumable)")
    b.add_argument("--out", type=Path, default=None, help="book file (default: the shipped one)")
    b.add_argument("--redis-url", default=None, help="Redis URL (default: REDIS_URL)")
    b.add_argument(
        "--database",
        action="store_true",
        help="build the stones database of --plies stones instead (parts in --out, a directory; "
        "default: the shipped one of those stones, 12 or 13)",
    )
    v = sub.add_parser("verify", help="check the book: negamax consistency and a sample re-solved")
    v.add_argument("--book", type=Path, default=None, help="book file (default: the shipped one)")
    v.add_argument("--sample", type=int, default=20, help="positions to solve again (default 20)")
    v.add_argument("--seed", type=int, default=1, help="random seed of the sample (default 1)")
    v.add_argument(
        "--database",
        type=Path,
        nargs="?",
        const=Path("shipped"),
        default=None,
        help="check the stones database (its parts' directory; default: the shipped one) "
        "instead: a sample re-solved, and book entries against it",
    )
    v.add_argument("--variant", default="7x6", help="the database's board (default 7x6)")
    v.add_argument(
        "--plies", type=int, default=DATABASE_STONES, help="the database's stones (default 12)"
    )
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
    from engine.database import SHIPPED_STONES, Parts, open_database, shipped_parts
    from engine.errors import PlybotError
    from engine.layer import CHUNK_SIZE
    from worker.core.connection import connect
    from worker.core.settings import get_settings
    from worker.process.book_build import BookBuild, BuildError, BuildProgress, DatabaseBuild

    prog = "plybot book build"
    if args.plies is None:
        args.plies = DATABASE_STONES if args.database else DEFAULT_PLIES
    try:
        width, height = Connect4.parse_variant(args.variant)
    except PlybotError as exc:
        return fail(prog, str(exc))
    if not 1 <= args.plies < width * height:
        return fail(prog, f"'{args.plies}': --plies must be in 1..{width * height - 1}")
    size = CHUNK_SIZE if args.chunk_size is None else args.chunk_size
    if size < 1:
        return fail(prog, f"'{size}': --chunk-size must be positive")
    if args.out is None and (width, height) != (7, 6):
        return fail(prog, f"'{args.variant}': give --out for a book or database of another board")
    if args.out is None and args.database and args.plies not in SHIPPED_STONES:
        held = " or ".join(str(n) for n in SHIPPED_STONES)
        why = f"the shipped databases hold {held} stones; give --out for another"
        return fail(prog, f"'{args.plies}': {why}")
    out = args.out or (shipped_parts(args.plies) if args.database else book.SHIPPED_PATH)
    layer = args.layer or out.with_name(f"connect4-{args.variant}-ply{args.plies}.layer")
    settings = get_settings()
    url = args.redis_url or settings.redis_url
    if not url:
        return fail(prog, "no Redis: set REDIS_URL or pass --redis-url (and run plybot worker)")
    try:
        connection = connect(url, settings, socket_timeout=10, socket_connect_timeout=5)
    except ValueError as exc:
        return fail(prog, f"--redis-url: {exc}")
    common = {"width": width, "height": height, "plies": args.plies, "size": size}
    run: BookBuild | DatabaseBuild
    if args.database:
        run = DatabaseBuild(connection, settings, directory=out, **common)
    else:
        run = BookBuild(connection, settings, layer_path=layer, book_path=out, **common)
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

    # A stop by SIGTERM (a supervisor, `kill`) or SIGINT (even where a background start
    # ignored it) ends the build the same way: what is kept is written, then it exits.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.default_int_handler)
    try:
        if isinstance(run, DatabaseBuild):
            run.solve_layer(report)
        else:
            built = run.run(report)
    except BuildError as exc:
        print(file=sys.stderr)
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            f"\n{prog}: stopped; run it again to resume ({out if args.database else layer})",
            file=sys.stderr,
        )
        return 130
    if tty:
        print(file=sys.stderr)
    if isinstance(run, DatabaseBuild):
        database = open_database(Parts(out, width, height, args.plies))
        known = 0 if database is None else len(database)
        print(f"{known:,} positions with {args.plies} stones, in {out}")
        return 0
    size_mb = out.stat().st_size / 1e6
    print(
        f"{len(built):,} positions, complete to ply {built.complete}, in {out} ({size_mb:.2f} MB)"
    )
    return 0


def verify(args: argparse.Namespace) -> int:
    from engine import book

    prog = "plybot book verify"
    if args.database is not None:
        return verify_database(args)
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
    bad = sum(not resolved(position, score, best) for position, score, best in sample)
    print(f"{len(sample) - bad}/{len(sample)} re-solved agree", file=sys.stderr)
    return 1 if wrong or bad else 0


def resolved(position: Connect4, score: int, best: int) -> bool:
    """Solve ``position`` again with a fresh table, and the position after ``best``: True if
    the score is ``score`` and ``best`` keeps it. Prints a line saying so."""
    from engine.solver import Solver

    solver = Solver(position.width, position.height)  # fresh: nothing carried over
    solved = solver.solve(position).score
    after = position.copy()
    after.push(best)  # the best move must keep the score
    kept = after.terminal_score() if after.outcome() is not None else solver.solve(after).score
    ok = solved == score and kept is not None and -kept == score
    said = "ok" if ok else f"WRONG: the solver says {solved}, and {kept} after the move"
    print(f"{position.notation() or '-'} {score} {best + 1}  {said}")
    return ok


def verify_database(args: argparse.Namespace) -> int:
    """A sample of the database re-solved with fresh tables (the score, and that the best
    move keeps it); then, with the book, a sample of the book's deepest entries solved by
    a search that reads the database (and no book) agrees with the book."""

    from engine import book
    from engine.connect4 import Connect4
    from engine.database import SHIPPED_STONES, DatabaseError, Parts, open_database, shipped_parts
    from engine.errors import PlybotError
    from engine.solver import Solver

    prog = "plybot book verify"
    directory = shipped_parts(args.plies) if args.database == Path("shipped") else args.database
    try:
        width, height = Connect4.parse_variant(args.variant)
        database = open_database(Parts(directory, width, height, args.plies))
    except (PlybotError, DatabaseError, ValueError) as exc:
        return fail(prog, str(exc))
    if database is None:
        return fail(prog, f"{directory}: no part of a {args.variant} database there")
    if args.sample < 0:
        return fail(prog, f"'{args.sample}': --sample must be >= 0")
    keys_, planned = database.held_keys()
    print(f"{len(keys_):,} of {planned:,} positions known", file=sys.stderr)
    rng = random.Random(args.seed)
    picked = rng.sample(range(len(keys_)), min(args.sample, len(keys_)))
    bad = 0
    for i in picked:
        position = Connect4.from_key(int(keys_[i]), width, height)
        found = database.lookup(position)
        assert found is not None  # picked among the known slots
        bad += not resolved(position, *found)
    print(f"{len(picked) - bad}/{len(picked)} re-solved agree", file=sys.stderr)
    opened = book.shipped_book(width, height)
    wrong = 0
    if opened is not None:
        deep = [e for e in opened.positions() if args.plies - 3 <= e[0].ply < args.plies]
        sample = rng.sample(deep, min(args.sample, len(deep)))
        reader = Solver(width, height, databases=(database,))
        for position, score, _best in sample:
            searched = reader.solve(position).score
            if searched != score:
                wrong += 1
                print(f"{position.notation()}: {score} in the book, {searched} with the database")
        if deep:
            print(f"{len(sample) - wrong}/{len(sample)} book entries agree", file=sys.stderr)
        else:  # the 13-stone database: its shallower layer is the 12-stone one, below
            print(
                f"no book entry at plies {args.plies - 3}-{args.plies - 1}: none to check",
                file=sys.stderr,
            )
    if (width, height) == (7, 6) and args.plies - 1 in SHIPPED_STONES:  # the 12 under the 13
        parents = open_database(Parts(shipped_parts(args.plies - 1), stones=args.plies - 1))
        if parents is not None:
            wrong += disagreements(parents, database, rng, PARENTS_PER_SAMPLE * args.sample)
    return 1 if bad or wrong else 0


#: Entries of the database one stone shallower checked against the columns it reads from
#: the one verified, for each position re-solved (lookups only: about 0.1 ms each).
PARENTS_PER_SAMPLE = 50


def disagreements(
    parents: StoneDatabase, database: StoneDatabase, rng: random.Random, count: int
) -> int:
    """Check ``count`` random entries of ``parents`` (a stone fewer than ``database``)
    against their columns in ``database``: no column known better than the parent's
    score, its best column worth it, and where every column is known, their best equal
    to it. Prints each disagreement and a summary; returns how many disagreed."""
    from engine.connect4 import Connect4
    from engine.layer import win_in_one

    w, h, stones = parents.width, parents.height, parents.stones
    keys_, _ = parents.held_keys()
    wrong = whole = 0
    picked = rng.sample(range(len(keys_)), min(count, len(keys_)))
    for i in picked:
        position = Connect4.from_key(int(keys_[i]), w, h)
        found = parents.lookup(position)
        assert found is not None  # picked among the known slots
        score, best = found
        columns: dict[int, int | None] = {}
        for column in position.legal_moves():
            child = position.copy()
            child.push(column)
            instant = win_in_one(child)  # not in a database: its player wins at once
            if instant is not None:
                columns[column] = -instant.score
            else:
                entry = database.lookup(child)
                columns[column] = None if entry is None else -entry[0]
        values = [v for v in columns.values() if v is not None]
        complete = len(values) == len(columns)
        whole += complete
        if (
            any(v > score for v in values)
            or columns.get(best) not in (None, score)
            or (complete and max(values) != score)
        ):
            wrong += 1
            shown = " ".join(f"{c + 1}:{v}" for c, v in columns.items())
            print(f"{position.notation()} {score} {best + 1}  WRONG: its columns read {shown}")
    print(
        f"{len(picked) - wrong}/{len(picked)} entries of the {stones}-stone database agree "
        f"with their columns here ({whole} with every column known)",
        file=sys.stderr,
    )
    return wrong


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

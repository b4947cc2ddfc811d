"""An opening book for Connect Four: exact scores and best moves of early positions.

Early positions are the solver's costliest: the empty 7x6 board takes minutes,
a position after four moves seconds. The book holds, for every position where
a ``perfect`` player is to move on its own lines of play up to a number of
plies (whatever the opponent did), the position's exact score and best move,
computed once by this package's own solver (:func:`build`, ``plybot book
build``) and shipped in ``engine/data/``. So a perfect bot plays its opening
moves exactly and at once, as Pons' solver does with its book.

Its lines are those of :func:`lines`: at a ply where the book's player is to
move, only the best move is followed; at the opponent's ply, every move. Both
sides are covered: the book's player moves first on even plies and second on
odd ones.

File format (text, one position per line, ``#`` starts a comment)::

    <moves> <score> <best>

``moves`` is the line that reached the position (1-based column digits, ``-``
for the empty board), ``score`` the exact score from the side to move (Pons'
convention, as :class:`engine.solver.SolveResult`), ``best`` the best move as
a 1-based column in that orientation. Mirror images share an entry.

The book is a read-only :class:`engine.cache.PositionCache`: the solver reads
it as it reads the shared cache (an exact root answers at once), and
:class:`Tiered` puts it in front of another cache.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from engine.cache import EXACT_DEPTH, CacheEntry, PositionCache
from engine.connect4 import Connect4
from engine.errors import PlybotError

if TYPE_CHECKING:
    from engine.solver import Solver

#: The book shipped for the standard board, in the ``engine.data`` package.
SHIPPED_PATH = Path(__file__).parent / "data" / "connect4-7x6.book"


class BookError(PlybotError):
    """A malformed book line; the message quotes it and gives its number."""


@dataclass(frozen=True, slots=True)
class BookLine:
    """One solved position: ``moves`` reach it, ``score`` is exact, ``best`` is 0-based."""

    moves: str
    score: int
    best: int

    def text(self) -> str:
        return f"{self.moves or '-'} {self.score} {self.best + 1}"


class OpeningBook:
    """Exact entries by canonical key, for one board size; a read-only ``PositionCache``."""

    name = "connect4"

    def __init__(self, width: int, height: int, lines: Sequence[BookLine] = ()) -> None:
        self.width = width
        self.height = height
        self.variant = Connect4(width, height).variant
        self._entries: dict[str, CacheEntry] = {}
        self._lines: list[BookLine] = []
        for line in lines:
            self.add(line)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[BookLine]:
        """The lines the book was made of, in order."""
        return iter(self._lines)

    def __contains__(self, position: object) -> bool:
        return isinstance(position, Connect4) and position.key() in self._entries

    def add(self, line: BookLine) -> None:
        """File ``line`` under its position's canonical key (its move made canonical too)."""
        position = Connect4.parse(line.moves, self.variant)
        entry = CacheEntry(line.score, line.score, EXACT_DEPTH, position.to_canonical(line.best))
        if position.key() not in self._entries:
            self._lines.append(line)
        self._entries[position.key()] = entry

    def lookup(self, position: Connect4) -> tuple[int, int] | None:
        """``(score, best move)`` of ``position`` in its own orientation, or ``None``."""
        entry = self._entries.get(position.key())
        if entry is None or entry.best_move is None:
            return None
        return entry.lower, position.from_canonical(entry.best_move)

    def get_many(self, game: str, variant: str, keys: Sequence[str]) -> list[CacheEntry | None]:
        if game != self.name or variant != self.variant:
            return [None] * len(keys)
        return [self._entries.get(key) for key in keys]

    def put_many(self, game: str, variant: str, items: Sequence[tuple[str, CacheEntry]]) -> None:
        """A book is read-only: writes go nowhere."""


class Tiered:
    """A ``PositionCache`` that reads ``first`` (the book), then ``second`` for what it lacks.

    Writes go to ``second`` only. ``second``'s failures are its own business
    (a ``PositionCache`` never raises); a book answers without a round trip.
    """

    def __init__(self, first: PositionCache, second: PositionCache) -> None:
        self.first = first
        self.second = second

    def get_many(self, game: str, variant: str, keys: Sequence[str]) -> list[CacheEntry | None]:
        found = list(self.first.get_many(game, variant, keys))
        missing = [i for i, entry in enumerate(found) if entry is None]
        if missing:
            more = self.second.get_many(game, variant, [keys[i] for i in missing])
            for i, entry in zip(missing, more, strict=True):
                found[i] = entry
        return found

    def put_many(self, game: str, variant: str, items: Sequence[tuple[str, CacheEntry]]) -> None:
        self.second.put_many(game, variant, items)


@cache
def shipped_book(width: int = 7, height: int = 6) -> OpeningBook | None:
    """The book shipped for this board size (loaded once per process), or ``None``."""
    if (width, height) != (7, 6) or not SHIPPED_PATH.is_file():
        return None
    return OpeningBook(width, height, read(SHIPPED_PATH))


def parse(text: str, variant: str = "7x6") -> list[BookLine]:
    """The lines of a book file for ``variant``.

    Raises ``BookError`` (a ``ValueError``) quoting a malformed line.
    """
    lines = []
    for number, raw in enumerate(text.splitlines(), 1):
        body = raw.split("#", 1)[0].strip()
        if not body:
            continue
        fields = body.split()
        try:
            if len(fields) != 3:
                raise ValueError("expected '<moves> <score> <best>'")
            moves = "" if fields[0] == "-" else fields[0]
            position = Connect4.parse(moves, variant)
            best = int(fields[2]) - 1
            if not (0 <= best < position.width and position.can_play(best)):
                raise ValueError(f"column {fields[2]} is not playable")
            lines.append(BookLine(moves, int(fields[1]), best))
        except ValueError as exc:
            raise BookError(f"'{raw.strip()}': {exc} (book line {number})") from None
    return lines


def read(path: Path, variant: str = "7x6") -> list[BookLine]:
    """The lines of the book file at ``path`` (none if it does not exist)."""
    if not path.exists():
        return []
    return parse(path.read_text(encoding="ascii"), variant)


def lines(
    known: Callable[[Connect4], int | None], plies: int, width: int = 7, height: int = 6
) -> Iterator[Connect4]:
    """The book's positions to solve, in order of ply, each once up to mirror images.

    ``known(position)`` gives the best move of a position already yielded
    (solved by the caller in the meantime) or ``None``. A position is yielded
    when its player is to move before ply ``plies`` on the book's lines: from
    the empty board (that player first) and from every first move (that player
    second), following the best move at the player's plies and every move at
    the opponent's. Positions already decided are skipped.
    """
    empty = Connect4(width, height)
    second: list[Connect4] = []
    for column in empty.legal_moves():
        child = empty.copy()
        child.push(column)
        second.append(child)
    levels = {0: [empty], 1: second}
    for ply in range(plies):
        seen: dict[str, Connect4] = {}
        for position in levels.pop(ply, []):
            if position.outcome() is None:
                seen.setdefault(position.key(), position)
        ordered = sorted(seen.values(), key=lambda q: q.key())
        yield from ordered
        after: list[Connect4] = []
        for position in ordered:
            best = known(position)
            if best is None:
                continue  # not solved: its line stops here
            mine = position.copy()
            mine.push(best)
            if mine.outcome() is not None:
                continue
            for reply in mine.legal_moves():
                child = mine.copy()
                child.push(reply)
                after.append(child)
        levels[ply + 2] = after


def build(
    solver: Solver,
    plies: int,
    done: Sequence[BookLine] = (),
    on_line: Callable[[BookLine, float], None] | None = None,
) -> OpeningBook:
    """Solve the book's positions up to ``plies`` with ``solver`` (exact, no deadline).

    Lines in ``done`` (an earlier, interrupted build) are not solved again.
    ``on_line(line, seconds)`` is called after each new solve (to append it
    to a file as it goes: a build of many minutes can be resumed). The solver
    should have no cache of its own: a book is the solver's work alone.
    """
    book = OpeningBook(solver.width, solver.height, done)

    def known(position: Connect4) -> int | None:
        found = book.lookup(position)
        return None if found is None else found[1]

    for position in lines(known, plies, solver.width, solver.height):
        if position in book:
            continue
        start = time.perf_counter()
        result = solver.solve(position)
        if not result.complete or result.score is None or result.best_move is None:
            raise RuntimeError(f"'{position.notation()}': the solver did not finish")
        line = BookLine(position.notation(), result.score, result.best_move)
        book.add(line)
        if on_line is not None:
            on_line(line, time.perf_counter() - start)
    return book

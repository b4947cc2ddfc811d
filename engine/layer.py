"""The complete opening book's raw material: one layer of positions, solved in chunks.

A complete book up to ply ``N`` holds every distinct position (mirror images
merged) of plies ``0..N``. Only the layer at ply ``N`` is searched; every
shallower position is derived from its children by negamax over the book
(:func:`derive`), with no search at all.

The layer is cut into chunks (:func:`chunks`) that any number of processes
solve independently (:func:`solve_chunk`): the service's workers take them from
a queue, the builder collects their lines. A chunk holds the children of a run
of consecutive parents (positions at ply ``N - 1``, ordered by canonical key):
siblings share most of their subtrees, so solving them one after another with
one transposition table costs about half as much as solving positions in a
random order (measured on 7x6 at ply 8: 0.23 s against 0.40 s a position).

Which positions the layer holds: ongoing ones whose player to move has no
immediate win (those are scored by rule). Chunk ``i`` is the same for the
same ``(width, height, plies, size)`` on every machine: the chunking depends
only on the positions, never on what is already solved, so a build resumes by
skipping the positions it already has.

Lines are :class:`engine.book.BookLine`: ``<moves> <score> <best>``, the
score exact from the side to move (Pons' convention), ``best`` a column
reaching it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from engine.book import BookLine
from engine.connect4 import Connect4
from engine.solver import Solver

#: Positions per chunk by default: about 15 to 30 seconds of one core on 7x6 at ply 8.
CHUNK_SIZE = 64


def positions_at(ply: int, width: int = 7, height: int = 6) -> list[Connect4]:
    """Every distinct ongoing position after ``ply`` moves, one per mirror pair, by key.

    Cost: about a second in pure Python for ply 8 of 7x6 (92,244 positions
    reached, 91,295 ongoing).
    """
    level = {Connect4(width, height).key(): Connect4(width, height)}
    for _ in range(ply):
        after: dict[str, Connect4] = {}
        for position in level.values():
            if position.outcome() is not None:
                continue
            for column in position.legal_moves():
                child = position.copy()
                child.push(column)
                after.setdefault(child.key(), child)
        level = after
    ongoing = (q for q in level.values() if q.outcome() is None)
    return sorted(ongoing, key=_key_order)


def _key_order(position: Connect4) -> int:
    return int(position.key(), 16)


def needs_search(position: Connect4) -> bool:
    """A layer position the solver must solve: ongoing, and no win in one for the side to move."""
    return position.outcome() is None and not position.winning_moves()


@dataclass(frozen=True, slots=True)
class Chunk:
    """Chunk ``index`` of a layer: the notations of its positions, siblings together."""

    index: int
    notations: tuple[str, ...]


def chunks(plies: int, width: int = 7, height: int = 6, size: int = CHUNK_SIZE) -> list[Chunk]:
    """The layer at ply ``plies``, cut into chunks of about ``size`` positions.

    Each position needing a search is in exactly one chunk: with its first
    parent in key order. Precondition: ``plies >= 1`` and ``size >= 1``.
    """
    if plies < 1 or size < 1:
        raise ValueError(f"'{plies}, {size}': chunks need plies >= 1 and size >= 1")
    taken: set[str] = set()
    out: list[Chunk] = []
    current: list[str] = []
    for parent in positions_at(plies - 1, width, height):
        for column in parent.legal_moves():
            child = parent.copy()
            child.push(column)
            key = child.key()
            if key in taken or not needs_search(child):
                continue
            taken.add(key)
            current.append(child.notation())
        if len(current) >= size:
            out.append(Chunk(len(out), tuple(current)))
            current = []
    if current:
        out.append(Chunk(len(out), tuple(current)))
    return out


def solve_chunk(solver: Solver, notations: Sequence[str]) -> list[BookLine]:
    """Solve ``notations`` exactly, in order, with ``solver``'s table kept between them.

    One compiled call, no deadline. Postcondition: one line per notation, in
    order, with its exact score and a best move; if ``solver`` was interrupted
    (:meth:`Solver.interrupt`, from another thread), the lines of the positions
    solved before it, in order. Raises ``ValueError`` (the parser's own) for a
    bad notation, before solving any.
    """
    batch = solver.run_batch(list(notations), strict=True)
    lines = []
    for i, notation in enumerate(notations):
        if batch.aborted(i):
            break
        result = batch.result(i)  # exact: strict, so an unsolved position raised
        assert result.best_move is not None
        lines.append(BookLine(notation, result.score, result.best_move))
    return lines


def win_in_one(position: Connect4) -> BookLine | None:
    """The line of a position whose player to move wins at once, else ``None``."""
    wins = position.winning_moves()
    if not wins:
        return None
    return BookLine(position.notation(), position.score_range()[1], wins[0])


def derive(
    layer: Iterable[BookLine], plies: int, width: int = 7, height: int = 6
) -> Iterator[BookLine]:
    """Every position of plies ``0..plies``, from the solved layer, by negamax over children.

    Yields layer lines first (as given, plus win-in-one positions of the
    layer), then ply ``plies - 1`` down to 0. The best move is the first
    column, centre first, that reaches the score. Raises ``KeyError`` naming
    a layer position that ``layer`` lacks.
    """
    known: dict[str, tuple[int, int, Connect4]] = {}  # key -> (score, best, position)

    def keep(line: BookLine, position: Connect4) -> BookLine:
        known[position.key()] = (line.score, line.best, position)
        return line

    for line in layer:
        yield keep(line, Connect4.parse(line.moves, f"{width}x{height}"))
    for position in positions_at(plies, width, height):
        if position.key() in known:
            continue
        instant = win_in_one(position)
        if instant is None:
            raise KeyError(f"'{position.notation()}': not in the solved layer")
        yield keep(instant, position)
    for ply in range(plies - 1, -1, -1):
        for position in positions_at(ply, width, height):
            yield keep(_negamax(position, known), position)


def _negamax(position: Connect4, known: dict[str, tuple[int, int, Connect4]]) -> BookLine:
    instant = win_in_one(position)
    if instant is not None:
        return instant
    best_score, best_move = -99, -1
    for column in position.legal_moves():  # centre first
        child = position.copy()
        child.push(column)
        # A finished child is a draw by a full board (wins in one were taken above).
        score = 0 if child.outcome() is not None else -known[child.key()][0]
        if score > best_score:
            best_score, best_move = score, column
    return BookLine(position.notation(), best_score, best_move)

"""What the shared cache already knows about a position: its one reader.

The search, the solver and the analysis (and the service's client, through
:func:`cached_exact`) all read what earlier work proved through this module.
The solver's own ladder (:meth:`engine.solver.Solver.known`) asks the opening
book and the 12-stone database first, inside its compiled core, and this
module's reader only for what they do not hold:

* :class:`Known` is the one validated record. :func:`check` turns whatever a
  :class:`~engine.cache.PositionCache` answered into one, against the position
  it is for, or into ``None``: a malformed entry, a best move that is not
  playable there, or proven bounds that no score of the position can meet.
  Proven bounds wider than the position allows are narrowed to
  ``Game.score_range()`` (the search stores "a win at least this quick" up to
  the game's best score), so every reader sees the same, possible, bounds.
* :func:`read` asks one source for many positions in one ``get_many``; any
  failure reads as "nothing known", never as an error.
* :func:`neighbourhood` reads a root, its children and (early in the game) its
  grandchildren from the cache in one round trip: the solver seeds its table
  with them. The analysis first checks whether the cache
  alone answers exactly (:func:`exact_answer` on the root and its children)
  and hands what it read over, so one analysis reads each key once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from engine.cache import EXACT_DEPTH, CacheEntry, PositionCache
from engine.game import Game

#: Grandchildren are read below this ply (where the solver's searches are costly).
GRANDCHILDREN_BEFORE_PLY = 16


@dataclass(frozen=True, slots=True)
class Known:
    """A checked record of one position, from its side to move.

    ``lower <= s <= upper``, where ``s`` is the exact score when ``proven``
    (both within the position's ``score_range()``), else the value of a
    ``depth``-ply heuristic search. ``move`` is a best move in the position's own
    orientation and playable there, or ``None``.
    """

    lower: int
    upper: int
    depth: int
    move: int | None

    @property
    def proven(self) -> bool:
        """The bounds come from a complete solve (or a book)."""
        return self.depth == EXACT_DEPTH

    @property
    def exact(self) -> bool:
        """Proven, with the score pinned down."""
        return self.depth == EXACT_DEPTH and self.lower == self.upper


def check(entry: object, position: Game) -> Known | None:
    """``entry`` as a :class:`Known` record of ``position``, or ``None`` if it cannot be one.

    Never raises: whatever a cache holds, the worst it can do is be ignored.
    """
    try:
        if not isinstance(entry, CacheEntry):
            return None
        lower, upper, depth, move = entry.lower, entry.upper, entry.depth, entry.best_move
        if not (type(lower) is int and type(upper) is int and type(depth) is int):
            return None
        if depth >= EXACT_DEPTH:
            lowest, highest = position.score_range()
            lower, upper, depth = max(lower, lowest), min(upper, highest), EXACT_DEPTH
        if lower > upper or depth < 0:
            return None
        if move is not None:
            if type(move) is not int or move < 0:
                return None
            move = position.from_canonical(move)
            if move not in position.legal_moves():
                return None
        return Known(lower, upper, depth, move)
    except Exception:
        return None


def read(
    source: PositionCache | None, positions: Sequence[Game], keys: Sequence[str] | None = None
) -> list[Known | None]:
    """What ``source`` knows of each position (one game and variant), in one ``get_many``.

    Each distinct key is asked once. One entry per position, in order; all
    ``None`` when there is no source, or when it fails or answers with the
    wrong number of entries. ``keys``: the positions' keys, if the caller has them.
    """
    nothing: list[Known | None] = [None] * len(positions)
    if source is None or not positions:
        return nothing
    first = positions[0]
    if keys is None:
        keys = [p.key() for p in positions]
    unique = list(dict.fromkeys(keys))  # mirror images share a key: ask it once
    try:
        entries = list(source.get_many(first.name, first.variant, unique))
    except Exception:
        return nothing
    if len(entries) != len(unique):
        return nothing
    by_key = dict(zip(unique, entries, strict=True))
    return [check(by_key[key], p) for key, p in zip(keys, positions, strict=True)]


@dataclass
class Neighbourhood:
    """A root, its ongoing children and (before :data:`GRANDCHILDREN_BEFORE_PLY`) their
    ongoing grandchildren, each with what the shared cache knows of it.

    ``positions[0]`` is the root; ``known[i]`` is the cache's record of
    ``positions[i]``, else ``None``.
    """

    positions: list[Game]
    known: list[Known | None]


def neighbourhood(
    position: Game,
    cache: PositionCache | None,
    *,
    cached: Mapping[str, Known | None] | None = None,
) -> Neighbourhood:
    """Read ``position``'s neighbourhood from the shared cache in one round trip.

    The cache is not asked the keys of ``cached``: records already read from
    it, by key (the analysis reads the root and its children first, to answer
    from the cache alone). The book and the database are not read here: the
    solver's core asks them itself, at the root and at every node of a search.
    """
    positions: list[Game] = [position]
    for move in position.legal_moves():
        child = position.copy()
        child.push(move)
        if child.outcome() is not None:
            continue
        positions.append(child)
        if position.ply < GRANDCHILDREN_BEFORE_PLY:
            for reply in child.legal_moves():
                grandchild = child.copy()
                grandchild.push(reply)
                if grandchild.outcome() is None:
                    positions.append(grandchild)
    keys = [p.key() for p in positions]
    cached = cached or {}
    found: list[Known | None] = [cached.get(key) for key in keys]
    ask = [i for i, key in enumerate(keys) if key not in cached]
    asked = read(cache, [positions[i] for i in ask], [keys[i] for i in ask])
    for i, record in zip(ask, asked, strict=True):
        found[i] = record
    return Neighbourhood(positions, found)


def exact_answer(
    position: Game,
    root: Known | None,
    children: Mapping[int, Known | None],
    *,
    all_moves: bool,
) -> tuple[int, int, dict[int, int] | None] | None:
    """``(best move, score, every move's score or None)`` from exact records alone, or ``None``.

    Best move only: the root's record, exact and with a best move. Every move:
    each child's record exact (a move that ends the game is scored by playing
    it); the root's record, when exact, must agree with the best of them (a
    cache that contradicts itself is a miss) and names the best move among
    equals, else the first best in the game's order. Scores are from the side
    to move; the moves come in the game's order.
    """
    if not all_moves:
        if root is None or not root.exact or root.move is None:
            return None
        return root.move, root.lower, None
    order = position.legal_moves()
    scores: dict[int, int] = {}
    for move in order:
        position.push(move)
        try:
            if position.outcome() is not None:
                scores[move] = -position.terminal_score()
                continue
        finally:
            position.pop()
        record = children.get(move)
        if record is None or not record.exact:
            return None
        scores[move] = -record.lower
    score = max(scores.values())
    root_exact = root is not None and root.exact
    if root is not None and root_exact and root.lower != score:
        return None
    best = next(m for m in order if scores[m] == score)
    if root is not None and root_exact and root.move is not None and scores[root.move] == score:
        best = root.move
    return best, score, scores

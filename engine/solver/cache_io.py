"""What the solver reads of the shared cache before a solve, and writes after.

The last rung of the solver's lookup ladder (the book and the database are the
core's own, asked at every node). Read once per solve (:func:`read`), through
:mod:`engine.known`: the root, its children and (early in the game) its
grandchildren, in one round trip, unless
the caller already read that neighbourhood (the analysis does, to check the
cache alone first) and hands it over. Proven bounds seed the table; an exact
root with its best move answers at once. A finished solve writes the root
(and, for an analysis, the children) back as exact entries (:func:`write`).
The cache can never make a solve fail or be wrong: errors and malformed
entries are ignored (:func:`engine.known.check`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine import known as known_
from engine.answer import Analysis
from engine.cache import EXACT_DEPTH, CacheEntry
from engine.connect4 import Connect4
from engine.solver.results import settled, weak_value

if TYPE_CHECKING:
    from engine.known import Neighbourhood
    from engine.solver.run import Run


def read(run: Run, analyze: bool, seen: Neighbourhood | None = None) -> Analysis | None:
    """Seed ``run``'s table with what the shared cache knows around its root; the answer
    if the root answers (as :func:`answer`). A root the core's known tiers hold
    (``run.root_known`` set) keeps their answer: the cache adds only its neighbours.

    ``seen``: the root's neighbourhood as already read from this solver's cache
    (else it is read here, in one round trip).
    """
    solver = run.solver
    if seen is None:
        if solver.cache is None:
            return None
        seen = known_.neighbourhood(run.position, solver.cache)
    for q, record in zip(seen.positions[1:], seen.known[1:], strict=True):
        if record is not None and record.proven:
            assert isinstance(q, Connect4)  # seed reads bitboards: the root is Connect Four
            run.seed(q, record.lower, record.upper, -1 if record.move is None else record.move)
    root = seen.known[0]
    if run.root_known is not None or root is None or not root.proven:
        return None
    p = run.position
    move = -1 if root.move is None else root.move
    run.root_known = (root.lower, root.upper, move)
    if move >= 0 or root.lower == root.upper:
        run.seed(p, root.lower, root.upper, move)
    if analyze or move < 0:
        return None
    return answer(run, root.lower, root.upper, move)


def answer(run: Run, lo: int, hi: int, move: int) -> Analysis | None:
    """The exact answer of a solve whose root is known to score ``lo..hi`` with best ``move``,
    without search (``cache_hit``, no nodes, ``pv`` the move alone); ``None`` if the bounds
    do not answer it (wide, or the sign unsettled)."""
    if run.weak and settled(lo, hi, True):
        score = weak_value(lo, hi)
    elif lo == hi and not run.weak:
        score = lo
    else:
        return None
    return Analysis(
        best_move=move,
        score=score,
        exact=True,
        pv=[move],
        moves=None,
        depth=run.depth(),
        nodes=0,
        time_ms=run.elapsed_ms(),
        cache_hit=True,
        lower=score,
        upper=score,
    )


def write(run: Run, score: int, best: int, moves: dict[int, int]) -> None:
    """Write a finished solve's root (its ``score``, a weak solve's sign, and ``best`` move)
    and an analysis's children (``moves``: each column's score) to the shared cache."""
    cache = run.solver.cache
    if cache is None:
        return
    p = run.position
    lo_limit, hi_limit = p.score_range()
    if run.weak:
        lo, hi = {1: (1, hi_limit), 0: (0, 0), -1: (lo_limit, -1)}[score]
    else:
        lo = hi = score
    items = [(p.key(), CacheEntry(lo, hi, EXACT_DEPTH, p.to_canonical(best)))]
    wins = set(p.winning_moves())
    for column, value in moves.items():
        if column in wins:
            continue
        child = p.copy()
        child.push(column)
        if run.weak:
            c_lo, c_hi = {1: (-1, -1), 0: (0, 0), -1: (1, 1)}[value]
            if c_lo != 0:  # a sign, not a score: keep it a bound
                c_lo, c_hi = (c_lo, 99) if c_lo > 0 else (-99, c_hi)
                lowest, highest = child.score_range()
                c_lo, c_hi = max(c_lo, lowest), min(c_hi, highest)
        else:
            c_lo = c_hi = -value
        items.append((child.key(), CacheEntry(c_lo, c_hi, EXACT_DEPTH, None)))
    try:
        cache.put_many(p.name, p.variant, items)
    except Exception:
        return

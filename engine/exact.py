"""An analysis by the exact solver: the cache alone first, then the solver, then honest estimates.

For a game with an exact solver (``Game.exact_solver``: Connect Four). An
exact answer from the shared cache alone comes first (:func:`cached_exact`),
before the solver is loaded or its table touched; otherwise the solver is
seeded with what the book and the cache know around the position
(:func:`engine.known.neighbourhood`), each key read once. A solve that cannot
finish before its deadline hands over to the generic search
(:mod:`engine.searched`), whose estimates are made consistent with what the
solver proved (:func:`honest`).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

from engine import known
from engine.answer import Analysis, Progress, ProgressCallback, elapsed_ms, join_notes
from engine.cache import PositionCache
from engine.connect4 import Connect4
from engine.pool import default_solver
from engine.search import SearchLimits
from engine.searched import searched

if TYPE_CHECKING:
    from engine.solver import Solver

#: Share of a time budget (or of the time to a deadline) the Connect Four solver may use
#: before the generic search takes over.
SOLVER_SHARE = 0.6


def solver_share(deadline: float | None) -> float | None:
    """The solver's deadline: :data:`SOLVER_SHARE` of the time left before ``deadline``.

    Call it after the solver is loaded, so a first load never eats the solver's share.
    """
    if deadline is None:
        return None
    now = time.monotonic()
    return now + max(0.0, deadline - now) * SOLVER_SHARE


def solve_exact(
    position: Connect4,
    solver: Solver,
    *,
    all_moves: bool,
    deadline: float | None,
    node_limit: int | None = None,
    on_progress: ProgressCallback | None = None,
    start: float,
    seen: known.Neighbourhood | None = None,
    pv: bool = True,
) -> Analysis:
    """The solver's answer (exact, or its proven bounds where a limit came first), each of its
    steps handed to ``on_progress`` (with ``node_limit``: none). Times count from ``start``.

    ``seen``: the neighbourhood already read from the solver's book and cache. With
    ``pv=False`` the line is only the best move (a bot move needs no more).
    """
    if node_limit is not None:
        answer = solver.analyze if all_moves else solver.solve
        return answer(
            position, deadline=deadline, node_limit=node_limit, known=seen, start=start, pv=pv
        )
    final: Analysis | None = None
    for item in solver.iter_solve(
        position, deadline=deadline, analyze=all_moves, known=seen, start=start, pv=pv
    ):
        if isinstance(item, Progress):
            if on_progress is not None:
                on_progress(item)
        else:
            final = item
    if final is None:  # the solver's iterator always ends with its answer
        raise RuntimeError("the solver ended without an answer")
    return final


def cached_exact(
    position: Connect4, cache: PositionCache, *, all_moves: bool, start: float
) -> Analysis | None:
    """The exact answer from the shared cache alone, in one ``get_many``, or ``None``.

    Reads the root (and, for ``all_moves``, its ongoing children) and answers
    from them as :func:`engine.known.exact_answer` does. A malformed or
    inconsistent entry is a miss (the solver then settles it), never a wrong
    answer. The service calls it before queueing a job.
    """
    return _from_cache(position, cache, all_moves, start)[0]


def _from_cache(
    position: Connect4, cache: PositionCache, all_moves: bool, start: float
) -> tuple[Analysis | None, dict[str, known.Known | None]]:
    """:func:`cached_exact`'s answer, and on a miss the records it read by key (for the solver)."""
    positions: list[Connect4] = [position]
    children: dict[int, int] = {}
    if all_moves:
        for column in position.legal_moves():
            child = position.copy()
            child.push(column)
            if child.outcome() is None:
                children[column] = len(positions)
                positions.append(child)
    keys = [q.key() for q in positions]
    records = known.read(cache, positions, keys)
    by_child = {c: records[i] for c, i in children.items()}
    answer = _exact_from(position, records[0], by_child, all_moves, start)
    if answer is not None:
        return answer, {}
    return None, dict(zip(keys, records, strict=True))


def _exact_from(
    position: Connect4,
    root: known.Known | None,
    children: dict[int, known.Known | None],
    all_moves: bool,
    start: float,
) -> Analysis | None:
    """The :class:`Analysis` that :func:`engine.known.exact_answer` makes of these records."""
    answer = known.exact_answer(position, root, children, all_moves=all_moves)
    if answer is None:
        return None
    best_move, score, scores = answer
    moves = None if scores is None else {c: scores[c] for c in sorted(scores)}
    return Analysis(
        best_move=best_move,
        score=score,
        exact=True,
        pv=[best_move],
        moves=moves,
        depth=position.width * position.height - position.ply,
        nodes=0,
        time_ms=elapsed_ms(start),
        cache_hit=True,
        lower=score,
        upper=score,
        bounds=None if moves is None else {c: (m, m) for c, m in moves.items()},
    )


def solve_then_search(
    position: Connect4,
    deadline: float | None,
    all_moves: bool,
    cache: PositionCache | None,
    solver: Solver | None,
    on_progress: ProgressCallback | None,
    start: float,
    mode: str,
) -> Analysis:
    """The solver, and if it cannot finish before ``deadline``, the generic search until then.

    An exact answer from the cache alone comes first (:func:`cached_exact`),
    before the solver is loaded or its table touched. Otherwise the solver is
    seeded with the root's neighbourhood (:func:`engine.known.neighbourhood`),
    whose cache reads leave out the keys already read: no key is read twice.
    """
    read: dict[str, known.Known | None] = {}
    if solver is not None and solver.settles(position, all_moves):
        cache = None  # the book, the database or the table answer: no round trip to the cache
    if cache is not None:
        answer, read = _from_cache(position, cache, all_moves, start)
        if answer is not None:
            return answer
    if solver is None:
        solver = default_solver(position.width, position.height, cache)
    seen = None  # a pooled solver made with another cache reads its own (or nothing)
    if solver.cache is cache and cache is not None:
        seen = known.neighbourhood(position, cache, cached=read)
    solver_deadline = solver_share(deadline)
    result = solve_exact(
        position,
        solver,
        all_moves=all_moves,
        deadline=solver_deadline,
        on_progress=on_progress,
        start=start,
        seen=seen,
    )
    if result.exact:
        return result
    what = "the time budget" if mode == "time" else "the deadline"
    by_search = searched(
        position,
        SearchLimits(deadline=deadline),
        all_moves,
        cache,
        on_progress,
        start,
        nodes_before=result.nodes,
    )
    return honest(position, by_search, result, what)


def honest(position: Connect4, searched: Analysis, proven: Analysis, what: str) -> Analysis:
    """A heuristic ``searched`` answer made consistent with what the solver ``proven``.

    ``proven``: the solver's unfinished answer (its ``lower``, ``upper`` and,
    for an analysis of every column, ``bounds``). Exact columns keep their
    exact value; every estimate is clamped into its proven bounds; the best
    move is the estimate's best among the columns not proven worse than
    another; the note says what is exact and what is not.
    """
    lower, upper = proven.lower, proven.upper
    assert lower is not None
    assert upper is not None
    bounds = dict(proven.bounds) if proven.bounds is not None else None
    if searched.exact:  # the search itself settled every figure
        return replace(searched, lower=searched.score, upper=searched.score)
    moves = dict(searched.moves) if searched.moves is not None else None
    if bounds is not None and moves is not None:
        for column, (lo, hi) in bounds.items():
            if column in moves:
                moves[column] = min(max(moves[column], lo), hi)
    best = searched.best_move
    if bounds:
        floor = max(lo for lo, _ in bounds.values())
        open_columns = [c for c in position.legal_moves() if bounds[c][1] >= floor]
        if best not in open_columns:
            rank = moves or {}
            best = max(open_columns, key=lambda c: (rank.get(c, floor), bounds[c][0]))
    score = min(max(searched.score, lower), upper)
    if moves is not None and best is not None and best in moves:
        score = min(max(moves[best], lower), upper)
    exact_columns = sorted(c for c, (lo, hi) in (bounds or {}).items() if lo == hi)
    if lower == upper:
        known = f"the exact score is {lower}"
    else:
        known = f"the exact score is proven between {lower} and {upper}"
    parts = [f"{what}: the exact solve did not finish; {known}"]
    if bounds is not None:
        if exact_columns:
            names = ", ".join(position.move_name(c) for c in exact_columns)
            parts.append(f"exact: column {names}")
        parts.append("every other figure is an estimate within its proven bounds")
    else:
        parts.append("the score shown is an estimate within them")
    pv = searched.pv if searched.pv[:1] == [best] else ([best] if best is not None else [])
    return Analysis(
        best_move=best,
        score=score,
        exact=False,
        pv=list(pv),
        moves=moves,
        depth=searched.depth,
        nodes=searched.nodes,
        time_ms=searched.time_ms,
        cache_hit=searched.cache_hit,
        note=join_notes(searched.note, "; ".join(parts)),
        lower=lower,
        upper=upper,
        bounds=bounds,
    )

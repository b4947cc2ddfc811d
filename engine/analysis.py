"""One entry point for analysis: what the service's worker (and ``plybot analyze``) calls.

Modes:

* ``"solve"``: the exact value. Connect Four goes to the compiled solver
  (``engine.solver``), whose progress events are each narrowing of its
  window; any other game gets a generic search to the end of every line.
* ``"depth"``: the generic search (``engine.search``) to ``depth`` plies.
* ``"time"``: the generic search for ``time_ms``. For Connect Four, when the
  solver is loaded in this process (or given), it first gets
  :data:`SOLVER_SHARE` of the budget (an exact answer is worth more than two
  more plies of heuristic search); when it cannot finish, the generic search
  gets the rest and its deepest result is reported, with a note saying so.
  A cold solver is not loaded inside a time budget.

An absolute ``deadline`` (``time.monotonic()``) bounds every mode and is never
overrun: a solve that cannot finish by then falls back the same way as the
``"time"`` mode. Scores are from the side to move in the game's convention
(Connect Four 7x6: Pascal Pons', ``22 - stones`` of the winner).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from engine.book import shipped_book
from engine.cache import CacheEntry, PositionCache
from engine.connect4 import Connect4
from engine.errors import PlybotError
from engine.game import Game, has_exact_solver, require_ongoing
from engine.scores import moves_to_end, score_words
from engine.search import SearchLimits, SearchProgress, SearchResult, iter_search
from engine.vocabulary import MODES, Mode

if TYPE_CHECKING:
    from engine.solver import Solver, SolveResult

__all__ = [
    "MODES",
    "SOLVER_SHARE",
    "Analysis",
    "Mode",
    "Progress",
    "analyze",
    "cached_exact",
    "default_solver",
    "moves_to_end",
    "score_words",
    "solve_exact",
    "solver_share",
    "warm_solver",
]


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


@dataclass(frozen=True)
class Analysis:
    """The answer about one position, from the side to move.

    ``exact``: ``score`` is the game's exact value (for Connect Four, Pons'
    convention; a win ``> 0`` is ``max stones + 1 - winner's stones``).
    Otherwise it is the heuristic value of a ``depth``-ply search. ``moves``
    (when asked) maps each legal move (0-based) to its score on the same
    footing; ``depth`` is the plies searched (the remaining plies of the game
    for an exact solve). ``note`` explains a fallback (e.g. a deadline) and
    says which figures are estimates.

    Proven bounds (Connect Four's solver, exact units): ``lower <= exact score
    <= upper`` (``None`` when nothing is proven), and ``bounds`` maps each move
    to its proven ``(lower, upper)`` (equal: that move is exact). Invariants:
    an estimate never contradicts a proven bound (it is clamped into it), and
    ``best_move`` is never a move proven worse than another.
    """

    best_move: int | None
    score: int
    exact: bool
    pv: list[int]
    moves: dict[int, int] | None
    depth: int
    nodes: int
    time_ms: float
    cache_hit: bool
    note: str = ""
    lower: int | None = None
    upper: int | None = None
    bounds: dict[int, tuple[int, int]] | None = None


@dataclass(frozen=True)
class Progress:
    """A step of an analysis under way: a completed depth, or a narrower solver window.

    For a solver step ``lower``/``upper`` bound the exact score, ``score`` is
    ``lower`` and ``depth`` counts the window's narrowings; ``bounds`` (an
    analysis of every column) each column's proven ``(lower, upper)`` so far.
    """

    depth: int
    score: int
    exact: bool
    pv: list[int]
    nodes: int
    time_ms: float
    lower: int | None = None
    upper: int | None = None
    bounds: dict[int, tuple[int, int]] | None = None


ProgressCallback = Callable[[Progress], None]

_solvers: dict[tuple[int, int], Solver] = {}


def default_solver(width: int, height: int, cache: PositionCache | None = None) -> Solver:
    """The process's solver for this board size: its table survives from one call to the next.

    The first call in a process loads the compiled core (about two seconds
    from numba's on-disk cache; a worker does it at start). The solver reads
    the shipped opening book (:func:`engine.book.shipped_book`) before ``cache``. A different
    ``cache`` object than the one the solver was made with gets a new solver
    (the cache is fixed at construction).
    """
    from engine.solver import Solver

    solver = _solvers.get((width, height))
    if solver is None or (cache is not None and solver.cache is not cache):
        solver = Solver(width, height, cache=cache, book=shipped_book(width, height))
        solver.warm_up()
        _solvers[(width, height)] = solver
    return solver


def warm_solver(width: int, height: int, cache: PositionCache | None = None) -> Solver | None:
    """The process's solver if it is already loaded (with this cache), else ``None``.

    For time-boxed work that may do without it: loading must never eat a time budget.
    """
    solver = _solvers.get((width, height))
    if solver is None or (cache is not None and solver.cache is not cache):
        return None
    return solver


def analyze(
    position: Game,
    *,
    mode: Mode | str,
    depth: int | None = None,
    time_ms: int | float | None = None,
    all_moves: bool = False,
    deadline: float | None = None,
    cache: PositionCache | None = None,
    solver: Solver | None = None,
    on_progress: ProgressCallback | None = None,
) -> Analysis:
    """Analyse ``position`` (left unchanged) in ``mode``; see the module docstring.

    Raises ``GameOverError`` for a finished position, and ``PlybotError``
    (a ``ValueError``) for an unknown mode or a missing/invalid ``depth`` or
    ``time_ms``.
    """
    require_ongoing(position)
    start = time.monotonic()
    if mode == "depth":
        if depth is None or depth < 1:
            raise PlybotError(f"'{depth}': the depth mode needs a depth of at least 1")
        limits = SearchLimits(depth=depth, deadline=deadline)
        return _searched(position, limits, all_moves, cache, on_progress, start)
    if mode == "time":
        if time_ms is None or time_ms <= 0:
            raise PlybotError(f"'{time_ms}': the time mode needs a time_ms above 0")
        budget_end = start + time_ms / 1000
        end = budget_end if deadline is None else min(deadline, budget_end)
        if has_exact_solver(position):
            solver = solver or warm_solver(position.width, position.height, cache)
        if has_exact_solver(position) and solver is not None:
            return _solve_then_search(
                position, end, all_moves, cache, solver, on_progress, start, "time"
            )
        limits = SearchLimits(deadline=end)
        return _searched(position, limits, all_moves, cache, on_progress, start)
    if mode == "solve":
        if has_exact_solver(position):
            return _solve_then_search(
                position, deadline, all_moves, cache, solver, on_progress, start, "solve"
            )
        limits = SearchLimits(deadline=deadline)
        return _searched(position, limits, all_moves, cache, on_progress, start)
    raise PlybotError(f"'{mode}': unknown analysis mode (known: {', '.join(MODES)})")


def _ms(start: float) -> float:
    return (time.monotonic() - start) * 1000


def _progress_of(step: SearchProgress, start: float) -> Progress:
    return Progress(
        depth=step.depth,
        score=step.score,
        exact=step.decided,
        pv=list(step.pv),
        nodes=step.nodes,
        time_ms=_ms(start),
    )


def run_search(
    position: Game,
    limits: SearchLimits,
    *,
    all_moves: bool,
    cache: PositionCache | None,
    on_progress: ProgressCallback | None,
    start: float,
) -> SearchResult:
    """The generic search, its progress relayed as :class:`Progress` (times from ``start``)."""
    steps = iter_search(position, limits, all_moves=all_moves, cache=cache)
    while True:
        try:
            step = next(steps)
        except StopIteration as stop:
            result: SearchResult = stop.value
            return result
        if on_progress is not None:
            on_progress(_progress_of(step, start))


def _searched(
    position: Game,
    limits: SearchLimits,
    all_moves: bool,
    cache: PositionCache | None,
    on_progress: ProgressCallback | None,
    start: float,
    *,
    nodes_before: int = 0,
    note: str = "",
) -> Analysis:
    result = run_search(
        position, limits, all_moves=all_moves, cache=cache, on_progress=on_progress, start=start
    )
    if result.depth == 0 and not result.cache_hit:
        note = _join(note, "no depth completed before the deadline: first move in order")
    exact = result.decided and (
        not all_moves or result.moves is None or set(result.moves) <= result.decided_moves
    )
    return Analysis(
        best_move=result.best_move,
        score=result.score,
        exact=exact,
        pv=list(result.pv),
        moves=result.moves,
        depth=result.depth,
        nodes=nodes_before + result.nodes,
        time_ms=_ms(start),
        cache_hit=result.cache_hit,
        note=note,
    )


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def solve_exact(
    position: Connect4,
    solver: Solver,
    *,
    all_moves: bool,
    deadline: float | None,
    node_limit: int | None = None,
    on_progress: ProgressCallback | None = None,
    start: float,
) -> SolveResult:
    """The solver's result (complete or not), its window narrowings relayed as progress."""
    from engine.solver import SolveProgress

    if node_limit is not None:
        if all_moves:
            return solver.analyze(position, deadline=deadline, node_limit=node_limit)
        return solver.solve(position, deadline=deadline, node_limit=node_limit)
    final: SolveResult | None = None
    for item in solver.iter_solve(position, deadline=deadline, analyze=all_moves):
        if isinstance(item, SolveProgress):
            if on_progress is not None:
                on_progress(
                    Progress(
                        depth=item.iteration,
                        score=item.lower,
                        exact=item.lower == item.upper,
                        pv=[],
                        nodes=item.nodes,
                        time_ms=_ms(start),
                        lower=item.lower,
                        upper=item.upper,
                        bounds=item.bounds,
                    )
                )
        else:
            final = item
    if final is None:  # the solver's iterator always ends with its result
        raise RuntimeError("the solver ended without a result")
    return final


def cached_exact(
    position: Connect4, cache: PositionCache, *, all_moves: bool, start: float
) -> Analysis | None:
    """The exact answer from the shared cache alone, in one ``get_many``, or ``None``.

    Best move only: the root's entry, exact and with a playable best move.
    Every move (``all_moves``): the root's children, each exact (a move that ends
    the game is scored by playing it); the root's own entry, when exact, must
    agree with the best of them and names the best move. A malformed or
    inconsistent entry is a miss (the solver then reads and checks the cache
    itself), never a wrong answer. On a miss this costs one round trip before the
    solver's own read of the root's neighbourhood.
    """

    def possible(score: int, q: Connect4) -> bool:
        lowest, highest = q.score_range()
        return lowest <= score <= highest

    columns = position.legal_moves()
    children: dict[int, Connect4] = {}
    scores: dict[int, int] = {}
    if all_moves:
        for column in columns:
            child = position.copy()
            child.push(column)
            if child.outcome() is not None:
                scores[column] = -child.terminal_score()
            else:
                children[column] = child
    keys = [position.key(), *(child.key() for child in children.values())]
    try:
        entries = list(cache.get_many(position.name, position.variant, keys))
    except Exception:
        return None
    if len(entries) != len(keys):
        return None
    root = entries[0]
    root_ok = isinstance(root, CacheEntry) and root.exact and possible(root.lower, position)
    root_move = None
    if root_ok and root is not None and root.best_move is not None:
        move = position.from_canonical(root.best_move)
        root_move = move if move in columns else None
    if not all_moves:
        if root is None or not root_ok or root_move is None:
            return None
        best_move, score, moves = root_move, root.lower, None
    else:
        for (column, child), entry in zip(children.items(), entries[1:], strict=True):
            if not isinstance(entry, CacheEntry) or not entry.exact:
                return None
            if not possible(entry.lower, child):
                return None
            scores[column] = -entry.lower
        score = max(scores.values())
        if root_ok and root is not None and root.lower != score:
            return None  # the cache contradicts itself: let the solver settle it
        best_move = next(c for c in columns if scores[c] == score)  # the game's order
        if root_move is not None and scores[root_move] == score:
            best_move = root_move
        moves = {c: scores[c] for c in sorted(scores)}
    return Analysis(
        best_move=best_move,
        score=score,
        exact=True,
        pv=[best_move],
        moves=moves,
        depth=position.width * position.height - position.ply,
        nodes=0,
        time_ms=_ms(start),
        cache_hit=True,
        lower=score,
        upper=score,
        bounds=None if moves is None else {c: (m, m) for c, m in moves.items()},
    )


def _solve_then_search(
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

    An exact answer already in the shared ``cache`` comes first (:func:`cached_exact`),
    before the solver is loaded or its table touched.
    """
    if cache is not None:
        known = cached_exact(position, cache, all_moves=all_moves, start=start)
        if known is not None:
            return known
    if solver is None:
        solver = default_solver(position.width, position.height, cache)
    solver_deadline = solver_share(deadline)
    result = solve_exact(
        position,
        solver,
        all_moves=all_moves,
        deadline=solver_deadline,
        on_progress=on_progress,
        start=start,
    )
    if result.complete and result.score is not None:
        moves = dict(result.moves) if all_moves and result.moves is not None else None
        return Analysis(
            best_move=result.best_move,
            score=result.score,
            exact=True,
            pv=list(result.pv),
            moves=moves,
            depth=position.width * position.height - position.ply,
            nodes=result.nodes,
            time_ms=_ms(start),
            cache_hit=result.cache_hit,
            lower=result.score,
            upper=result.score,
            bounds=result.bounds,
        )
    what = "the time budget" if mode == "time" else "the deadline"
    searched = _searched(
        position,
        SearchLimits(deadline=deadline),
        all_moves,
        cache,
        on_progress,
        start,
        nodes_before=result.nodes,
    )
    return honest(position, searched, result, what)


def honest(position: Connect4, searched: Analysis, proven: SolveResult, what: str) -> Analysis:
    """A heuristic ``searched`` answer made consistent with what the solver ``proven``.

    Exact columns keep their exact value; every estimate is clamped into its
    proven bounds; the best move is the estimate's best among the columns not
    proven worse than another; the note says what is exact and what is not.
    """
    lower, upper = proven.lower, proven.upper
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
        note=_join(searched.note, "; ".join(parts)),
        lower=lower,
        upper=upper,
        bounds=bounds,
    )

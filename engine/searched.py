"""An analysis by the generic search (:mod:`engine.search`), as an :class:`~engine.answer.Analysis`.

The ``depth`` and ``time`` modes, every game without an exact solver, and the
fallback of an exact solve that cannot finish in time all answer this way.
"""

from __future__ import annotations

from engine.answer import Analysis, Progress, ProgressCallback, elapsed_ms, join_notes
from engine.cache import PositionCache
from engine.game import Game
from engine.search import SearchLimits, SearchProgress, SearchResult, iter_search


def _progress_of(step: SearchProgress, start: float) -> Progress:
    return Progress(
        depth=step.depth,
        score=step.score,
        exact=step.decided,
        pv=list(step.pv),
        nodes=step.nodes,
        time_ms=elapsed_ms(start),
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


def searched(
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
        note = join_notes(note, "no depth completed before the deadline: first move in order")
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
        time_ms=elapsed_ms(start),
        cache_hit=result.cache_hit,
        note=note,
    )

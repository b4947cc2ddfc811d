"""Levels of play by name, from ``easy`` to ``perfect``: which move the bot plays.

* ``easy``: a 2-ply search of every move (1 in tic-tac-toe), then a deliberate, bounded mistake:
  a softmax (temperature :attr:`Level.temperature`) over the moves whose
  score is within :attr:`Level.margin` of the best, so it never plays a move
  its search sees losing while another does not; it overlooks an immediate
  win at most :attr:`Level.miss_win` of the time. A casual player beats it
  with a double threat. It reads no external cache (exact scores from a
  cache would make it play perfectly).
* ``medium``: the best move of a deeper heuristic search.
* ``hard``: for a game with an exact solver (``Game.exact_solver``: Connect
  Four) that solver with a node budget, and a deeper heuristic search where
  that budget does not suffice; elsewhere a deeper search.
* ``perfect``: exact play. With an exact solver: the compiled solver (its best
  move is the quickest win, or the slowest loss; ties go to the centre); other
  games: a search to the end of every line. With a deadline it never
  overruns: if the exact solve cannot finish, it plays the best move of the
  deepest completed search and says so in :attr:`MoveChoice.note`.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.cache import PositionCache
from engine.connect4 import Connect4
from engine.errors import UnknownLevelError
from engine.exact import solve_exact, solver_share
from engine.game import Game, has_exact_solver, require_ongoing
from engine.pool import default_solver
from engine.search import SearchLimits, SearchResult, search
from engine.vocabulary import LEVELS

__all__ = ["LEVELS", "Level", "MoveChoice", "choose_move", "get_level", "warm_up"]

if TYPE_CHECKING:
    from engine.solver import Solver


#: Utility of a decided win/loss for ``easy``'s choice: beyond any heuristic margin.
_DECIDED = 1_000_000


@dataclass(frozen=True)
class Level:
    """How one level chooses a move (see the module docstring).

    ``depth`` gives the plies of its search by game name (``"*"`` for any
    other game); ``exact`` asks for the game's exact value; ``solver_nodes``
    lets Connect Four try the solver within that many nodes first.
    """

    name: str
    depth: Mapping[str, int] = field(default_factory=dict)
    exact: bool = False
    solver_nodes: int | None = None
    search_nodes: int | None = None
    temperature: float = 0.0
    margin: int = 0
    miss_win: float = 0.0

    def depth_for(self, game: Game) -> int:
        return self.depth.get(game.name, self.depth.get("*", 4))


_LEVELS: dict[str, Level] = {
    "easy": Level(
        "easy",
        # One ply in tic-tac-toe: at two it sees every threat of so small a board and
        # never loses, so no casual player could beat it.
        depth={"tictactoe": 1, "*": 2},
        temperature=2.0,
        margin=6,
        miss_win=0.25,
    ),
    "medium": Level("medium", depth={"connect4": 6, "tictactoe": 3, "*": 4}),
    "hard": Level(
        "hard",
        depth={"connect4": 10, "tictactoe": 5, "*": 6},
        solver_nodes=3_000_000,
        search_nodes=200_000,
    ),
    "perfect": Level("perfect", exact=True),
}
assert tuple(_LEVELS) == LEVELS, "every level named in engine.vocabulary has its spec here"


def warm_up(position: Game, level: str) -> None:
    """Load what ``level`` needs for this game (the compiled solver), so no move pays for it."""
    spec = get_level(level)
    if has_exact_solver(position) and (spec.exact or spec.solver_nodes is not None):
        default_solver(position.width, position.height)


def get_level(name: str) -> Level:
    """The level called ``name``; ``UnknownLevelError`` (a ``ValueError``) names an unknown one."""
    try:
        return _LEVELS[name]
    except (KeyError, TypeError):
        raise UnknownLevelError(f"'{name}': unknown level (known: {', '.join(LEVELS)})") from None


@dataclass(frozen=True)
class MoveChoice:
    """The move to play (0-based) and what the bot knew of it.

    ``score`` is the chosen move's score from the mover's side (the game's
    exact score when ``exact``), ``None`` when nothing scored it.
    """

    move: int
    score: int | None
    exact: bool
    depth: int
    nodes: int
    time_ms: float
    note: str = ""


def choose_move(
    position: Game,
    level: str,
    *,
    deadline: float | None = None,
    rng: random.Random | None = None,
    cache: PositionCache | None = None,
    solver: Solver | None = None,
) -> MoveChoice:
    """The move ``level`` plays in ``position`` (left unchanged), by ``deadline`` if given.

    Raises ``UnknownLevelError`` for an unknown level and ``GameOverError``
    for a finished position. ``rng`` drives ``easy``'s mistakes (seed it for
    a repeatable game).
    """
    spec = get_level(level)
    require_ongoing(position)
    start = time.monotonic()
    if spec.temperature > 0:
        return _easy(position, spec, deadline, rng or random.Random(), start)
    if spec.exact or spec.solver_nodes is not None:
        if has_exact_solver(position):
            return _with_solver(position, spec, deadline, cache, solver, start)
        if spec.exact:
            limits = SearchLimits(deadline=deadline)
            return _from_search(search(position, limits, cache=cache), start)
    limits = SearchLimits(
        depth=spec.depth_for(position), nodes=spec.search_nodes, deadline=deadline
    )
    return _from_search(search(position, limits, cache=cache), start)


def _ms(start: float) -> float:
    return (time.monotonic() - start) * 1000


def _from_search(
    result: SearchResult,
    start: float,
    nodes_before: int = 0,
    note: str = "",
) -> MoveChoice:
    assert result.best_move is not None  # an ongoing position has a move
    if result.depth == 0 and not result.cache_hit:
        note = note or "deadline: no search depth completed; played the first move in order"
    return MoveChoice(
        move=result.best_move,
        score=result.score,
        exact=result.decided,
        depth=result.depth,
        nodes=nodes_before + result.nodes,
        time_ms=_ms(start),
        note=note,
    )


def _with_solver(
    position: Connect4,
    spec: Level,
    deadline: float | None,
    cache: PositionCache | None,
    solver: Solver | None,
    start: float,
) -> MoveChoice:
    """Exact play by the solver; the deepest heuristic search when it cannot finish in time."""
    if solver is None:
        solver = default_solver(position.width, position.height, cache)
    solver_deadline = solver_share(deadline)
    result = solve_exact(
        position,
        solver,
        all_moves=False,
        deadline=solver_deadline,
        node_limit=spec.solver_nodes,
        start=start,
        pv=False,  # a move, not a line: the line past the database would cost searches
    )
    if result.exact and result.best_move is not None:
        return MoveChoice(
            move=result.best_move,
            score=result.score,
            exact=True,
            depth=result.depth,
            nodes=result.nodes,
            time_ms=_ms(start),
        )
    depth = None if spec.exact else spec.depth_for(position)
    nodes = None if spec.exact else spec.search_nodes
    limits = SearchLimits(depth=depth, nodes=nodes, deadline=deadline)
    fallback = search(position, limits, cache=cache)
    why = "deadline" if spec.exact else "solver budget"
    note = f"{why}: played best of depth {fallback.depth}"
    return _from_search(fallback, start, nodes_before=result.nodes, note=note)


def _easy(
    position: Game, spec: Level, deadline: float | None, rng: random.Random, start: float
) -> MoveChoice:
    """A shallow search of every move, then a softmax among those within the margin of the best."""
    limits = SearchLimits(depth=spec.depth_for(position), deadline=deadline)
    result = search(position, limits, all_moves=True)
    if result.moves is None:  # no depth completed before the deadline
        return _from_search(result, start)
    scores = result.moves

    def utility(move: int) -> float:
        score = scores[move]
        if move in result.decided_moves and score != 0:
            return score + (_DECIDED if score > 0 else -_DECIDED)
        return score

    wins = position.winning_moves()
    note = ""
    if wins and rng.random() >= spec.miss_win:
        choice = wins[0]
    else:
        pool = [m for m in scores if m not in wins] or list(scores)
        if wins:
            note = "easy: overlooked an immediate win"
        best = max(utility(m) for m in pool)
        candidates = [m for m in pool if utility(m) >= best - spec.margin]
        weights = [math.exp((utility(m) - best) / spec.temperature) for m in candidates]
        choice = rng.choices(candidates, weights)[0]
    return MoveChoice(
        move=choice,
        score=scores[choice],
        exact=choice in result.decided_moves,
        depth=result.depth,
        nodes=result.nodes,
        time_ms=_ms(start),
        note=note,
    )

"""The generic search: negamax with alpha-beta over any :class:`~engine.game.Game` (pure Python).

What it does, in the order a node sees it:

* **Negamax** from the side to move: a node's value is the best of its
  children's values negated.
* **Transposition table** (``engine.table``): a record whose depth suffices
  ends the node when its bounds decide it against the window; otherwise its
  move is searched first.
* **Move ordering**: the table move, then this ply's two killer moves, then
  the rest by history score; ties keep the game's own ``legal_moves()``
  order (Connect Four: centre first).
* **Principal-variation search**: the first move gets the full window, the
  others a null window ``(alpha, alpha + 1)`` and a re-search only when they
  beat ``alpha``.
* **Extensions**: a horizon node whose side to move must answer a threat
  (``Game.forcing()``) is searched :data:`EXTENSION_PLIES` more ply (its
  answer), at most :data:`MAX_EXTENSIONS` times along a line, and the
  position after the answer is checked for a win at once (so an answer that
  ignores the threat is seen to lose): a forced sequence is not cut in the
  middle (variable depth, bounded).
* **Iterative deepening** from depth 1; each completed depth is reported
  (:class:`SearchProgress`) and seeds the next one's ordering.
* **Limits** by depth, nodes, time and an absolute ``time.monotonic()``
  deadline, checked every :data:`CHECK_EVERY` nodes: a depth in progress is
  abandoned and the last completed depth's result stands.

Scores. Internally a decided value (the game's convention: ``+s`` a win,
``-s`` a loss, ``s = max stones + 1 - winner's stones``) is mapped beyond
:data:`WIN` (``WIN + s`` / ``-(WIN + s)``), and ``evaluate()`` is clamped
inside ``(-WIN, WIN)``, so a heuristic never passes for a result. Reported
scores are mapped back: a decided result says ``decided=True`` and carries
the game's score (a quicker win is higher). A draw is only reported decided
when no heuristic leaf took part (every line was searched to its end).

An optional hook a game may offer (Connect Four and tic-tac-toe do):
``table_key()``, a cheap exact key for the in-process table (else ``key()``).

External cache (``engine.cache.PositionCache``): the root and its children
are read in one ``get_many`` at the start, through :mod:`engine.known` (its
checked records); they seed the table as bounds where their depth suffices (a
complete solve at any depth), and exact records answer at once
(:func:`engine.known.exact_answer`). When the search finishes, the root and the
children whose scores are known are written back in one ``put_many``. A
cache that fails is ignored: it never makes a search fail.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Generator, Hashable
from dataclasses import dataclass, field

from engine import known
from engine.cache import EXACT_DEPTH, CacheEntry, PositionCache
from engine.game import Game, require_ongoing
from engine.known import Known
from engine.table import EXHAUSTIVE, Entry, TranspositionTable

#: Decided values lie beyond this; heuristic values strictly inside.
WIN = 1_000_000_000
#: Beyond every value: the open window.
INF = 4 * WIN
#: The clock and the node limit are looked at every this many nodes (a node costs
#: ~20 µs here, so a deadline is overrun by about a millisecond at most).
CHECK_EVERY = 64
#: Plies a forcing horizon node is searched further: its forced answer.
EXTENSION_PLIES = 1
#: Forcing-move extensions allowed along one line.
MAX_EXTENSIONS = 4
#: Iterative deepening stops here if nothing else stops it.
MAX_DEPTH = 200
#: The line behind a leaf (shared, never changed: lines are built anew).
_NO_LINE: list[int] = []
#: The most slots of the table a search makes for itself when it is given none.
DEFAULT_TABLE_SIZE = 1 << 18
#: The slots that table starts with (it grows fourfold as it fills, up to its most).
INITIAL_TABLE_SIZE = 1 << 10


@dataclass
class SearchLimits:
    """When to stop: any limit reached ends the search (``None`` = no limit).

    ``depth`` is the deepest iteration; ``nodes`` caps the nodes visited;
    ``time_ms`` is a budget from the start of the search and ``deadline`` an
    absolute ``time.monotonic()`` instant (the earlier of the two counts).
    With no limit at all, the search runs until every line reaches the end
    of the game: fine for tic-tac-toe, endless for an early Connect Four.
    """

    depth: int | None = None
    nodes: int | None = None
    time_ms: float | None = None
    deadline: float | None = None


@dataclass(frozen=True)
class SearchOptions:
    """Switches for the parts of the search, for tests and measurements; all on by default.

    Turning one off never changes a result's value, only its cost.
    """

    table: bool = True
    pvs: bool = True
    ordering: bool = True
    extensions: bool = True


@dataclass(frozen=True)
class SearchResult:
    """The result of the deepest completed iteration.

    ``score`` is from the side to move: the game's decided score when
    ``decided`` (a win ``> 0``, a loss ``< 0``, a draw ``0``), else a heuristic
    value. ``moves`` (only when ``all_moves`` was asked) maps every legal move
    to its exact score at ``depth``; ``decided_moves`` names the moves whose
    score there is decided. ``nodes`` and ``seconds`` count the whole search,
    an abandoned last iteration included. ``cache_hit``: the answer came from
    the external cache without searching.
    """

    best_move: int | None
    score: int
    decided: bool
    pv: list[int]
    moves: dict[int, int] | None
    depth: int
    nodes: int
    seconds: float
    table_hits: int
    cache_hit: bool
    decided_moves: frozenset[int] = field(default_factory=frozenset)


@dataclass(frozen=True)
class SearchProgress:
    """One completed iteration of the deepening, as :class:`SearchResult` would report it."""

    depth: int
    score: int
    decided: bool
    pv: list[int]
    nodes: int
    seconds: float
    best_move: int | None


class _Stop(Exception):
    """A limit was reached inside an iteration: abandon it."""


def to_internal(score: int) -> int:
    """A decided game score in the internal scale (beyond :data:`WIN`, a draw stays 0)."""
    if score > 0:
        return WIN + score
    if score < 0:
        return score - WIN
    return 0


def to_reported(value: int) -> int:
    """An internal value back in the game's scale (inverse of :func:`to_internal` beyond WIN)."""
    if value > WIN:
        return value - WIN
    if value < -WIN:
        return value + WIN
    return value


def is_decided(value: int) -> bool:
    """A win or a loss (an internal value beyond :data:`WIN`)."""
    return value > WIN or value < -WIN


def _table_size(limits: SearchLimits) -> int:
    """The most slots of a search's own table: fewer for a shallow or node-capped search."""
    size = DEFAULT_TABLE_SIZE
    if limits.depth is not None and limits.depth <= 4:
        size = 1 << 12
    if limits.nodes is not None:
        size = min(size, max(1 << 10, limits.nodes))
    return size


def _table_key(game: Game) -> Callable[[], Hashable]:
    """The game's cheap exact key for the in-process table: ``table_key()`` if it has one.

    Else the canonical ``key()``: symmetric positions then share a record, whose
    move may belong to the other orientation; it is only tried first if legal,
    so a wrong one costs ordering, never correctness.
    """
    fast = getattr(game, "table_key", None)
    return fast if callable(fast) else game.key


class _Search:
    """One search of one position: the state shared by the nodes of its iterations."""

    def __init__(
        self,
        game: Game,
        limits: SearchLimits,
        table: TranspositionTable | None,
        options: SearchOptions,
    ) -> None:
        self.game = game
        self.use_table = options.table
        self.pvs = options.pvs
        self.ordering = options.ordering
        if table is None:
            # Its own table, grown as it fills and dropped with the search: a search holds
            # memory for what it stored, and gives it back when it ends.
            table = TranspositionTable(_table_size(limits), initial=INITIAL_TABLE_SIZE)
        self.table = table
        self.table.new_search()
        self.key = _table_key(game)
        self.start = time.monotonic()
        deadline = limits.deadline
        if limits.time_ms is not None:
            by_budget = self.start + limits.time_ms / 1000
            deadline = by_budget if deadline is None else min(deadline, by_budget)
        self.deadline = deadline
        self.node_limit = limits.nodes
        self.nodes = 0
        self.next_check = CHECK_EVERY if limits.nodes is None else min(CHECK_EVERY, limits.nodes)
        self.hits = 0
        self.horizon = 0  # heuristic leaves (or non-exhaustive records) used so far
        self.killers: list[list[int | None]] = []
        # History scores per side: how often (and how deep) a move refuted a position.
        self.history: tuple[defaultdict[int, int], defaultdict[int, int]] = (
            defaultdict(int),
            defaultdict(int),
        )
        self.pv: list[list[int]] = []
        self.ext_limit = MAX_EXTENSIONS if options.extensions else 0

    # -- limits ---------------------------------------------------------------------

    def _check(self) -> None:
        if self.node_limit is not None and self.nodes >= self.node_limit:
            raise _Stop
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise _Stop
        self.next_check = self.nodes + CHECK_EVERY
        if self.node_limit is not None:
            self.next_check = min(self.next_check, self.node_limit)

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    # -- the node ---------------------------------------------------------------------

    def negamax(self, depth: int, alpha: int, beta: int, ply: int, ext: int) -> int:
        """The value of the position within ``(alpha, beta)`` (fail-soft), from the side to move.

        Postcondition: a value ``<= alpha`` is an upper bound, ``>= beta`` a
        lower bound, else exact (all at ``depth``); ``self.pv[ply]`` holds the
        line behind an exact value.
        """
        if self.nodes >= self.next_check:
            self._check()
        self.nodes += 1
        game = self.game
        pv = self.pv
        pv[ply] = _NO_LINE
        moves = game.legal_moves()
        if not moves:
            return to_internal(game.terminal_score())
        if depth <= 0:
            if ext < self.ext_limit and game.forcing():
                depth = EXTENSION_PLIES
                ext += 1
            else:
                if ext:
                    # Behind a forced answer: take a win at once if there is one (the reply
                    # that ignored the threat loses), else fall back on the heuristic.
                    win = self.immediate_win()
                    if win:
                        return win
                self.horizon += 1
                value = game.evaluate()
                if value >= WIN:
                    return WIN - 1
                if value <= -WIN:
                    return 1 - WIN
                return value

        table = self.table
        key = self.key() if self.use_table else None
        entry = table.get(key) if key is not None else None
        first_move: int | None = None
        if entry is not None:
            if entry.depth >= depth:
                lower, upper = entry.lower, entry.upper
                if lower >= beta or upper <= alpha or lower == upper:
                    self.hits += 1
                    if entry.depth < EXHAUSTIVE:
                        self.horizon += 1
                    if lower >= beta:
                        return lower
                    return upper
            first_move = entry.move

        # Order: table move, killers, then history (stable, so the game's order breaks ties).
        killers = self.killers[ply]
        history = self.history[game.side_to_move]
        if len(moves) > 1 and self.ordering:
            moves.sort(key=history.__getitem__, reverse=True)  # reverse keeps ties in order
            for front in (killers[1], killers[0], first_move):
                if front is not None and front in moves and moves[0] != front:
                    moves.remove(front)
                    moves.insert(0, front)

        horizon_before = self.horizon
        alpha_in = alpha
        best = -INF
        best_move = moves[0]
        child_depth = depth - 1
        next_ply = ply + 1
        push, pop = game.push, game.pop
        negamax = self.negamax
        for index, move in enumerate(moves):
            push(move)
            try:
                if index == 0 or not self.pvs:
                    value = -negamax(child_depth, -beta, -alpha, next_ply, ext)
                else:
                    value = -negamax(child_depth, -alpha - 1, -alpha, next_ply, ext)
                    if alpha < value < beta:
                        value = -negamax(child_depth, -beta, -alpha, next_ply, ext)
            finally:
                pop()
            if value > best:
                best = value
                best_move = move
                if value > alpha:
                    alpha = value
                    if value >= beta:
                        if killers[0] != move:
                            killers[1] = killers[0]
                            killers[0] = move
                        history[move] += depth * depth
                        break
                    pv[ply] = [move, *pv[next_ply]]

        if key is None:
            return best
        stored_depth = EXHAUSTIVE if self.horizon == horizon_before else depth
        if best <= alpha_in:
            table.put(key, Entry(-INF, best, stored_depth, best_move))
        elif best >= beta:
            table.put(key, Entry(best, INF, stored_depth, best_move))
        else:
            table.put(key, Entry(best, best, stored_depth, best_move))
        return best

    def immediate_win(self) -> int:
        """The internal value of a win at once by the side to move (``winning_moves()``), or 0."""
        game = self.game
        wins = game.winning_moves()
        if not wins:
            return 0
        game.push(wins[0])
        try:
            score = game.terminal_score()  # the loser's score, seen from the winner: negated
        finally:
            game.pop()
        return -to_internal(score)

    # -- the root -----------------------------------------------------------------------

    def root(
        self, depth: int, order: list[int], all_moves: bool
    ) -> tuple[int, int, dict[int, int], list[int]]:
        """One iteration at ``depth``: (best value, best move, move values, pv), internal scale.

        With ``all_moves`` every move gets a full window, so every value is
        exact; otherwise PVS, and only the best move's value is exact.
        """
        game = self.game
        plies = depth + EXTENSION_PLIES * MAX_EXTENSIONS + 2
        self.pv = [[] for _ in range(plies)]
        self.killers = [[None, None] for _ in range(plies)]
        values: dict[int, int] = {}
        alpha = -INF
        best, best_move, best_pv = -INF, order[0], [order[0]]
        for index, move in enumerate(order):
            game.push(move)
            try:
                if all_moves or index == 0 or not self.pvs:
                    value = -self.negamax(depth - 1, -INF, INF, 1, 0)
                else:
                    value = -self.negamax(depth - 1, -alpha - 1, -alpha, 1, 0)
                    if value > alpha:
                        value = -self.negamax(depth - 1, -INF, -alpha, 1, 0)
            finally:
                game.pop()
            values[move] = value
            if value > best:
                best, best_move = value, move
                best_pv = [move, *self.pv[1]]
                alpha = max(alpha, value)
        if self.use_table:
            self.table.put(self.key(), Entry(best, best, depth, best_move))
        return best, best_move, values, self._extend_pv(best_pv)

    def ends_within(self, line: list[int], depth: int) -> bool:
        """True if playing ``line`` (at most ``depth`` plies) finishes the game."""
        if len(line) > depth:
            return False
        game = self.game
        for move in line:
            game.push(move)
        try:
            return game.outcome() is not None
        finally:
            for _ in line:
                game.pop()

    def _extend_pv(self, pv: list[int]) -> list[int]:
        """The line ``pv``, continued by the table's moves where it stopped at a table hit."""
        game = self.game
        played = 0
        line = list(pv)
        try:
            for move in line:
                if move not in game.legal_moves():
                    del line[played:]
                    break
                game.push(move)
                played += 1
            seen = set()
            while len(line) < 64:
                key = self.key()
                if key in seen:
                    break
                seen.add(key)
                entry = self.table.get(key)
                moves = game.legal_moves()
                if entry is None or entry.move is None or entry.move not in moves:
                    break
                if entry.lower != entry.upper:
                    break
                line.append(entry.move)
                game.push(entry.move)
                played += 1
        finally:
            for _ in range(played):
                game.pop()
        return line


def _table_entry(known: Known) -> Entry:
    """A known record as a table record: a complete solve holds at any depth."""
    if known.proven:
        return Entry(to_internal(known.lower), to_internal(known.upper), EXHAUSTIVE, known.move)
    return Entry(known.lower, known.upper, known.depth, known.move)


def _cache_entry(value: int, depth: int, exact: bool, max_score: int) -> CacheEntry:
    """What a search's exact ``value`` at ``depth`` says for the cache.

    An exact result is stored as exact; another win or loss as a bound of
    the true score (the win is at least this quick, the loss at most this
    slow); a heuristic value at its depth.
    """
    score = to_reported(value)
    if exact:
        return CacheEntry(score, score, EXACT_DEPTH)
    if value > WIN:
        return CacheEntry(score, max_score, EXACT_DEPTH)
    if value < -WIN:
        return CacheEntry(-max_score, score, EXACT_DEPTH)
    return CacheEntry(value, value, depth)


def _cache_write(
    game: Game,
    cache: PositionCache,
    root: tuple[int, int, bool],
    children: dict[int, tuple[int, bool]],
    depth: int,
) -> None:
    """Write the root (value, best move, exact) and children (value, exact) back; never raises."""
    max_score = game.max_score()
    value, best_move, exhaustive = root
    items: list[tuple[str, CacheEntry]] = []
    try:
        base = _cache_entry(value, depth, exhaustive, max_score)
        items.append(
            (
                game.key(),
                CacheEntry(base.lower, base.upper, base.depth, game.to_canonical(best_move)),
            )
        )
        for move, (move_value, move_exhaustive) in children.items():
            game.push(move)
            try:
                if game.outcome() is None:
                    items.append(
                        (
                            game.key(),
                            _cache_entry(-move_value, depth - 1, move_exhaustive, max_score),
                        )
                    )
            finally:
                game.pop()
        cache.put_many(game.name, game.variant, items)
    except Exception:
        return


def iter_search(
    game: Game,
    limits: SearchLimits,
    *,
    all_moves: bool = False,
    cache: PositionCache | None = None,
    table: TranspositionTable | None = None,
    options: SearchOptions | None = None,
) -> Generator[SearchProgress, None, SearchResult]:
    """Search ``game`` by iterative deepening, yielding after each completed depth.

    The generator's return value (``StopIteration.value``, or what
    :func:`search` returns) is the final :class:`SearchResult`. The caller
    may stop iterating at any time (it owns time control); the cache is then
    not written. ``game`` is used in place and is left as it was.

    Raises ``GameOverError`` for a finished position.
    """
    require_ongoing(game)
    state = _Search(game, limits, table, options or SearchOptions())
    order = game.legal_moves()
    max_depth = MAX_DEPTH if limits.depth is None else max(1, min(limits.depth, MAX_DEPTH))

    if cache is not None:
        # The root and every child in one read (a child that ends the game too: one batch).
        positions = [game]
        for move in order:
            child = game.copy()
            child.push(move)
            positions.append(child)
        root_known, *children_known = known.read(cache, positions)
        by_move = dict(zip(order, children_known, strict=True))
        answer = known.exact_answer(game, root_known, by_move, all_moves=all_moves)
        if answer is not None:
            return _answered(*answer, state)
        if root_known is not None:
            state.table.put(state.key(), _table_entry(root_known))
        for move, child_known in by_move.items():
            if child_known is None:
                continue
            game.push(move)
            try:
                state.table.put(state.key(), _table_entry(child_known))
            finally:
                game.pop()

    completed: tuple[int, int, dict[int, int], list[int], int, bool, bool] | None = None
    for depth in range(1, max_depth + 1):
        if state.out_of_time():
            break
        horizon_before = state.horizon
        try:
            best, best_move, values, pv = state.root(depth, order, all_moves)
        except _Stop:
            break
        exhaustive = state.horizon == horizon_before
        if exhaustive and state.use_table:
            state.table.put(state.key(), Entry(best, best, EXHAUSTIVE, best_move))
        # A win (or loss) on a line no longer than the depth is the quickest (slowest) one:
        # every shorter line was searched to its end. Found further away, through an
        # extension, a quicker one may still hide behind the horizon.
        exact = exhaustive or (is_decided(best) and state.ends_within(pv, depth))
        completed = (best, best_move, values, pv, depth, exhaustive, exact)
        decided = exhaustive or is_decided(best)
        yield SearchProgress(
            depth=depth,
            score=to_reported(best),
            decided=decided,
            pv=[*pv],
            nodes=state.nodes,
            seconds=time.monotonic() - state.start,
            best_move=best_move,
        )
        # Next iteration: best move first, then by this iteration's values.
        order = sorted(order, key=lambda m: (m != best_move, -values.get(m, -INF)))
        if exhaustive:
            break
        if exact and (not all_moves or all(is_decided(v) for v in values.values())):
            break

    seconds = time.monotonic() - state.start
    if completed is None:
        return _unsearched(game, state, order, seconds)
    best, best_move, values, pv, depth, exhaustive, exact = completed
    if cache is not None:
        children = {m: (v, exhaustive) for m, v in values.items()} if all_moves else {}
        children[best_move] = (best, exact)
        _cache_write(game, cache, (best, best_move, exact), children, depth)
    moves = {m: to_reported(v) for m, v in values.items()} if all_moves else None
    decided_moves = frozenset(
        m
        for m, v in values.items()
        if is_decided(v) or (exhaustive and (all_moves or m == best_move))
    )
    return SearchResult(
        best_move=best_move,
        score=to_reported(best),
        decided=exhaustive or is_decided(best),
        pv=pv,
        moves=moves,
        depth=depth,
        nodes=state.nodes,
        seconds=seconds,
        table_hits=state.hits,
        cache_hit=False,
        decided_moves=decided_moves if all_moves else frozenset(decided_moves & {best_move}),
    )


def _unsearched(game: Game, state: _Search, order: list[int], seconds: float) -> SearchResult:
    """No depth completed before a limit: the first move in order, scored by ``evaluate()``."""
    entry = state.table.get(state.key())
    best_move = entry.move if entry is not None and entry.move in order else order[0]
    return SearchResult(
        best_move=best_move,
        score=max(1 - WIN, min(WIN - 1, game.evaluate())),
        decided=False,
        pv=[best_move],
        moves=None,
        depth=0,
        nodes=state.nodes,
        seconds=seconds,
        table_hits=state.hits,
        cache_hit=False,
    )


def _answered(
    best_move: int, score: int, moves: dict[int, int] | None, state: _Search
) -> SearchResult:
    """A complete answer from exact records (:func:`engine.known.exact_answer`), no search.

    Its depth is the moves left to the end: an exact value holds that deep, as a solve's does.
    """
    return SearchResult(
        best_move=best_move,
        score=score,
        decided=True,
        pv=[best_move],
        moves=moves,
        depth=state.game.max_stones - state.game.ply,
        nodes=0,
        seconds=time.monotonic() - state.start,
        table_hits=0,
        cache_hit=True,
        decided_moves=frozenset(moves) if moves is not None else frozenset({best_move}),
    )


def search(
    game: Game,
    limits: SearchLimits,
    *,
    all_moves: bool = False,
    cache: PositionCache | None = None,
    table: TranspositionTable | None = None,
    on_progress: Callable[[SearchProgress], None] | None = None,
    options: SearchOptions | None = None,
) -> SearchResult:
    """Run :func:`iter_search` to its end, calling ``on_progress`` after each completed depth."""
    iterator = iter_search(
        game, limits, all_moves=all_moves, cache=cache, table=table, options=options
    )
    while True:
        try:
            progress = next(iterator)
        except StopIteration as stop:
            result: SearchResult = stop.value
            return result
        if on_progress is not None:
            on_progress(progress)

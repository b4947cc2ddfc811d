"""The generic search against plain minimax, its limits, its progress and its cache seam."""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable

import pytest

from engine.cache import EXACT_DEPTH, CacheEntry, MemoryCache
from engine.connect4 import Connect4
from engine.errors import GameOverError
from engine.game import Outcome
from engine.search import (
    CHECK_EVERY,
    SearchLimits,
    SearchOptions,
    SearchProgress,
    iter_search,
    search,
)
from engine.table import EXHAUSTIVE, Entry, TranspositionTable
from engine.tictactoe import TicTacToe
from tests.fixtures.waiting import wait_for

# -- a synthetic game: a random tree ------------------------------------------------------

BIG = 10**6  # a decided value outranks any heuristic one, as in the search


class RandomTree:
    """A game whose positions are the nodes of a random tree (a move is a child's index).

    Leaves are finished positions with a random score for the side to move (0 a
    draw); inner nodes have a random heuristic ``evaluate()``. Nothing is
    forcing, so a depth-limited search must equal depth-limited minimax.
    """

    name = "randomtree"
    variant = "r"

    def __init__(self, seed: int, depth: int, branching: int) -> None:
        rng = random.Random(seed)
        self.children: dict[tuple[int, ...], int] = {}
        self.leaf_score: dict[tuple[int, ...], int] = {}
        self.heuristic: dict[tuple[int, ...], int] = {}

        def grow(path: tuple[int, ...]) -> None:
            self.heuristic[path] = rng.randint(-20, 20)
            if len(path) == depth or (len(path) >= 2 and rng.random() < 0.1):
                self.leaf_score[path] = rng.randint(-5, 5)
                self.children[path] = 0
                return
            count = rng.randint(2, branching)
            self.children[path] = count
            for i in range(count):
                grow((*path, i))

        grow(())
        self.path: list[int] = []

    # The Game protocol, as much as the search uses.
    @property
    def side_to_move(self) -> int:
        return len(self.path) & 1

    @property
    def ply(self) -> int:
        return len(self.path)

    def notation(self) -> str:
        return ".".join(map(str, self.path))

    def legal_moves(self) -> list[int]:
        return list(range(self.children[tuple(self.path)]))

    def push(self, move: int) -> None:
        self.path.append(move)

    def pop(self) -> int:
        return self.path.pop()

    def outcome(self) -> Outcome | None:
        path = tuple(self.path)
        if path not in self.leaf_score:
            return None
        score = self.leaf_score[path]
        return Outcome(None if score == 0 else self.side_to_move ^ (score < 0))

    def terminal_score(self) -> int:
        return self.leaf_score[tuple(self.path)]

    def max_score(self) -> int:
        return 5

    def evaluate(self) -> int:
        return self.heuristic[tuple(self.path)]

    def forcing(self) -> bool:
        return False

    def key(self) -> str:
        return self.notation()

    def to_canonical(self, move: int) -> int:
        return move

    from_canonical = to_canonical


def minimax(game: RandomTree, depth: int) -> int:
    """Plain negamax without pruning; decided values ranked beyond every heuristic one."""
    path = tuple(game.path)
    if path in game.leaf_score:
        score = game.leaf_score[path]
        return score + BIG if score > 0 else score - BIG if score < 0 else 0
    if depth == 0:
        return game.heuristic[path]
    best = -(10**9)
    for move in game.legal_moves():
        game.push(move)
        best = max(best, -minimax(game, depth - 1))
        game.pop()
    return best


def reported(value: int) -> int:
    return value - BIG if value > BIG else value + BIG if value < -BIG else value


OPTION_SETS = {
    "all": SearchOptions(),
    "no-table": SearchOptions(table=False),
    "no-pvs": SearchOptions(pvs=False),
    "no-ordering": SearchOptions(ordering=False),
    "bare": SearchOptions(table=False, pvs=False, ordering=False),
}


@pytest.mark.parametrize("options", list(OPTION_SETS), ids=list(OPTION_SETS))
@pytest.mark.parametrize("all_moves", [False, True], ids=["best", "all-moves"])
def test_equals_minimax_on_random_trees(options: str, all_moves: bool) -> None:
    rng = random.Random(2024)
    for trial in range(25):
        tree_depth, branching = rng.randint(3, 6), rng.randint(2, 5)
        tree = RandomTree(seed=trial, depth=tree_depth, branching=branching)
        table = TranspositionTable(3) if trial % 2 else None  # tiny: collisions must be harmless
        for depth in range(1, tree_depth + 1):
            result = search(
                tree,
                SearchLimits(depth=depth),
                all_moves=all_moves,
                table=table,
                options=OPTION_SETS[options],
            )
            expected = minimax(tree, depth)
            assert result.score == reported(expected), (trial, depth)
            assert tree.path == []  # the position is left as it was
            assert result.pv
            assert result.pv[0] == result.best_move
            tree.push(result.best_move)
            assert -minimax(tree, depth - 1) == expected
            tree.pop()
            if abs(expected) > BIG or depth >= tree_depth:
                assert result.decided
            if all_moves:
                assert result.moves is not None
                for move in tree.legal_moves():
                    tree.push(move)
                    assert result.moves[move] == reported(-minimax(tree, depth - 1)), move
                    tree.pop()
                assert result.moves[result.best_move] == result.score
            else:
                assert result.moves is None
            if result.depth < depth:  # stopped early: only when decided
                assert result.decided


def _tictactoe_values() -> dict[int, int]:
    """Brute-force minimax of every reachable tic-tac-toe position, by its exact table key."""
    values: dict[int, int] = {}

    def solve(game: TicTacToe) -> int:
        key = game.table_key()
        if key not in values:
            if game.outcome() is not None:
                values[key] = game.terminal_score()
            else:
                best = -100
                for move in game.legal_moves():
                    game.push(move)
                    best = max(best, -solve(game))
                    game.pop()
                values[key] = best
        return values[key]

    solve(TicTacToe())
    return values


@pytest.mark.parametrize("options", ["all", "bare"])
def test_equals_minimax_on_tictactoe(options: str) -> None:
    values = _tictactoe_values()
    rng = random.Random(7)
    for _ in range(30 if options == "all" else 8):
        game = TicTacToe()
        for _ in range(rng.randint(1, 5)):
            if game.outcome() is None:
                game.push(rng.choice(game.legal_moves()))
        if game.outcome() is not None:
            continue
        result = search(game, SearchLimits(), all_moves=True, options=OPTION_SETS[options])
        assert result.decided
        assert result.score == values[game.table_key()]
        for move, score in (result.moves or {}).items():
            game.push(move)
            assert score == -values[game.table_key()]
            game.pop()


# -- decided scores ------------------------------------------------------------------------


def test_decided_win_reports_the_distance_in_the_game_convention() -> None:
    # X has 4 and 5 on the bottom row, two open ends: whatever O does, X wins with its 4th stone.
    game = Connect4.parse("4455")
    result = search(game, SearchLimits(depth=5))
    assert result.decided
    assert result.score == 22 - 4  # Pons: 22 - the winner's stones at the win
    assert result.best_move in (2, 5)
    # The loser sees the same result from its side: loss in the slowest way available.
    game.push(result.best_move)
    reply = search(game, SearchLimits(depth=4))
    assert reply.decided
    assert reply.score == -(22 - 4)


def test_heuristic_results_are_not_decided() -> None:
    result = search(Connect4(), SearchLimits(depth=4))
    assert not result.decided
    assert abs(result.score) < 1000


def test_immediate_win_found_at_depth_one() -> None:
    game = Connect4.parse("121212")  # X has three in column 1
    result = search(game, SearchLimits(depth=1), all_moves=True)
    assert result.best_move == 0
    assert result.decided
    assert result.score == 22 - 4
    assert result.moves is not None
    assert result.moves[0] == 18
    assert result.decided_moves >= {0}


def test_forcing_extension_sees_past_the_horizon() -> None:
    # X (columns 2 and 3 on the bottom row) plays 4: an open three, two threats. At depth 1 the
    # reply is a horizon node, but a forcing one: extended, the search sees O lose.
    game = Connect4.parse("2737")
    extended = search(game, SearchLimits(depth=1))
    assert extended.best_move == 3
    assert extended.decided
    assert extended.score == 22 - 4
    plain = search(game, SearchLimits(depth=1), options=SearchOptions(extensions=False))
    assert not plain.decided


# -- limits ---------------------------------------------------------------------------------


def held_at_depth_1(
    moment: Callable[[float], float],
) -> tuple[list[SearchProgress], Callable[[SearchProgress], None]]:
    """A progress callback recording each completed depth, holding the search at depth 1
    until ``time.monotonic()`` passes ``moment(now)``: its limit runs out at a known point,
    whatever the machine's speed, and what the search does after that is its reaction to
    the limit alone."""
    seen: list[SearchProgress] = []

    def record(progress: SearchProgress) -> None:
        seen.append(progress)
        if progress.depth == 1:
            until = moment(time.monotonic())
            wait_for(lambda: time.monotonic() >= until, "the limit passed", timeout=60)

    return seen, record


def test_depth_limit_and_progress_per_completed_depth() -> None:
    seen: list[SearchProgress] = []
    result = search(Connect4.parse("44"), SearchLimits(depth=5), on_progress=seen.append)
    assert [p.depth for p in seen] == [1, 2, 3, 4, 5]
    assert result.depth == 5
    assert seen[-1].best_move == result.best_move
    assert seen[-1].score == result.score
    assert all(a.nodes <= b.nodes for a, b in itertools.pairwise(seen))
    steps = list(iter_search(Connect4.parse("44"), SearchLimits(depth=3)))
    assert [s.depth for s in steps] == [1, 2, 3]


def test_node_limit_is_honoured() -> None:
    for limit in (50, 500, 3000):
        result = search(Connect4(), SearchLimits(nodes=limit))
        assert result.nodes <= limit
        assert result.best_move in range(7)
        assert result.depth >= 1 or limit < 50


def test_deadline_is_honoured_and_last_completed_depth_returned() -> None:
    # The deadline passes while depth 1 is reported: the search stops at its next look at
    # the clock (every CHECK_EVERY nodes), abandons depth 2 and answers depth 1's result.
    deadline = time.monotonic() + 2.0
    seen, hold = held_at_depth_1(lambda _: deadline)
    result = search(Connect4(), SearchLimits(deadline=deadline), on_progress=hold)
    assert [p.depth for p in seen] == [1]
    assert result.depth == 1
    assert result.best_move == seen[-1].best_move
    assert result.nodes <= seen[-1].nodes + CHECK_EVERY


def test_time_budget_is_honoured() -> None:
    # The budget began before depth 1 was reported: 0.15 s after that, it is spent.
    seen, hold = held_at_depth_1(lambda now: now + 0.15)
    result = search(Connect4.parse("4"), SearchLimits(time_ms=150), on_progress=hold)
    assert [p.depth for p in seen] == [1]
    assert result.depth == 1
    assert result.nodes <= seen[-1].nodes + CHECK_EVERY


def test_a_past_deadline_still_names_a_legal_move() -> None:
    game = Connect4.parse("44")
    result = search(game, SearchLimits(deadline=time.monotonic() - 1))
    assert result.depth == 0
    assert not result.decided
    assert result.best_move in game.legal_moves()
    assert result.nodes <= CHECK_EVERY  # stopped at its first look at the clock


def test_finished_position_is_refused() -> None:
    with pytest.raises(GameOverError, match="'1212121': the game is already over after move 7"):
        search(Connect4.parse("1212121"), SearchLimits(depth=2))


def test_caller_may_stop_the_generator() -> None:
    steps = iter_search(Connect4(), SearchLimits(depth=30))
    first = next(steps)
    assert first.depth == 1
    steps.close()


# -- the table ----------------------------------------------------------------------------


def test_table_replacement_rule() -> None:
    table = TranspositionTable(2)  # rounded up to a prime: 2 slots
    table.put(0, Entry(1, 1, 5, 3))
    table.put(2, Entry(0, 0, 3, 1))  # same slot, shallower, same search: kept out
    assert table.get(0) == Entry(1, 1, 5, 3)
    assert table.get(2) is None
    table.put(2, Entry(0, 0, 5, 1))  # as deep: replaces
    assert table.get(2) == Entry(0, 0, 5, 1)
    assert table.get(0) is None
    table.new_search()
    table.put(0, Entry(4, 4, 1, 2))  # an older search's record goes first
    assert table.get(0) == Entry(4, 4, 1, 2)
    table.put(0, Entry(4, 9, 0, 2))  # the same position always updates
    assert table.get(0) == Entry(4, 9, 0, 2)


def test_shared_table_keeps_results_right_and_saves_work() -> None:
    table = TranspositionTable(1 << 12)
    game = Connect4.parse("4453")
    cold = search(game, SearchLimits(depth=6), table=table)
    warm = search(game, SearchLimits(depth=6), table=table)
    assert (warm.score, warm.best_move) == (cold.score, cold.best_move)
    assert warm.nodes < cold.nodes
    assert warm.table_hits > 0


def test_exhaustive_results_hold_at_any_depth() -> None:
    table = TranspositionTable(1 << 12)
    game = TicTacToe.parse("15")
    search(game, SearchLimits(), table=table)
    entry = table.get(game.table_key())
    assert entry is not None
    assert entry.depth == EXHAUSTIVE
    assert entry.lower == entry.upper == 0


# -- the external cache -------------------------------------------------------------------


def test_cache_written_then_answers_the_position_and_its_mirror() -> None:
    cache = MemoryCache()
    game = TicTacToe.parse("12")
    first = search(game, SearchLimits(), cache=cache)
    assert first.decided
    assert not first.cache_hit
    key = game.key()
    assert cache.entries[("tictactoe", "3x3", key)].depth == EXACT_DEPTH
    again = search(game, SearchLimits(), cache=cache)
    assert again.cache_hit
    assert again.nodes == 0
    assert (again.best_move, again.score) == (first.best_move, first.score)
    # The mirror image (cells 3 and 2) shares the key; its best move maps back through it.
    mirror = TicTacToe.parse("32")
    mirrored = search(mirror, SearchLimits(), cache=cache)
    assert mirrored.cache_hit
    assert mirrored.score == first.score
    reflect = (2, 1, 0, 5, 4, 3, 8, 7, 6)
    assert mirrored.best_move == reflect[first.best_move]


def test_cache_children_give_every_move_score() -> None:
    cache = MemoryCache()
    game = Connect4.parse("4455")
    first = search(game, SearchLimits(depth=6), all_moves=True, cache=cache)
    assert first.decided
    assert first.moves is not None
    # Exact children were written (the moves that win, and those that lose).
    again = search(game, SearchLimits(depth=6), all_moves=True, cache=cache)
    assert again.score == first.score
    assert again.moves is not None
    assert {m: s for m, s in again.moves.items() if m in first.decided_moves} == {
        m: s for m, s in first.moves.items() if m in first.decided_moves
    }


def test_cache_bounds_seed_the_search() -> None:
    cache = MemoryCache()
    game = Connect4.parse("4455")
    # A (made-up but consistent) exact entry for the root's child after column 3.
    game.push(2)
    cache.put_many("connect4", "7x6", [(game.key(), CacheEntry(-18, -18, EXACT_DEPTH, None))])
    game.pop()
    result = search(game, SearchLimits(depth=2), cache=cache)
    assert result.decided
    assert result.score == 18
    assert cache.reads == 1 + len(game.legal_moves())  # one batch: root and children


class BrokenCache:
    def get_many(self, _game: str, _variant: str, _keys: list[str]) -> list[CacheEntry | None]:
        raise ConnectionError("cache down")

    def put_many(self, _game: str, _variant: str, _items: list[tuple[str, CacheEntry]]) -> None:
        raise ConnectionError("cache down")


class WrongCache:
    def get_many(self, _game: str, _variant: str, _keys: list[str]) -> list[CacheEntry | None]:
        return []  # the wrong number of answers

    def put_many(self, _game: str, _variant: str, _items: list[tuple[str, CacheEntry]]) -> None:
        return None


@pytest.mark.parametrize("cache", [BrokenCache(), WrongCache()], ids=["raises", "wrong"])
def test_a_failing_cache_never_fails_the_search(cache: object) -> None:
    game = TicTacToe.parse("5")
    result = search(game, SearchLimits(), all_moves=True, cache=cache)  # type: ignore[arg-type]
    assert result.decided
    assert result.score == 0
    assert not result.cache_hit


def test_a_growing_table_keeps_its_records_within_its_bound() -> None:
    table = TranspositionTable(1 << 14, initial=4)
    assert table.size < 8
    for key in range(1000):  # consecutive keys: no two share a slot of more than 1000
        table.put(key, Entry(key, key, 1, None))
    assert 1000 < table.size < table.capacity
    assert len(table) == 1000
    assert all(table.get(key) == Entry(key, key, 1, None) for key in range(1000))
    for key in range(1000, 10_000):
        table.put(key, Entry(key, key, 1, None))
    assert table.size == table.capacity  # grown to its most, and no further
    assert len(table) <= table.capacity
    table.clear()
    assert (table.size, len(table)) == (5, 0)  # back to its first slots (a prime)


def test_a_growing_table_moves_the_newer_and_deeper_records_first() -> None:
    table = TranspositionTable(1 << 10, initial=2)
    table.put(0, Entry(1, 1, 1, None))
    table.new_search()
    table.put(1, Entry(2, 2, 1, None))  # 2 of 2 slots taken: the next record grows the table
    table.put(2, Entry(3, 3, 1, None))
    assert table.size > 2
    assert [table.get(k) for k in (0, 1, 2)] == [
        Entry(1, 1, 1, None),
        Entry(2, 2, 1, None),
        Entry(3, 3, 1, None),
    ]
    table.forget()  # forgotten records are not moved when it grows
    for key in range(3, 40):
        table.put(key, Entry(0, 0, 1, None))
    assert table.get(0) is None


def test_any_hashable_key_once_one_is_not_a_64_bit_int() -> None:
    table = TranspositionTable(1 << 8)  # 257 slots: these keys' slots differ
    keys: list[object] = [0, (1 << 64) - 1, 11]  # unboxed while every key fits in 64 bits
    for key in keys:
        table.put(key, Entry(-3, 4, 2, None))
    keys += [-5, (1, 2), 1 << 70]  # then any hashable (hashes fixed from run to run)
    for i, key in enumerate(keys):
        table.put(key, Entry(i, i, 1, i))
    table.put(0, Entry(-1, 1, 9, None))  # deeper: replaces
    assert table.get(0) == Entry(-1, 1, 9, None)
    assert [table.get(k) for k in keys[1:]] == [Entry(i, i, 1, i) for i in range(1, len(keys))]
    assert table.get((2, 1)) is None


def test_a_search_without_a_table_lets_its_own_go() -> None:
    """A search given no table makes its own (grown as it fills, see above) and keeps none
    once it ends; the exact answer is the one a full-size table gives."""
    import gc

    def tables() -> int:
        gc.collect()
        return sum(isinstance(o, TranspositionTable) for o in gc.get_objects())

    position = TicTacToe.parse("5")
    before = tables()
    own = search(position, SearchLimits(), all_moves=True)
    assert tables() == before
    full = search(position, SearchLimits(), all_moves=True, table=TranspositionTable(1 << 18))
    assert (own.score, own.moves, own.decided) == (full.score, full.moves, full.decided)


def test_a_forgetting_table_acts_as_new() -> None:
    table = TranspositionTable(2)
    table.put(0, Entry(1, 1, 5, 3))
    table.forget()
    assert table.get(0) is None
    table.put(2, Entry(0, 0, 1, 1))  # same slot: the forgotten record makes way
    assert table.get(2) == Entry(0, 0, 1, 1)

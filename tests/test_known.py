"""``engine.known``: the one checked record of what is known about a position, and its reads."""

from __future__ import annotations

from collections.abc import Sequence

from engine.cache import EXACT_DEPTH, CacheEntry, MemoryCache
from engine.connect4 import Connect4
from engine.known import Known, check, exact_answer, neighbourhood, read
from engine.tictactoe import TicTacToe


class Counting(MemoryCache):
    """A memory cache that remembers every batch of keys it was asked."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def get_many(self, game: str, variant: str, keys: Sequence[str]) -> list[CacheEntry | None]:
        self.batches.append(list(keys))
        return super().get_many(game, variant, keys)


def test_check_narrows_proven_bounds_to_what_the_position_allows() -> None:
    p = Connect4.parse("4455")  # ply 4: scores lie in -19..19
    assert p.score_range() == (-19, 19)
    assert check(CacheEntry(-99, 99, EXACT_DEPTH, None), p) == Known(-19, 19, EXACT_DEPTH, None)
    assert check(CacheEntry(30, 40, EXACT_DEPTH, None), p) is None  # no score can meet it
    # A heuristic entry keeps its values: they are not scores.
    assert check(CacheEntry(500, 500, 4, None), p) == Known(500, 500, 4, None)


def test_check_turns_the_move_into_the_positions_orientation_and_rejects_junk() -> None:
    p = Connect4.parse("1")  # its mirror is the canonical orientation
    found = check(CacheEntry(2, 2, EXACT_DEPTH, p.to_canonical(0)), p)
    assert found is not None
    assert found.move == 0
    assert found.exact
    assert check(CacheEntry(2, 2, EXACT_DEPTH, 17), p) is None  # not a column
    assert check("junk", p) is None
    assert check(CacheEntry(True, 2, EXACT_DEPTH, None), p) is None  # a bool is not a score
    t = TicTacToe.parse("5")
    assert check(CacheEntry(0, 0, EXACT_DEPTH, t.to_canonical(4)), t) is None  # cell 5 is taken


def test_read_asks_each_key_once_and_fails_to_nothing() -> None:
    cache = Counting()
    a, mirror = Connect4.parse("1"), Connect4.parse("7")
    cache.put_many("connect4", "7x6", [(a.key(), CacheEntry(1, 1, EXACT_DEPTH, None))])
    found = read(cache, [a, mirror, Connect4.parse("4")])
    assert found[0] == found[1] == Known(1, 1, EXACT_DEPTH, None)
    assert found[2] is None
    assert cache.batches == [[a.key(), Connect4.parse("4").key()]]
    assert read(None, [a]) == [None]


def test_neighbourhood_reads_the_cache_once_and_no_key_twice() -> None:
    cache = Counting()
    root = Connect4.parse("44444455")
    child = root.copy()
    child.push(0)
    cache.put_many("connect4", "7x6", [(root.key(), CacheEntry(2, 2, EXACT_DEPTH, 2))])
    cache.batches.clear()
    already = {child.key(): Known(3, 3, EXACT_DEPTH, None)}  # read before, say
    seen = neighbourhood(root, cache, cached=already)
    assert len(cache.batches) == 1
    asked = cache.batches[0]
    assert root.key() in asked
    assert child.key() not in asked
    assert len(asked) == len(set(asked)) > 0  # grandchildren at ply 10: asked once each
    assert seen.known[0] == Known(2, 2, EXACT_DEPTH, root.from_canonical(2))
    assert seen.known[seen.positions.index(child)] == already[child.key()]
    assert len(seen.positions) == len(seen.known)
    assert neighbourhood(root, None).known == [None] * len(seen.positions)  # no cache: nothing


def test_exact_answer_needs_every_child_and_a_consistent_root() -> None:
    p = TicTacToe.parse("1253")  # X to move wins at once with cell 9 (1-5-9)
    wins = p.winning_moves()
    assert wins == [8]
    children: dict[int, Known | None] = {}
    for move in p.legal_moves():
        if move not in wins:
            children[move] = Known(0, 0, EXACT_DEPTH, None)
    answer = exact_answer(p, None, children, all_moves=True)
    assert answer is not None
    assert answer[1] == 3
    assert answer[0] in wins
    contradicting = Known(1, 1, EXACT_DEPTH, None)
    assert exact_answer(p, contradicting, children, all_moves=True) is None
    children[p.legal_moves()[0]] = None
    assert exact_answer(p, None, children, all_moves=True) is None
    assert exact_answer(p, Known(3, 3, EXACT_DEPTH, 8), {}, all_moves=False) == (8, 3, None)

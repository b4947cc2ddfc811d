"""The shared position cache in Redis: exact keys, deeper-only writes, counters, never failing."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading

import pytest
import redis

from engine.analysis import analyze
from engine.cache import EXACT_DEPTH, CacheEntry
from engine.game import new_game
from worker.core.client import JobClient
from worker.core.contract import AnalysisRequest
from worker.core.position_cache import RedisPositionCache, cache_stats, entry_key, reset_cache_stats
from worker.core.settings import Settings
from worker.process.redis_server import RedisServer

pytestmark = [pytest.mark.redis]


@pytest.fixture
def cache(clean_redis: redis.Redis, redis_url: str):  # type: ignore[no-untyped-def]  # noqa: ARG001 (requested for its effect)
    c = RedisPositionCache(redis_url)
    yield c
    c.close()


def test_entries_round_trip_under_the_full_canonical_key(cache, clean_redis) -> None:  # type: ignore[no-untyped-def]
    board = new_game("connect4", "4453")
    mirror = new_game("connect4", "4435")
    assert board.key() == mirror.key()
    entry = CacheEntry(-2, 3, 12, board.to_canonical(2))
    cache.put_many("connect4", "7x6", [(board.key(), entry)])
    assert cache.get_many("connect4", "7x6", [mirror.key(), "0"]) == [entry, None]
    # The key is the whole position, readable, never a hash.
    assert clean_redis.exists(f"pc:connect4:7x6:{board.key()}")
    assert entry_key("connect4", "7x6", board.key()) == f"pc:connect4:7x6:{board.key()}"
    # Another variant or game is another key.
    assert cache.get_many("connect4", "6x5", [board.key()]) == [None]
    assert cache.get_many("tictactoe", "7x6", [board.key()]) == [None]
    assert 0 < clean_redis.ttl(f"pc:connect4:7x6:{board.key()}") <= Settings().cache_ttl_s


def test_a_write_replaces_an_entry_only_when_at_least_as_deep(cache) -> None:  # type: ignore[no-untyped-def]
    put = lambda e: cache.put_many("connect4", "7x6", [("k", e)])  # noqa: E731
    get = lambda: cache.get_many("connect4", "7x6", ["k"])[0]  # noqa: E731
    put(CacheEntry(0, 5, 8, 3))
    put(CacheEntry(1, 1, 4, 2))
    assert get() == CacheEntry(0, 5, 8, 3)
    put(CacheEntry(1, 2, 8, None))
    assert get() == CacheEntry(1, 2, 8, None)
    put(CacheEntry(2, 2, EXACT_DEPTH, 4))
    put(CacheEntry(-5, 5, 40, 1))
    assert get() == CacheEntry(2, 2, EXACT_DEPTH, 4)
    assert get().exact


def test_hits_and_misses_are_counted_in_redis(cache, clean_redis) -> None:  # type: ignore[no-untyped-def]
    reset_cache_stats(clean_redis)
    cache.put_many("tictactoe", "3x3", [("a", CacheEntry(0, 0, EXACT_DEPTH))])
    cache.get_many("tictactoe", "3x3", ["a", "b", "c"])
    cache.flush_stats()
    assert cache_stats(clean_redis) == {"hits": 1, "misses": 2}


class _Refusing:
    """A TCP listener that closes every connection at once, counting them: a cache server
    that is there but never answers."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):  # closed: the test is over
            while True:
                connection, _ = self.sock.accept()
                self.accepted += 1
                connection.close()


def test_an_unreachable_redis_is_skipped_quickly_and_never_fails_a_search() -> None:
    # The circuit breaker, by what it does rather than how fast: after the first failure
    # no lookup or write connects again until its retry time (an hour here).
    refusing = _Refusing()
    dead = RedisPositionCache(
        f"redis://127.0.0.1:{refusing.port}/0", Settings(cache_retry_after_s=3600)
    )
    board = new_game("tictactoe", "1")
    assert dead.get_many("tictactoe", "3x3", [board.key()]) == [None]
    assert not dead.available
    tries = refusing.accepted
    assert tries >= 1
    for _ in range(200):
        assert dead.get_many("tictactoe", "3x3", [board.key()]) == [None]
        dead.put_many("tictactoe", "3x3", [(board.key(), CacheEntry(0, 0, 1))])
    assert refusing.accepted == tries  # skipped: one failed try, then not asked again
    refusing.sock.close()
    with_dead = analyze(board, mode="solve", all_moves=True, cache=dead)
    alone = analyze(board, mode="solve", all_moves=True)
    assert (with_dead.score, with_dead.moves) == (alone.score, alone.moves)


def test_a_flushed_cache_changes_speed_never_answers(cache, clean_redis) -> None:  # type: ignore[no-untyped-def]
    board = new_game("tictactoe", "")
    first = analyze(board, mode="solve", all_moves=True, cache=cache)
    cached = analyze(board, mode="solve", all_moves=True, cache=cache)
    assert cached.cache_hit
    assert (cached.score, cached.moves) == (first.score, first.moves)
    clean_redis.flushall()
    again = analyze(board, mode="solve", all_moves=True, cache=cache)
    assert not again.cache_hit
    assert (again.score, again.moves) == (first.score, first.moves)


@pytest.mark.service
@pytest.mark.parametrize(
    ("game", "original", "transposed", "mirrored", "moves"),
    [
        # X takes 1 and 9, O takes 5: two move orders, and a quarter turn of the board.
        ("tictactoe", "159", "951", "357", "all"),
        # A Pons benchmark position (Test_L1_R2) that takes the solver a few hundred ms.
        # (The solver answers "every move" from cached children by a short search, so the
        # root-from-cache case is the best-move request.)
        ("connect4", "2416615552", "1426615552", "6472273336", "best"),
    ],
)
def test_a_solve_by_one_worker_answers_another_for_transpositions_and_mirrors(
    clean_redis, redis_url, worker_pool, game, original, transposed, mirrored, moves
) -> None:  # type: ignore[no-untyped-def]
    boards = [new_game(game, p) for p in (original, transposed, mirrored)]
    assert len({b.key() for b in boards}) == 1
    assert len({b.notation() for b in boards}) == 3

    def solve(position: str):  # type: ignore[no-untyped-def]
        async def go():  # type: ignore[no-untyped-def]
            # Without the database (as the workers), so that the solve is a worker's.
            settings = Settings(solver_database=False)
            async with JobClient(redis_url, settings) as client:
                request = AnalysisRequest(game=game, position=position, moves=moves)
                return await client.analyze(request, timeout=120)

        return asyncio.run(go())

    first_pool = worker_pool(1)
    first = solve(original)
    first_pool.stop()
    assert first.cache == "miss"
    assert first.exact

    worker_pool(1)  # another process: its own tables are empty
    for position, board in zip((transposed, mirrored), boards[1:], strict=True):
        answer = solve(position)
        assert answer.worker != first.worker
        assert answer.cache == "hit", position
        assert answer.exact
        assert answer.score == first.score
        assert answer.nodes == 0
        # The same move, seen in each orientation.
        same = boards[0].from_canonical(board.to_canonical(board.parse_move(answer.best_move)))
        if moves == "best":
            assert boards[0].move_name(same) == first.best_move
            continue
        assert answer.moves is not None
        assert answer.moves[answer.best_move] == answer.score
        for name, score in answer.moves.items():
            move = boards[0].from_canonical(board.to_canonical(board.parse_move(name)))
            assert first.moves[boards[0].move_name(move)] == score
    if game == "tictactoe":  # and the engine agrees, searched here without any cache
        expected = analyze(boards[0], mode="solve", all_moves=True)
        assert first.moves == {str(m + 1): s for m, s in expected.moves.items()}
    assert cache_stats(clean_redis)["hits"] > 0


@pytest.mark.service
def test_workers_search_on_correctly_while_the_cache_redis_is_down(redis_url, worker_pool) -> None:  # type: ignore[no-untyped-def]
    cache_server = RedisServer()
    cache_server.start()
    try:
        worker_pool(1, env={"PLYBOT_CACHE_URL": cache_server.url})

        async def solve(position: str):  # type: ignore[no-untyped-def]
            async with JobClient(redis_url) as client:
                request = AnalysisRequest(game="tictactoe", position=position, moves="all")
                return await client.analyze(request, timeout=60)

        def check(position: str) -> None:
            answer = asyncio.run(solve(position))
            expected = analyze(new_game("tictactoe", position), mode="solve", all_moves=True)
            assert (answer.score, answer.moves) == (
                expected.score,
                {str(m + 1): s for m, s in expected.moves.items()},
            )

        check("2")
        assert redis.Redis.from_url(cache_server.url).dbsize() > 0  # it was in use
        cache_server.stop()
        check("4")
        check("26")
        cache_server.start()  # same port: the cache comes back after the breaker's pause
        check("8")
    finally:
        cache_server.close()

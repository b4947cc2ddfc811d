"""Game sessions (worker/core/games.py): the engine's rules, turns, and safe concurrent changes
in a real Redis; and the bot's moves in them (worker/core/bot_moves.py) when jobs fail, are
lost, run late or are asked for twice (no workers here: the happy path, with workers,
is played by tests/test_api_games.py and tests/test_bot_games.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest
from redis.asyncio import Redis

from engine.connect4 import Connect4
from engine.errors import IllegalMoveError, NotationError, UnknownGameError
from worker.core.bot_moves import BotMoves
from worker.core.client import JobClient
from worker.core.contract import AnalysisRequest, MoveRequest
from worker.core.games import (
    BOT,
    BotMove,
    GameNotFoundError,
    GameSession,
    GameStatus,
    GameStore,
    GameTurnError,
)
from worker.core.settings import Settings

pytestmark = pytest.mark.redis

T = TypeVar("T")


def run(redis_url: str, body: Callable[[GameStore], Awaitable[T]]) -> T:
    """Run ``body`` with a store on a fresh connection (and a fresh event loop)."""

    async def main() -> T:
        async with Redis.from_url(redis_url, decode_responses=True) as redis:
            return await body(GameStore(redis, prefix="test-games:"))

    return asyncio.run(main())


class RecordingClient(JobClient):
    """The real job client, remembering the jobs it submitted (to check, and to cancel)."""

    def __init__(self, url: str, settings: Settings) -> None:
        super().__init__(url, settings)
        self.submitted: list[str] = []

    async def submit(self, request: AnalysisRequest | MoveRequest) -> str:
        self.submitted.append(await super().submit(request))
        return self.submitted[-1]


def run_moves(
    redis_url: str, body: Callable[[BotMoves], Awaitable[T]], *, attempts: int | None = None
) -> T:
    """Run ``body`` with the bot's moves over a store and a :class:`RecordingClient`; every
    job left queued is cancelled after (no worker of a later test should run it)."""

    async def main() -> T:
        settings = Settings(redis_url=redis_url)
        async with RecordingClient(redis_url, settings) as client:
            store = GameStore(client.redis, prefix="test-games:")
            try:
                return await body(
                    BotMoves(store, client, settings, deadline_ms=500, attempts=attempts)
                )
            finally:
                for job_id in client.submitted:
                    await client.cancel(job_id)

    return asyncio.run(main())


# -- the session value: rules come from the engine -------------------------------------


def test_a_game_follows_the_engine_to_a_win() -> None:
    s = GameSession.start("connect4", ("ann", "bob"))
    assert (s.to_move, s.status, s.moves, s.notation) == ("ann", GameStatus.ONGOING, [], "")
    assert s.legal_moves() == ["1", "2", "3", "4", "5", "6", "7"]
    for move in "4343434":  # ann stacks column 4
        s = s.play(s.to_move or "", move)
    assert s.status is GameStatus.WON
    assert s.winner_id == "ann"
    assert s.to_move is None
    assert s.notation == "4343434"
    assert s.moves == list("4343434")
    assert s.legal_moves() == []
    with pytest.raises(GameTurnError, match="is over"):
        s.play("bob", "1")


def test_illegal_moves_quote_the_move_and_name_its_index() -> None:
    s = GameSession.start("connect4", ("ann", "bob"), notation="444444")
    with pytest.raises(IllegalMoveError, match=r"^'4': column 4 is full \(move 7\)$"):
        s.play("ann", "4")
    with pytest.raises(NotationError, match=r"^'8': column 8 is outside 1..7 \(move 7\)$"):
        s.play("ann", "8")
    t = GameSession.start("tictactoe", ("ann", "bob"), notation="5")
    with pytest.raises(IllegalMoveError, match=r"^'5': cell 5 is taken \(move 2\)$"):
        t.play("bob", "5")


def test_turns_and_players_are_checked() -> None:
    s = GameSession.start("tictactoe", ("ann", BOT), level="easy")
    with pytest.raises(GameTurnError, match="not your turn"):
        s.play(BOT, "5")
    with pytest.raises(GameTurnError, match="does not play"):
        s.play("eve", "5")
    s = s.play("ann", "5")
    with pytest.raises(GameTurnError, match="bot is thinking"):
        s.play("ann", "1")
    with pytest.raises(ValueError, match="'silly': unknown level"):
        GameSession.start("tictactoe", ("ann", BOT), level="silly")
    with pytest.raises(UnknownGameError, match="'chess': unknown game"):
        GameSession.start("chess", ("ann", "bob"))
    with pytest.raises(ValueError, match="against themself"):
        GameSession.start("tictactoe", ("ann", "ann"))


def test_the_bot_plays_only_the_answer_of_the_job_awaited() -> None:
    s = GameSession.start("tictactoe", (BOT, "ann"), level="perfect")
    s = s.expect_bot("job-1")
    assert s.pending is not None
    assert (s.pending.job_id, s.pending.ply) == ("job-1", 0)
    with pytest.raises(GameTurnError, match="not the bot move awaited"):
        s.play_bot("job-0", BotMove(move="5", ply=0))
    s = s.expect_bot("job-2")  # job-1 was lost: asked again
    assert s.pending is not None
    assert s.pending.attempts == 2
    s = s.play_bot("job-2", BotMove(move="5", ply=0, score=0, exact=True))
    assert s.moves == ["5"]
    assert s.pending is None
    assert s.to_move == "ann"
    assert s.last_bot_move is not None
    assert s.last_bot_move.move == "5"
    with pytest.raises(GameTurnError):  # a stale repeat of the same answer
        s.play_bot("job-2", BotMove(move="5", ply=0))


def test_resign_and_forfeit_settle_the_game() -> None:
    s = GameSession.start("connect4", ("ann", "bob"))
    assert s.resign("ann").status is GameStatus.RESIGNED
    assert s.resign("ann").winner_id == "bob"
    assert s.forfeit("bob").winner_id == "ann"
    with pytest.raises(GameTurnError):
        s.resign("ann").resign("bob")


def test_take_back_against_the_bot_only_and_counted() -> None:
    s = GameSession.start("connect4", ("ann", BOT), level="easy")
    with pytest.raises(GameTurnError, match="no move to take back"):
        s.take_back("ann")
    s = s.play("ann", "4").expect_bot("j1")
    with pytest.raises(GameTurnError, match="not your turn"):
        s.take_back("ann")  # the bot is thinking
    s = s.play_bot("j1", BotMove(move="3", ply=1))
    back = s.take_back("ann")
    assert (back.moves, back.notation, back.to_move, back.takebacks) == ([], "", "ann", 1)
    assert back.last_bot_move is None
    assert back.ongoing
    again = back.play("ann", "5").expect_bot("j2").play_bot("j2", BotMove(move="5", ply=1))
    assert again.take_back("ann").takebacks == 2
    people = GameSession.start("connect4", ("ann", "bob")).play("ann", "4").play("bob", "4")
    with pytest.raises(GameTurnError, match="only against the bot"):
        people.take_back("ann")
    bot_first = GameSession.start("connect4", (BOT, "ann"), level="easy").expect_bot("j")
    bot_first = bot_first.play_bot("j", BotMove(move="4", ply=0))
    with pytest.raises(GameTurnError, match="no move to take back"):
        bot_first.take_back("ann")


def test_a_full_tictactoe_draw() -> None:
    s = GameSession.start("tictactoe", ("ann", "bob"))
    for move in "512873649":
        s = s.play(s.to_move or "", move)
    assert s.status is GameStatus.DRAWN
    assert s.winner is None
    assert s.ply == 9


def test_a_session_carries_its_position_and_plays_moves_as_numbers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A transition hands its position on (nothing parsed again); a move may be the
    engine's number; an illegal one is named and indexed as a typed one is."""
    s = GameSession.start("connect4", ("ann", "bob"), notation="44")
    parsed: list[str] = []
    parse = Connect4.parse.__func__  # type: ignore[attr-defined]

    def counted(cls: type[Connect4], notation: str, variant: str | None = None) -> Connect4:
        parsed.append(notation)
        return parse(cls, notation, variant)  # type: ignore[no-any-return]

    monkeypatch.setattr(Connect4, "parse", classmethod(counted))
    s = s.play_move("ann", 2).play_move("bob", 3).play("ann", "3")
    assert (s.notation, s.moves) == ("44343", ["4", "4", "3", "4", "3"])
    assert s.position().notation() == "44343"
    s.position().push(0)  # a copy: the session's own position is not changed
    assert s.position().notation() == "44343"
    assert parsed == []
    full = GameSession.start("connect4", ("ann", "bob"), notation="444444")
    with pytest.raises(IllegalMoveError, match=r"^'4': column 4 is full \(move 7\)$"):
        full.play_move("ann", 3)


def test_an_old_record_loads_and_takes_a_known_position_only_if_it_is_the_same() -> None:
    """The stored record is JSON as before (no new field); a session read from it parses
    its notation when first needed, unless a known copy of the same position gives it."""
    old = (
        '{"id":"g1","game":"connect4","variant":"7x6","players":["ann","bob"],"level":null,'
        '"notation":"4453","moves":["4","4","5","3"],"status":"ongoing","winner":null,'
        '"pending":null,"last_bot_move":null,"takebacks":0,"version":3,"created_at":1.0,'
        '"updated_at":2.0,"meta":{}}'
    )
    s = GameSession.model_validate_json(old)
    assert s.model_dump_json() == old  # the record is unchanged
    played = s.play_move("ann", 0)
    assert played.notation == "44531"
    again = GameSession.model_validate_json(old).carrying(s)
    assert again == s
    assert again.position().notation() == "4453"
    other = GameSession.model_validate_json(played.model_dump_json()).carrying(s)
    assert other.position().notation() == "44531"  # not s's position: its own


# -- the store: Redis, versions, concurrency ------------------------------------------


def test_store_round_trip_and_versions(redis_url: str) -> None:
    async def body(store: GameStore) -> None:
        created = await store.create(GameSession.start("connect4", ("ann", BOT), level="hard"))
        assert created.version == 1
        again = await store.get(created.id)
        assert again == created
        moved = await store.play(created.id, "ann", "4")
        assert moved.version == 2
        assert moved.moves == ["4"]
        # A second store (a restarted process) reads the same game.
        other = GameStore(store.redis, prefix=store.prefix)
        assert await other.get(created.id) == moved
        with pytest.raises(GameNotFoundError, match="'nope': no such game"):
            await store.get("nope")
        with pytest.raises(GameNotFoundError):
            await store.play("nope", "ann", "4")

    run(redis_url, body)


def test_failed_transitions_write_nothing(redis_url: str) -> None:
    async def body(store: GameStore) -> None:
        s = await store.create(GameSession.start("connect4", ("ann", "bob"), notation="444444"))
        with pytest.raises(IllegalMoveError):
            await store.play(s.id, "ann", "4")
        with pytest.raises(GameTurnError):
            await store.play(s.id, "bob", "1")
        assert await store.get(s.id) == s

    run(redis_url, body)


def test_concurrent_moves_cannot_corrupt_a_game(redis_url: str) -> None:
    """Many requests race to play on one game: exactly one move per turn is stored."""

    async def body(store: GameStore) -> None:
        s = await store.create(GameSession.start("tictactoe", ("ann", "bob")))
        # Each racer uses its own connection, as separate API processes would.
        racers = [Redis.from_url(redis_url, decode_responses=True) for _ in range(8)]
        try:
            results = await asyncio.gather(
                *[
                    GameStore(r, prefix=store.prefix).play(s.id, "ann", str(cell))
                    for r, cell in zip(racers, range(1, 9), strict=True)
                ],
                return_exceptions=True,
            )
        finally:
            for r in racers:
                await r.aclose()
        won = [x for x in results if isinstance(x, GameSession)]
        lost = [x for x in results if isinstance(x, GameTurnError)]
        assert len(won) == 1, results
        assert len(lost) == 7, results
        final = await store.get(s.id)
        assert final.moves == won[0].moves
        assert len(final.moves) == 1
        assert final.version == 2
        assert final.to_move == "bob"

    run(redis_url, body)


def test_inactive_games_and_purge(redis_url: str) -> None:
    async def body(store: GameStore) -> None:
        await store.redis.delete(store.ongoing_key, store.finished_key)
        old = await store.create(GameSession.start("connect4", ("a", "b"), now=1000.0))
        new = await store.create(GameSession.start("connect4", ("c", "d"), now=5000.0))
        done = await store.update(new.id, lambda s: s.resign("c", now=5001.0))
        assert await store.inactive(100, now=5100.0) == [old.id]  # finished games are not listed
        # Ongoing games idle for 3000 s, finished ones 50 s after their end, are deleted.
        assert await store.purge(ongoing_idle=3000, finished_age=50, now=5100.0) == 2
        for game in (old, done):
            with pytest.raises(GameNotFoundError):
                await store.get(game.id)
        assert await store.inactive(0, now=9999.0) == []

    run(redis_url, body)


# -- the bot's moves: failures, losses, late jobs and races (worker/core/bot_moves.py) ------------


def test_a_lost_bot_move_is_asked_again(redis_url: str) -> None:
    async def body(moves: BotMoves) -> None:
        s = GameSession.start("tictactoe", (BOT, "ann"), level="hard")
        s = await moves.games.create(s.expect_bot("no-such-job"))
        turn = await moves.advance(s, wait_s=0)
        assert turn.reply is None
        assert turn.failure is None
        assert turn.notice == "the bot is still thinking"  # the new job waits for a worker
        pending = turn.session.pending
        assert pending is not None
        assert pending.job_id != "no-such-job"
        assert pending.attempts == 2
        assert (await moves.client.status(pending.job_id)).status == "queued"
        assert await moves.games.get(s.id) == turn.session

    run_moves(redis_url, body)


def test_a_failed_bot_move_is_asked_again_until_the_attempts_run_out(redis_url: str) -> None:
    async def body(moves: BotMoves) -> None:
        s = await moves.games.create(GameSession.start("connect4", (BOT, "ann"), level="easy"))
        s = await moves.ask(s)
        assert s.pending is not None
        assert s.pending.attempts == 1
        first = s.pending.job_id
        request = (await moves.client.status(first)).request
        assert request == moves.request(s)
        assert request.deadline_ms == 500
        await moves.client.cancel(first)  # queued: it fails at once
        turn = await moves.advance(s, wait_s=0)
        assert turn.failure is None
        assert turn.session.pending is not None
        assert turn.session.pending.attempts == 2
        assert turn.session.pending.job_id != first
        # The second job fails too: with two attempts a move, the caller is told.
        await moves.client.cancel(turn.session.pending.job_id)
        given_up = await moves.advance(turn.session, wait_s=0)
        assert given_up.failure is not None
        assert "cancel" in given_up.failure
        assert given_up.notice == f"the bot's move failed ({given_up.failure})"
        assert given_up.session == turn.session  # not asked again
        assert await moves.games.get(s.id) == turn.session

    run_moves(redis_url, body, attempts=2)


def test_an_overdue_bot_move_counts_as_lost(redis_url: str) -> None:
    async def body(moves: BotMoves) -> None:
        s = await moves.games.create(GameSession.start("tictactoe", (BOT, "ann"), level="easy"))
        job_id = await moves.client.submit(moves.request(s))
        long_ago = time.time() - moves.overdue_s - 1
        s = await moves.games.update(s.id, lambda g: g.expect_bot(job_id, now=long_ago))
        turn = await moves.advance(s, wait_s=None)  # no wait: the job is overdue already
        assert turn.failure == f"job {job_id} still queued after {moves.overdue_s:g} s"
        assert turn.reply is None
        assert turn.session.pending is not None
        assert turn.session.pending.job_id == job_id

    run_moves(redis_url, body, attempts=1)


def test_two_processes_asking_at_once_record_one_job_and_cancel_the_other(
    redis_url: str,
) -> None:
    async def body(moves: BotMoves) -> None:
        s = await moves.games.create(GameSession.start("connect4", (BOT, "ann"), level="hard"))
        asked = await asyncio.gather(moves.ask(s), moves.ask(s))
        stored = await moves.games.get(s.id)
        assert asked[0] == asked[1] == stored
        assert stored.pending is not None
        assert stored.pending.attempts == 1
        submitted = moves.client.submitted  # type: ignore[attr-defined]
        assert len(submitted) == 2
        assert stored.pending.job_id in submitted
        (other,) = set(submitted) - {stored.pending.job_id}
        assert (await moves.client.status(stored.pending.job_id)).status == "queued"
        cancelled = await moves.client.status(other)
        assert cancelled.status == "failed"
        assert "cancel" in (cancelled.error or "")
        # Asking when the bot is not to move does nothing.
        human = await moves.games.create(GameSession.start("connect4", ("ann", BOT), level="hard"))
        assert await moves.ask(human) == human

    run_moves(redis_url, body)

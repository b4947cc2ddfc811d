"""The bot under the defects a careful user finds (issue 21): a Redis that stalls past
Discord's deadline, a board posted again, two resignations at once, a challenge
repeated, permissions taken away mid-game, workers lost, and the work a redraw does.

Real Redis (a server of the test's own where it is stalled), real workers, the
bot's real discord.py client; Discord is the stand-in of ``tests/fixtures/discord.py``,
which refuses an answer later than 3 s or a second one.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import discord
import pytest

import bot.picture
import bot.render
from engine.connect4 import Connect4
from tests.fixtures.discord import WAIT_S, FakeMessage, FakeUser, bot_settings
from tests.fixtures.discord_bot import CHANNEL, GUILD, BotChannel
from tests.fixtures.waiting import wait_for
from worker.core import contract
from worker.process.processes import WorkerPool
from worker.process.redis_server import RedisServer

pytestmark = [pytest.mark.redis, pytest.mark.service]

UNAVAILABLE = "plybot's storage is not answering right now; try again in a moment."
#: The permissions a channel keeps when an admin takes plybot's board permissions away.
SEE_AND_SEND = discord.Permissions(view_channel=True, send_messages=True)


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    """A Redis of the test's own: stalling it disturbs no other test."""
    with RedisServer(persistent=False) as server:
        try:
            yield server
        finally:
            if server.process is not None:  # never leave it stopped
                os.kill(server.process.pid, signal.SIGCONT)


# -- 1. a Redis stall -------------------------------------------------------------------------


def test_a_redis_stall_past_discords_deadline_leaves_no_interaction_unanswered(
    here: BotChannel, own_redis: RedisServer
) -> None:
    world = here.world
    settings = bot_settings(own_redis.url, redis_socket_timeout_s=4.0)  # a 4 s stall
    assert own_redis.process is not None
    pid = own_redis.process.pid

    async def eight(bot: Any, users: dict[str, FakeUser], board: FakeMessage, cell: str) -> Any:
        """Eight interactions at once, each a different handler; their tasks."""
        u = users
        calls = [
            here.slash(bot, "connect4", u["carol"]),
            here.slash(bot, "tictactoe", u["dan"], opponent=u["erin"]),
            here.slash(bot, "analyze", u["carol"], game="connect4", position="44"),
            here.slash(bot, "board", u["alice"]),
            here.slash(bot, "stats", u["bob"]),
            here.slash(bot, "leaderboard", u["erin"]),
            here.slash(bot, "settings", u["admin"]),
            world.press(bot, u["frank"], board, cell),
        ]
        return [asyncio.ensure_future(c) for c in calls]

    async def scenario(bot: Any) -> None:
        names = ("alice", "bob", "carol", "dan", "erin", "frank", "gina", "admin")
        users = {n: world.user(n) for n in names}
        world.member_permissions[users["admin"].id] = discord.Permissions(manage_guild=True)
        await here.game_between(bot, users["alice"], users["bob"])
        board = await here.game_between(bot, users["frank"], users["gina"])

        # A stall that outlasts Discord's deadline, then ends: every interaction was
        # acknowledged in time while Redis said nothing, and then answered for real.
        os.kill(pid, signal.SIGSTOP)
        try:
            first = len(world.interactions)
            tasks = await eight(bot, users, board, "5")
            await world.until(
                lambda: (
                    len(world.interactions) == first + 8
                    # answered, or refused (too late): the state either way
                    and all(i.answered_at or i.refused for i in world.interactions[first:])
                ),
                "eight acknowledgements while Redis is stalled",
            )
            world.advance(3.5)  # Discord's deadline for each has passed, Redis still stalled
        finally:
            os.kill(pid, signal.SIGCONT)
        done = await asyncio.gather(*tasks)
        for interaction in done:
            assert interaction.refused == []
            assert interaction.answer_kind == "defer"
            assert interaction.answered_in is not None
            assert interaction.answered_in < 3.0
        assert [UNAVAILABLE in i.ephemeral for i in done] == [False] * 8
        offline = "plybot's engine is offline right now"
        connect4, challenge, analyze, shown, stats, ranks, settings_, press = done
        assert connect4.ephemeral[0].startswith(offline)  # this Redis has no worker
        assert challenge.shown is not None
        assert "challenges" in challenge.shown.text
        assert analyze.ephemeral[0].startswith(offline)
        assert shown.shown is not None
        assert shown.shown.buttons()
        assert stats.shown is not None
        assert ranks.shown is not None
        assert settings_.ephemeral[0].startswith("Settings of this server:")
        assert press.ephemeral == []
        assert f"Move 2 · ⭕ {users['gina'].mention} to play" in board.text

        # A stall longer than the bot's Redis timeout: each user hears so, ephemerally.
        os.kill(pid, signal.SIGSTOP)
        try:
            tasks = await eight(bot, users, board, "1")
            done = await asyncio.gather(*tasks)  # the state: each handler has finished
        finally:
            os.kill(pid, signal.SIGCONT)
        for interaction in done:
            assert interaction.refused == []
            assert interaction.answered_in is not None
            assert interaction.answered_in < 3.0
        assert [i.ephemeral for i in done] == [[UNAVAILABLE]] * 8

    here.run(scenario, settings, own_redis.url)


# -- 2. /board retires the old board --------------------------------------------------------


def test_board_retires_the_old_board_and_a_press_on_it_is_answered(here: BotChannel) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        alice, bob = world.user("alice"), world.user("bob")
        old = await here.game_between(bot, alice, bob, "connect4")
        stale_id = old.button("4").custom_id
        again = await here.slash(bot, "board", alice)
        await bot.get_cog("Games").idle()  # the old board retired
        new = again.shown
        assert new is not None
        assert new is not old
        link = f"https://discord.com/channels/{GUILD}/{CHANNEL}/{new.id}"
        assert old.buttons() == []  # nothing left to press
        assert old.content == f"This board moved: {link}"
        assert old.embeds == []
        # A client that still shows the old buttons presses one: told where to play.
        pressed = await world.press_custom_id(bot, alice, old, stale_id)
        assert pressed.ephemeral == [f"That board was replaced by a newer one; play on it: {link}"]
        assert old.content == f"This board moved: {link}"  # not redrawn, not "thinking"
        assert "Move 1 · 🔴" in new.text  # the move was not played
        played = await world.press(bot, alice, new, "4")
        assert played.ephemeral == []
        assert f"Move 2 · 🟡 {bob.mention} to play" in new.text

    here.run(scenario)


# -- 3. two resignations at once ------------------------------------------------------------


@pytest.mark.parametrize("how", ["two buttons", "a button and /resign"])
def test_two_resignations_at_once_announce_the_result_once(here: BotChannel, how: str) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        alice, bob = world.user("alice"), world.user("bob")
        board = await here.game_between(bot, alice, bob)
        before = len(here.announcements())
        # Each resignation is held just before it changes the game, until both got there:
        # then each has found the game still being played (whatever order their handlers
        # ran in), which is the race that must still announce the result once.
        store = bot.get_cog("Games").service.games
        update, arrived, both = store.update, [], asyncio.Event()

        async def together(game_id: str, change: Any, **options: Any) -> Any:
            arrived.append(game_id)
            if len(arrived) == 2:
                both.set()
            await asyncio.wait_for(both.wait(), WAIT_S)
            return await update(game_id, change, **options)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(store, "update", together)
            first = asyncio.ensure_future(world.press(bot, alice, board, "Resign"))
            if how == "two buttons":
                other = world.press(bot, bob, board, "Resign")
            else:
                other = here.slash(bot, "resign", bob)
            answers = await asyncio.gather(first, asyncio.ensure_future(other))
        assert len(arrived) == 2
        await bot.get_cog("Games").idle()
        results = [p for p in here.announcements()[before:] if "resigned" in p or "Resigned" in p]
        assert len(results) == 1, results
        told = [a.ephemeral for a in answers if a.ephemeral]
        assert told == [["This game is over."]]  # the later one
        counted = await here.record(bot, alice)  # one game counted, not two
        assert counted.endswith((" 0 / 0 / 1", " 1 / 0 / 0")), counted

    here.run(scenario)


# -- 4. a challenge cooldown ----------------------------------------------------------------


def test_challenging_the_same_member_again_waits_for_a_cooldown(here: BotChannel) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        alice, bob, carol = world.user("alice"), world.user("bob"), world.user("carol")
        refusals = []
        for _ in range(10):  # challenge, withdraw, challenge again...
            start = await here.slash(bot, "connect4", alice, opponent=bob)
            if start.ephemeral:
                refusals.append((start, start.ephemeral[0]))
                continue
            withdrawn = await here.slash(bot, "resign", alice)
            assert withdrawn.ephemeral == []
        pinged = [m for m in world.in_channel(CHANNEL) if bob.id in m.pinged]
        assert len(pinged) == 1  # one ping, not ten
        assert len(refusals) == 9
        start, said = refusals[0]
        prefix = f"You challenged {bob.mention} a moment ago; you can challenge them again <t:"
        assert said.startswith(prefix)
        assert said.endswith(":R>.")
        when = int(said.removeprefix(prefix).removesuffix(":R>."))
        assert time.time() < when <= time.time() + 61  # when: within the minute
        # Someone else may be challenged at once, and bob may challenge alice.
        other = await here.slash(bot, "connect4", alice, opponent=carol)
        assert other.ephemeral == []
        back = await here.slash(bot, "tictactoe", bob, opponent=world.user("dan"))
        assert back.ephemeral == []

    here.run(scenario)


# -- 6. permissions revoked, workers lost -------------------------------------------------------


@pytest.mark.usefixtures("workers")
def test_permissions_revoked_before_a_press_end_the_game_without_a_result(here: BotChannel) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        cog = bot.get_cog("Games")
        alice = world.user("alice")
        board = await here.against_plybot(bot, alice, "tictactoe")
        world.permissions[CHANNEL] = SEE_AND_SEND
        stranger = await world.press(bot, world.user("carol"), board, "5")
        assert stranger.ephemeral == ["You are not playing in this game."]  # not hers to end
        assert "to play" in board.text
        press = await world.press(bot, alice, board, "5")
        assert press.ephemeral == [
            "plybot can no longer show this game here (missing: Embed Links, Attach Files, "
            "Read Message History), so the game ended with no result: it counts in no rating "
            "or record. Ask a server admin to give plybot its permissions back, or play in "
            "another channel."
        ]
        assert "Ended with no result after 0 moves: plybot lost its permissions" in board.text
        await cog.sweep(now=time.time() + 3 * 3600)  # long past any move timeout
        assert "forfeit" not in board.text
        world.permissions.pop(CHANNEL)
        assert await here.record(bot, alice) == "No finished games yet."
        # The game no longer holds the channel: a new one starts.
        again = await here.slash(bot, "tictactoe", alice)
        assert again.ephemeral == []

    here.run(scenario)


@pytest.mark.usefixtures("workers")
def test_permissions_revoked_while_plybot_thinks_end_the_game_and_the_player_hears_it(
    here: BotChannel,
) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        cog = bot.get_cog("Games")
        alice = world.user("alice")
        board = await here.against_plybot(bot, alice, "connect4")
        # plybot's move is ready to show when its permissions go.
        edit = rf"/channels/{CHANNEL}/messages/{board.id}"
        async with world.holding("PATCH", edit) as hold:
            press = await world.press(bot, alice, board, "4")
            await world.until(lambda: hold.waiting == 1, "plybot's move about to be shown")
            world.permissions[CHANNEL] = SEE_AND_SEND
        await cog.idle()
        assert len(press.ephemeral) == 1
        assert press.ephemeral[0].startswith("plybot can no longer show this game here")
        # plybot's move was played, not shown: the game ends after it, with no result.
        assert "Ended with no result after 2 moves: plybot lost its permissions" in board.text
        await cog.sweep(now=time.time() + 3 * 3600)
        assert "forfeit" not in board.text
        world.permissions.pop(CHANNEL)
        assert await here.record(bot, alice) == "No finished games yet."

    here.run(scenario)


def test_permissions_revoked_before_the_move_warning_end_the_game_without_a_forfeit(
    here: BotChannel,
) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        cog = bot.get_cog("Games")
        alice, bob = world.user("alice"), world.user("bob")
        board = await here.game_between(bot, alice, bob)
        world.permissions[CHANNEL] = SEE_AND_SEND  # nobody presses after this
        timeout = here.settings.bot_inactivity_timeout_s
        await cog.sweep(now=time.time() + timeout * 0.9)  # the warning cannot be shown...
        await cog.sweep(now=time.time() + timeout + 1)  # ...so there is no forfeit after it
        await cog.idle()
        world.permissions.pop(CHANNEL)
        for user in (alice, bob):
            assert await here.record(bot, user) == "No finished games yet."
        pressed = await world.press(bot, alice, board, "5")
        assert pressed.ephemeral == ["This game is over."]
        assert "Ended with no result after 0 moves: plybot lost its permissions" in board.text
        assert "forfeit" not in board.text

    here.run(scenario)


def test_workers_lost_end_the_game_at_once_without_a_result(
    redis_server: RedisServer, here: BotChannel
) -> None:
    world = here.world
    # A database of its own: its only workers are this test's, which it stops.
    url = redis_server.url.rsplit("/", 1)[0] + "/9"
    settings = bot_settings(url)
    pool = WorkerPool(url, 1, "interactive,analysis")

    async def scenario(bot: Any) -> None:
        cog = bot.get_cog("Games")
        alice = world.user("alice")
        board = await here.against_plybot(bot, alice, "tictactoe")
        await asyncio.to_thread(pool.stop)
        await asyncio.to_thread(
            wait_for, lambda: not pool.workers(), "the workers gone from the registry"
        )
        press = await world.press(bot, alice, board, "5")
        assert press.ephemeral == []
        await cog.idle()
        assert "Ended with no result after 1 move: plybot's engine went offline." in board.text
        assert [b.label for b in board.buttons()][-1] == "Rematch"
        assert here.announcements()[-1] == (
            f"Tic-tac-toe: the game of {alice.mention} and plybot ended with no result: "
            "plybot's engine went offline. It counts in no rating or record; Rematch starts "
            "a new one."
        )
        assert await here.record(bot, alice) == "No finished games yet."

    try:
        pool.wait_ready()
        here.run(scenario, settings, url)
    finally:
        pool.stop()


def test_workers_that_stop_answering_mid_move_end_the_game_at_once(
    redis_server: RedisServer, here: BotChannel
) -> None:
    world = here.world
    url = redis_server.url.rsplit("/", 1)[0] + "/10"
    settings = bot_settings(url)
    pool = WorkerPool(url, 1, "interactive,analysis")
    hung: list[int] = []

    async def scenario(bot: Any) -> None:
        cog = bot.get_cog("Games")
        alice = world.user("alice")
        board = await here.against_plybot(bot, alice, "tictactoe")
        (name,) = pool.workers()
        hung.append(pool.kill_worker(name, signal.SIGSTOP))  # it hangs; its lease lapses
        press = await world.press(bot, alice, board, "5")
        assert press.ephemeral == []
        await cog.idle()  # the state: plybot's move is settled one way or the other
        # Told that the engine went offline (once its lease lapsed), not that plybot's
        # move failed three times over (each a minute later).
        assert "Ended with no result after 1 move: plybot's engine went offline." in board.text
        assert await here.record(bot, alice) == "No finished games yet."

    try:
        pool.wait_ready()
        here.run(scenario, settings, url)
    finally:
        for pid in hung:
            os.kill(pid, signal.SIGCONT)
        pool.stop()


# -- 7. words and pings at the end ------------------------------------------------------------


def test_one_move_is_singular_and_the_last_turn_ping_goes_with_the_game(here: BotChannel) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        alice, bob = world.user("alice"), world.user("bob")
        board = await here.game_between(bot, alice, bob)
        await world.press(bot, alice, board, "5")
        await bot.get_cog("Games").idle()
        pings = [m for m in world.in_channel(CHANNEL) if "your move" in (m.content or "")]
        assert len(pings) == 1
        await world.press(bot, bob, board, "Resign")
        await bot.get_cog("Games").idle()
        assert f"{bob.mention} resigned after 1 move: " in board.text
        assert pings[0].deleted  # it asked for a move no longer due
        live = [m for m in world.in_channel(CHANNEL) if "your move" in (m.content or "")]
        assert live == []

    here.run(scenario)


# -- 8. the work of a redraw --------------------------------------------------------------------


@pytest.mark.usefixtures("workers")
def test_a_bot_move_parses_once_and_draws_one_picture_per_redraw(
    here: BotChannel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counted in the bot's process (the workers are processes of their own): the engine's
    parses of a notation (``Connect4.parse`` of a non-empty one), of a move's name
    (``Connect4.parse_move``) and the board pictures drawn, over a press and plybot's reply.
    The shared cache of parsed requests is emptied first: a cache hit must not hide a parse."""
    world = here.world
    parsed: list[str] = []  # the notations parsed
    names: list[str] = []  # the move names parsed
    pictures: list[int] = []  # the ply of each picture drawn
    parse, parse_move = Connect4.parse.__func__, Connect4.parse_move  # type: ignore[attr-defined]
    draw_png = bot.picture.board_png

    def counted_parse(cls: type[Connect4], notation: str, variant: str | None = None) -> Any:
        if notation:
            parsed.append(notation)
        return parse(cls, notation, variant)

    def counted_parse_move(position: Connect4, text: str) -> int:
        names.append(text)
        return parse_move(position, text)

    def counted_png(position: Connect4) -> bytes:
        pictures.append(position.ply)
        return draw_png(position)

    monkeypatch.setattr(Connect4, "parse", classmethod(counted_parse))
    monkeypatch.setattr(Connect4, "parse_move", counted_parse_move)
    monkeypatch.setattr(bot.picture, "board_png", counted_png)
    monkeypatch.setattr(bot.render, "board_png", counted_png)

    async def scenario(bot_: Any) -> None:
        cog = bot_.get_cog("Games")
        alice = world.user("alice")
        board = await here.against_plybot(bot_, alice, "connect4")
        for column in ("4", "4", "3"):
            contract._parsed.cache_clear()
            parsed.clear()
            names.clear()
            pictures.clear()
            versions = len(board.history)
            press = await world.press(bot_, alice, board, column)
            assert press.ephemeral == []
            await cog.idle()  # plybot's reply played and shown
            shown = board.history[versions:]
            assert len(shown) == 2  # two redraws: the press's board, then plybot's move
            # At most one parse of the game's notation for the press and plybot's reply
            # (the press reads the game from Redis; plybot's reply is played on the
            # position the game carries) ...
            assert len(parsed) <= 1, parsed
            # ... and one move name: plybot's move as the workers answer it (JSON, in
            # notation); the pressed move is a number from the button to the engine.
            assert len(names) == 1, names
            # One picture per redraw, and each redraw shows one.
            assert len(pictures) == len(shown), pictures
            assert [len(v["wire"]["attachments"]) for v in shown] == [1] * len(shown)

    here.run(scenario)

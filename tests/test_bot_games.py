"""The Discord bot's games, driven over the wire through its real discord.py client.

Real Redis, real RQ workers, the real engine; Discord is the stand-in of
``tests/fixtures/discord.py`` on localhost, which keeps what the bot sent. Each test
uses its own key prefix, so the shared Redis and workers carry no state from
one test to the next, and the sweeper runs only when a test calls it (with a
``now`` past the deadline instead of waiting).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from redis.asyncio import Redis

from bot.service import DiscordGames, Update
from tests.fixtures.discord import Button, DiscordWorld, FakeMessage, FakeUser, stop_bot
from tests.fixtures.discord_bot import CHANNEL, GUILD, BotChannel
from worker.core.client import JobClient
from worker.core.games import BOT, GameSession, GameStore

pytestmark = [pytest.mark.redis, pytest.mark.service]


def leftmost(buttons: list[Button]) -> str:
    return buttons[0].label or buttons[0].emoji or ""


async def play_out(
    world: DiscordWorld,
    bot: Any,
    user: FakeUser,
    board: FakeMessage,
    choose: Callable[[list[Button]], str] = leftmost,
) -> FakeMessage:
    """Play ``user``'s moves on ``board`` against plybot until the game ends."""
    cog = bot.get_cog("Games")
    for _ in range(60):
        await cog.idle()
        moves = [b for b in board.buttons() if b.custom_id.startswith("plybot:mv:")]
        if "Rematch" in [b.label for b in board.buttons()]:  # a finished game offers one
            return board
        enabled = [b for b in moves if not b.disabled and (b.label or "").isdigit()]
        assert enabled, f"the player's turn, but no button is enabled:\n{board.text}"
        press = await world.press(bot, user, board, choose(enabled))
        assert press.ephemeral == [], press.ephemeral
    raise AssertionError(f"the game did not end:\n{board.text}")


# -- against the bot ----------------------------------------------------------------------


@pytest.mark.parametrize("level", ["easy", "medium", "hard", "perfect"])
@pytest.mark.usefixtures("workers")
def test_full_tictactoe_game_against_the_bot_at_each_level(here: BotChannel, level: str) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        alice = world.user("alice")
        start = await here.slash(bot, "tictactoe", alice, level=level)
        assert start.answer_kind == "defer"
        assert start.ephemeral == []
        board = start.shown
        assert board is not None
        assert f"❌ X: {alice.mention} vs ⭕ O: plybot ({level})" in board.text
        assert "Move 1 · ❌" in board.text
        assert "to play" in board.text
        await play_out(world, bot, alice, board)
        final = board.text
        assert "wins after" in final or "Draw after" in final, final
        if level == "perfect":  # leftmost cells are no defence against exact play
            assert "⭕ plybot (perfect) wins after" in final, final
        # The result is announced, and counted once in /stats for this level.
        assert any(t.startswith("Tic-tac-toe: ") for t in here.announcements())
        stats = await here.slash(bot, "stats", alice)
        assert stats.shown is not None
        lines = stats.shown.text.splitlines()
        row = next(line for line in lines if line.startswith(f"Tic-tac-toe {level}: "))
        assert sum(int(n) for n in row.split(": ")[1].split(" / ")) == 1

    here.run(scenario)


@pytest.mark.usefixtures("workers")
def test_bot_moves_first_when_asked_and_a_game_can_start_from_a_position(here: BotChannel) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        alice = world.user("alice")
        board = await here.shown(
            bot, "connect4", alice, level="medium", first="opponent", position="4453"
        )
        assert (
            "🔴 Red: plybot (medium) vs 🟡 Yellow: " in board.text
        )  # plybot moves next, from 4453
        assert "Move 5 · 🔴 plybot (medium) is thinking…" in board.text
        assert all(b.disabled for b in board.buttons() if b.custom_id.startswith("plybot:mv:"))
        assert not board.button("Resign").disabled  # one may resign while plybot thinks
        await bot.get_cog("Games").idle()
        assert f"Move 6 · 🟡 {alice.mention} to play" in board.text

    here.run(scenario)


@pytest.mark.parametrize("level", ["easy", "medium", "hard", "perfect"])
@pytest.mark.usefixtures("workers")
def test_full_connect4_game_against_the_bot(here: BotChannel, level: str) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        alice = world.user("alice")
        board = await here.shown(bot, "connect4", alice, level=level)
        await play_out(world, bot, alice, board)
        # Stacking the leftmost column is no defence: every level but easy (which errs on
        # purpose) must win it; easy must at least finish the game.
        if level == "easy":
            assert "wins after" in board.text or "Draw after" in board.text, board.text
        else:
            assert f"🟡 plybot ({level}) wins after" in board.text, board.text
        assert [b.label for b in board.buttons()] == ["Rematch"]

    here.run(scenario)


@pytest.mark.usefixtures("workers")
def test_resign_ends_the_game_and_counts_a_loss(here: BotChannel) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        alice = world.user("alice")
        board = await here.shown(bot, "connect4", alice)
        resign = await here.slash(bot, "resign", alice)
        assert resign.shown is not None
        assert resign.shown.text == (
            f"Connect Four: {alice.mention} resigned; plybot (medium) wins."
        )
        await bot.get_cog("Games").idle()
        assert f"🔴 {alice.mention} resigned after 0 moves" in board.text
        assert [b.label for b in board.buttons()] == ["Rematch"]
        again = await here.slash(bot, "resign", alice)
        assert again.ephemeral == ["You have no game in this channel."]
        stats = await here.slash(bot, "stats", alice)
        assert "Connect Four medium: 0 / 0 / 1" in stats.shown.text

    here.run(scenario)


# -- between users ------------------------------------------------------------------------


@pytest.mark.usefixtures("workers")
def test_challenge_accepted_and_played_to_the_end_moves_the_ratings(here: BotChannel) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        alice, bob = world.user("alice"), world.user("bob")
        message = await here.shown(bot, "connect4", alice, opponent=bob)
        assert message.content == bob.mention  # the challenged is pinged
        assert f"{alice.mention} challenges {bob.mention} to Connect Four." in message.text
        assert [b.label for b in message.buttons()] == ["Accept", "Decline"]
        own = await world.press(bot, alice, message, "Accept")
        assert own.ephemeral == [f"Only {bob.mention} can accept this challenge."]

        accept = await world.press(bot, bob, message, "Accept")
        assert accept.ephemeral == []
        assert message.content is None
        assert f"Move 1 · 🔴 {alice.mention} to play" in message.text
        # Alice stacks column 1, Bob column 2: four in a column for Alice on move 7.
        for mover, column in [(alice, "1"), (bob, "2")] * 3 + [(alice, "1")]:
            press = await world.press(bot, mover, message, column)
            assert press.ephemeral == []
        assert f"🔴 {alice.mention} wins after 7 moves." in message.text
        await bot.get_cog("Games").idle()
        said = here.announcements()
        assert f"Connect Four: {alice.mention} beat {bob.mention} in 7 moves." in said[-1]
        assert "Ratings: " in said[-1]

        board = await here.slash(bot, "leaderboard", bob)
        assert board.shown is not None
        assert board.shown.text.splitlines()[1:] == [
            f"1. {alice.mention}: 1216 (1 game)",
            f"2. {bob.mention}: 1184 (1 game)",
        ]
        stats = await here.slash(bot, "stats", alice, user=bob)
        assert "Connect Four: 1184, 0 / 0 / 1" in stats.shown.text

    here.run(scenario)


@pytest.mark.usefixtures("workers")
def test_challenge_declined_and_challenge_expired(here: BotChannel) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        cog = bot.get_cog("Games")
        alice, bob, carol = world.user("alice"), world.user("bob"), world.user("carol")
        declined = await here.shown(bot, "tictactoe", alice, opponent=bob)
        stranger = await world.press(bot, carol, declined, "Decline")
        assert stranger.ephemeral == [f"Only {bob.mention} can answer this challenge."]
        await world.press(bot, bob, declined, "Decline")
        assert declined.text.splitlines()[-2] == f"{bob.mention} declined."
        assert declined.buttons() == []
        late = await world.press_custom_id(
            bot, bob, declined, declined.history[0]["buttons"][0].custom_id
        )
        assert late.ephemeral == ["This challenge is no longer open."]

        # Declining freed both players: a new challenge between them is allowed at once
        # (bob's to alice; alice's to bob again waits for the challenge cooldown).
        expiring = await here.shown(bot, "tictactoe", bob, opponent=alice)
        assert expiring.buttons()
        await cog.sweep(now=time.time() + here.settings.bot_challenge_expiry_s - 5)
        assert expiring.buttons(), "swept before its time"
        await cog.sweep(now=time.time() + here.settings.bot_challenge_expiry_s + 1)
        assert f"Expired: {alice.mention} did not answer in time." in expiring.text
        assert expiring.buttons() == []
        assert here.announcements()[-1] == (f"The challenge to {alice.mention} expired unanswered.")
        answer = await world.press_custom_id(
            bot, alice, expiring, expiring.history[0]["buttons"][0].custom_id
        )
        assert answer.ephemeral == ["This challenge is no longer open."]

    here.run(scenario)


@pytest.mark.usefixtures("workers")
def test_presses_out_of_turn_on_a_full_column_by_a_stranger_and_on_a_finished_game(
    here: BotChannel,
) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        alice, bob, carol = world.user("alice"), world.user("bob"), world.user("carol")
        message = await here.shown(bot, "connect4", alice, opponent=bob, position="444444")
        await world.press(bot, bob, message, "Accept")
        assert message.button("4").disabled  # the full column's button
        before = message.text

        out_of_turn = await world.press(bot, bob, message, "1")
        assert out_of_turn.ephemeral == [f"Not your turn: it is {alice.mention}'s move."]
        stranger = await world.press(bot, carol, message, "1")
        assert stranger.ephemeral == ["You are not playing in this game."]
        full = await world.press(bot, alice, message, "4")  # a stale client may still press it
        assert full.ephemeral == ["Column 4 is full."]
        assert message.text == before  # nothing changed

        # Alice wins along the bottom row; then every press is refused.
        for mover, column in [(alice, "1"), (bob, "1"), (alice, "2"), (bob, "2"), (alice, "3")]:
            assert (await world.press(bot, mover, message, column)).ephemeral == []
        assert f"🔴 {alice.mention} wins after 11 moves." in message.text
        stale = message.history[-2]["buttons"][4].custom_id  # a button of the last live board
        done = await world.press_custom_id(bot, bob, message, stale)
        assert done.ephemeral == ["This game is over."]

    here.run(scenario)


@pytest.mark.usefixtures("workers")
def test_two_presses_racing_on_one_board_play_exactly_one_move(here: BotChannel) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        alice, bob = world.user("alice"), world.user("bob")
        message = await here.shown(bot, "tictactoe", alice, opponent=bob)
        await world.press(bot, bob, message, "Accept")
        presses = await asyncio.gather(
            world.press(bot, alice, message, "1"), world.press(bot, alice, message, "9")
        )
        refused = [p.ephemeral for p in presses if p.ephemeral]
        assert len(refused) == 1, refused
        assert "Move 2 · ⭕" in message.text

    here.run(scenario)


# -- limits -------------------------------------------------------------------------------


@pytest.mark.usefixtures("workers")
def test_one_game_per_user_per_channel_even_when_commands_race(here: BotChannel) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        alice, bob, carol = world.user("alice"), world.user("bob"), world.user("carol")
        racing = await asyncio.gather(*(here.slash(bot, "tictactoe", alice) for _ in range(3)))
        boards = [i for i in racing if not i.ephemeral]
        assert len(boards) == 1
        for refused in (i for i in racing if i.ephemeral):
            assert refused.ephemeral == [
                "You already have a game or challenge in this channel: "
                "finish it or `/resign` first."
            ]
        # Another channel is fine; challenging someone busy here is not.
        other = await world.slash(bot, "tictactoe", alice, guild_id=GUILD, channel_id=CHANNEL + 1)
        assert other.ephemeral == []
        busy = await here.slash(bot, "tictactoe", carol, opponent=alice)
        assert busy.ephemeral == [
            f"{alice.mention} already has a game or challenge in this channel: "
            "finish it or `/resign` first."
        ]
        selfie = await here.slash(bot, "tictactoe", bob, opponent=bob)
        assert selfie.ephemeral == [
            "You cannot challenge yourself: leave `opponent` empty to play plybot."
        ]
        robot = world.user("robot", bot=True)
        other_bot = await here.slash(bot, "tictactoe", bob, opponent=robot)
        assert other_bot.ephemeral == [f"{robot.mention} is a bot and cannot accept a challenge."]
        bad = await here.slash(bot, "connect4", bob, position="44448")
        assert bad.ephemeral == ["Bad position: '44448': column 8 is outside 1..7 (move 5)"]

    here.run(scenario)


@pytest.mark.usefixtures("workers")
def test_concurrent_games_per_guild_are_capped(here: BotChannel) -> None:
    world = here.world
    capped = here.settings.model_copy(update={"bot_max_games_per_guild": 2})

    async def scenario(bot: Any) -> None:
        users = [world.user(f"u{i}") for i in range(3)]
        for i, user in enumerate(users[:2]):
            ok = await world.slash(bot, "tictactoe", user, guild_id=GUILD, channel_id=CHANNEL + i)
            assert ok.ephemeral == []
        full = await here.slash(bot, "tictactoe", users[2])
        assert full.ephemeral == ["This server already has 2 games going; try again when one ends."]
        elsewhere = await world.slash(
            bot, "tictactoe", users[2], guild_id=GUILD + 1, channel_id=CHANNEL + 10
        )
        assert elsewhere.ephemeral == []  # the cap is per guild
        await here.slash(bot, "resign", users[0])
        freed = await here.slash(bot, "tictactoe", users[2])
        assert freed.ephemeral == []

    here.run(scenario, capped)


# -- time and restarts ----------------------------------------------------------------------


@pytest.mark.usefixtures("workers")
def test_inactive_game_is_forfeited_with_a_message_in_the_channel(here: BotChannel) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        cog = bot.get_cog("Games")
        alice = world.user("alice")
        board = await here.shown(bot, "tictactoe", alice, level="hard")
        await world.press(bot, alice, board, "5")
        await cog.idle()
        live = board.buttons()
        timeout = here.settings.bot_inactivity_timeout_s
        assert "or forfeit." in board.text  # the deadline is on the board
        await cog.sweep(now=time.time() + timeout * 0.5)
        assert not [m for m in world.in_channel(CHANNEL) if m.embed is None]  # too early to warn
        await cog.sweep(now=time.time() + timeout - 5)
        assert board.buttons() == live, "forfeited before its time"
        warning = world.in_channel(CHANNEL)[-1]
        assert warning.content is not None
        assert warning.content.startswith(
            f"{alice.mention}, your Tic-tac-toe game is waiting for your move: you forfeit <t:"
        )
        assert warning.pinged == [alice.id]
        await cog.sweep(now=time.time() + timeout - 4)  # warned once per move
        assert world.in_channel(CHANNEL)[-1] is warning
        await cog.sweep(now=time.time() + timeout + 1)
        assert f"❌ {alice.mention} forfeits (no move in time): ⭕ plybot (hard) wins." in (
            board.text
        )
        assert here.announcements()[-1] == (
            f"Tic-tac-toe: {alice.mention} forfeits (no move in time); plybot (hard) wins."
        )
        assert world.in_channel(CHANNEL)[-1].pinged == []  # a result against plybot pings nobody
        late = await world.press_custom_id(bot, alice, board, live[0].custom_id)
        assert late.ephemeral == ["This game is over."]
        stats = await here.slash(bot, "stats", alice)
        assert "Tic-tac-toe hard: 0 / 0 / 1" in stats.shown.text
        # Sweeping again settles nothing twice.
        await cog.sweep(now=time.time() + timeout + 2)
        stats = await here.slash(bot, "stats", alice)
        assert "Tic-tac-toe hard: 0 / 0 / 1" in stats.shown.text

    here.run(scenario)


@pytest.mark.usefixtures("workers")
def test_bot_restarted_mid_game_resumes_with_the_same_buttons(here: BotChannel) -> None:
    world = here.world

    async def scenario() -> None:
        first = await here.start_bot()
        alice = world.user("alice")
        board = await here.shown(first, "connect4", alice, level="medium")
        await world.press(first, alice, board, "4")
        await first.get_cog("Games").idle()
        assert f"Move 3 · 🔴 {alice.mention} to play" in board.text
        # The bot stops right after Alice's next move, before its answer is shown: Discord
        # is slow to take the redraw, and the bot is gone before it does.
        async with world.holding("PATCH", f"/channels/{CHANNEL}/messages/{board.id}") as held:
            await world.press(first, alice, board, "3")
            await world.until(lambda: held.waiting > 0, "the bot to show its move")
            first.drain_s = 0  # stopped at once, as by SIGKILL: the move is not waited for
            await stop_bot(first)
        assert "Move 4" in board.text
        assert "is thinking" in board.text

        second = await here.start_bot()  # a new process, same Redis
        await second.get_cog("Games").idle()  # the move the first one did not show is shown
        assert f"Move 5 · 🔴 {alice.mention} to play" in board.text, board.text
        # The same custom_ids, dispatched by the new bot's registered DynamicItems, still play.
        press = await world.press(second, alice, board, "5")
        assert press.ephemeral == []
        await second.get_cog("Games").idle()
        assert f"Move 7 · 🔴 {alice.mention} to play" in board.text, board.text
        await stop_bot(second)

    asyncio.run(scenario())


@pytest.mark.usefixtures("workers")
def test_a_stale_board_is_refused_and_redrawn(here: BotChannel) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        alice, bob = world.user("alice"), world.user("bob")
        message = await here.shown(bot, "tictactoe", alice, opponent=bob)
        await world.press(bot, bob, message, "Accept")
        old = message.button("1").custom_id  # drawn at move 1
        await world.press(bot, alice, message, "5")
        await world.press(bot, bob, message, "1")
        stale = await world.press_custom_id(bot, alice, message, old)
        assert stale.ephemeral == ["That board was out of date; here is the current one."]
        assert "Move 3 · ❌" in message.text

    here.run(scenario)


@pytest.mark.usefixtures("workers")
def test_restart_settles_games_that_ended_unsettled_and_frees_vanished_ones(
    here: BotChannel,
) -> None:
    world = here.world

    async def scenario() -> None:
        bot = await here.start_bot()
        alice, bob = world.user("alice"), world.user("bob")
        ended = await here.slash(bot, "tictactoe", alice)
        vanished = await here.slash(bot, "tictactoe", bob)
        ids = [m.buttons()[0].custom_id.split(":")[2] for m in (ended.shown, vanished.shown)]
        await stop_bot(bot)
        # While the bot is down: one game ends without being settled (as if the bot died in
        # between), the other's record expires.
        async with Redis.from_url(here.redis_url) as redis:
            store = GameStore(redis, prefix=here.settings.bot_key_prefix)
            await store.resign(ids[0], str(alice.id))
            await store.delete(ids[1])

        bot = await here.start_bot()
        stats = await here.slash(bot, "stats", alice)
        assert "Tic-tac-toe medium: 0 / 0 / 1" in stats.shown.text
        for user in (alice, bob):  # both are free to start again
            again = await here.slash(bot, "tictactoe", user)
            assert again.ephemeral == []
        await stop_bot(bot)

    asyncio.run(scenario())


@pytest.mark.usefixtures("workers")
def test_pressing_while_the_bot_thinks_is_refused(here: BotChannel) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        alice = world.user("alice")
        # A game where plybot is to move and its job is still out (here: never asked, so the
        # state holds however fast the workers are).
        async with Redis.from_url(here.redis_url) as redis:
            store = GameStore(redis, prefix=here.settings.bot_key_prefix)
            session = await store.create(
                GameSession.start(
                    "connect4",
                    (BOT, str(alice.id)),
                    level="easy",
                    meta={"guild": str(GUILD), "channel": str(CHANNEL)},
                )
            )
        button = f"plybot:mv:{session.id}:0:3"
        board = world.post(
            CHANNEL, content="a board drawn before", guild_id=GUILD, buttons=[button]
        )
        press = await world.press_custom_id(bot, alice, board, button)
        assert press.ephemeral == ["Not your turn: plybot is thinking."]

    here.run(scenario)


@pytest.mark.usefixtures("workers")
def test_a_bot_move_in_flight_when_the_bot_stopped_is_picked_up_on_start(here: BotChannel) -> None:
    world = here.world

    async def scenario() -> None:
        alice = world.user("alice")
        board = world.post(
            CHANNEL, content="the board, as the bot that died left it", guild_id=GUILD
        )
        # A bot that died right after asking the workers for its move: the service's own
        # steps, with nobody left to wait for the answer.
        async with Redis.from_url(here.redis_url) as redis, JobClient(here.redis_url) as jobs:
            service = DiscordGames(redis, jobs, here.settings)
            started = await service.start(
                guild_id=str(GUILD), channel_id=str(CHANNEL), user_id=str(alice.id),
                game="tictactoe", level="hard",
            )  # fmt: skip
            assert isinstance(started, Update)
            game_id = started.table.id
            await service.attach_message(started.table, str(board.id))
            assert isinstance(await service.press(game_id, str(alice.id), 0, 4), Update)
            waiting = await service.request_bot_move(game_id)
            assert waiting.pending is not None
            job_id = waiting.pending.job_id

            bot = await here.start_bot()
            await bot.get_cog("Games").idle()
            assert f"Move 3 · ❌ {alice.mention} to play" in board.text, board.text
            played = await service.games.get(game_id)
            done = await jobs.status(job_id)  # the very job asked for before the stop
            assert done.status == "done"
            assert done.result is not None
            assert played.moves == ["5", done.result.move]
            await stop_bot(bot)

    asyncio.run(scenario())

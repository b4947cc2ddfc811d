"""The bot around a game: Resign and Rematch buttons, turn pings, /board, permissions,
workers down, failures that still answer, two bot processes sharing one token, two
shards, and a game that outlives its interaction's 15-minute token.

Real Redis, real workers, the real engine and the bot's real discord.py client;
Discord is the stand-in of ``tests/fixtures/discord.py`` on localhost.
"""

from __future__ import annotations

import asyncio
import io
import logging
import time
from typing import Any

import discord
import pytest
from PIL import Image
from redis.asyncio import Redis

from bot.picture import RIM, centre
from bot.settings import BotSettings
from engine.game import new_game
from tests.fixtures.discord import DiscordWorld, run_with_bot, stop_bot
from tests.fixtures.discord_bot import CHANNEL, GUILD, BotChannel
from worker.process.redis_server import RedisServer

pytestmark = [pytest.mark.redis, pytest.mark.service]


def pixel(png: bytes, xy: tuple[int, int]) -> tuple[int, int, int]:
    return Image.open(io.BytesIO(png)).convert("RGB").getpixel(xy)  # type: ignore[return-value]


@pytest.mark.usefixtures("workers")
def test_challenge_played_to_a_win_marks_the_four_pings_each_turn_then_a_rematch(
    here: BotChannel,
) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        alice, bob = world.user("alice"), world.user("bob")
        refused = await here.slash(bot, "connect4", alice, opponent=bob, level="hard")
        assert refused.ephemeral == [
            "`level` is plybot's strength: it does not apply when you challenge a member. "
            "Leave it out, or leave out `opponent` to play plybot."
        ]
        board = await here.shown(bot, "connect4", alice, opponent=bob)
        assert board.pinged == [bob.id]
        await world.press(bot, bob, board, "Accept")
        assert "or forfeit." in board.text  # the deadline, on the board
        assert board.picture is not None
        for mover, column in [(alice, "1"), (bob, "2")] * 3:
            assert (await world.press(bot, mover, board, column)).ephemeral == []
            await bot.get_cog("Games").idle()
            ping = here.posts()[-1]
            other = bob if mover is alice else alice
            assert ping.content is not None
            assert ping.content.startswith(f"{other.mention}, your move in Connect Four")
            assert ping.pinged == [other.id]  # the player to move, nobody else
            live = [m for m in here.posts() if "your move" in (m.content or "") and not m.deleted]
            assert live == [ping]  # the previous turn's ping was deleted: no pile of pings
        await world.press(bot, alice, board, "1")
        await bot.get_cog("Games").idle()
        assert f"🔴 {alice.mention} wins after 7 moves." in board.text
        png = board.picture
        assert png is not None
        position = new_game("connect4", "1212121")
        for row in range(4):  # the winning four, joined by the line through their centres
            assert pixel(png, centre(position, 0, row)) == RIM
        result = here.posts()[-1]
        assert result.content is not None
        assert " beat " in result.content
        assert result.pinged == []
        assert [b.label for b in board.buttons()] == ["Rematch"]

        stranger = await world.press(bot, world.user("carol"), board, "Rematch")
        assert stranger.ephemeral == ["Only its players can ask for a rematch."]
        rematch = await world.press(bot, bob, board, "Rematch")
        challenge = rematch.shown
        assert challenge is not None
        assert challenge is not board
        # Bob moved second; in the rematch he moves first, and Alice is asked to accept.
        assert f"{bob.mention} challenges {alice.mention} to Connect Four." in challenge.text
        assert f"🔴 {bob.mention} moves first." in challenge.text
        assert challenge.pinged == [alice.id]
        await world.press(bot, alice, challenge, "Accept")
        assert f"Move 1 · 🔴 {bob.mention} to play" in challenge.text

    here.run(scenario)


@pytest.mark.usefixtures("workers")
def test_against_plybot_resign_button_rematch_and_no_pings(here: BotChannel) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        cog = bot.get_cog("Games")
        alice = world.user("alice")
        board = await here.shown(bot, "tictactoe", alice, level="easy")
        assert board.pinged == []
        await world.press(bot, alice, board, "5")
        await cog.idle()
        assert here.posts() == []  # no "your turn" message against plybot
        taken = await world.press(bot, alice, board, "X")  # her mark: the buttons are the board
        assert taken.ephemeral == ["Cell 5 is taken."]
        resign = await world.press(bot, alice, board, "Resign")
        assert resign.ephemeral == []
        await cog.idle()
        assert f"❌ {alice.mention} resigned after" in board.text
        said = here.posts()[-1]
        assert said.content == f"Tic-tac-toe: {alice.mention} resigned; plybot (easy) wins."
        assert said.pinged == []
        # The final board stays (free cells disabled, marks full contrast), Rematch under it.
        assert all(b.disabled for b in board.buttons() if (b.label or "").isdigit())
        again = await world.press(bot, alice, board, "Rematch")
        second = again.shown
        assert second is not None
        assert second is not board
        # Alice moved first last time: now plybot does, at the same level, at once.
        assert f"❌ X: plybot (easy) vs ⭕ O: {alice.mention}" in second.text
        await cog.idle()
        assert f"Move 2 · ⭕ {alice.mention} to play" in second.text
        twice = await world.press(bot, alice, board, "Rematch")  # she has a game already
        assert twice.ephemeral == [
            "You already have a game or challenge in this channel: finish it or `/resign` first."
        ]

    here.run(scenario)


@pytest.mark.usefixtures("workers")
def test_board_command_posts_the_game_again_and_the_new_message_is_the_one_kept(
    here: BotChannel,
) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        cog = bot.get_cog("Games")
        alice = world.user("alice")
        none = await here.slash(bot, "board", alice)
        assert none.ephemeral == ["You have no game in this channel."]
        old = await here.shown(bot, "connect4", alice)
        new = await here.shown(bot, "board", alice)
        assert new is not old
        assert new.picture is not None
        await world.press(bot, alice, new, "4")
        await cog.idle()
        assert f"Move 3 · 🔴 {alice.mention} to play" in new.text  # plybot answered there

    here.run(scenario)


@pytest.mark.usefixtures("workers")
def test_a_channel_without_the_bots_permissions_is_refused_with_an_explanation(
    here: BotChannel,
) -> None:
    world = here.world
    world.permissions[CHANNEL] = discord.Permissions(view_channel=True, send_messages=True)

    async def scenario(bot: Any) -> None:
        alice, bob = world.user("alice"), world.user("bob")
        for options in ({}, {"opponent": bob}):
            refused = await here.slash(bot, "connect4", alice, **options)
            assert refused.ephemeral == [
                "I cannot show a game in this channel: I am missing Embed Links, Attach Files, "
                "Read Message History here. Ask a server admin to grant them to plybot, or "
                "start the game in another channel."
            ]
        assert world.in_channel(CHANNEL) == []
        # A French-speaking member reads the same refusal in French.
        french = world.user("amélie", locale="fr")
        refused = await here.slash(bot, "tictactoe", french)
        assert refused.ephemeral == [
            "Je ne peux pas afficher de partie dans ce salon : il me manque Embed Links, "
            "Attach Files, Read Message History ici. Demandez à un admin du serveur de les "
            "accorder à plybot, ou lancez la partie dans un autre salon."
        ]
        # Nothing was claimed: the same command works where the bot may post.
        ok = await world.slash(bot, "connect4", alice, guild_id=GUILD, channel_id=CHANNEL + 1)
        assert ok.ephemeral == []
        assert ok.shown is not None

    here.run(scenario)


@pytest.mark.usefixtures("workers")
def test_two_bot_processes_sharing_a_token_handle_each_interaction_once(here: BotChannel) -> None:
    world = here.world

    async def scenario() -> None:
        one = await here.start_bot()
        two = await here.start_bot()
        try:
            for i in range(6):
                user = world.user(f"u{i}")
                seen = await world.deliver(
                    [one, two], user, "tictactoe", guild_id=GUILD, channel_id=CHANNEL
                )
                assert seen[0].ephemeral == []  # no false "You already have a game"
                assert len(seen[0].sessions) == 2  # both processes got it...
                # ...and both acknowledged it at once: Discord took one (the claim), and
                # refused the other as already acknowledged, which then dropped it.
                assert [kind for kind, _ in seen[0].refused] == ["twice"]
                boards = [m for m in world.in_channel(CHANNEL) if m.embed is not None]
                assert len(boards) == i + 1  # one board per command, not two
            await one.get_cog("Games").idle()
            await two.get_cog("Games").idle()
        finally:
            await stop_bot(one)
            await stop_bot(two)

    asyncio.run(scenario())


def test_workers_down_is_said_at_once(here: BotChannel) -> None:
    # Another Redis database: the same server, where no worker holds a lease.
    empty = here.redis_url.rsplit("/", 1)[0] + "/7"
    world = here.world
    lonely = here.settings.model_copy(update={"redis_url": empty})

    async def scenario(bot: Any) -> None:
        alice = world.user("alice")
        for command, options in (("connect4", {}), ("analyze", {"game": "connect4"})):
            done = await here.slash(bot, command, alice, **options)
            assert done.answer_kind == "defer"  # acknowledged first, then told
            assert done.ephemeral == [
                "plybot's engine is offline right now (no worker is running), so it cannot "
                "play or analyse. Try again later; games between members still work."
            ]
            assert done.answered_in is not None
            assert done.answered_in < 3

    here.run(scenario, lonely, empty)


@pytest.mark.usefixtures("workers")
def test_a_failing_button_and_a_failing_command_still_answer(here: BotChannel) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        alice = world.user("alice")
        board = await here.shown(bot, "tictactoe", alice)
        game_id = board.buttons()[0].custom_id.split(":")[2]
        # The game's record is damaged (not JSON): the handler raises, the presser hears of it.
        async with Redis.from_url(here.redis_url) as redis:
            await redis.set(f"{here.settings.bot_key_prefix}game:{game_id}", "{not json")
        press = await world.press(bot, alice, board, "5")
        assert press.ephemeral == [
            "Something went wrong on plybot's side; it was logged. Try again in a moment."
        ]
        command = await here.slash(bot, "board", alice)
        assert command.ephemeral == [
            "Something went wrong on plybot's side; it was logged. Try again in a moment."
        ]

    here.run(scenario)


@pytest.mark.usefixtures("workers")
def test_server_settings_are_changed_by_managers_only_and_apply_to_new_games(
    here: BotChannel,
) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        cog = bot.get_cog("Games")
        admin, alice = world.user("admin"), world.user("alice")
        world.member_permissions[admin.id] = discord.Permissions(manage_guild=True)
        denied = await here.slash(bot, "settings", alice, level="hard")
        assert denied.ephemeral == [
            "Only members with Manage Server can change plybot's settings here."
        ]
        shown = await here.slash(bot, "settings", admin)
        assert shown.ephemeral == [
            "Settings of this server:\nDefault level against plybot: **medium**\n"
            "Move timeout: **30 minutes** (then the player to move forfeits)\n"
            "Games are played in: any channel\n"
            "Language of boards and announcements: **English** (the server's language in Discord)"
        ]
        french = world.user("gérante", locale="fr")
        world.member_permissions[french.id] = discord.Permissions(manage_guild=True)
        vu = await here.slash(bot, "settings", french)
        assert vu.ephemeral == [
            "Réglages de ce serveur :\nNiveau par défaut contre plybot : **medium**\n"
            "Délai par coup : **30 minutes** (ensuite, le joueur au trait perd par forfait)\n"
            "Les parties se jouent dans : n'importe quel salon\n"
            "Langue des plateaux et des annonces : **anglais** (la langue du serveur dans Discord)"
        ]
        changed = await here.slash(
            bot, "settings", admin, level="hard", move_timeout=5, channel=world.channel(CHANNEL)
        )
        assert changed.ephemeral[0].startswith(
            "Settings changed.\nDefault level against plybot: **hard**\n"
            f"Move timeout: **5 minutes** (then the player to move forfeits)\n"
            f"Games are played in: <#{CHANNEL}>"
        )
        elsewhere = await world.slash(
            bot, "tictactoe", alice, guild_id=GUILD, channel_id=CHANNEL + 1
        )
        assert elsewhere.ephemeral == [f"Games are played in <#{CHANNEL}> on this server."]
        other_server = await world.slash(bot, "tictactoe", alice, guild_id=GUILD + 1, channel_id=1)
        assert other_server.ephemeral == []  # settings are per server

        board = await here.shown(bot, "tictactoe", alice)
        assert f"❌ X: {alice.mention} vs ⭕ O: plybot (hard)" in board.text
        await world.press(bot, alice, board, "5")
        await cog.idle()
        # The server's 5 minutes: a warning after 4, the forfeit after 5.
        await cog.sweep(now=time.time() + 250)
        assert here.posts()[-1].content.startswith(f"{alice.mention}, your Tic-tac-toe game is")
        await cog.sweep(now=time.time() + 301)
        assert f"{alice.mention} forfeits (no move in time)" in board.text

        await here.slash(bot, "settings", admin, any_channel=True)
        anywhere = await world.slash(
            bot, "tictactoe", alice, guild_id=GUILD, channel_id=CHANNEL + 1
        )
        assert anywhere.ephemeral == []

    here.run(scenario)


def test_a_redis_outage_is_logged_by_the_sweeper_in_one_line_without_a_traceback(
    discord_world: DiscordWorld, caplog: pytest.LogCaptureFixture
) -> None:
    # A Redis of this test's own: stopping it must not disturb the other tests.
    server = RedisServer(persistent=False)
    server.start()
    lively = BotSettings(
        redis_url=server.url,
        bot_key_prefix="t:outage:",
        bot_sweep_interval_s=0.05,
        redis_socket_timeout_s=1.0,
    )
    caplog.set_level(logging.INFO, logger="bot")

    def skipped() -> list[logging.LogRecord]:
        return [r for r in caplog.records if "sweeper pass skipped" in r.getMessage()]

    async def scenario(_bot: Any) -> None:
        server.stop()
        async with asyncio.timeout(60):  # the state awaited: the sweeper noticed
            while len(skipped()) < 2:
                await asyncio.sleep(0.05)
        server.start()

    try:
        run_with_bot(discord_world, lively, server.url, scenario)
    finally:
        server.close()
    assert skipped()[0].getMessage() == "sweeper pass skipped: Redis unavailable (ConnectionError)"
    assert skipped()[0].levelno == logging.WARNING
    ours = [r for r in caplog.records if r.name.startswith("bot.")]
    assert not [r for r in ours if r.exc_info], "a traceback was logged for an expected outage"


@pytest.mark.usefixtures("workers")
def test_two_shards_each_get_only_their_own_guilds_interactions(here: BotChannel) -> None:
    world = here.world
    # Guild ids whose shard of 2 is 0 and 1 (Discord's (id >> 22) % shard_count).
    even, odd = (4 << 22) + 17, (5 << 22) + 17
    guilds = {even: 0, odd: 1}

    async def scenario() -> None:
        bots, seen = [], {0: [], 1: []}
        for shard in (0, 1):
            sharded = here.settings.model_copy(update={"bot_shard_id": shard, "bot_shard_count": 2})
            bot = await here.start_bot(sharded)

            async def on_interaction(i: discord.Interaction, shard: int = shard) -> None:
                seen[shard].append(i.guild_id)

            bot.add_listener(on_interaction)
            bots.append(bot)
        try:
            assert [s.identify.get("shard") for s in world.gateway.sessions] == [[0, 2], [1, 2]]
            for round_ in range(2):
                for guild, shard in guilds.items():
                    user = world.user(f"u{round_}-{shard}")
                    done = await world.slash(
                        bots[shard], "tictactoe", user, guild_id=guild, channel_id=guild + 1
                    )
                    assert done.ephemeral == []
                    assert done.shown is not None
            assert seen == {0: [even, even], 1: [odd, odd]}  # each its own guild's, only
            # Each session was told of its own guild only.
            assert [s.guilds for s in world.gateway.sessions] == [{even}, {odd}]
            for bot in bots:
                await bot.get_cog("Games").idle()
        finally:
            for bot in bots:
                await stop_bot(bot)

    asyncio.run(scenario())


@pytest.mark.usefixtures("workers")
def test_a_game_outlives_the_interactions_15_minute_token(here: BotChannel) -> None:
    world = here.world

    async def scenario(bot: Any) -> None:
        cog = bot.get_cog("Games")
        alice = world.user("alice")
        board = await here.shown(bot, "connect4", alice, level="easy")
        world.advance(16 * 60)  # /connect4's token is dead: its webhook no longer edits
        await world.press(bot, alice, board, "4")
        await cog.idle()  # plybot's move is shown by a channel edit, which needs no token
        assert f"Move 3 · 🔴 {alice.mention} to play" in board.text

    here.run(scenario)

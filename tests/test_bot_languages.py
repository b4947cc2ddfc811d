"""Which language the bot speaks, through its real discord.py client: what one person
sees (an ephemeral reply) in their own Discord language, what the channel sees (boards,
challenges, announcements, /analyze, /stats) in the server's, and a game's board in the
language it started in.

Real Redis, real workers, the real engine; Discord is the stand-in of
``tests/fixtures/discord.py``, where each guild has a Discord locale (``guild_locale``).
"""

from __future__ import annotations

import time
from typing import Any

import discord
import pytest

from bot.settings import BotSettings
from tests.fixtures.discord import DiscordWorld, FakeMessage, bot_settings, run_with_bot

pytestmark = [pytest.mark.redis, pytest.mark.service]

FRENCH_GUILD, FRENCH_CHANNEL = 6161, 616
ENGLISH_GUILD, ENGLISH_CHANNEL = 6262, 626


@pytest.fixture
def settings(redis_url: str) -> BotSettings:
    return bot_settings(redis_url, bot_analyze_cooldown_s=0)


def posts(world: DiscordWorld, channel: int) -> list[FakeMessage]:
    """The bot's public messages in ``channel`` that are not boards (announcements, pings)."""
    return [m for m in world.in_channel(channel) if m.embed is None]


@pytest.mark.usefixtures("workers")
def test_a_french_server_sees_french_boards_while_each_user_reads_their_own_replies(
    settings: BotSettings, redis_url: str, discord_world: DiscordWorld
) -> None:
    world = discord_world
    world.guild(FRENCH_GUILD, locale="fr")
    where = {"guild_id": FRENCH_GUILD, "channel_id": FRENCH_CHANNEL}

    async def scenario(bot: Any) -> None:
        cog = bot.get_cog("Games")
        alice, bob = world.user("alice"), world.user("bob")  # English-speaking members
        amelie = world.user("amélie", locale="fr")
        start = await world.slash(bot, "connect4", alice, **where, opponent=bob)
        challenge = start.shown
        assert challenge is not None
        assert challenge.embed is not None
        assert challenge.embed.title == "Défi : Puissance 4"
        assert f"{alice.mention} lance un défi à {bob.mention} : Puissance 4." in challenge.text
        assert f"🔴 {alice.mention} joue en premier." in challenge.text
        assert [b.label for b in challenge.buttons()] == ["Accepter", "Refuser"]
        # Alice's own Discord is in English: what only she sees is in English.
        own = await world.press(bot, alice, challenge, "Accepter")
        assert own.ephemeral == [f"Only {bob.mention} can accept this challenge."]
        # ...and Amélie's in French.
        other = await world.press(bot, amelie, challenge, "Accepter")
        assert other.ephemeral == [f"Seul·e {bob.mention} peut accepter ce défi."]

        await world.press(bot, bob, challenge, "Accepter")
        board = challenge
        assert f"🔴 Rouge : {alice.mention} contre 🟡 Jaune : {bob.mention}" in board.text
        assert f"Coup 1 · à 🔴 {alice.mention} de jouer" in board.text
        assert "ou perdez par forfait." in board.text
        assert [b.label for b in board.buttons()][-1] == "Abandonner"
        early = await world.press(bot, bob, board, "1")
        assert early.ephemeral == [f"Not your turn: it is {alice.mention}'s move."]
        for mover, column in [(alice, "1"), (bob, "2")] * 3:
            assert (await world.press(bot, mover, board, column)).ephemeral == []
            await cog.idle()
            other_player = bob if mover is alice else alice
            ping = posts(world, FRENCH_CHANNEL)[-1].content
            assert ping is not None
            assert ping.startswith(f"{other_player.mention}, à vous de jouer (Puissance 4, coup ")
        assert board.embed is not None
        assert board.embed.footer.text is not None
        assert board.embed.footer.text.startswith("Dernier coup : colonne 2 · partie ")
        await world.press(bot, alice, board, "1")
        await cog.idle()
        assert f"🔴 {alice.mention} gagne en 7 coups." in board.text
        assert [b.label for b in board.buttons()] == ["Revanche"]
        result = posts(world, FRENCH_CHANNEL)[-1].content
        assert result is not None
        assert result.startswith(
            f"Puissance 4 : {alice.mention} bat {bob.mention} en 7 coups. Classements : "
        )

        analysed = await world.slash(bot, "analyze", alice, **where, game="tictactoe")
        assert analysed.shown is not None
        assert analysed.ephemeral == []
        text = analysed.shown.text
        assert "Analyse · Morpion" in text
        assert "Morpion, position de départ, X au trait :" in text
        assert "nul avec le meilleur jeu." in text
        assert "Résolu exactement en" in text
        refused = await world.slash(bot, "analyze", alice, **where, game="tictactoe", position="55")
        assert refused.ephemeral == ["Cannot analyse that position: '55': cell 5 is taken (move 2)"]

        stats = await world.slash(bot, "stats", alice, **where)
        assert stats.shown is not None
        assert stats.shown.text.splitlines() == [
            "Statistiques plybot",
            alice.mention,
            "**Contre des membres** (classement, gagnées / nulles / perdues)",
            "Puissance 4: 1216, 1 / 0 / 0",
        ]

    run_with_bot(world, settings, redis_url, scenario)


@pytest.mark.usefixtures("workers")
def test_an_english_server_sees_english_boards_while_a_french_user_reads_french_replies(
    settings: BotSettings, redis_url: str, discord_world: DiscordWorld
) -> None:
    world = discord_world
    where = {"guild_id": ENGLISH_GUILD, "channel_id": ENGLISH_CHANNEL}

    async def scenario(bot: Any) -> None:
        amelie, bob = world.user("amélie", locale="fr"), world.user("bob")
        itself = await world.slash(bot, "connect4", amelie, **where, opponent=amelie)
        assert itself.ephemeral == [
            "Vous ne pouvez pas vous défier vous-même : laissez `opponent` vide pour jouer "
            "contre plybot."
        ]
        start = await world.slash(bot, "tictactoe", amelie, **where, opponent=bob)
        challenge = start.shown
        assert challenge is not None
        assert f"{amelie.mention} challenges {bob.mention} to Tic-tac-toe." in challenge.text
        assert [b.label for b in challenge.buttons()] == ["Accept", "Decline"]
        await world.press(bot, bob, challenge, "Decline")
        assert f"{bob.mention} declined." in challenge.text
        await bot.get_cog("Games").idle()
        said = posts(world, ENGLISH_CHANNEL)[-1].content
        assert said == f"{bob.mention} declined the challenge."

        analysed = await world.slash(bot, "analyze", amelie, **where, game="tictactoe")
        assert analysed.shown is not None
        assert "Tic-tac-toe at the start, X to move:" in analysed.shown.text
        busy = await world.slash(bot, "board", amelie, **where)
        assert busy.ephemeral == ["Vous n'avez pas de partie dans ce salon."]

    run_with_bot(world, settings, redis_url, scenario)


@pytest.mark.usefixtures("workers")
def test_the_servers_language_setting_rules_new_games_and_a_board_keeps_its_own(
    settings: BotSettings, redis_url: str, discord_world: DiscordWorld
) -> None:
    world = discord_world
    where = {"guild_id": ENGLISH_GUILD, "channel_id": ENGLISH_CHANNEL}

    async def scenario(bot: Any) -> None:
        admin, alice, bob = world.user("admin"), world.user("alice"), world.user("bob")
        world.member_permissions[admin.id] = discord.Permissions(manage_guild=True)
        denied = await world.slash(bot, "settings", alice, **where, language="fr")
        assert denied.ephemeral == [
            "Only members with Manage Server can change plybot's settings here."
        ]
        changed = await world.slash(bot, "settings", admin, **where, language="fr")
        assert changed.ephemeral[0].startswith("Settings changed.\n")
        assert "Language of boards and announcements: **French**\n" in changed.ephemeral[0]

        # In French now, though the server's Discord locale is English.
        first = await world.slash(bot, "tictactoe", alice, **where, opponent=bob)
        game = first.shown
        assert game is not None
        assert "lance un défi" in game.text
        await world.press(bot, bob, game, "Accepter")
        assert f"❌ X : {alice.mention} contre ⭕ O : {bob.mention}" in game.text

        # Back to the server's Discord language: new games are in English...
        back = await world.slash(bot, "settings", admin, **where, language="auto")
        assert (
            "Language of boards and announcements: **English** (the server's language in "
            "Discord)" in back.ephemeral[0]
        )
        second = await world.slash(
            bot, "connect4", world.user("carol"), **where, opponent=world.user("dan")
        )
        assert second.shown is not None
        assert "challenges" in second.shown.text
        # ...but the game that started in French stays in French, whoever redraws it.
        await world.press(bot, alice, game, "5")
        await bot.get_cog("Games").idle()
        assert f"Coup 2 · à ⭕ {bob.mention} de jouer" in game.text
        ping = posts(world, ENGLISH_CHANNEL)[-1].content
        assert ping is not None
        assert ping.startswith(f"{bob.mention}, à vous de jouer (Morpion, coup 2, avant <t:")
        resign = await world.slash(bot, "resign", bob, **where)
        assert resign.shown is not None
        assert resign.shown.content == (
            f"Morpion : {bob.mention} abandonne ; {alice.mention} gagne. Classements : "
            f"{alice.mention} 1216 (+16), {bob.mention} 1184 (-16)"
        )
        await bot.get_cog("Games").idle()
        assert [b.label for b in game.buttons() if b.label == "Revanche"] == ["Revanche"]

    run_with_bot(world, settings, redis_url, scenario)


@pytest.mark.usefixtures("workers")
def test_the_sweepers_expiries_and_warnings_speak_the_language_of_their_game(
    settings: BotSettings, redis_url: str, discord_world: DiscordWorld
) -> None:
    world = discord_world
    world.guild(FRENCH_GUILD, locale="fr-FR")  # a regional locale: its language is shipped
    where = {"guild_id": FRENCH_GUILD, "channel_id": FRENCH_CHANNEL}

    async def scenario(bot: Any) -> None:
        cog = bot.get_cog("Games")
        alice, bob, carol = world.user("alice"), world.user("bob"), world.user("carol")
        start = await world.slash(bot, "connect4", alice, **where, opponent=bob)
        challenge = start.shown
        assert challenge is not None
        await cog.sweep(now=time.time() + settings.bot_challenge_expiry_s + 1)
        await cog.idle()
        assert f"Expiré : {bob.mention} n'a pas répondu à temps." in challenge.text
        assert posts(world, FRENCH_CHANNEL)[-1].content == (
            f"Le défi lancé à {bob.mention} a expiré sans réponse."
        )
        played = await world.slash(bot, "tictactoe", carol, **where)
        board = played.shown
        assert board is not None
        assert "Morpion" in board.text
        await world.press(bot, carol, board, "5")
        await cog.idle()
        timeout = settings.bot_inactivity_timeout_s
        await cog.sweep(now=time.time() + timeout * 0.9)
        await cog.idle()
        warning = posts(world, FRENCH_CHANNEL)[-1].content
        assert warning is not None
        assert warning.startswith(f"{carol.mention}, votre partie (Morpion) attend votre coup")
        await cog.sweep(now=time.time() + timeout + 1)
        await cog.idle()
        assert f"❌ {carol.mention} perd par forfait (pas de coup à temps)" in board.text
        assert posts(world, FRENCH_CHANNEL)[-1].content == (
            f"Morpion : {carol.mention} perd par forfait (pas de coup à temps) ; "
            "plybot (medium) gagne."
        )

    run_with_bot(world, settings, redis_url, scenario)

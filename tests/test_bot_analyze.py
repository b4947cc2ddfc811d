"""``/analyze`` through the bot's real handler, real Redis and real workers (analysis queue)."""

from __future__ import annotations

import itertools
import re
import time
from pathlib import Path
from typing import Any

import pytest

from bot.settings import BotSettings
from tests.fixtures.discord import DiscordWorld, FakeInteraction, run_with_bot

pytestmark = [pytest.mark.redis, pytest.mark.service]

GUILD, CHANNEL = 99, 98
_prefixes = itertools.count()


def make_settings(redis_url: str, cooldown_s: float) -> BotSettings:
    return BotSettings(
        redis_url=redis_url,
        bot_key_prefix=f"t:analyze:{time.time_ns()}:{next(_prefixes)}:",
        bot_sweep_interval_s=3600,
        bot_analyze_cooldown_s=cooldown_s,
    )


def reply(interaction: FakeInteraction) -> str:
    assert interaction.answer_kind == "defer", interaction.ephemeral
    assert interaction.shown is not None
    return interaction.shown.text


def scores(text: str) -> tuple[int, dict[int, int]]:
    """The best move's score and every move's score, read back from the reply."""
    move = int(re.search(r"\*\*Best move (\d)\*\*: ", text)[1])  # type: ignore[index]
    every = re.search(r"Every move: (.*)", text)[1]  # type: ignore[index]
    moves = {int(m): int(s) for m, s in (pair.split(": ") for pair in every.split(", "))}
    return moves[move], moves


@pytest.mark.usefixtures("workers")
def test_analyze_benchmark_positions_gives_their_exact_scores(
    redis_url: str, discord_world: DiscordWorld, benchmarks_dir: Path
) -> None:
    world = discord_world
    settings = make_settings(redis_url, cooldown_s=0)
    cases = []
    for name, count in (("Test_L3_R1", 2), ("Test_L2_R1", 1)):
        lines = (benchmarks_dir / name).read_text().split("\n")[:count]
        cases += [(moves, int(score)) for moves, score in (line.split() for line in lines)]

    async def scenario(bot: Any) -> None:
        alice = world.user("alice")
        texts = []
        for position, expected in cases:
            done = await world.slash(
                bot, "analyze", alice, guild_id=GUILD, channel_id=CHANNEL,
                game="connect4", position=position,
            )  # fmt: skip
            text = reply(done)
            texts.append(text)
            assert f"Connect Four at `{position}`" in text
            best, moves = scores(text)
            assert best == expected, text
            assert max(moves.values()) == expected, text
            assert "Solved exactly in" in text
            assert "nodes" not in text
            assert "cache" not in text
        # Each move's score is the negated exact score of the position it leads to.
        position, _ = cases[0]
        _, moves = scores(texts[0])
        for column, score in moves.items():
            child = await world.slash(
                bot, "analyze", alice, guild_id=GUILD, channel_id=CHANNEL,
                game="connect4", position=position + str(column),
            )  # fmt: skip
            if "already over" in " ".join(child.ephemeral):
                assert score > 0  # the move wins at once
                continue
            assert scores(reply(child))[0] == -score

    run_with_bot(world, settings, redis_url, scenario)


@pytest.mark.usefixtures("workers")
def test_analyze_tictactoe_from_the_start_is_a_draw_whatever_the_move(
    redis_url: str, discord_world: DiscordWorld
) -> None:
    world = discord_world

    async def scenario(bot: Any) -> None:
        done = await world.slash(
            bot, "analyze", world.user("a"), guild_id=GUILD, channel_id=CHANNEL, game="tictactoe"
        )
        text = reply(done)
        assert "Tic-tac-toe at the start, X to move:" in text
        best, moves = scores(text)
        assert best == 0
        assert moves == dict.fromkeys(range(1, 10), 0)
        assert re.search(r"\*\*Best move \d\*\*: a draw with best play\.", text)

    run_with_bot(world, make_settings(redis_url, cooldown_s=0), redis_url, scenario)


@pytest.mark.usefixtures("workers")
def test_analyze_cooldown_per_user_and_bad_positions_refused_without_spending_it(
    redis_url: str, discord_world: DiscordWorld
) -> None:
    world = discord_world

    async def scenario(bot: Any) -> None:
        alice, bob = world.user("alice"), world.user("bob")

        async def analyze(user: object, position: str) -> FakeInteraction:
            return await world.slash(
                bot, "analyze", user, guild_id=GUILD, channel_id=CHANNEL,
                game="tictactoe", position=position,
            )  # fmt: skip

        bad = await analyze(alice, "55")
        assert bad.ephemeral == ["Cannot analyse that position: '55': cell 5 is taken (move 2)"]
        over = await analyze(alice, "1425369")
        assert over.ephemeral == [
            "Cannot analyse that position: '1425369': the game is already over after move 5"
        ]
        first = await analyze(alice, "5")
        assert "Best move" in reply(first)
        again = await analyze(alice, "51")
        assert len(again.ephemeral) == 1
        assert re.fullmatch(
            r"`/analyze` is cooling down: try again in (2\d|30) s\.", again.ephemeral[0]
        )
        other = await analyze(bob, "51")  # the cooldown is per user
        assert "Best move" in reply(other)

    run_with_bot(world, make_settings(redis_url, cooldown_s=30), redis_url, scenario)

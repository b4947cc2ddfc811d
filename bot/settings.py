"""The Discord bot's settings: the core's (:class:`worker.core.settings.Settings`) and its own.

Environment variables as everywhere (prefix ``PLYBOT_``), except ``DISCORD_TOKEN`` and
``DISCORD_GUILD_ID``, read without it as is the custom. Each field's description is the
text of the README's settings table.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import AliasChoices, Field, SecretStr, model_validator

from worker.core.settings import Settings


class BotSettings(Settings):
    """The core's settings and the Discord bot's (``plybot bot``)."""

    # -- Discord bot (`plybot bot`) ----------------------------------------------------
    discord_token: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices("DISCORD_TOKEN", "PLYBOT_DISCORD_TOKEN"),
        description="The Discord bot's token (`DISCORD_TOKEN`); never logged.",
    )
    discord_guild_id: int | None = Field(
        None,
        validation_alias=AliasChoices("DISCORD_GUILD_ID", "PLYBOT_DISCORD_GUILD_ID"),
        description="Sync the slash commands to this one guild only (instant; for development). "
        "Unset: global commands.",
    )
    bot_challenge_expiry_s: float = Field(
        300.0, gt=0, description="A challenge between users not answered in this time expires."
    )
    bot_inactivity_timeout_s: float = Field(
        1800.0,
        gt=0,
        description="A Discord game without a move for this long is forfeited by the player "
        "to move.",
    )
    bot_max_games_per_guild: int = Field(
        50, ge=1, description="Concurrent games (and open challenges) allowed per Discord guild."
    )
    bot_analyze_cooldown_s: float = Field(
        20.0, ge=0, description="Per-user cooldown of `/analyze` in the Discord bot."
    )
    bot_move_deadline_ms: int = Field(
        3000, ge=1, description="Thinking time the Discord bot gives each of its moves."
    )
    bot_sweep_interval_s: float = Field(
        5.0, gt=0, description="How often the Discord bot looks for expired challenges and games."
    )
    bot_key_prefix: str = Field(
        "plybot:discord:", description="Prefix of the Discord bot's Redis keys (games, stats)."
    )
    bot_shard_id: int | None = Field(
        None,
        ge=0,
        description="This bot process's gateway shard (with `PLYBOT_BOT_SHARD_COUNT`; "
        "it gets the events of the guilds whose `(id >> 22) % count` is this). Unset: one shard.",
    )
    bot_shard_count: int | None = Field(
        None, ge=1, description="How many gateway shards the bot's processes split the guilds into."
    )

    @model_validator(mode="after")
    def _one_shard_of_many(self) -> BotSettings:
        """A shard id needs the shard count, and lies below it."""
        shard, count = self.bot_shard_id, self.bot_shard_count
        if shard is None and count is None:
            return self
        if shard is None or count is None or shard >= count:
            raise ValueError(
                "set PLYBOT_BOT_SHARD_ID and PLYBOT_BOT_SHARD_COUNT together, id < count"
            )
        return self


@lru_cache(maxsize=1)
def get_settings() -> BotSettings:
    """The bot process's settings, read once from the environment."""
    return BotSettings()

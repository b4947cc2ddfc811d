"""Per-server settings, kept in one Redis hash per guild.

A server's members with Manage Server choose plybot's default level, the move
timeout of its games and a channel for games (``/settings``). Anything not set
falls back to the process's :class:`~worker.settings.Settings`. A game records
the timeout it started with (in its ``meta``), so changing the setting never
shortens a game already being played.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

from bot.keys import Keys
from bot.strings import say
from worker.contract import LEVELS

#: Bounds of the move timeout a server may choose, in seconds.
MIN_TIMEOUT_S = 60
MAX_TIMEOUT_S = 7 * 24 * 3600


@dataclass(frozen=True)
class GuildSettings:
    level: str
    timeout_s: float
    channel_id: str | None

    def describe(self, lang: str = "en") -> str:
        """The settings as lines, for ``/settings``, in ``lang``."""
        channel = f"<#{self.channel_id}>" if self.channel_id else say("any_channel", lang)
        timeout = _duration(self.timeout_s, lang)
        return say("settings_lines", lang, level=self.level, timeout=timeout, channel=channel)


def _duration(seconds: float, lang: str) -> str:
    minutes = round(seconds / 60)
    if minutes % 60 == 0 and minutes >= 60:
        hours = minutes // 60
        return say("hour", lang) if hours == 1 else say("hours", lang, n=hours)
    return say("minute", lang) if minutes == 1 else say("minutes", lang, n=minutes)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class GuildSettingsStore:
    def __init__(self, redis: Redis, keys: Keys, *, level: str, timeout_s: float) -> None:
        self.redis = redis
        self.keys = keys
        self.defaults = GuildSettings(level=level, timeout_s=timeout_s, channel_id=None)

    async def get(self, guild_id: str) -> GuildSettings:
        raw = await self.redis.hgetall(self.keys.guild_settings(guild_id))
        found = {_text(k): _text(v) for k, v in raw.items()}
        return GuildSettings(
            level=found.get("level", self.defaults.level),
            timeout_s=float(found.get("timeout_s", self.defaults.timeout_s)),
            channel_id=found.get("channel") or None,
        )

    async def change(
        self,
        guild_id: str,
        *,
        level: str | None = None,
        timeout_s: float | None = None,
        channel_id: str | None = None,
        any_channel: bool = False,
    ) -> GuildSettings:
        """Apply the changes given (``any_channel`` clears the games channel); the result.

        Raises ``ValueError`` (with a sentence for the user) for a value out of bounds.
        """
        if level is not None and level not in LEVELS:
            raise ValueError(f"'{level}': unknown level (levels: {', '.join(LEVELS)})")
        if timeout_s is not None and not MIN_TIMEOUT_S <= timeout_s <= MAX_TIMEOUT_S:
            raise ValueError("The move timeout must be between 1 minute and 7 days.")
        key = self.keys.guild_settings(guild_id)
        mapping: dict[Any, Any] = {}
        if level is not None:
            mapping["level"] = level
        if timeout_s is not None:
            mapping["timeout_s"] = str(timeout_s)
        if channel_id is not None:
            mapping["channel"] = channel_id
        async with self.redis.pipeline(transaction=True) as pipe:
            if mapping:
                pipe.hset(key, mapping=mapping)
            if any_channel:
                pipe.hdel(key, "channel")
            await pipe.execute()
        return await self.get(guild_id)

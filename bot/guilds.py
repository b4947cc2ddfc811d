"""Per-server settings, kept in one Redis hash per guild.

A server's members with Manage Server choose plybot's default level, the move
timeout of its games, a channel for games and the language of the bot's public
messages there (``/settings``). Anything not set falls back to the process's
:class:`~bot.settings.BotSettings`; the language, to the server's own Discord
locale (see :meth:`GuildSettings.public_language`). A game records the timeout
and the language it started with (in its ``meta``), so changing a setting never
shortens a game already being played, nor changes the language of its board.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

from bot.keys import Keys
from bot.strings import LANGUAGES, say
from worker.core.contract import LEVELS
from worker.core.keys import as_str

#: Bounds of the move timeout a server may choose, in seconds.
MIN_TIMEOUT_S = 60
MAX_TIMEOUT_S = 7 * 24 * 3600


@dataclass(frozen=True)
class GuildSettings:
    level: str
    timeout_s: float
    channel_id: str | None
    #: The language chosen for public messages (one of :data:`bot.strings.LANGUAGES`);
    #: ``None``: the server's Discord locale decides.
    language: str | None = None

    def public_language(self, guild_language: str) -> str:
        """The language of the server's public messages: the one chosen, else
        ``guild_language`` (the server's Discord locale, as :func:`bot.strings.language`
        maps it)."""
        return self.language or guild_language

    def describe(self, lang: str = "en", guild_language: str = "en") -> str:
        """The settings as lines, for ``/settings``, in ``lang``."""
        channel = f"<#{self.channel_id}>" if self.channel_id else say("any_channel", lang)
        timeout = _duration(self.timeout_s, lang)
        language = say(f"language_{self.public_language(guild_language)}", lang)
        origin = "" if self.language else say("language_of_guild", lang)
        return say(
            "settings_lines",
            lang,
            level=self.level,
            timeout=timeout,
            channel=channel,
            language=language,
            origin=origin,
        )


def _duration(seconds: float, lang: str) -> str:
    minutes = round(seconds / 60)
    if minutes % 60 == 0 and minutes >= 60:
        hours = minutes // 60
        return say("hour", lang) if hours == 1 else say("hours", lang, n=hours)
    return say("minute", lang) if minutes == 1 else say("minutes", lang, n=minutes)


class GuildSettingsStore:
    def __init__(self, redis: Redis, keys: Keys, *, level: str, timeout_s: float) -> None:
        self.redis = redis
        self.keys = keys
        self.defaults = GuildSettings(level=level, timeout_s=timeout_s, channel_id=None)

    async def get(self, guild_id: str) -> GuildSettings:
        raw = await self.redis.hgetall(self.keys.guild_settings(guild_id))
        found = {as_str(k): as_str(v) for k, v in raw.items()}
        return GuildSettings(
            level=found.get("level", self.defaults.level),
            timeout_s=float(found.get("timeout_s", self.defaults.timeout_s)),
            channel_id=found.get("channel") or None,
            language=found.get("language") if found.get("language") in LANGUAGES else None,
        )

    async def change(
        self,
        guild_id: str,
        *,
        level: str | None = None,
        timeout_s: float | None = None,
        channel_id: str | None = None,
        any_channel: bool = False,
        language: str | None = None,
    ) -> GuildSettings:
        """Apply the changes given (``any_channel`` clears the games channel; ``language``
        ``"auto"`` clears the language, so that the server's Discord locale decides); the
        result.

        Raises ``ValueError`` (with a sentence for the user) for a value out of bounds.
        """
        if level is not None and level not in LEVELS:
            raise ValueError(f"'{level}': unknown level (levels: {', '.join(LEVELS)})")
        if timeout_s is not None and not MIN_TIMEOUT_S <= timeout_s <= MAX_TIMEOUT_S:
            raise ValueError("The move timeout must be between 1 minute and 7 days.")
        if language is not None and language not in (*LANGUAGES, "auto"):
            raise ValueError(f"'{language}': unknown language (languages: {', '.join(LANGUAGES)})")
        key = self.keys.guild_settings(guild_id)
        mapping: dict[Any, Any] = {}
        if level is not None:
            mapping["level"] = level
        if timeout_s is not None:
            mapping["timeout_s"] = str(timeout_s)
        if channel_id is not None:
            mapping["channel"] = channel_id
        if language is not None and language != "auto":
            mapping["language"] = language
        async with self.redis.pipeline(transaction=True) as pipe:
            if mapping:
                pipe.hset(key, mapping=mapping)
            if any_channel:
                pipe.hdel(key, "channel")
            if language == "auto":
                pipe.hdel(key, "language")
            await pipe.execute()
        return await self.get(guild_id)

"""Run the Discord bot (token in DISCORD_TOKEN, Redis in REDIS_URL)."""

from __future__ import annotations

import argparse
import logging
import sys
from urllib.parse import urlsplit

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


class RedactSecrets(logging.Filter):
    """Replaces each secret in a record (message, arguments, traceback) with ``[redacted]``.

    Installed on the log handlers as a second line of defence: plybot never
    logs the token, and neither does discord.py, but an exception's text might.
    """

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = [s for s in secrets if s]

    def _clean(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "[redacted]")
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = self._clean(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._clean(record.exc_text)
        if record.stack_info:
            record.stack_info = self._clean(record.stack_info)
        return True


def setup_logging(level: str, secrets: list[str]) -> None:
    """discord.py's log format on stderr, with :class:`RedactSecrets` on every handler."""
    import discord

    discord.utils.setup_logging(level=getattr(logging, level), root=True)
    redact = RedactSecrets(secrets)
    for handler in logging.getLogger().handlers:
        handler.addFilter(redact)


def _where(url: str) -> str:
    """host:port of a Redis URL, never its password."""
    parts = urlsplit(url)
    return f"{parts.hostname or '?'}:{parts.port or 6379}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="plybot bot",
        description="Run plybot's Discord bot. Reads DISCORD_TOKEN, REDIS_URL and the "
        "PLYBOT_BOT_* settings from the environment; the workers answer its moves.",
    )
    parser.add_argument("--log-level", default="INFO", choices=LOG_LEVELS)
    args = parser.parse_args(argv)

    from pydantic import ValidationError

    from bot.settings import BotSettings

    try:
        settings = BotSettings()
    except ValidationError as exc:
        first = exc.errors()[0]
        # Name the setting, never echo its value: it may be the token.
        print(
            f"plybot bot: bad setting {'.'.join(map(str, first['loc']))}: {first['msg']}",
            file=sys.stderr,
        )
        return 2
    token = settings.discord_token.get_secret_value().strip() if settings.discord_token else ""
    if not token:
        print(
            "plybot bot: DISCORD_TOKEN is not set: put the bot token from the Discord "
            "developer portal in DISCORD_TOKEN (see the README)",
            file=sys.stderr,
        )
        return 2
    if not settings.redis_url:
        print(
            "plybot bot: REDIS_URL is not set: point it at the Redis the workers use",
            file=sys.stderr,
        )
        return 2
    setup_logging(args.log_level, [token])
    # Heavy imports only once the settings are known to be usable.
    import asyncio
    import signal

    import discord
    from redis.exceptions import RedisError

    from bot.app import PlybotBot

    async def run() -> None:
        async with PlybotBot(settings) as bot:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                # docker stop sends SIGTERM: finish what is in flight, disconnect, exit 0.
                loop.add_signal_handler(sig, bot.stop_on, sig.name)
            await bot.start(token)

    try:
        asyncio.run(run())
    except discord.LoginFailure:
        print(
            "plybot bot: Discord rejected DISCORD_TOKEN: reset the token in the developer "
            "portal (Bot > Reset Token) and set DISCORD_TOKEN again",
            file=sys.stderr,
        )
        return 2
    except discord.PrivilegedIntentsRequired:  # pragma: no cover - plybot asks for none
        print("plybot bot: Discord refused the intents asked for", file=sys.stderr)
        return 2
    except RedisError as exc:
        where = (
            f"master {settings.redis_sentinel_master!r} of the sentinels {settings.redis_sentinels}"
            if settings.redis_sentinels
            else _where(settings.redis_url)
        )
        print(f"plybot bot: cannot use Redis at {where}: {type(exc).__name__}", file=sys.stderr)
        return 1
    except OSError as exc:  # aiohttp's connection errors included
        reason = RedactSecrets([token])._clean(str(exc))
        print(f"plybot bot: cannot reach Discord: {reason}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0

"""The Discord client: a ``commands.Bot`` with slash commands only.

No message-content intent (and no privileged intent at all): plybot is driven
by slash commands and buttons, which reach a bot without intents.
:meth:`PlybotBot.setup_hook` runs once after login: it connects to Redis,
registers the persistent buttons and the ``Games`` cog (:meth:`prepare`, which
needs no connection to Discord, so tests run it too), then syncs the slash
commands: to one guild when ``DISCORD_GUILD_ID`` is set (instant, for
development), else globally (Discord takes up to an hour to show them).
"""

from __future__ import annotations

import logging

import discord
from discord.ext import commands
from redis.asyncio import Redis

from bot.cog import Games
from bot.service import DiscordGames
from bot.views import DYNAMIC_ITEMS
from worker.client import JobClient
from worker.settings import Settings

log = logging.getLogger(__name__)

#: What the bot needs in a channel; the invite link asks for exactly these.
PERMISSIONS = discord.Permissions(
    view_channel=True,
    send_messages=True,
    embed_links=True,
    read_message_history=True,
    use_application_commands=True,
)
SCOPES = ("bot", "applications.commands")


class PlybotBot(commands.Bot):
    def __init__(self, settings: Settings, *, redis_url: str | None = None) -> None:
        # plybot has no voice: discord.py's warnings about voice libraries are noise.
        discord.VoiceClient.warn_nacl = False
        discord.VoiceClient.warn_dave = False
        intents = discord.Intents.none()
        intents.guilds = True  # not privileged: keeps the channel cache for partial messages
        super().__init__(command_prefix=commands.when_mentioned, intents=intents, help_command=None)
        self.settings = settings
        self.redis_url = redis_url or settings.redis_url
        self.redis: Redis | None = None
        self.jobs: JobClient | None = None

    async def setup_hook(self) -> None:
        await self.prepare()
        await self.sync_commands()

    async def prepare(self) -> Games:
        """Connect to Redis, register the buttons and load the cog (no Discord connection needed).

        Loading the cog picks up the bot moves that were in flight at the last stop.
        """
        if not self.redis_url:
            raise RuntimeError("REDIS_URL is not set")
        timeout = self.settings.redis_socket_timeout_s
        self.redis = Redis.from_url(
            self.redis_url, socket_timeout=timeout, socket_connect_timeout=timeout
        )
        await self.redis.ping()
        self.jobs = JobClient(self.redis_url, self.settings)
        service = DiscordGames(self.redis, self.jobs, self.settings)
        self.add_dynamic_items(*DYNAMIC_ITEMS)
        cog = Games(self, service, self.settings)
        await self.add_cog(cog)
        return cog

    async def sync_commands(self) -> list[discord.app_commands.AppCommand]:
        guild_id = self.settings.discord_guild_id
        if guild_id is not None:
            guild = discord.Object(id=guild_id)
            self.tree.copy_global_to(guild=guild)
            synced = await self.tree.sync(guild=guild)
            log.info("synced %d slash commands to guild %s", len(synced), guild_id)
        else:
            synced = await self.tree.sync()
            log.info("synced %d global slash commands (may take up to an hour)", len(synced))
        return synced

    async def on_ready(self) -> None:
        user = self.user
        log.info("logged in as %s (id %s) in %d guilds", user, user and user.id, len(self.guilds))
        if self.application_id is not None:
            url = discord.utils.oauth_url(
                self.application_id, permissions=PERMISSIONS, scopes=SCOPES
            )
            log.info("invite link: %s", url)

    async def close(self) -> None:
        """Unload the cog (its tasks stop), disconnect, then close Redis and the job client."""
        await super().close()
        if self.jobs is not None:
            await self.jobs.aclose()
        if self.redis is not None:
            await self.redis.aclose()

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

import asyncio
import hashlib
import json
import logging
from typing import Any

import discord
from discord.ext import commands
from redis.asyncio import Redis

from bot.cog import Games, StringsTranslator
from bot.keys import Keys
from bot.service import DiscordGames
from bot.settings import BotSettings
from bot.views import DYNAMIC_ITEMS
from worker.core.client import JobClient
from worker.core.connection import aclose, connect_async

log = logging.getLogger(__name__)

#: What the bot needs in a channel; the invite link asks for exactly these.
PERMISSIONS = discord.Permissions(
    view_channel=True,
    send_messages=True,
    embed_links=True,
    read_message_history=True,
    attach_files=True,
    use_application_commands=True,
)
SCOPES = ("bot", "applications.commands")
#: Longest a graceful close waits for in-flight work.
DRAIN_S = 5.0


class ClaimingTree(discord.app_commands.CommandTree["PlybotBot"]):
    """A command tree that runs a command only in the process that claims its interaction."""

    async def interaction_check(self, interaction: discord.Interaction[Any]) -> bool:
        cog = self.client.get_cog("Games")
        return cog is None or await cog.claim(interaction)  # type: ignore[attr-defined]


class PlybotBot(commands.Bot):
    def __init__(self, settings: BotSettings, *, redis_url: str | None = None) -> None:
        # plybot has no voice: discord.py's warnings about voice libraries are noise.
        discord.VoiceClient.warn_nacl = False
        discord.VoiceClient.warn_dave = False
        intents = discord.Intents.none()
        intents.guilds = True  # not privileged: keeps the channel cache for partial messages
        super().__init__(
            command_prefix=commands.when_mentioned,
            intents=intents,
            help_command=None,
            tree_cls=ClaimingTree,
            # Nobody is pinged unless a message names whom, deliberately (see bot.cog.quiet).
            allowed_mentions=discord.AllowedMentions.none(),
            # One shard of several (both set) or the only one (both None).
            shard_id=settings.bot_shard_id,
            shard_count=settings.bot_shard_count,
        )
        self.settings = settings
        self.redis_url = redis_url or settings.redis_url
        self.redis: Redis | None = None
        self.jobs: JobClient | None = None
        self._stopping: asyncio.Future[None] | None = None
        #: How long close() lets in-flight work finish (0: stop at once).
        self.drain_s = DRAIN_S

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
        self.redis = connect_async(
            self.redis_url, self.settings, socket_timeout=timeout, socket_connect_timeout=timeout
        )
        await self.redis.ping()
        self.jobs = JobClient(self.redis_url, self.settings)
        service = DiscordGames(self.redis, self.jobs, self.settings)
        self.add_dynamic_items(*DYNAMIC_ITEMS)
        if self.tree.translator is None:  # the commands' descriptions in every language
            await self.tree.set_translator(StringsTranslator())
        cog = Games(self, service, self.settings)
        await self.add_cog(cog)
        return cog

    async def commands_hash(self, guild: discord.abc.Snowflake | None = None) -> str:
        """A digest of the slash commands as they would be sent to Discord (with their
        translations: a changed translation is synced too)."""
        commands = self.tree.get_commands(guild=guild)
        translator = self.tree.translator
        if translator is None:
            payload = [c.to_dict(self.tree) for c in commands]
        else:
            payload = [await c.get_translated_payload(self.tree, translator) for c in commands]
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    async def sync_commands(self, *, force: bool = False) -> bool:
        """Sync the slash commands if they changed since the last sync (a digest in Redis);
        whether it synced. To ``DISCORD_GUILD_ID`` when set (and then the global commands
        are cleared once, or they would show twice in that server), else globally."""
        assert self.redis is not None, "prepare() first"
        guild_id = self.settings.discord_guild_id
        guild = discord.Object(id=guild_id) if guild_id is not None else None
        if guild is not None:
            self.tree.copy_global_to(guild=guild)
        scope = "global" if guild_id is None else str(guild_id)
        key = Keys(self.settings.bot_key_prefix).synced(f"{self.application_id}:{scope}")
        digest = await self.commands_hash(guild)
        if not force and (await self.redis.get(key)) == digest.encode():
            log.info("slash commands unchanged since the last sync: not synced")
            return False
        synced = await self.tree.sync(guild=guild)
        if guild is not None:
            # Dev-server mode: global copies of the same commands would show twice.
            global_key = Keys(self.settings.bot_key_prefix).synced(f"{self.application_id}:global")
            if await self.redis.get(global_key) != b"cleared":
                self.tree.clear_commands(guild=None)
                await self.tree.sync()
                await self.redis.set(global_key, "cleared")
            log.info("synced %d slash commands to guild %s", len(synced), guild_id)
        else:
            log.info("synced %d global slash commands (may take up to an hour)", len(synced))
        await self.redis.set(key, digest)
        return True

    async def on_ready(self) -> None:
        user = self.user
        log.info("logged in as %s (id %s) in %d guilds", user, user and user.id, len(self.guilds))
        if self.application_id is not None:
            url = discord.utils.oauth_url(
                self.application_id, permissions=PERMISSIONS, scopes=SCOPES
            )
            log.info("invite link: %s", url)

    def stop_on(self, signal_name: str) -> None:
        """A stop signal arrived: close gracefully (once), from the event loop."""
        if self._stopping is None:
            log.info("%s: closing gracefully", signal_name)
            self._stopping = asyncio.ensure_future(self.close())

    async def close(self) -> None:
        """Let in-flight updates finish (up to :attr:`drain_s`), unload the cog (its tasks
        stop; bot moves still out are picked up at the next start), disconnect, then close
        Redis and the job client."""
        cog = self.get_cog("Games")
        if cog is not None and self.drain_s > 0:
            try:
                async with asyncio.timeout(self.drain_s):
                    await cog.idle()  # type: ignore[attr-defined]
            except TimeoutError:
                log.info("closing with bot moves still in flight: the next start resumes them")
        await super().close()
        if self.jobs is not None:
            await self.jobs.aclose()
        if self.redis is not None:
            await aclose(self.redis)

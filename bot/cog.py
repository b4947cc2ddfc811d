"""The slash commands and button handlers: a thin layer from Discord to :mod:`bot.service`.

Every interaction is acknowledged first, before any call to Redis (which may
stall longer than Discord's 3 s): :meth:`Games.claim` defers it (a slash
command "thinking", public unless the command only ever answers its user; a
button, a deferred update), and the process whose acknowledgement Discord
accepts is the one that handles it. Then the handler asks the service and
answers by follow-up: a :class:`~bot.service.Notice` ephemerally (a public
"thinking" message is deleted first, so that nobody else sees it), an
:class:`~bot.service.Update` by redrawing the game's message. A Redis that does
not answer within its socket timeout becomes the ephemeral "unavailable" notice.
Work that waits on the workers (the bot's moves) runs in background tasks, so the
event loop never waits on the engine; the sweeper task expires challenges and
forfeits idle games. A game plybot can no longer show, or whose move no worker is
left to compute, ends with no result (:meth:`~bot.service.DiscordGames.abort`).

Languages (see :mod:`bot.strings`): what only the user who acted sees (an
ephemeral reply) is in their Discord language; what the channel sees (boards,
challenges, announcements, the answers of ``/analyze``, ``/stats`` and
``/leaderboard``) is in the server's (:meth:`~bot.service.DiscordGames.public_language`),
and a game's messages stay in the language it started in.

Messages are edited through ``bot.get_partial_messageable(channel).get_partial_message(id)``,
not the interaction's webhook (valid for 15 minutes only): a game lasts longer.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
from collections.abc import Awaitable
from typing import Any, Literal, TypeVar

import discord
from discord import app_commands
from discord.ext import commands
from redis.exceptions import RedisError

from bot.challenges import Challenge
from bot.render import (
    BOARD_FILE,
    analysis_embed,
    board_picture,
    challenge_embed,
    game_embed,
    help_embed,
    leaderboard_text,
    mention,
    message_link,
    playing,
    stats_text,
    table_language,
    title,
)
from bot.service import DiscordGames, Notice, Update, notice
from bot.settings import BotSettings
from bot.strings import LANGUAGES, language, say
from bot.views import COG_NAME, challenge_view, game_view
from engine.game import Game, game_names
from engine.vocabulary import Level  # discord.py offers its values as choices
from worker.core.bot_moves import overdue_after_s
from worker.core.games import BOT, GameSession

log = logging.getLogger(__name__)

#: Slash commands whose every answer only the user sees: deferred ephemerally.
PRIVATE_COMMANDS = frozenset({"settings", "help"})
#: Discord's error code for an interaction acknowledged already (by another process).
ALREADY_ACKNOWLEDGED = 40060
#: ``interaction.extras`` flag: a public "thinking" message awaits the first follow-up.
_LOADING = "plybot-loading"

First = Literal["me", "opponent", "random"]
#: The games a command offers: the engine's registry.
GAME_CHOICES = [app_commands.Choice(name=name, value=name) for name in game_names()]

T = TypeVar("T")

_UNAVAILABLE = notice("unavailable")
_NO_WORKERS = notice("no_workers")
_FAILED = notice("failed")


def _lang(interaction: discord.Interaction[Any]) -> str:
    """The language of the user's replies (their Discord locale, if shipped)."""
    return language(interaction.locale)


def _guild_lang(interaction: discord.Interaction[Any]) -> str:
    """The language of the server's Discord locale (if shipped); the user's outside a server
    (a DM: only they see the answer). A server's ``language`` setting comes before it."""
    if interaction.guild_id is None:
        return _lang(interaction)
    return language(interaction.guild_locale)


#: What the bot needs in a channel to show a game there, with the names Discord shows.
NEEDED = {
    "view_channel": "View Channel",
    "send_messages": "Send Messages",
    "embed_links": "Embed Links",
    "attach_files": "Attach Files",
    "read_message_history": "Read Message History",
}


def _t(key: str) -> app_commands.locale_str:
    """A command's or option's description: the English of ``key`` in :mod:`bot.strings`,
    which :class:`StringsTranslator` gives Discord in the other languages."""
    return app_commands.locale_str(say(key), key=key)


class StringsTranslator(app_commands.Translator):
    """The slash commands' descriptions in every shipped language but English (the
    default), from :mod:`bot.strings`; names stay as they are."""

    async def translate(
        self,
        string: app_commands.locale_str,
        locale: discord.Locale,
        _context: app_commands.TranslationContextTypes,
    ) -> str | None:
        key = string.extras.get("key")
        lang = language(locale)  # English for a language not shipped
        if key is None or lang == LANGUAGES[0]:
            return None  # Discord shows the English description
        return say(key, lang)


#: The options /connect4 and /tictactoe share (each adds its own ``position``).
_PLAY_OPTIONS = {"opponent": _t("opt_opponent"), "level": _t("opt_level"), "first": _t("opt_first")}

#: ``/settings language``: a shipped language, or back to the server's Discord locale.
LANGUAGE_CHOICES = [
    app_commands.Choice(name="English", value="en"),
    app_commands.Choice(name="Français", value="fr"),
    app_commands.Choice(name=_t("choice_language_auto"), value="auto"),
]


def draw(
    table: GameSession | Challenge,
    closed: str | None = None,
    *,
    new: bool = False,
    deadline: float | None = None,
) -> dict[str, Any]:
    """The message (embed, buttons, board picture) showing ``table``, as keyword arguments
    for a send (``new``) or an edit (which replaces the picture). A game's position is the
    one its session carries (parsed only if it carries none), and its picture is drawn
    once per call."""
    if isinstance(table, Challenge):
        view = challenge_view(table) if closed is None else None
        return {"embed": challenge_embed(table, closed), "view": view}
    position = table.position()  # one position for the embed, the buttons and the picture
    drawn: dict[str, Any] = {
        "embed": game_embed(table, position, deadline),
        "view": game_view(table, position),
    }
    return drawn | pictures(position, new=new)


def pictures(position: Game, *, new: bool) -> dict[str, Any]:
    """The board picture as a ``file`` (a send) or ``attachments`` (an edit); ``{}`` if none."""
    png = board_picture(position)
    if png is None:
        return {}
    file = discord.File(io.BytesIO(png), filename=BOARD_FILE)
    return {"file": file} if new else {"attachments": [file]}


def quiet(ping: str | None = None) -> discord.AllowedMentions:
    """Mentions that ping nobody, or only ``ping`` (never plybot, never a role or everyone)."""
    if ping is None or ping == BOT:
        return discord.AllowedMentions.none()
    return discord.AllowedMentions(
        everyone=False, roles=False, replied_user=False, users=[discord.Object(int(ping))]
    )


def _place(table: GameSession | Challenge) -> tuple[str | None, str | None]:
    """The ids of the channel and the message showing ``table`` (``None`` where unknown)."""
    if isinstance(table, Challenge):
        return table.channel_id, table.message_id
    return table.meta.get("channel"), table.meta.get("message")


class Games(commands.Cog, name=COG_NAME):
    """Connect Four and tic-tac-toe against plybot or each other, /analyze, /stats."""

    def __init__(self, bot: commands.Bot, service: DiscordGames, settings: BotSettings) -> None:
        self.bot = bot
        self.service = service
        self.settings = settings
        self._bot_moves: dict[str, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._sweeper: asyncio.Task[None] | None = None
        #: The last press that left plybot to move, per game: it reaches its player
        #: ephemerally (15 minutes) even where plybot may no longer post.
        self._pressed: dict[str, discord.Interaction[Any]] = {}

    # -- life cycle ------------------------------------------------------------------

    async def cog_load(self) -> None:
        """Pick up the bot moves that were in flight when the bot stopped, redraw the boards
        whose last move was the bot's (it may have been played but not yet shown when the
        bot stopped: such a board would show "thinking" for good); start the sweeper."""
        for session in await self.service.recover():
            if session.bot_to_move:
                self.watch_bot_move(session)
            elif session.ply and session.players[(session.ply - 1) % 2] == BOT:
                self._spawn(self.show(Update(session), announce=False))
        self._sweeper = asyncio.create_task(self._sweep_forever(), name="plybot-sweeper")

    async def cog_unload(self) -> None:
        tasks = [*self._bot_moves.values(), *self._tasks]
        if self._sweeper is not None:
            tasks.append(self._sweeper)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def idle(self) -> None:
        """Wait until no bot move or message update is in flight (tests, shutdown)."""
        while pending := [*self._bot_moves.values(), *self._tasks]:
            await asyncio.gather(*pending, return_exceptions=True)

    # -- slash commands --------------------------------------------------------------

    @app_commands.command(name="connect4", description=_t("cmd_connect4"))
    @app_commands.describe(**_PLAY_OPTIONS, position=_t("opt_position_connect4"))
    @app_commands.guild_only()
    async def connect4(
        self,
        interaction: discord.Interaction[Any],
        opponent: discord.Member | None = None,
        level: Level | None = None,
        first: First = "me",
        position: app_commands.Range[str, 1, 42] = "",
    ) -> None:
        await self._start(interaction, "connect4", opponent, level, first, position)

    @app_commands.command(name="tictactoe", description=_t("cmd_tictactoe"))
    @app_commands.describe(**_PLAY_OPTIONS, position=_t("opt_position_tictactoe"))
    @app_commands.guild_only()
    async def tictactoe(
        self,
        interaction: discord.Interaction[Any],
        opponent: discord.Member | None = None,
        level: Level | None = None,
        first: First = "me",
        position: app_commands.Range[str, 1, 9] = "",
    ) -> None:
        await self._start(interaction, "tictactoe", opponent, level, first, position)

    @app_commands.command(name="analyze", description=_t("cmd_analyze"))
    @app_commands.describe(game=_t("opt_game"), position=_t("opt_position_analyze"))
    @app_commands.choices(game=GAME_CHOICES)
    async def analyze(
        self,
        interaction: discord.Interaction[Any],
        game: str,
        position: app_commands.Range[str, 1, 64] = "",
    ) -> None:
        request = self.service.analysis_request(game, position)
        if isinstance(request, Notice):
            await self._tell(interaction, request)
            return
        guild_id = None if interaction.guild_id is None else str(interaction.guild_id)
        lang = await self._guarded(
            self.service.analysis_gate(str(interaction.user.id), guild_id, _guild_lang(interaction))
        )
        if isinstance(lang, Notice):
            await self._tell(interaction, lang)
            return
        # The answer is public (the deferred message): in the server's language.
        result = await self.service.analyze(request)
        if isinstance(result, Notice):
            await self._show_public(interaction, content=result.told(lang))
        else:
            board = request.board()
            await self._show_public(
                interaction, embed=analysis_embed(board, result, lang), **pictures(board, new=True)
            )

    @app_commands.command(name="resign", description=_t("cmd_resign"))
    @app_commands.guild_only()
    async def resign(self, interaction: discord.Interaction[Any]) -> None:
        result = await self._guarded(
            self.service.resign(str(interaction.channel_id), str(interaction.user.id))
        )
        if isinstance(result, Notice):
            await self._tell(interaction, result)
            return
        resigned = result.announce or say("resigned", table_language(result.table))
        await self._show_public(interaction, content=resigned, allowed_mentions=quiet())
        self._spawn(self.show(result, announce=False))

    @app_commands.command(name="board", description=_t("cmd_board"))
    @app_commands.guild_only()
    async def board(self, interaction: discord.Interaction[Any]) -> None:
        """The game's board again, as a new message at the bottom of the channel; the old
        one is retired (its buttons removed, a link to the new one in their place), so
        only one board of a game can be played on."""
        found = await self._guarded(
            self.service.game_in_channel(str(interaction.channel_id), str(interaction.user.id))
        )
        if isinstance(found, Notice):
            await self._tell(interaction, found)
            return
        if not await self._can_show(interaction):
            return
        old = found.meta.get("message")
        new = await self._post(interaction, found)
        if old and old != new:
            self._spawn(self._retire(found, old, new))

    @app_commands.command(name="stats", description=_t("cmd_stats"))
    @app_commands.describe(user=_t("opt_user"))
    @app_commands.guild_only()
    async def stats(
        self, interaction: discord.Interaction[Any], user: discord.Member | None = None
    ) -> None:
        who = str((user or interaction.user).id)
        asked = self.service.user_stats(str(interaction.guild_id), who)
        found = await self._guarded(self._with_language(interaction, asked))
        if isinstance(found, Notice):
            await self._tell(interaction, found)
            return
        stats, lang = found
        embed = discord.Embed(
            title=say("stats_title", lang), description=stats_text(who, stats, lang)
        )
        await self._show_public(interaction, embed=embed)

    @app_commands.command(name="leaderboard", description=_t("cmd_leaderboard"))
    @app_commands.describe(game=_t("opt_leaderboard_game"))
    @app_commands.choices(game=GAME_CHOICES)
    @app_commands.guild_only()
    async def leaderboard(
        self, interaction: discord.Interaction[Any], game: str = "connect4"
    ) -> None:
        asked = self.service.leaderboard(str(interaction.guild_id), game)
        found = await self._guarded(self._with_language(interaction, asked))
        if isinstance(found, Notice):
            await self._tell(interaction, found)
            return
        standings, lang = found
        embed = discord.Embed(
            title=say("leaderboard_title", lang, game=title(game, lang)),
            description=leaderboard_text(game, standings, lang),
        )
        await self._show_public(interaction, embed=embed)

    @app_commands.command(name="settings", description=_t("cmd_settings"))
    @app_commands.describe(
        level=_t("opt_default_level"),
        move_timeout=_t("opt_move_timeout"),
        channel=_t("opt_channel"),
        any_channel=_t("opt_any_channel"),
        language=_t("opt_language"),
    )
    @app_commands.choices(language=LANGUAGE_CHOICES)
    @app_commands.default_permissions(manage_guild=True)
    @app_commands.guild_only()
    async def settings_command(
        self,
        interaction: discord.Interaction[Any],
        level: Level | None = None,
        move_timeout: app_commands.Range[int, 1, 10080] | None = None,
        channel: discord.TextChannel | None = None,
        any_channel: bool = False,
        language: app_commands.Choice[str] | None = None,
    ) -> None:
        """Show the server's settings, or change them (members with Manage Server only:
        the default permission hides the command from others, and this check holds even
        where a server overrides it). The reply is ephemeral: in the manager's language."""
        if not interaction.permissions.manage_guild:
            await self._tell(interaction, say("managers_only", _lang(interaction)))
            return
        store = self.service.guild_settings
        guild_id = str(interaction.guild_id)
        try:
            found = await self._guarded(
                store.change(
                    guild_id,
                    level=level,
                    timeout_s=None if move_timeout is None else move_timeout * 60.0,
                    channel_id=None if channel is None else str(channel.id),
                    any_channel=any_channel,
                    language=None if language is None else language.value,
                )
            )
        except ValueError:
            await self._tell(interaction, say("timeout_bounds", _lang(interaction)))
            return
        if isinstance(found, Notice):
            await self._tell(interaction, found)
            return
        changed = any(x is not None for x in (level, move_timeout, channel, language))
        changed = changed or any_channel
        lang = _lang(interaction)
        lines = [say("settings_changed" if changed else "settings_shown", lang)]
        lines.append(found.describe(lang, _guild_lang(interaction)))
        if changed:
            lines.append(say("settings_note", lang))
        await self._tell(interaction, "\n".join(lines))

    @app_commands.command(name="help", description=_t("cmd_help"))
    async def help(self, interaction: discord.Interaction[Any]) -> None:
        await interaction.followup.send(embed=help_embed(_lang(interaction)), ephemeral=True)

    # -- button handlers (called by bot.views; the press is acknowledged already) ---------

    async def on_move(
        self, interaction: discord.Interaction[Any], game_id: str, ply: int, move: int
    ) -> None:
        if await self._lost_permissions(interaction, game_id):
            return
        result = await self._guarded(
            self.service.press(
                game_id, str(interaction.user.id), ply, move, message_id=_message_id(interaction)
            )
        )
        await self._answer(interaction, result)

    async def on_resign_button(self, interaction: discord.Interaction[Any], game_id: str) -> None:
        result = await self._guarded(
            self.service.resign_game(
                game_id, str(interaction.user.id), message_id=_message_id(interaction)
            )
        )
        await self._answer(interaction, result)

    async def on_rematch(self, interaction: discord.Interaction[Any], game_id: str) -> None:
        """A new game (or challenge) posted as a new message under the finished one."""
        user = str(interaction.user.id)
        result = await self._guarded(self.service.rematch(game_id, user, _guild_lang(interaction)))
        await self._begin(interaction, result)

    async def on_challenge(
        self, interaction: discord.Interaction[Any], challenge_id: str, answer: str
    ) -> None:
        user = str(interaction.user.id)
        if answer == "accept":
            call = self.service.accept(challenge_id, user, _message_id(interaction) or "")
        else:
            call = self.service.decline(challenge_id, user)
        await self._answer(interaction, await self._guarded(call))

    # -- showing results ---------------------------------------------------------------

    async def _start(
        self,
        interaction: discord.Interaction[Any],
        game: str,
        opponent: discord.Member | discord.User | None,
        level: str | None,
        first: str,
        position: str,
    ) -> None:
        me = self.bot.user
        plays_bot = opponent is None or (me is not None and opponent.id == me.id)
        if not await self._can_show(interaction):
            return
        if plays_bot and await self._guarded(self.service.workers_alive()) == 0:
            await self._tell(interaction, _NO_WORKERS)
            return
        result = await self._guarded(
            self.service.start(
                guild_id=str(interaction.guild_id),
                channel_id=str(interaction.channel_id),
                user_id=str(interaction.user.id),
                game=game,
                opponent_id=None if plays_bot or opponent is None else str(opponent.id),
                opponent_is_bot_account=bool(opponent is not None and opponent.bot),
                level=level,
                first=first,
                position=position,
                guild_lang=_guild_lang(interaction),
            )
        )
        await self._begin(interaction, result)

    async def _begin(self, interaction: discord.Interaction[Any], result: Notice | Update) -> None:
        """Answer with a new game's board or a challenge (or the Notice refusing it)."""
        if isinstance(result, Notice):
            await self._tell(interaction, result)
            return
        await self._post(interaction, result.table)
        if result.bot_to_move and isinstance(result.table, GameSession):
            self.watch_bot_move(result.table)

    async def _post(
        self, interaction: discord.Interaction[Any], table: GameSession | Challenge
    ) -> str:
        """Answer ``interaction`` with a message showing ``table``, which shows it from now
        on; its id."""
        # A challenge pings the challenged (mentions inside embeds do not); a board nobody.
        # An edited message pings nobody, so a challenge is a new message.
        if isinstance(table, Challenge):
            content, allowed, fresh = mention(table.opponent), quiet(table.opponent), True
            drawn = draw(table, new=True)
        else:
            content, allowed, fresh = None, quiet(), False
            drawn = draw(table, new=True, deadline=self.service.deadline(table))
        sent = await self._show_public(
            interaction, fresh=fresh, content=content, allowed_mentions=allowed, **drawn
        )
        message_id = str(sent.id)
        await self.service.attach_message(table, message_id)
        return message_id

    async def _retire(self, session: GameSession, message_id: str, new_id: str) -> None:
        """Turn an old board of ``session`` into a pointer to its board ``new_id``: no
        button left to press (a stale client's press is refused by the service)."""
        channel_id = session.meta.get("channel")
        if not channel_id:
            return
        channel = self.bot.get_partial_messageable(int(channel_id))
        link = message_link(session.meta.get("guild", ""), channel_id, new_id)
        try:
            await channel.get_partial_message(int(message_id)).edit(
                content=say("board_moved", table_language(session), link=link),
                embed=None,
                view=None,
                attachments=[],
            )
        except discord.HTTPException as exc:
            log.warning("cannot retire board %s of %s: %s", message_id, session.id, exc)

    async def _can_show(self, interaction: discord.Interaction[Any]) -> bool:
        """Whether the bot may post and edit a board in the interaction's channel; if not,
        says which permissions are missing (ephemeral replies need none)."""
        missing = _missing(interaction)
        if not missing:
            return True
        await self._tell(
            interaction, say("missing_permissions", _lang(interaction), missing=", ".join(missing))
        )
        return False

    async def _lost_permissions(self, interaction: discord.Interaction[Any], game_id: str) -> bool:
        """A press in a channel where plybot can no longer show the game: the game ends with
        no result (never a forfeit nobody was told of), and the presser hears why."""
        missing = _missing(interaction)
        if not missing:
            return False
        user = str(interaction.user.id)
        ended = await self._guarded(self.service.abort(game_id, "permissions", by=user))
        if ended is None:  # not a player's, or over already: the press is answered as such
            return False
        if isinstance(ended, Notice):
            await self._tell(interaction, ended)
            return True
        lang = _lang(interaction)
        await self._tell(
            interaction, say("aborted_permissions_told", lang, missing=", ".join(missing))
        )
        await interaction.edit_original_response(content=None, **self._draw(ended))
        self._after(ended)
        return True

    async def _answer(self, interaction: discord.Interaction[Any], result: Notice | Update) -> None:
        """Show the result of a button press (the interaction was deferred)."""
        if isinstance(result, Notice):
            await self._tell(interaction, result)
            if result.refresh is not None:
                await interaction.edit_original_response(**self._draw(Update(result.refresh)))
            return
        await interaction.edit_original_response(content=None, **self._draw(result))
        if result.announce:
            self._spawn(self._announce(result.table, result.announce, result.ping))
        if result.bot_to_move:
            self._pressed[result.table.id] = interaction
        self._after(result)

    async def show(self, update: Update, *, announce: bool = True) -> None:
        """Redraw ``update``'s message in its channel (outside any interaction); announce.

        A game plybot can no longer show there (its permissions were taken away, the
        channel or the board is gone) ends with no result: its players are not left to
        forfeit a game they cannot see (see :meth:`_cannot_show`).
        """
        table = update.table
        channel_id, message_id = _place(table)
        if not channel_id:
            return
        channel = self.bot.get_partial_messageable(int(channel_id))
        if message_id:
            try:
                await channel.get_partial_message(int(message_id)).edit(
                    content=None, **self._draw(update)
                )
            except (discord.Forbidden, discord.NotFound) as exc:
                await self._cannot_show(table, exc)
                return
            except discord.HTTPException as exc:
                log.warning("cannot redraw %s in channel %s: %s", table.id, channel_id, exc)
        if announce and update.announce:
            await self._announce(table, update.announce, update.ping)
        self._after(update)

    def _after(self, update: Update) -> None:
        """What follows a game's update shown: plybot's move, or the end's tidying."""
        table = update.table
        if not isinstance(table, GameSession):
            return
        if update.bot_to_move:
            self.watch_bot_move(table)
        elif not playing(table):
            self._pressed.pop(table.id, None)
            self._spawn(self._drop_turn_ping(table))

    async def _cannot_show(
        self, table: GameSession | Challenge, error: discord.HTTPException
    ) -> None:
        """plybot cannot edit ``table``'s message: a game still played ends with no result,
        and the player who last pressed (whose interaction still reaches them, without
        any channel permission) is told why at once."""
        log.warning("cannot show %s: %s", table.id, error)
        if not isinstance(table, GameSession) or not playing(table):
            return
        ended = await self.service.abort(table.id, "permissions")
        pressed = self._pressed.pop(table.id, None)
        if ended is None:
            return
        self._after(ended)
        if pressed is None:
            return
        text = say("aborted_permissions_told", _lang(pressed), missing=str(error.text or error))
        try:
            await pressed.followup.send(text, ephemeral=True)
            await pressed.edit_original_response(content=None, **self._draw(ended))
        except discord.HTTPException as exc:  # its 15 minutes are over: the board says it
            log.warning("cannot tell of game %s's end: %s", table.id, exc)

    async def _drop_turn_ping(self, session: GameSession) -> None:
        """Delete a finished game's last "your move" ping (it asks for a move no longer due)."""
        previous = await self.service.take_turn_ping(session.id)
        channel_id = session.meta.get("channel")
        if previous is None or not channel_id:
            return
        channel = self.bot.get_partial_messageable(int(channel_id))
        try:
            await channel.get_partial_message(int(previous)).delete()
        except discord.HTTPException as exc:
            log.warning("cannot delete turn ping %s: %s", previous, exc)

    def _draw(self, update: Update) -> dict[str, Any]:
        table = update.table
        if isinstance(table, Challenge):
            return draw(table, update.closed)
        return draw(table, deadline=self.service.deadline(table))

    async def _announce(
        self, table: GameSession | Challenge, text: str, ping: str | None = None
    ) -> None:
        """Post ``text`` in the table's channel, pinging ``ping`` only (nobody if ``None``)."""
        channel_id, _ = _place(table)
        if not channel_id:
            return
        try:
            channel = self.bot.get_partial_messageable(int(channel_id))
            sent = await channel.send(text, allowed_mentions=quiet(ping))
            if ping is not None and isinstance(table, GameSession):
                # One "your move" ping per game in the channel: the previous one goes.
                previous = await self.service.swap_turn_ping(table.id, str(sent.id))
                if previous is not None:
                    await channel.get_partial_message(int(previous)).delete()
        except discord.HTTPException as exc:
            log.warning("cannot post in channel %s: %s", channel_id, exc)

    # -- background work -------------------------------------------------------------

    def watch_bot_move(self, session: GameSession) -> None:
        """Get the bot's move in ``session``'s game (asking the workers if no job is out) and
        show it. ``session`` is the game as last seen here: the move is played on the game
        as stored then, with ``session``'s parsed position if it is still the same."""
        game_id = session.id
        running = self._bot_moves.get(game_id)
        if running is not None and not running.done():
            return
        task = asyncio.create_task(self._bot_move(session), name=f"plybot-move-{game_id}")
        self._bot_moves[game_id] = task
        task.add_done_callback(lambda t: self._forget_bot_move(game_id, t))

    def _forget_bot_move(self, game_id: str, task: asyncio.Task[None]) -> None:
        if self._bot_moves.get(game_id) is task:
            del self._bot_moves[game_id]

    async def _bot_move(self, known: GameSession) -> None:
        game_id = known.id
        try:
            session = await self.service.games.get(game_id, known=known)
            update = await self._bot_move_or_abort(session)
            if update is not None:
                await self.show(update)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("game %s: the bot's move failed", game_id)

    async def _bot_move_or_abort(self, session: GameSession) -> Update | None:
        """plybot's move in ``session`` (see :meth:`DiscordGames.await_bot_move`), or the
        game's end with no result as soon as no worker is alive to compute it: before the
        move is asked, and every worker lease while it is awaited (not after the job's
        time-to-live, a minute on, with only a resignation, a loss, to get out)."""
        if session.bot_to_move and await self.service.workers_alive() == 0:
            return await self.service.abort(session.id, "no_workers")
        move = asyncio.ensure_future(self.service.await_bot_move(session))
        try:
            while True:
                done, _ = await asyncio.wait({move}, timeout=self.settings.worker_lease_s)
                if done:
                    return move.result()
                if await self.service.workers_alive() == 0:
                    move.cancel()
                    return await self.service.abort(session.id, "no_workers")
        finally:
            if not move.done():
                move.cancel()

    async def sweep(self, now: float | None = None) -> None:
        """One pass of the sweeper: expiries and forfeits shown, stuck bot moves asked again."""
        for update in await self.service.sweep(now):
            await self.show(update)
        for session in await self.service.stuck_bot_games(overdue_after_s(self.settings), now):
            if session.id not in self._bot_moves:
                self._spawn(self._retry_bot_move(session.id))

    async def _retry_bot_move(self, game_id: str) -> None:
        self.watch_bot_move(await self.service.request_bot_move(game_id))

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self.settings.bot_sweep_interval_s)
            try:
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except (RedisError, OSError) as exc:  # an outage: expected, one line
                log.warning("sweeper pass skipped: Redis unavailable (%s)", type(exc).__name__)
            except Exception:
                log.exception("sweeper pass failed")

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(_log_failure)

    # -- guards ------------------------------------------------------------------------

    async def claim(self, interaction: discord.Interaction[Any]) -> bool:
        """Acknowledge ``interaction`` now, before anything asks Redis; whether this process
        handles it.

        Discord takes one acknowledgement per interaction: of the processes sharing a
        token (each gets every interaction), the one whose defer it accepts handles it;
        the others are refused (already acknowledged) and drop it. A slash command is
        deferred "thinking" (ephemerally for :data:`PRIVATE_COMMANDS`), a button as an
        update of its message.
        """
        try:
            if interaction.type is discord.InteractionType.component:
                await interaction.response.defer()
            else:
                data: dict[str, Any] = dict(interaction.data or {})
                private = data.get("name") in PRIVATE_COMMANDS
                await interaction.response.defer(thinking=True, ephemeral=private)
                interaction.extras[_LOADING] = not private
        except discord.HTTPException as exc:
            if exc.code == ALREADY_ACKNOWLEDGED:  # another process took it: as designed
                log.info("interaction %s taken by another process", interaction.id)
            else:
                log.warning("cannot acknowledge interaction %s: %s", interaction.id, exc)
            return False
        return True

    async def _tell(self, interaction: discord.Interaction[Any], said: Notice | str) -> None:
        """Answer ``interaction`` (acknowledged) with a message only its user sees, in
        their language. A public "thinking" message is deleted first: the first follow-up
        would become it, visible to everyone."""
        text = said if isinstance(said, str) else said.told(_lang(interaction))
        if interaction.extras.pop(_LOADING, False):
            with contextlib.suppress(discord.NotFound):
                await interaction.delete_original_response()
        await interaction.followup.send(text, ephemeral=True)

    async def _show_public(
        self, interaction: discord.Interaction[Any], *, fresh: bool = False, **message: Any
    ) -> discord.WebhookMessage:
        """Answer ``interaction`` (acknowledged) publicly with ``message``: its "thinking"
        message becomes it, or (``fresh``, or a button's answer) a new message does (only
        a new message pings)."""
        if fresh and interaction.extras.pop(_LOADING, False):
            await interaction.delete_original_response()
        interaction.extras.pop(_LOADING, None)
        return await interaction.followup.send(wait=True, **message)

    async def guard(self, interaction: discord.Interaction[Any], call: Awaitable[None]) -> None:
        """Run a button's handler; whatever fails, the presser gets an answer."""
        try:
            await call
        except Exception as exc:
            log.exception("button %s failed", interaction.id)
            await self._apologise(interaction, exc)

    async def cog_app_command_error(
        self, interaction: discord.Interaction[Any], error: app_commands.AppCommandError
    ) -> None:
        """Every failed slash command still gets an answer (not "did not respond")."""
        log.error("/%s failed", interaction.command and interaction.command.name, exc_info=error)
        await self._apologise(interaction, error)

    async def _apologise(self, interaction: discord.Interaction[Any], error: BaseException) -> None:
        redis = isinstance(error.__cause__ or error, RedisError)
        said = _UNAVAILABLE if redis else _FAILED
        try:
            if interaction.response.is_done():
                await self._tell(interaction, said)
            else:
                await interaction.response.send_message(
                    said.told(_lang(interaction)), ephemeral=True
                )
        except discord.HTTPException as exc:
            log.warning("cannot answer interaction %s: %s", interaction.id, exc)

    async def _with_language(
        self, interaction: discord.Interaction[Any], call: Awaitable[T]
    ) -> tuple[T, str]:
        """``call``'s result, and the language of the server's public messages."""
        found = await call  # first: a coroutine is always awaited, even if Redis fails after
        guild_id = None if interaction.guild_id is None else str(interaction.guild_id)
        return found, await self.service.public_language(guild_id, _guild_lang(interaction))

    async def _guarded(self, call: Awaitable[T]) -> T | Notice:
        """``call`` after the acknowledgement: a Redis that fails or stalls past its socket
        timeout becomes the "unavailable" Notice instead of a silent failure."""
        try:
            return await call
        except RedisError as exc:
            log.warning("redis error: %s", exc)
            return _UNAVAILABLE


def _message_id(interaction: discord.Interaction[Any]) -> str | None:
    """The id of the message whose button was pressed."""
    return None if interaction.message is None else str(interaction.message.id)


def _missing(interaction: discord.Interaction[Any]) -> list[str]:
    """The permissions (Discord's names) plybot lacks in the interaction's channel to show
    a game there."""
    granted = interaction.app_permissions
    return [name for perm, name in NEEDED.items() if not getattr(granted, perm)]


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background task failed", exc_info=task.exception())

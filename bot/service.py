"""What the Discord bot does, as plain async functions over Redis and the job client.

Every operation takes the ids it needs (guild, channel, user, game) and returns
what to show: a :class:`Notice` (a reply only the person who acted sees) or an
:class:`Update` (a game's or challenge's message to draw again, perhaps an
announcement in its channel, perhaps a move for the bot to make). The cog turns
these into Discord calls; nothing here imports ``discord``.

Games are :class:`worker.core.games.GameSession` s in a :class:`~worker.core.games.GameStore`
under the bot's own key prefix; players are Discord user ids (as strings) and
:data:`~worker.core.games.BOT`. A session's ``meta`` holds its guild, channel and
message ids. The rules are the engine's (through the session), the bot's moves
are jobs on the ``interactive`` queue (through :class:`worker.core.client.JobClient`),
and the limits and stats are single atomic steps in Redis (:mod:`bot.limits`,
:mod:`bot.stats`).

Life of a game: ``start`` creates a game against plybot, or a challenge that
``accept`` turns into a game (both take their claims at once); ``press``,
``resign`` and ``sweep`` end it; every end goes through ``_settle``, which
counts it once and frees its claims (and decides, being one atomic step, which of
two callers ending a game at once announces it). ``abort`` ends a game the service
cannot continue (plybot's permissions gone, no worker left) with no result. While
the bot is to move, ``request_bot_move`` submits a job and records it in the session, and
``await_bot_move`` plays the answer (both through :mod:`worker.core.bot_moves`, as the
HTTP API's games do); ``recover`` finds the games whose bot move was in flight
when the bot stopped.

Languages: a :class:`Notice` is a key and parameters, said in the language of
whoever reads it; everything public (a game's or a challenge's message and its
announcements) is said in the language recorded with the game or challenge when
it started (``meta["lang"]``, ``Challenge.lang``): the server's ``language``
setting, else its Discord locale (``guild_lang``, given by the caller).
"""

from __future__ import annotations

import logging
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from redis.asyncio import Redis

from bot.challenges import Answer, Challenge, ChallengeStore
from bot.guilds import MIN_TIMEOUT_S, GuildSettingsStore
from bot.keys import Keys
from bot.limits import Claim, Limits
from bot.render import (
    ABORTED,
    aborted,
    mention,
    message_link,
    moves_text,
    playing,
    table_language,
    title,
)
from bot.settings import BotSettings
from bot.stats import Settlement, Standing, Stats, UserStats
from bot.strings import say
from engine.errors import PlybotError
from engine.game import game_names, new_game, require_ongoing
from worker.core.bot_moves import BotMoves
from worker.core.client import JobClient, JobFailed, JobTimeout, UnknownJob
from worker.core.contract import LEVELS, AnalysisRequest, AnalysisResult
from worker.core.games import (
    BOT,
    GameError,
    GameNotFoundError,
    GameSession,
    GameStatus,
    GameStore,
    GameTurnError,
)
from worker.core.keys import as_str

log = logging.getLogger(__name__)

#: The games one can play in Discord: every registered game.
GAMES = tuple(game_names())
FIRST = ("me", "opponent", "random")
#: The share of the move timeout after which the player to move is warned.
WARN_AT = 0.8
#: Times the bot's move is asked of the workers before the game ends with no result.
BOT_MOVE_ATTEMPTS = 3
#: After a challenge to someone closes unanswered (declined, withdrawn, expired), how long
#: before the same challenger may challenge them again: a challenge pings, and ten
#: challenge-and-withdraw rounds would ping ten times.
CHALLENGE_COOLDOWN_S = 60.0


@dataclass(frozen=True)
class Notice:
    """A reply only the person who acted sees: reply ``key`` of :mod:`bot.strings` with
    ``params``, in the language of whoever reads it; ``refresh`` re-draws a stale board."""

    key: str
    params: Mapping[str, Any] = field(default_factory=dict)
    refresh: GameSession | None = None

    @property
    def text(self) -> str:
        """In English (logs, and readers whose language is not shipped)."""
        return say(self.key, **self.params)

    def told(self, lang: str) -> str:
        """In ``lang`` (see :func:`bot.strings.language`)."""
        return say(self.key, lang, **self.params)


def notice(key: str, refresh: GameSession | None = None, **params: Any) -> Notice:
    return Notice(key, params, refresh)


@dataclass(frozen=True)
class Update:
    """Show ``table`` (a game, or a challenge) in its message.

    ``closed`` says how a challenge ended (``None``: open, or it became the
    game). ``announce`` is posted in the channel. ``bot_to_move``: the caller
    starts the bot's move (:meth:`DiscordGames.request_bot_move`).
    """

    table: GameSession | Challenge
    closed: Answer | None = None
    announce: str | None = None
    settlement: Settlement | None = None
    #: The one user the announcement pings (a turn or a warning); nobody when ``None``.
    ping: str | None = None

    @property
    def bot_to_move(self) -> bool:
        """Whether plybot is to move in a game still being played."""
        return (
            isinstance(self.table, GameSession) and playing(self.table) and self.table.bot_to_move
        )


class DiscordGames:
    """The bot's games, challenges, limits and stats (see the module docstring)."""

    def __init__(
        self,
        redis: Redis,
        jobs: JobClient,
        settings: BotSettings,
        *,
        rng: random.Random | None = None,
    ) -> None:
        self.redis = redis
        self.jobs = jobs
        self.settings = settings
        self.keys = Keys(settings.bot_key_prefix)
        self.games = GameStore(redis, prefix=self.keys.prefix)
        self.bot_moves = BotMoves(
            self.games,
            jobs,
            settings,
            deadline_ms=settings.bot_move_deadline_ms,
            attempts=BOT_MOVE_ATTEMPTS,
        )
        self.challenges = ChallengeStore(redis, self.keys)
        self.limits = Limits(redis, self.keys, max_games_per_guild=settings.bot_max_games_per_guild)
        self.stats = Stats(redis, self.keys)
        self.guild_settings = GuildSettingsStore(
            redis, self.keys, level="medium", timeout_s=settings.bot_inactivity_timeout_s
        )
        self.rng = rng or random.Random()

    # -- starting ------------------------------------------------------------------

    async def start(
        self,
        *,
        guild_id: str,
        channel_id: str,
        user_id: str,
        game: str,
        opponent_id: str | None = None,
        opponent_is_bot_account: bool = False,
        level: str | None = None,
        first: str = "me",
        position: str = "",
        guild_lang: str = "en",
    ) -> Notice | Update:
        """A game against plybot (``opponent_id`` None or :data:`BOT`), or a challenge.

        ``first`` is who makes the next move: ``me``, ``opponent`` or ``random``.
        ``position`` starts from the moves given (the game's notation). The game (or
        challenge) speaks the server's language, ``guild_lang`` (its Discord locale)
        unless the server chose one; it keeps it to the end.
        """
        if game not in GAMES:
            return notice("unknown_game", game=game, known=", ".join(GAMES))
        if first not in FIRST:
            return notice("bad_first", first=first, known=", ".join(FIRST))
        try:
            board = new_game(game, position)
            require_ongoing(board)
        except PlybotError as exc:
            return notice("bad_position", reason=str(exc))
        if len(position) > self.settings.max_position_length:
            return notice("position_too_long", n=self.settings.max_position_length)
        server = await self.guild_settings.get(guild_id)
        if server.channel_id and channel_id != server.channel_id:
            return notice("games_channel", channel=server.channel_id)
        me_next = first == "me" or (first == "random" and self.rng.random() < 0.5)
        lang = server.public_language(guild_lang)
        if opponent_id is None or opponent_id == BOT:
            level = level or server.level
            if level not in LEVELS:
                return notice("unknown_level", level=level, known=", ".join(LEVELS))
            return await self._start_vs_bot(
                guild_id, channel_id, user_id, game, level, me_next, position, board.ply,
                timeout_s=server.timeout_s, lang=lang,
            )  # fmt: skip
        if level is not None:
            return notice("level_vs_member")
        if opponent_id == user_id:
            return notice("challenge_self")
        if opponent_is_bot_account:
            return notice("challenge_bot", who=mention(opponent_id))
        cooling = await self.limits.cooling(_challenge_action(opponent_id), user_id)
        if cooling > 0:
            return notice(
                "challenge_cooldown", who=mention(opponent_id), t=int(time.time() + cooling + 1)
            )
        challenge = Challenge.new(
            expiry_s=self.settings.bot_challenge_expiry_s,
            game=game,
            variant=board.variant,
            notation=position,
            challenger=user_id,
            opponent=opponent_id,
            # players[0] moves first from the start: whoever moves next takes the side to move.
            challenger_first=me_next == (board.ply % 2 == 0),
            guild_id=guild_id,
            channel_id=channel_id,
            lang=lang,
        )
        claim = await self.limits.claim(challenge.id, guild_id, channel_id, [user_id, opponent_id])
        if not claim.ok:
            return self._refusal(claim, user_id)
        await self.challenges.create(challenge)
        return Update(challenge)

    async def _start_vs_bot(
        self,
        guild_id: str,
        channel_id: str,
        user_id: str,
        game: str,
        level: str,
        me_next: bool,
        position: str,
        ply: int,
        *,
        timeout_s: float,
        lang: str,
    ) -> Notice | Update:
        me_first = me_next == (ply % 2 == 0)
        players = (user_id, BOT) if me_first else (BOT, user_id)
        meta = {"guild": guild_id, "channel": channel_id, "timeout": str(timeout_s), "lang": lang}
        session = GameSession.start(game, players, level=level, notation=position, meta=meta)
        claim = await self.limits.claim(session.id, guild_id, channel_id, [user_id])
        if not claim.ok:
            return self._refusal(claim, user_id)
        session = await self.games.create(session)
        return Update(session)

    def _refusal(self, claim: Claim, user_id: str) -> Notice:
        if claim.guild_full:
            return notice("guild_full", n=self.settings.bot_max_games_per_guild)
        if claim.busy_user == user_id:
            return notice("busy_self")
        return notice("busy_other", who=mention(claim.busy_user or ""))

    async def attach_message(self, table: GameSession | Challenge, message_id: str) -> None:
        """Record which message shows ``table`` (its board is edited there from now on)."""
        if isinstance(table, Challenge):
            await self.challenges.attach_message(table.id, message_id)
            return

        def attach(s: GameSession) -> GameSession:
            return s.model_copy(update={"meta": {**s.meta, "message": message_id}})

        await self.games.update(table.id, attach)

    # -- challenges ----------------------------------------------------------------

    async def accept(self, challenge_id: str, user_id: str, message_id: str) -> Notice | Update:
        """The challenged user accepts: the game starts in the challenge's message."""
        taken = await self._take(challenge_id, user_id, "accept")
        if isinstance(taken, Notice):
            return taken
        if time.time() >= taken.expires_at:
            return await self._close(taken, "expired")
        server = await self.guild_settings.get(taken.guild_id)
        session = GameSession.start(
            taken.game,
            taken.players,
            variant=taken.variant,
            notation=taken.notation,
            meta={
                "guild": taken.guild_id,
                "channel": taken.channel_id,
                "message": message_id,
                "timeout": str(server.timeout_s),
                "lang": taken.lang,  # the challenge's, whatever the server chose since
            },
        ).model_copy(update={"id": taken.id})  # the claims were taken under this id
        session = await self.games.create(session)
        return self._turn(session)

    async def decline(self, challenge_id: str, user_id: str) -> Notice | Update:
        """The challenged user declines, or the challenger withdraws."""
        taken = await self._take(challenge_id, user_id, "answer")
        if isinstance(taken, Notice):
            return taken
        return await self._close(taken, "declined" if user_id == taken.opponent else "withdrawn")

    async def _take(self, challenge_id: str, user_id: str, verb: str) -> Challenge | Notice:
        """Take the open challenge off the store for ``user_id`` to ``verb`` it: ``accept``
        (the challenged only) or ``answer`` (decline, or the challenger's withdrawal).
        A Notice if ``user_id`` may not, or it is no longer open (taken exactly once)."""
        challenge = await self.challenges.get(challenge_id)
        if challenge is None:
            return notice("not_open")
        may = (challenge.opponent,) if verb == "accept" else challenge.players
        if user_id not in may:
            return notice(f"only_{verb}", who=mention(challenge.opponent))
        taken = await self.challenges.take(challenge_id)
        return notice("not_open") if taken is None else taken

    async def _close(self, challenge: Challenge, how: Answer) -> Update:
        if how != "accepted":
            await self.limits.cooldown(
                _challenge_action(challenge.opponent), challenge.challenger, CHALLENGE_COOLDOWN_S
            )
        await self.stats.settle(
            challenge.id,
            guild_id=challenge.guild_id,
            claim_keys=self.limits.claim_keys(
                challenge.guild_id, challenge.channel_id, [challenge.challenger, challenge.opponent]
            ),
            game=challenge.game,
            players=(challenge.challenger, challenge.opponent),
            winner=None,
            counted=False,
        )
        lang = table_language(challenge)
        texts = {
            "declined": say("announce_declined", lang, who=mention(challenge.opponent)),
            "withdrawn": say("announce_withdrawn", lang, who=mention(challenge.challenger)),
            "expired": say("announce_expired", lang, who=mention(challenge.opponent)),
            "accepted": "",
        }
        return Update(challenge, closed=how, announce=texts[how] or None)

    # -- moves -----------------------------------------------------------------------

    async def press(
        self, game_id: str, user_id: str, ply: int, move: int, *, message_id: str | None = None
    ) -> Notice | Update:
        """``user_id`` pressed the button of ``move`` (an engine move) on the board at ``ply``,
        shown in message ``message_id`` (a board ``/board`` replaced is not played on)."""
        try:
            session = await self.games.get(game_id)
        except GameNotFoundError:
            return notice("game_gone")
        ended = _ended(session)
        if ended is not None:
            return ended
        if user_id not in session.players:
            return notice("not_playing")
        replaced = _replaced(session, message_id)
        if replaced is not None:
            return replaced
        if session.to_move != user_id:
            if session.to_move == BOT:
                return notice("bot_thinking")
            return notice("not_your_turn", who=mention(session.to_move or ""))
        if ply != session.ply:
            return notice("stale_board", refresh=session)

        def play(s: GameSession) -> GameSession:
            if s.ply != ply:  # the game moved on since we looked
                raise GameTurnError(f"game {s.id}: the board changed, press again")
            return s.play_move(user_id, move)

        try:
            session = await self.games.update(game_id, play, known=session)
        except (GameError, PlybotError) as exc:
            return notice("illegal", reason=_illegal_text(exc))
        if session.ongoing:
            return self._turn(session)
        return await self._finish(session)

    def timeout(self, session: GameSession) -> float:
        """The game's move timeout: its server's when it started, else the process's."""
        return float(session.meta.get("timeout", self.settings.bot_inactivity_timeout_s))

    def deadline(self, session: GameSession) -> float:
        """When the player to move forfeits (epoch seconds)."""
        return session.updated_at + self.timeout(session)

    def _turn(self, session: GameSession) -> Update:
        """The update after a move: in a game between people, ping the player to move
        (an edited board pings nobody)."""
        mover = session.to_move
        if mover is None or mover == BOT or BOT in session.players:
            return Update(session)
        lang = table_language(session)
        text = say(
            "turn_ping",
            lang,
            who=mention(mover),
            game=title(session.game, lang),
            n=session.ply + 1,
            t=int(self.deadline(session)),
        )
        return Update(session, announce=text, ping=mover)

    async def request_bot_move(self, game_id: str) -> GameSession:
        """Ask the workers for the bot's move (replacing a job out already) and record it.

        Does nothing (returns the session) unless the bot is to move.
        """
        return await self.bot_moves.ask(await self.games.get(game_id))

    async def await_bot_move(self, session: GameSession) -> Update | None:
        """Wait for the bot's move in ``session`` (asking for it if no job is out) and play it.

        Returns ``None`` when there is nothing to show: the answer was stale (the
        game moved on or ended meanwhile). A failed or lost job is asked again,
        up to :data:`BOT_MOVE_ATTEMPTS`; then the channel is told.
        """
        if not playing(session):
            return None
        try:
            turn = await self.bot_moves.advance(session, wait_s=None)
        except GameNotFoundError:
            return None
        if turn.reply is not None:
            if turn.session.ongoing:
                return Update(turn.session)
            finished = await self._finish(turn.session)
            return finished if isinstance(finished, Update) else None
        if turn.failure is not None:
            # The service cannot continue this game: it ends with no result, saying why
            # (never left for the player to resign, which would count as a loss).
            log.warning("game %s: plybot's move failed: %s", session.id, turn.failure)
            return await self.abort(session.id, "bot_failed")
        return None

    async def abort(self, game_id: str, why: str, *, by: str | None = None) -> Update | None:
        """End game ``game_id`` with no result because the service cannot continue it
        (``why``: ``permissions``, ``no_workers`` or ``bot_failed``, a ``why_*`` key of
        :mod:`bot.strings`): no record or rating changes, its claims are freed, and the
        channel is told why. ``None`` if it was no longer being played (then whoever
        ended it says so), or ``by`` (the user whose action found it out) does not play
        in it.

        The end is atomic: the session is marked (``meta["aborted"]``, with no job
        awaited, so a late answer of the workers is dropped) and settled uncounted in one
        step each; a game that ended meanwhile keeps its result.
        """

        awaited: list[str] = []  # the job of plybot's move the stored game awaited

        def mark(s: GameSession) -> GameSession:
            if not playing(s) or (by is not None and by not in s.players):
                return s
            awaited[:] = [] if s.pending is None else [s.pending.job_id]
            return s.model_copy(update={"meta": {**s.meta, ABORTED: why}, "pending": None})

        try:
            session = await self.games.update(game_id, mark)
        except GameNotFoundError:
            return None
        if aborted(session) != why:
            return None
        for job_id in awaited:  # nobody waits for it now (it goes on if others share it)
            await self.jobs.withdraw(job_id)
        guild_id = session.meta.get("guild", "")
        humans = [p for p in session.players if p != BOT]
        settled = await self.stats.settle(
            session.id,
            guild_id=guild_id,
            claim_keys=self.limits.claim_keys(guild_id, session.meta.get("channel", ""), humans),
            game=session.game,
            players=session.players,
            winner=None,
            counted=False,
        )
        if not settled.counted:
            return None
        # The store keeps it among its ongoing games (its status is the engine's); the bot
        # never looks at it again there (see ``playing``), and it ages out as finished.
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.zrem(self.games.ongoing_key, session.id)
            pipe.zadd(self.games.finished_key, {session.id: time.time()})
            await pipe.execute()
        lang = table_language(session)
        a, b = (mention(p) for p in session.players)
        text = say(
            "announce_aborted", lang, game=title(session.game, lang), a=a, b=b,
            why=say(f"why_{why}", lang),
        )  # fmt: skip
        return Update(session, announce=text)

    async def resign(self, channel_id: str, user_id: str) -> Notice | Update:
        """``user_id`` resigns their game in the channel (or withdraws/declines their challenge)."""
        holder = await self.limits.holder(channel_id, user_id)
        if holder is None:
            return notice("no_game_here")
        challenge = await self.challenges.get(holder)
        if challenge is not None:
            return await self.decline(holder, user_id)
        return await self._resign(holder, user_id)

    async def resign_game(
        self, game_id: str, user_id: str, *, message_id: str | None = None
    ) -> Notice | Update:
        """``user_id`` presses Resign on game ``game_id``'s board (in message ``message_id``)."""
        try:
            session = await self.games.get(game_id)
        except GameNotFoundError:
            return notice("game_gone")
        if user_id not in session.players:
            return notice("not_playing")
        ended = _ended(session)
        if ended is not None:
            return ended
        replaced = _replaced(session, message_id)
        if replaced is not None:
            return replaced
        return await self._resign(game_id, user_id)

    async def _resign(self, game_id: str, user_id: str) -> Notice | Update:
        """End the game by ``user_id``'s resignation; announced by whoever settles it, once
        (of two resignations at once, the second hears that the game is over)."""
        try:
            session = await self.games.update(game_id, _resign_if_playing(user_id))
        except GameNotFoundError:
            return notice("game_gone")
        if playing(session):  # the change was refused: ended with no result meanwhile
            return notice("game_over", refresh=session)
        return await self._finish(session)

    async def rematch(self, game_id: str, user_id: str, guild_lang: str = "en") -> Notice | Update:
        """A new game between the same players, sides swapped: at once against plybot,
        as a challenge to the other player otherwise (in the server's language now: see
        :meth:`start`)."""
        try:
            session = await self.games.get(game_id)
        except GameNotFoundError:
            return notice("game_gone")
        if user_id not in session.players:
            return notice("rematch_players_only")
        if playing(session):
            return notice("still_playing")
        other = session.players[1 - session.players.index(user_id)]
        was_second = session.players.index(user_id) == 1
        return await self.start(
            guild_id=session.meta.get("guild", ""),
            channel_id=session.meta.get("channel", ""),
            user_id=user_id,
            game=session.game,
            opponent_id=None if other == BOT else other,
            level=session.level if other == BOT else None,
            first="me" if was_second else "opponent",
            guild_lang=guild_lang,
        )

    async def public_language(self, guild_id: str | None, guild_lang: str) -> str:
        """The language of public answers in guild ``guild_id`` (``/analyze``, ``/stats``):
        its ``language`` setting, else ``guild_lang``; ``guild_lang`` outside a guild."""
        if not guild_id:
            return guild_lang
        return (await self.guild_settings.get(guild_id)).public_language(guild_lang)

    async def game_in_channel(self, channel_id: str, user_id: str) -> GameSession | Notice:
        """``user_id``'s ongoing game in the channel (for ``/board``)."""
        holder = await self.limits.holder(channel_id, user_id)
        if holder is not None:
            try:
                session = await self.games.get(holder)
            except GameNotFoundError:
                session = None
            if session is not None and playing(session):
                return session
        return notice("no_game_here")

    async def swap_turn_ping(self, game_id: str, message_id: str) -> str | None:
        """Record ``message_id`` as game ``game_id``'s latest turn ping; the one it replaces."""
        key = self.keys.turn_ping(game_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.getset(key, message_id)
            pipe.expire(key, 7 * 24 * 3600)
            previous, _ = await pipe.execute()
        return None if previous is None else previous.decode()

    async def take_turn_ping(self, game_id: str) -> str | None:
        """Forget game ``game_id``'s latest turn ping (the game ended); its message id."""
        previous = await self.redis.getdel(self.keys.turn_ping(game_id))
        return None if previous is None else as_str(previous)

    async def workers_alive(self) -> int:
        """How many workers hold a live lease (0: nobody can compute plybot's moves)."""
        return (await self.jobs.service_status()).workers_alive

    # -- endings -----------------------------------------------------------------------

    async def _finish(self, session: GameSession) -> Notice | Update:
        """Settle a finished game and say its result, once: the settlement (one atomic
        step in Redis) decides which of the callers ending it at once announces it; the
        others are told it is over."""
        settlement = await self._settle(session)
        if not settlement.counted:
            return notice("game_over", refresh=session)
        announce = result_text(session)
        if settlement.ratings:
            ratings = ", ".join(
                f"{mention(user)} {new:.0f} ({new - settlement.before[user]:+.0f})"
                for user, new in settlement.ratings.items()
            )
            lang = table_language(session)
            announce = say("result_ratings", lang, result=announce, ratings=ratings)
        return Update(session, announce=announce, settlement=settlement)

    async def _settle(self, session: GameSession) -> Settlement:
        humans = [p for p in session.players if p != BOT]
        guild_id = session.meta.get("guild", "")
        return await self.stats.settle(
            session.id,
            guild_id=guild_id,
            claim_keys=self.limits.claim_keys(guild_id, session.meta.get("channel", ""), humans),
            game=session.game,
            players=session.players,
            winner=session.winner,
            bot_level=session.level if BOT in session.players else None,
        )

    async def sweep(self, now: float | None = None) -> list[Update]:
        """Expire unanswered challenges and forfeit inactive games; what to show for each.

        A game is inactive when its player to move has not moved for
        ``bot_inactivity_timeout_s``; a game waiting on the bot never is (its move
        is asked again instead, by the caller through :meth:`stuck_bot_games`).
        """
        now = time.time() if now is None else now
        updates: list[Update] = []
        for challenge_id in await self.challenges.due(now):
            taken = await self.challenges.take(challenge_id)
            if taken is not None:
                updates.append(await self._close(taken, "expired"))
        # Each game has its own timeout (its server's, when it started): look at every game
        # idle for the least a warning can need, and judge each by its own.
        least = min(MIN_TIMEOUT_S, self.settings.bot_inactivity_timeout_s) * WARN_AT
        for game_id in await self.games.inactive(least, now=now):
            try:
                session = await self.games.get(game_id)
            except GameNotFoundError:
                continue
            if not playing(session) or session.bot_to_move:
                continue
            timeout = self.timeout(session)
            idle = now - session.updated_at
            if idle >= timeout:
                try:
                    session = await self.games.update(game_id, _forfeit_if_idle(now - timeout, now))
                except GameNotFoundError:
                    continue
                if session.status is GameStatus.FORFEIT and session.updated_at == now:
                    finished = await self._finish(session)
                    if isinstance(finished, Update):
                        updates.append(finished)
            elif idle >= timeout * WARN_AT:
                warning = await self._warning(session, now)
                if warning is not None:
                    updates.append(warning)
        return updates

    async def _warning(self, session: GameSession, now: float) -> Update | None:
        """Warn the player to move, once per move, that they are about to forfeit."""
        game_id = session.id
        mover = session.to_move
        deadline = self.deadline(session)
        if not playing(session) or session.bot_to_move or mover is None or now >= deadline:
            return None
        once = await self.redis.set(
            self.keys.warned(game_id, session.ply),
            "1",
            nx=True,
            ex=int(self.timeout(session)) + 1,
        )
        if not once:
            return None
        lang = table_language(session)
        game = title(session.game, lang)
        text = say("move_warning", lang, who=mention(mover), game=game, t=int(deadline))
        return Update(session, announce=text, ping=mover)

    async def _active_games(self) -> list[GameSession]:
        """The sessions of every game holding claims, in two round trips.

        On the way, frees the claims of ids whose game and challenge both vanished
        (expired keys) and settles games that ended but were not settled (a crash
        between the two).
        """
        ids = await self.limits.active_ids()
        if not ids:
            return []
        games = await self.redis.mget([self.games.key(i) for i in ids])
        challenges = await self.redis.mget([self.keys.challenge(i) for i in ids])
        found = []
        for table_id, game, challenge in zip(ids, games, challenges, strict=True):
            if game is not None:
                session = GameSession.model_validate_json(game)
                if session.ongoing:
                    found.append(session)
                else:
                    await self._settle(session)
            elif challenge is None:
                await self.limits.forget(table_id)
        return found

    async def stuck_bot_games(
        self, older_than_s: float, now: float | None = None
    ) -> list[GameSession]:
        """Ongoing games where the bot is to move and no job was asked within ``older_than_s``."""
        now = time.time() if now is None else now
        return [
            s
            for s in await self._active_games()
            if s.bot_to_move and (s.pending is None or now - s.pending.requested_at > older_than_s)
        ]

    async def recover(self) -> list[GameSession]:
        """On start: tidy the active games (see :meth:`_active_games`); the ongoing ones."""
        return await self._active_games()

    # -- analysis and stats --------------------------------------------------------------

    def analysis_request(self, game: str, position: str) -> Notice | AnalysisRequest:
        """The analysis ``/analyze`` asks for: an exact solve, every move scored."""
        if game not in GAMES:
            return notice("unknown_game", game=game, known=", ".join(GAMES))
        position = position.strip()
        try:
            return AnalysisRequest(game=game, position=position, mode="solve", moves="all")
        except ValidationError as exc:
            reasons = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
            return notice("cannot_analyse", reason=reasons)

    async def analysis_gate(
        self, user_id: str, guild_id: str | None, guild_lang: str
    ) -> Notice | str:
        """Whether ``user_id`` may run ``/analyze`` now: a Notice if no worker runs or their
        cooldown does (started here otherwise); else the language of the public answer
        (see :meth:`public_language`)."""
        if await self.workers_alive() == 0:
            return notice("no_workers")
        lang = await self.public_language(guild_id, guild_lang)
        refused = await self.analyze_cooldown(user_id)
        return lang if refused is None else refused

    async def analyze_cooldown(self, user_id: str) -> Notice | None:
        """Start ``user_id``'s ``/analyze`` cooldown; a Notice if it is still running."""
        left = await self.limits.cooldown("analyze", user_id, self.settings.bot_analyze_cooldown_s)
        if left > 0:
            return notice("cooldown", s=f"{left:.0f}")
        return None

    async def analyze(self, request: AnalysisRequest) -> AnalysisResult | Notice:
        """Run the analysis on the workers (``analysis`` queue) and wait for it."""
        timeout = self.settings.analysis_timeout_s + 30
        try:
            return await self.jobs.analyze(request, timeout=timeout)
        except (JobFailed, JobTimeout, UnknownJob) as exc:
            return notice("analysis_failed", reason=str(exc))

    async def user_stats(self, guild_id: str, user_id: str) -> UserStats:
        return await self.stats.user(guild_id, user_id)

    async def leaderboard(self, guild_id: str, game: str) -> list[Standing]:
        return await self.stats.leaderboard(guild_id, game)

    async def table(self, table_id: str) -> GameSession | Challenge | None:
        challenge = await self.challenges.get(table_id)
        if challenge is not None:
            return challenge
        try:
            return await self.games.get(table_id)
        except GameNotFoundError:
            return None


def _challenge_action(opponent_id: str) -> str:
    """The cooldown (see :meth:`bot.limits.Limits.cooldown`) on challenging ``opponent_id``."""
    return f"challenge:{opponent_id}"


def _ended(session: GameSession) -> Notice | None:
    """The Notice for a press on a game no longer played (its board redrawn), else ``None``."""
    return None if playing(session) else notice("game_over", refresh=session)


def _replaced(session: GameSession, message_id: str | None) -> Notice | None:
    """The Notice for a press on a board of ``session`` that ``/board`` replaced (its
    message is not the one the game is shown in), else ``None``."""
    current = session.meta.get("message")
    if message_id is None or current is None or message_id == current:
        return None
    link = message_link(session.meta.get("guild", ""), session.meta.get("channel", ""), current)
    return notice("old_board", link=link)


def _resign_if_playing(user_id: str) -> Callable[[GameSession], GameSession]:
    """The change that resigns the game for ``user_id``, if it is still being played (a
    game that ended meanwhile is left as it is)."""

    def change(s: GameSession) -> GameSession:
        return s.resign(user_id) if playing(s) else s

    return change


def _forfeit_if_idle(idle_since: float, now: float) -> Callable[[GameSession], GameSession]:
    """The change that forfeits a game for its player to move, if still idle since then."""

    def change(s: GameSession) -> GameSession:
        if not playing(s) or s.bot_to_move or s.updated_at > idle_since:
            return s
        return s.forfeit(s.to_move or "", now=now)

    return change


def _illegal_text(exc: Exception) -> str:
    """A refused move in a sentence: ``Column 4 is full.``, ``Not your turn...``."""
    reason = str(exc)
    if reason.startswith(("'", "game ")) and ": " in reason:
        reason = reason.split(": ", 1)[1]  # the move or game it quotes: the button says which
    reason = re.sub(r" \(move \d+\)$", "", reason)
    return reason[:1].upper() + reason[1:] + "."


def result_text(session: GameSession) -> str:
    """One line saying how a finished game ended, in the game's language."""
    lang = table_language(session)
    name = title(session.game, lang)
    a, b = (mention(p) for p in session.players)
    level = f" ({session.level})" if session.level and BOT in session.players else ""
    moves = moves_text(session.ply, lang)
    if session.status is GameStatus.DRAWN:
        return say("result_draw", lang, game=name, a=a, b=f"{b}{level}", moves=moves)
    winner = mention(session.winner_id or "")
    loser = mention(session.players[1 - (session.winner or 0)])
    if session.winner_id != BOT:
        loser += level
    else:
        winner += level
    ended = {GameStatus.RESIGNED: "result_resigned", GameStatus.FORFEIT: "result_forfeit"}
    key = ended.get(session.status, "result_won")
    return say(key, lang, game=name, winner=winner, loser=loser, moves=moves)


__all__ = [
    "GAMES",
    "DiscordGames",
    "Notice",
    "Update",
    "result_text",
]

"""What the Discord bot does, as plain async functions over Redis and the job client.

Every operation takes the ids it needs (guild, channel, user, game) and returns
what to show: a :class:`Notice` (a reply only the person who acted sees) or an
:class:`Update` (a game's or challenge's message to draw again, perhaps an
announcement in its channel, perhaps a move for the bot to make). The cog turns
these into Discord calls; nothing here imports ``discord``.

Games are :class:`worker.games.GameSession` s in a :class:`~worker.games.GameStore`
under the bot's own key prefix; players are Discord user ids (as strings) and
:data:`~worker.games.BOT`. A session's ``meta`` holds its guild, channel and
message ids. The rules are the engine's (through the session), the bot's moves
are jobs on the ``interactive`` queue (through :class:`worker.client.JobClient`),
and the limits and stats are single atomic steps in Redis (:mod:`bot.limits`,
:mod:`bot.stats`).

Life of a game: ``start`` creates a game against plybot, or a challenge that
``accept`` turns into a game (both take their claims at once); ``press``,
``resign`` and ``sweep`` end it; every end goes through ``_settle``, which
counts it once and frees its claims. While the bot is to move,
``request_bot_move`` submits a job and records it in the session, and
``await_bot_move`` plays the answer (both through :mod:`worker.bot_moves`, as the
HTTP API's games do); ``recover`` finds the games whose bot move was in flight
when the bot stopped.
"""

from __future__ import annotations

import logging
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import ValidationError
from redis.asyncio import Redis

from bot.challenges import Answer, Challenge, ChallengeStore
from bot.keys import Keys
from bot.limits import Claim, Limits
from bot.render import mention, title
from bot.stats import Settlement, Standing, Stats, UserStats
from engine.errors import PlybotError
from engine.game import new_game, require_ongoing
from worker.bot_moves import BotMoves
from worker.client import JobClient, JobFailed, JobTimeout, UnknownJob
from worker.contract import LEVELS, AnalysisRequest, AnalysisResult
from worker.games import (
    BOT,
    GameError,
    GameNotFoundError,
    GameSession,
    GameStatus,
    GameStore,
    GameTurnError,
)
from worker.settings import Settings

log = logging.getLogger(__name__)

GAMES = ("connect4", "tictactoe")
FIRST = ("me", "opponent", "random")
_NOT_OPEN = "This challenge is no longer open."
#: Times the bot's move is asked of the workers before the game waits for the sweeper.
BOT_MOVE_ATTEMPTS = 3


@dataclass(frozen=True)
class Notice:
    """A reply only the person who acted sees; ``refresh`` re-draws a stale board."""

    text: str
    refresh: GameSession | None = None


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

    @property
    def bot_to_move(self) -> bool:
        return isinstance(self.table, GameSession) and self.table.bot_to_move


class DiscordGames:
    """The bot's games, challenges, limits and stats (see the module docstring)."""

    def __init__(
        self,
        redis: Redis,
        jobs: JobClient,
        settings: Settings,
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
    ) -> Notice | Update:
        """A game against plybot (``opponent_id`` None or :data:`BOT`), or a challenge.

        ``first`` is who makes the next move: ``me``, ``opponent`` or ``random``.
        ``position`` starts from the moves given (the game's notation).
        """
        if game not in GAMES:
            return Notice(f"'{game}': unknown game (known: {', '.join(GAMES)})")
        if first not in FIRST:
            return Notice(f"'{first}': first must be one of {', '.join(FIRST)}")
        try:
            board = new_game(game, position)
            require_ongoing(board)
        except PlybotError as exc:
            return Notice(f"Bad position: {exc}")
        if len(position) > self.settings.max_position_length:
            return Notice(f"Bad position: longer than {self.settings.max_position_length} moves")
        me_next = first == "me" or (first == "random" and self.rng.random() < 0.5)
        if opponent_id is None or opponent_id == BOT:
            level = level or "medium"
            if level not in LEVELS:
                return Notice(f"'{level}': unknown level (levels: {', '.join(LEVELS)})")
            return await self._start_vs_bot(
                guild_id, channel_id, user_id, game, level, me_next, position, board.ply
            )
        if opponent_id == user_id:
            return Notice("You cannot challenge yourself: leave `opponent` empty to play plybot.")
        if opponent_is_bot_account:
            return Notice(f"{mention(opponent_id)} is a bot and cannot accept a challenge.")
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
        )
        claim = await self.limits.claim(challenge.id, guild_id, channel_id, [user_id, opponent_id])
        if not claim.ok:
            return Notice(self._refusal(claim, user_id))
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
    ) -> Notice | Update:
        me_first = me_next == (ply % 2 == 0)
        players = (user_id, BOT) if me_first else (BOT, user_id)
        session = GameSession.start(
            game,
            players,
            level=level,
            notation=position,
            meta={"guild": guild_id, "channel": channel_id},
        )
        claim = await self.limits.claim(session.id, guild_id, channel_id, [user_id])
        if not claim.ok:
            return Notice(self._refusal(claim, user_id))
        session = await self.games.create(session)
        return Update(session)

    def _refusal(self, claim: Claim, user_id: str) -> str:
        if claim.guild_full:
            return (
                f"This server already has {self.settings.bot_max_games_per_guild} games going; "
                "try again when one ends."
            )
        who = (
            "You already have"
            if claim.busy_user == user_id
            else f"{mention(claim.busy_user or '')} already has"
        )
        return f"{who} a game or challenge in this channel: finish it or `/resign` first."

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
        session = GameSession.start(
            taken.game,
            taken.players,
            variant=taken.variant,
            notation=taken.notation,
            meta={"guild": taken.guild_id, "channel": taken.channel_id, "message": message_id},
        ).model_copy(update={"id": taken.id})  # the claims were taken under this id
        session = await self.games.create(session)
        return Update(session)

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
            return Notice(_NOT_OPEN)
        may = (challenge.opponent,) if verb == "accept" else challenge.players
        if user_id not in may:
            return Notice(f"Only {mention(challenge.opponent)} can {verb} this challenge.")
        taken = await self.challenges.take(challenge_id)
        return Notice(_NOT_OPEN) if taken is None else taken

    async def _close(self, challenge: Challenge, how: Answer) -> Update:
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
        texts = {
            "declined": f"{mention(challenge.opponent)} declined the challenge.",
            "withdrawn": f"{mention(challenge.challenger)} withdrew the challenge.",
            "expired": f"The challenge to {mention(challenge.opponent)} expired unanswered.",
            "accepted": "",
        }
        return Update(challenge, closed=how, announce=texts[how] or None)

    # -- moves -----------------------------------------------------------------------

    async def press(self, game_id: str, user_id: str, ply: int, move: int) -> Notice | Update:
        """``user_id`` pressed the button of ``move`` (an engine move) on the board at ``ply``."""
        try:
            session = await self.games.get(game_id)
        except GameNotFoundError:
            return Notice("This game no longer exists.")
        if not session.ongoing:
            return Notice("This game is over.", refresh=session)
        if user_id not in session.players:
            return Notice("You are not playing in this game.")
        if session.to_move != user_id:
            if session.to_move == BOT:
                return Notice("Not your turn: plybot is thinking.")
            return Notice(f"Not your turn: it is {mention(session.to_move or '')}'s move.")
        if ply != session.ply:
            return Notice("That board was out of date; here is the current one.", refresh=session)
        position = session.position()
        name = position.move_name(move)

        def play(s: GameSession) -> GameSession:
            if s.ply != ply:  # the game moved on since we looked
                raise GameTurnError(f"game {s.id}: the board changed, press again")
            return s.play(user_id, name)

        try:
            session = await self.games.update(game_id, play)
        except (GameError, PlybotError) as exc:
            return Notice(_illegal_text(exc))
        if session.ongoing:
            return Update(session)
        return await self._finish(session)

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
        try:
            turn = await self.bot_moves.advance(session, wait_s=None)
        except GameNotFoundError:
            return None
        if turn.reply is not None:
            return (
                Update(turn.session) if turn.session.ongoing else await self._finish(turn.session)
            )
        if turn.failure is not None:
            return Update(
                turn.session,
                announce=f"plybot could not choose its move ({turn.failure}). "
                "It will try again shortly; `/resign` ends the game.",
            )
        return None

    async def resign(self, guild_id: str, channel_id: str, user_id: str) -> Notice | Update:
        """``user_id`` resigns their game in the channel (or withdraws/declines their challenge)."""
        holder = await self.limits.holder(channel_id, user_id)
        if holder is None:
            return Notice("You have no game in this channel.")
        challenge = await self.challenges.get(holder)
        if challenge is not None:
            return await self.decline(holder, user_id)
        try:
            session = await self.games.resign(holder, user_id)
        except GameNotFoundError:
            return Notice("You have no game in this channel.")
        except GameTurnError:
            session = await self.games.get(holder)
            if session.ongoing:
                raise
            # Over already but not settled (a crash in between): settle it now.
        return await self._finish(session)

    # -- endings -----------------------------------------------------------------------

    async def _finish(self, session: GameSession) -> Update:
        settlement = await self._settle(session)
        announce = result_text(session)
        if settlement.ratings:
            announce += " Ratings: " + ", ".join(
                f"{mention(user)} {new:.0f} ({new - settlement.before[user]:+.0f})"
                for user, new in settlement.ratings.items()
            )
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
        timeout = self.settings.bot_inactivity_timeout_s
        for game_id in await self.games.inactive(timeout, now=now):
            try:
                session = await self.games.update(game_id, _forfeit_if_idle(now - timeout, now))
            except GameNotFoundError:
                continue
            if session.status is GameStatus.FORFEIT and session.updated_at == now:
                updates.append(await self._finish(session))
        return updates

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
        """On start: tidy the active games (see :meth:`_active_games`); those awaiting the bot."""
        return [s for s in await self._active_games() if s.bot_to_move]

    # -- analysis and stats --------------------------------------------------------------

    def analysis_request(self, game: str, position: str) -> Notice | AnalysisRequest:
        """The analysis ``/analyze`` asks for: an exact solve, every move scored."""
        if game not in GAMES:
            return Notice(f"'{game}': unknown game (known: {', '.join(GAMES)})")
        position = position.strip()
        try:
            return AnalysisRequest(game=game, position=position, mode="solve", moves="all")
        except ValidationError as exc:
            reasons = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
            return Notice(f"Cannot analyse that position: {reasons}")

    async def analyze_cooldown(self, user_id: str) -> Notice | None:
        """Start ``user_id``'s ``/analyze`` cooldown; a Notice if it is still running."""
        left = await self.limits.cooldown("analyze", user_id, self.settings.bot_analyze_cooldown_s)
        if left > 0:
            return Notice(f"`/analyze` is cooling down: try again in {left:.0f} s.")
        return None

    async def analyze(self, request: AnalysisRequest) -> AnalysisResult | Notice:
        """Run the analysis on the workers (``analysis`` queue) and wait for it."""
        timeout = self.settings.analysis_timeout_s + 30
        try:
            return await self.jobs.analyze(request, timeout=timeout)
        except (JobFailed, JobTimeout, UnknownJob) as exc:
            return Notice(f"The analysis failed: {exc}")

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


def _forfeit_if_idle(idle_since: float, now: float) -> Callable[[GameSession], GameSession]:
    """The change that forfeits a game for its player to move, if still idle since then."""

    def change(s: GameSession) -> GameSession:
        if not s.ongoing or s.bot_to_move or s.updated_at > idle_since:
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
    """One line saying how a finished game ended."""
    name = title(session.game)
    a, b = (mention(p) for p in session.players)
    level = f" ({session.level})" if session.level and BOT in session.players else ""
    if session.status is GameStatus.DRAWN:
        return f"{name}: {a} and {b}{level} drew after {session.ply} moves."
    winner = mention(session.winner_id or "")
    loser = mention(session.players[1 - (session.winner or 0)])
    if session.winner_id != BOT:
        loser += level
    else:
        winner += level
    if session.status is GameStatus.RESIGNED:
        return f"{name}: {loser} resigned; {winner} wins."
    if session.status is GameStatus.FORFEIT:
        return f"{name}: {loser} forfeits (no move in time); {winner} wins."
    return f"{name}: {winner} beat {loser} in {session.ply} moves."


__all__ = [
    "GAMES",
    "DiscordGames",
    "Notice",
    "Update",
    "result_text",
]

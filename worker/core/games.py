"""Game sessions in Redis: what a game is, and the store that changes it safely.

A :class:`GameSession` is a game between two players, told apart by opaque
ids (``"plybot"``, :data:`BOT`, is the bot; a front-end picks the others: a
Discord user id, ``"human"`` for the HTTP API). ``players[0]`` moves first.
The rules are the engine's: every move goes through ``engine.game.new_game``
and ``Game.push``, never through code here.

A session is a value: its transitions (:meth:`GameSession.play`,
:meth:`~GameSession.resign`, ...) return a new session and raise without
changing anything. :class:`GameStore` applies a transition with optimistic
concurrency (``WATCH``/``MULTI`` on the game's key, retried on a conflict), so
two requests racing on one game cannot corrupt it: each transition is checked
against the state it really replaces, and the loser of the race sees the
winner's move (a ``409`` for the HTTP API: not your turn any more).

A session carries its position parsed (the engine's ``Game``, whose moves are
numbers): parsed from ``notation`` once, when first needed after the session is
read from Redis (or taken from the caller's earlier copy of the same position, the
store's ``known``), and handed on by every transition to the session it returns, so
a move played on a session in hand parses nothing. Move names (``notation``,
``moves``) are the stored record's and what is shown; a front-end that has the
engine's move plays it as a number (:meth:`GameSession.play_move`), one that has a
name typed or sent over HTTP as a name (:meth:`GameSession.play`).

The bot's moves are asked of the workers through :mod:`worker.core.bot_moves` (the one
way for every front-end); a session records the job while the bot thinks
(``pending``), so a restarted front-end can pick the answer up again (see
:meth:`GameSession.expect_bot` and :meth:`GameSession.play_bot`).

Storage: one JSON string per game (``plybot:game:{id}``) and two sorted sets of
game ids by last activity, ``plybot:games:ongoing`` (for inactivity timeouts)
and ``plybot:games:finished``. Ongoing games' keys carry no TTL, so a Redis run with
``maxmemory-policy volatile-lru`` (as ``plybot up`` runs it) evicts cache
entries, never a game in play; :meth:`GameStore.purge` deletes long-idle and
long-finished games, so abandoned games do not pile up. A store given
``finished_ttl_s`` also sets that TTL on finished games' keys (nothing needs
them any more, so they may expire, or be evicted first under memory pressure).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr
from redis.asyncio import Redis
from redis.exceptions import WatchError

from engine.game import Game, new_game
from worker.core.contract import LEVELS, MoveResult
from worker.core.keys import as_str

__all__ = [
    "BOT",
    "BotMove",
    "GameConflictError",
    "GameError",
    "GameNotFoundError",
    "GameSession",
    "GameStatus",
    "GameStore",
    "GameTurnError",
    "Pending",
]

#: The bot's player id.
BOT = "plybot"


class GameError(Exception):
    """Base class of the errors about a game's state (not about a move's notation)."""


class GameNotFoundError(GameError, LookupError):
    """No game with this id (never created, or expired)."""


class GameTurnError(GameError):
    """A move or action the game's state forbids now: out of turn, while the bot
    thinks, or in a finished game. (The HTTP API answers 409.)"""


class GameConflictError(GameError):
    """The game kept changing under a transition (too many concurrent writers)."""


class GameStatus(StrEnum):
    ONGOING = "ongoing"
    WON = "won"  # by four in a row (or the game's own win)
    DRAWN = "drawn"
    RESIGNED = "resigned"  # ``winner`` is the other player
    FORFEIT = "forfeit"  # timed out; ``winner`` is the other player


class Pending(BaseModel):
    """The bot's move being computed: the job asked for it, at which ply."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    ply: int
    requested_at: float
    attempts: int = 1


class BotMove(MoveResult):
    """A bot move as played: the worker's answer and the ply it was played at."""

    ply: int = Field(description="Moves played before this one.")


class GameSession(BaseModel):
    """One game. Invariants: ``notation`` parses (engine rules) into the position
    whose moves are ``moves``; ``status`` is ``ongoing`` exactly when that position
    has no outcome and nobody resigned or forfeited; ``winner`` indexes ``players``
    (``None`` while ongoing or for a draw); ``pending`` is set only while the bot
    is to move in an ongoing game."""

    model_config = ConfigDict(frozen=True)

    id: str
    game: str
    variant: str
    players: tuple[str, str] = Field(description="Player ids; players[0] moves first.")
    level: str | None = Field(default=None, description="The bot's level, when the bot plays.")
    notation: str = Field(default="", description="The position: the moves from the start.")
    moves: list[str] = Field(default_factory=list, description="Each move, in notation.")
    status: GameStatus = GameStatus.ONGOING
    winner: int | None = None
    pending: Pending | None = None
    last_bot_move: BotMove | None = None
    takebacks: int = Field(default=0, description="Moves taken back (games against the bot).")
    version: int = 0
    created_at: float = 0.0
    updated_at: float = 0.0
    meta: dict[str, str] = Field(
        default_factory=dict, description="Free-form data for a front-end (channel, message ids)."
    )
    #: The parsed position, with the (game, variant, notation) it is the position of: not
    #: stored (derived from the record), never changed once set (only copies are handed
    #: out), shared by the sessions a transition derives from this one.
    _carried: tuple[tuple[str, str, str], Game] | None = PrivateAttr(default=None)

    def __eq__(self, other: object) -> bool:
        """Equal records (the parsed position they may carry is derived from the record)."""
        if not isinstance(other, GameSession):
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  # a value with list and dict fields

    # -- reading -------------------------------------------------------------------

    def position(self) -> Game:
        """The engine's position of this game (a copy of its own: the caller may play on it).

        Parsed from ``notation`` on the first call of a session read from Redis; a session
        a transition returned, or one given a position by :meth:`carrying`, parses nothing.
        """
        return self._board().copy()

    def _board(self) -> Game:
        """The carried position itself (never to be changed: see :meth:`position`)."""
        key = (self.game, self.variant, self.notation)
        carried = self._carried
        if carried is None or carried[0] != key:
            carried = (key, new_game(self.game, self.notation, self.variant))
            self._carried = carried
        return carried[1]

    def carrying(self, known: GameSession | None) -> Self:
        """This session, given ``known``'s parsed position if ``known`` has one of the same
        position (then it is not parsed again): for a session just read from Redis, when
        the caller holds an earlier copy of it. Returns ``self``."""
        carried = None if known is None else known._carried
        key = (self.game, self.variant, self.notation)
        if self._carried is None and carried is not None and carried[0] == key:
            self._carried = carried
        return self

    @property
    def ongoing(self) -> bool:
        return self.status is GameStatus.ONGOING

    @property
    def ply(self) -> int:
        return len(self.moves)

    @property
    def to_move(self) -> str | None:
        """The id of the player whose turn it is; ``None`` once the game is over."""
        return self.players[self.ply % 2] if self.ongoing else None

    @property
    def bot_to_move(self) -> bool:
        return self.to_move == BOT

    @property
    def winner_id(self) -> str | None:
        return None if self.winner is None else self.players[self.winner]

    def legal_moves(self) -> list[str]:
        """The moves playable now, in notation, in board order; empty once over."""
        if not self.ongoing:
            return []
        position = self.position()
        return [position.move_name(m) for m in sorted(position.legal_moves())]

    # -- transitions (pure: each returns a new session) -----------------------------

    @classmethod
    def start(
        cls,
        game: str,
        players: tuple[str, str],
        *,
        variant: str | None = None,
        level: str | None = None,
        notation: str = "",
        meta: dict[str, str] | None = None,
        now: float | None = None,
    ) -> Self:
        """A new game (from ``notation``, the start by default).

        Raises the engine's ``PlybotError`` for an unknown game, variant or a bad
        ``notation``, and ``ValueError`` if ``players`` repeats an id.
        """
        if players[0] == players[1]:
            raise ValueError(f"'{players[0]}': a player cannot play against themself")
        if BOT in players and level not in LEVELS:
            raise ValueError(f"'{level}': unknown level (known: {', '.join(LEVELS)})")
        position = new_game(game, notation, variant)
        now = time.time() if now is None else now
        session = cls(
            id=secrets.token_urlsafe(12),
            game=position.name,
            variant=position.variant,
            players=players,
            level=level,
            meta=dict(meta or {}),
            created_at=now,
            updated_at=now,
        )
        return session._with_position(position, now, _names(position))

    def play(self, player: str, move: str, *, now: float | None = None) -> Self:
        """``player`` plays ``move`` given in the game's notation (a move typed by a person,
        or sent over HTTP); see :meth:`play_move`.

        Raises as :meth:`play_move` does, and the engine's ``NotationError`` for a move
        that does not parse, quoting it and naming its index.
        """
        self._require_turn(player)
        return self.play_move(player, self._parse_move(move), now=now)

    def play_move(self, player: str, move: int, *, now: float | None = None) -> Self:
        """``player`` plays ``move``, the engine's move (a number: a button's, say).

        Raises :class:`GameTurnError` if the game is over, it is not ``player``'s
        turn or the bot is thinking; the engine's ``IllegalMoveError`` for a move the
        position does not allow, naming the move and its index.
        """
        self._require_turn(player)
        if self.pending is not None:
            raise GameTurnError(f"game {self.id}: the bot is still thinking")
        return self._push(move, now)

    def expect_bot(self, job_id: str, *, now: float | None = None) -> Self:
        """Record that ``job_id`` computes the bot's move here (replacing a lost job)."""
        self._require_turn(BOT)
        now = time.time() if now is None else now
        attempts = self.pending.attempts + 1 if self.pending is not None else 1
        pending = Pending(job_id=job_id, ply=self.ply, requested_at=now, attempts=attempts)
        return self.model_copy(update={"pending": pending})

    def play_bot(self, job_id: str, info: BotMove, *, now: float | None = None) -> Self:
        """Play the bot's move ``info.move`` that job ``job_id`` computed.

        Raises :class:`GameTurnError` if that job is no longer the one awaited (the
        move was already played, or the game moved on): a stale answer is dropped.
        """
        if self.pending is None or self.pending.job_id != job_id or info.ply != self.ply:
            raise GameTurnError(f"game {self.id}: job {job_id} is not the bot move awaited")
        # The workers answer in notation (JSON on the wire): its one move name parsed here.
        played = self._push(self._parse_move(info.move), now)
        return played.model_copy(update={"last_bot_move": info})

    def take_back(self, player: str, *, now: float | None = None) -> Self:
        """``player`` takes back their last move, and the bot's reply to it; counted.

        Only in a game against the bot, while it is ongoing and ``player``'s turn
        (the bot has replied), once ``player`` has moved. Raises
        :class:`GameTurnError` saying which condition fails.
        """
        self._require_turn(player)
        if BOT not in self.players:
            raise GameTurnError(f"game {self.id}: moves are taken back only against the bot")
        # My turn: the last move is the bot's reply, the one before it mine (if any).
        if self.ply < 2:
            raise GameTurnError(f"game {self.id}: you have no move to take back")
        position = self.position()
        position.pop()
        position.pop()
        now = time.time() if now is None else now
        taken = self._with_position(position, now, self.moves[:-2])
        return taken.model_copy(update={"last_bot_move": None, "takebacks": self.takebacks + 1})

    def resign(self, player: str, *, now: float | None = None) -> Self:
        """``player`` resigns; the other player wins."""
        return self._end(player, GameStatus.RESIGNED, now)

    def forfeit(self, player: str, *, now: float | None = None) -> Self:
        """``player`` loses on time (inactivity); the other player wins."""
        return self._end(player, GameStatus.FORFEIT, now)

    # -- helpers ---------------------------------------------------------------------

    def _require_turn(self, player: str) -> None:
        if not self.ongoing:
            raise GameTurnError(f"game {self.id} is over ({self.status.value})")
        if player not in self.players:
            raise GameTurnError(f"game {self.id}: '{player}' does not play in this game")
        if self.to_move != player:
            thinking = " (the bot is thinking)" if self.to_move == BOT else ""
            raise GameTurnError(
                f"game {self.id}: not your turn, '{self.to_move}' is to move{thinking}"
            )

    def _parse_move(self, move: str) -> int:
        """``move`` (one move in the game's notation) as the engine's move here."""
        try:
            return self._board().parse_move(move)
        except ValueError as exc:
            raise self._refused(exc, move) from None

    def _refused(self, exc: ValueError, name: str) -> ValueError:
        """The engine's refusal of move ``name`` here, saying the move and its index as the
        engine's own parser does."""
        reason = _strip_quote(str(exc), name)
        return type(exc)(f"'{name}': {reason} (move {self.ply + 1})")

    def _push(self, move: int, now: float | None) -> Self:
        position = self.position()
        name = position.move_name(move)  # in the record, and in an error's words
        try:
            position.push(move)
        except ValueError as exc:
            raise self._refused(exc, name) from None
        now = time.time() if now is None else now
        return self._with_position(position, now, [*self.moves, name])

    def _with_position(self, position: Game, now: float, moves: list[str]) -> Self:
        """This game at ``position`` (which it carries from now on, so it must not be changed
        after), whose moves are named ``moves``."""
        outcome = position.outcome()
        update: dict[str, Any] = {
            "notation": position.notation(),
            "moves": moves,
            "pending": None,
            "updated_at": now,
        }
        if outcome is not None:
            update["status"] = GameStatus.DRAWN if outcome.winner is None else GameStatus.WON
            update["winner"] = outcome.winner
        moved = self.model_copy(update=update)
        moved._carried = ((moved.game, moved.variant, moved.notation), position)
        return moved

    def _end(self, player: str, status: GameStatus, now: float | None) -> Self:
        if not self.ongoing:
            raise GameTurnError(f"game {self.id} is over ({self.status.value})")
        if player not in self.players:
            raise GameTurnError(f"game {self.id}: '{player}' does not play in this game")
        return self.model_copy(
            update={
                "status": status,
                "winner": 1 - self.players.index(player),
                "pending": None,
                "updated_at": time.time() if now is None else now,
            }
        )


def _names(position: Game) -> list[str]:
    """The names of the moves that reach ``position``, each in the position it was played
    in (replayed from the start, by number: nothing is parsed)."""
    copy = position.copy()
    moves = []
    while copy.ply:
        moves.append(copy.pop())
    names = []
    for move in reversed(moves):
        names.append(copy.move_name(move))
        copy.push(move)
    return names


def _strip_quote(message: str, move: str) -> str:
    prefix = f"'{move}': "
    return message[len(prefix) :] if message.startswith(prefix) else message


class GameStore:
    """Game sessions in Redis (``redis.asyncio``), changed with optimistic concurrency.

    ``prefix`` namespaces the keys (several deployments can share a Redis).
    Transitions that fail raise and write nothing.
    """

    RETRIES = 20

    def __init__(
        self, redis: Redis, *, prefix: str = "plybot:", finished_ttl_s: float | None = None
    ) -> None:
        """``finished_ttl_s``: a finished game's key expires this long after its end (a
        retention limit that holds even where no :meth:`purge` runs); ``None``: never."""
        self.redis = redis
        self.prefix = prefix
        self.finished_ttl_s = finished_ttl_s

    def key(self, game_id: str) -> str:
        return f"{self.prefix}game:{game_id}"

    @property
    def ongoing_key(self) -> str:
        return f"{self.prefix}games:ongoing"

    @property
    def finished_key(self) -> str:
        return f"{self.prefix}games:finished"

    async def create(self, session: GameSession) -> GameSession:
        """Store a new session (from :meth:`GameSession.start`)."""
        session = session.model_copy(update={"version": 1})
        async with self.redis.pipeline(transaction=True) as pipe:
            self._write(pipe, session)
            await pipe.execute()
        return session

    async def get(self, game_id: str, *, known: GameSession | None = None) -> GameSession:
        """The session ``game_id``; :class:`GameNotFoundError` if there is none.

        ``known``: the caller's earlier copy of the game, whose parsed position the session
        takes if it is still the same position (see :meth:`GameSession.carrying`).
        """
        raw = await self.redis.get(self.key(game_id))
        if raw is None:
            raise GameNotFoundError(f"'{game_id}': no such game")
        return GameSession.model_validate_json(raw).carrying(known)

    async def update(
        self,
        game_id: str,
        change: Callable[[GameSession], GameSession],
        *,
        known: GameSession | None = None,
    ) -> GameSession:
        """Apply ``change`` to the current session and store the result atomically.

        ``change`` sees the stored session and returns the new one (or raises: then
        nothing is written). If another writer changes the game in between,
        ``change`` runs again on the fresh state (so it must have no side
        effects); after :attr:`RETRIES` conflicts, :class:`GameConflictError`.
        Returns the stored session (with ``version`` bumped if it changed), carrying the
        parsed position ``change`` played on, if it needed one. ``known``: as for
        :meth:`get` (the stored session takes its position if it is the same: a move
        played then parses nothing).
        """
        key = self.key(game_id)
        for _ in range(self.RETRIES):
            async with self.redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(key)
                    raw = await pipe.get(key)
                    if raw is None:
                        raise GameNotFoundError(f"'{game_id}': no such game")
                    current = GameSession.model_validate_json(raw).carrying(known)
                    known = current  # a retry after a conflict may find the same position
                    new = change(current)
                    if new == current:
                        return current
                    new = new.model_copy(update={"version": current.version + 1})
                    pipe.multi()
                    self._write(pipe, new)
                    await pipe.execute()
                    return new
                except WatchError:
                    continue
        raise GameConflictError(f"game {game_id}: too many concurrent changes, try again")

    async def play(self, game_id: str, player: str, move: str) -> GameSession:
        """``player`` plays ``move`` in game ``game_id`` (see :meth:`GameSession.play`)."""
        return await self.update(game_id, lambda s: s.play(player, move))

    async def take_back(self, game_id: str, player: str) -> GameSession:
        """``player`` takes back a move in game ``game_id`` (see :meth:`GameSession.take_back`)."""
        return await self.update(game_id, lambda s: s.take_back(player))

    async def resign(self, game_id: str, player: str) -> GameSession:
        return await self.update(game_id, lambda s: s.resign(player))

    async def forfeit(self, game_id: str, player: str) -> GameSession:
        return await self.update(game_id, lambda s: s.forfeit(player))

    async def delete(self, game_id: str) -> None:
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.delete(self.key(game_id))
            pipe.zrem(self.ongoing_key, game_id)
            pipe.zrem(self.finished_key, game_id)
            await pipe.execute()

    async def inactive(self, idle_seconds: float, *, now: float | None = None) -> list[str]:
        """Ids of ongoing games with no change for ``idle_seconds``, oldest first."""
        now = time.time() if now is None else now
        return await self._ids(self.ongoing_key, now - idle_seconds)

    async def purge(
        self, *, ongoing_idle: float, finished_age: float, now: float | None = None
    ) -> int:
        """Delete ongoing games idle for ``ongoing_idle`` seconds and games finished
        ``finished_age`` seconds ago; the number deleted. Safe to run from many
        processes at once."""
        now = time.time() if now is None else now
        ids = await self._ids(self.ongoing_key, now - ongoing_idle)
        ids += await self._ids(self.finished_key, now - finished_age)
        for game_id in ids:
            await self.delete(game_id)
        return len(ids)

    async def _ids(self, index: str, before: float) -> list[str]:
        found: list[Any] = await self.redis.zrangebyscore(index, "-inf", before)
        return [as_str(i) for i in found]

    def _write(self, pipe: Any, session: GameSession) -> None:
        ttl = None if session.ongoing or not self.finished_ttl_s else int(self.finished_ttl_s)
        pipe.set(self.key(session.id), session.model_dump_json(), ex=ttl)
        live, done = (
            (self.ongoing_key, self.finished_key)
            if session.ongoing
            else (self.finished_key, self.ongoing_key)
        )
        pipe.zadd(live, {session.id: session.updated_at})
        pipe.zrem(done, session.id)

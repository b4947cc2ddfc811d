"""Results per guild: each user's record against the bot per level, and an Elo rating
between users; and settlement, which counts a finished game exactly once.

Per user and guild, one hash (``Keys.stats``) of counters:

* ``bot:{game}:{level}:{win|draw|loss}`` results against plybot,
* ``pvp:{game}:{win|draw|loss}`` results against other users,

and per guild and game a sorted set of Elo ratings (``Keys.rating``; K = 32,
everyone starts at 1200).

:meth:`Stats.settle` is one Lua script: it sets the game's ``settled`` flag
(``SET NX``) and only if that succeeds counts the result, moves the ratings
and releases the game's claims (see :mod:`bot.limits`). So a game is counted
once even when a resignation, the timeout sweeper and a restarted bot all try
to settle it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from redis.asyncio import Redis

from bot.keys import Keys
from worker.core.games import BOT
from worker.core.keys import as_str

K_FACTOR = 32
INITIAL_RATING = 1200.0
RESULTS = ("win", "draw", "loss")

_SETTLE = """
if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', tonumber(ARGV[2])) then return {0} end
local ra, rb, oa, ob = '', '', '', ''
if ARGV[3] == 'bot' then
  redis.call('HINCRBY', KEYS[4], ARGV[4], 1)
elseif ARGV[3] == 'pvp' then
  redis.call('HINCRBY', KEYS[4], ARGV[4], 1)
  redis.call('HINCRBY', KEYS[5], ARGV[5], 1)
  local init = tonumber(ARGV[10])
  local a = tonumber(redis.call('ZSCORE', KEYS[6], ARGV[6]) or init)
  local b = tonumber(redis.call('ZSCORE', KEYS[6], ARGV[7]) or init)
  local sa, k = tonumber(ARGV[8]), tonumber(ARGV[9])
  oa, ob = tostring(a), tostring(b)
  local ea = 1 / (1 + 10 ^ ((b - a) / 400))
  a = a + k * (sa - ea)
  b = b + k * ((1 - sa) - (1 - ea))
  redis.call('ZADD', KEYS[6], a, ARGV[6])
  redis.call('ZADD', KEYS[6], b, ARGV[7])
  ra, rb = tostring(a), tostring(b)
end
for i = 7, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then redis.call('DEL', KEYS[i]) end
end
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
return {1, ra, rb, oa, ob}
"""

#: How long the ``settled`` flag outlives a game (longer than any finished game is kept).
SETTLED_TTL_S = 60 * 86400


@dataclass(frozen=True)
class Settlement:
    """What :meth:`Stats.settle` did: ``counted`` False if the game was settled before."""

    counted: bool
    ratings: dict[str, float] = field(default_factory=dict)  # new Elo of each user (pvp only)
    before: dict[str, float] = field(default_factory=dict)  # ... and the one before


@dataclass
class UserStats:
    """A user's record in one guild."""

    user_id: str
    vs_bot: dict[tuple[str, str], dict[str, int]]  # (game, level) -> result -> count
    vs_users: dict[str, dict[str, int]]  # game -> result -> count
    ratings: dict[str, float]  # game -> Elo (only games played against users)


@dataclass(frozen=True)
class Standing:
    user_id: str
    rating: float
    games: int


class Stats:
    def __init__(self, redis: Redis, keys: Keys) -> None:
        self.redis = redis
        self.keys = keys
        self._settle = redis.register_script(_SETTLE)

    async def settle(
        self,
        game_id: str,
        *,
        guild_id: str,
        claim_keys: Sequence[str],
        game: str,
        players: Sequence[str],
        winner: int | None,
        bot_level: str | None = None,
        counted: bool = True,
    ) -> Settlement:
        """Count a finished game once and release its claims.

        ``players`` are two user ids, or one user id and ``bot`` (``bot_level``
        set): then only the user's record against the bot changes. ``winner``
        indexes ``players`` (``None``: a draw). ``counted=False`` releases the
        claims without touching any record (a declined or expired challenge).
        ``claim_keys`` are :meth:`bot.limits.Limits.claim_keys`.
        """
        k = self.keys
        a, b = players
        if not counted:
            kind, fields, score = "none", ("", ""), 0.5
        elif bot_level is not None:
            human = 1 if a == BOT else 0
            kind = "bot"
            result = _result(winner, human)
            fields = (f"bot:{game}:{bot_level}:{result}", "")
            a, b = players[human], players[human]
            score = 0.5
        else:
            kind = "pvp"
            fields = (f"pvp:{game}:{_result(winner, 0)}", f"pvp:{game}:{_result(winner, 1)}")
            score = 0.5 if winner is None else (1.0 if winner == 0 else 0.0)
        stats_a = k.stats(guild_id, a) if kind != "none" else k.stats(guild_id, "-")
        stats_b = k.stats(guild_id, b) if kind != "none" else stats_a
        reply = await self._settle(
            keys=[
                k.settled(game_id),
                claim_keys[0],
                claim_keys[1],
                stats_a,
                stats_b,
                k.rating(guild_id, game),
                *claim_keys[2:],
            ],
            args=[game_id, SETTLED_TTL_S, kind, *fields, a, b, score, K_FACTOR, INITIAL_RATING],
        )
        if not int(reply[0]):
            return Settlement(counted=False)
        if kind != "pvp":
            return Settlement(counted=True)
        return Settlement(
            counted=True,
            ratings={a: float(reply[1]), b: float(reply[2])},
            before={a: float(reply[3]), b: float(reply[4])},
        )

    async def user(self, guild_id: str, user_id: str) -> UserStats:
        raw = await self.redis.hgetall(self.keys.stats(guild_id, user_id))
        vs_bot: dict[tuple[str, str], dict[str, int]] = defaultdict(
            lambda: dict.fromkeys(RESULTS, 0)
        )
        vs_users: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(RESULTS, 0))
        for name, count in raw.items():
            parts = as_str(name).split(":")
            if parts[0] == "bot" and len(parts) == 4:
                vs_bot[(parts[1], parts[2])][parts[3]] = int(count)
            elif parts[0] == "pvp" and len(parts) == 3:
                vs_users[parts[1]][parts[2]] = int(count)
        ratings = {}
        for game in sorted(vs_users):
            score = await self.redis.zscore(self.keys.rating(guild_id, game), user_id)
            if score is not None:
                ratings[game] = float(score)
        return UserStats(user_id, dict(vs_bot), dict(vs_users), ratings)

    async def leaderboard(self, guild_id: str, game: str, *, top: int = 10) -> list[Standing]:
        """The ``top`` rated users of ``game`` in the guild, best first."""
        rows = cast(
            "list[tuple[bytes, float]]",
            await self.redis.zrevrange(
                self.keys.rating(guild_id, game), 0, top - 1, withscores=True
            ),
        )
        users = [as_str(u) for u, _ in rows]
        async with self.redis.pipeline(transaction=False) as pipe:
            for user in users:
                pipe.hmget(self.keys.stats(guild_id, user), [f"pvp:{game}:{r}" for r in RESULTS])
            counts = await pipe.execute()
        return [
            Standing(user, float(score), sum(int(c or 0) for c in games))
            for user, (_, score), games in zip(users, rows, counts, strict=True)
        ]


def _zeros() -> dict[str, int]:
    return dict.fromkeys(RESULTS, 0)


def _result(winner: int | None, player: int) -> str:
    if winner is None:
        return "draw"
    return "win" if winner == player else "loss"

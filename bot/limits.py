"""The bot's limits, each enforced by one atomic step in Redis.

* One active game (or open challenge) per user per channel, and a cap of
  concurrent games per guild: :meth:`Limits.claim` checks both and takes
  them in one Lua script, so two commands racing cannot both pass the check.
  A game holds its claims from the challenge (or start) until it is settled.
* A cooldown per user on an action (``/analyze``; challenging one person again after a
  challenge to them closed unanswered): ``SET NX PX``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from redis.asyncio import Redis

from bot.keys import Keys
from worker.core.keys import as_str

# KEYS[1] the guild's set of game ids, KEYS[2] the hash of every active game id -> its
# guild, KEYS[3..] one claim key per player. ARGV[1] game id, ARGV[2] guild id, ARGV[3] the
# guild's cap. A claim whose holder is no longer active (its game vanished) is stale and free.
# Returns {"ok"}, {"busy", index of the claim key taken (0-based), its holder} or {"cap", n}.
_CLAIM = """
for i = 3, #KEYS do
  local holder = redis.call('GET', KEYS[i])
  if holder and redis.call('HEXISTS', KEYS[2], holder) == 1 then
    return {'busy', tostring(i - 3), holder}
  end
end
local n = redis.call('SCARD', KEYS[1])
if n >= tonumber(ARGV[3]) then return {'cap', tostring(n)} end
for i = 3, #KEYS do redis.call('SET', KEYS[i], ARGV[1]) end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return {'ok'}
"""

# Same KEYS as _CLAIM. A claim key is deleted only if this game still holds it.
_RELEASE = """
for i = 3, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then redis.call('DEL', KEYS[i]) end
end
redis.call('SREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
"""

# KEYS[1] the hash of active games; ARGV[1] a game id, ARGV[2] and ARGV[3] what comes
# before and after the guild id in the key of a guild's set.
# For a game whose record vanished: only its guild slot and its entry can be found again
# (its claim keys are stale from now on, see _CLAIM).
_FORGET = """
local guild = redis.call('HGET', KEYS[1], ARGV[1])
if guild then redis.call('SREM', ARGV[2] .. guild .. ARGV[3], ARGV[1]) end
redis.call('HDEL', KEYS[1], ARGV[1])
return 1
"""


@dataclass(frozen=True)
class Claim:
    """The outcome of :meth:`Limits.claim`: granted, or why not."""

    ok: bool
    busy_user: str | None = None  # this player already has a game in the channel
    busy_game: str | None = None  # ... this one
    guild_full: bool = False


class Limits:
    def __init__(self, redis: Redis, keys: Keys, *, max_games_per_guild: int) -> None:
        self.redis = redis
        self.keys = keys
        self.max_games_per_guild = max_games_per_guild
        self._claim = redis.register_script(_CLAIM)
        self._release = redis.register_script(_RELEASE)
        self._forget = redis.register_script(_FORGET)

    def claim_keys(self, guild_id: str, channel_id: str, users: Sequence[str]) -> list[str]:
        """The KEYS of the claim and release scripts for a game of ``users``."""
        k = self.keys
        return [k.guild_active(guild_id), k.active, *(k.claim(channel_id, u) for u in users)]

    async def claim(
        self, game_id: str, guild_id: str, channel_id: str, users: Sequence[str]
    ) -> Claim:
        """Take the channel for each of ``users`` (people, not the bot) and a guild slot."""
        reply = await self._claim(
            keys=self.claim_keys(guild_id, channel_id, users),
            args=[game_id, guild_id, self.max_games_per_guild],
        )
        kind, *rest = (as_str(x) for x in reply)
        if kind == "ok":
            return Claim(ok=True)
        if kind == "busy":
            return Claim(ok=False, busy_user=users[int(rest[0])], busy_game=rest[1])
        return Claim(ok=False, guild_full=True)

    async def release(
        self, game_id: str, guild_id: str, channel_id: str, users: Sequence[str]
    ) -> None:
        await self._release(keys=self.claim_keys(guild_id, channel_id, users), args=[game_id])

    async def holder(self, channel_id: str, user_id: str) -> str | None:
        """The id of the game or challenge ``user_id`` has in ``channel_id``."""
        raw = await self.redis.get(self.keys.claim(channel_id, user_id))
        return None if raw is None else as_str(raw)

    async def active_ids(self) -> list[str]:
        """Every game and challenge holding claims (not settled yet)."""
        return sorted(as_str(x) for x in await self.redis.hkeys(self.keys.active))

    async def forget(self, game_id: str) -> None:
        """Drop a game whose record vanished (expired) from the active games and its guild."""
        before, after = self.keys.guild_active("\0").split("\0")
        await self._forget(keys=[self.keys.active], args=[game_id, before, after])

    async def cooling(self, action: str, user_id: str) -> float:
        """Seconds left of ``user_id``'s cooldown on ``action`` (0.0: none running)."""
        left_ms = await self.redis.pttl(self.keys.cooldown(action, user_id))
        return max(left_ms, 0) / 1000

    async def cooldown(self, action: str, user_id: str, seconds: float) -> float:
        """Start ``user_id``'s cooldown on ``action``; 0.0 if it was free, else seconds left.

        One ``SET NX PX``: of two requests racing, exactly one gets through.
        """
        if seconds <= 0:
            return 0.0
        key = self.keys.cooldown(action, user_id)
        if await self.redis.set(key, "1", nx=True, px=max(1, int(seconds * 1000))):
            return 0.0
        left_ms = await self.redis.pttl(key)
        return max(left_ms, 1) / 1000  # -2: expired just now; still say "a moment"

"""Open challenges between two users, in Redis, answered exactly once.

A challenge is not a game yet: it names the two users, the game and who moves
first, and expires at ``expires_at``. Whoever answers it first (accept,
decline, withdraw, or the sweeper at expiry) takes it with ``GETDEL``, so two
answers racing cannot both act. An accepted challenge becomes a
:class:`worker.core.games.GameSession` with the challenge's id, so the claims taken
for the challenge (see :mod:`bot.limits`) carry over to the game.
"""

from __future__ import annotations

import secrets
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from redis.asyncio import Redis
from redis.exceptions import WatchError

from bot.keys import Keys
from worker.core.keys import as_str

Answer = Literal["accepted", "declined", "expired", "withdrawn"]


class Challenge(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    game: str
    variant: str
    notation: str = ""  # the position the game starts from
    challenger: str
    opponent: str
    challenger_first: bool = True
    guild_id: str
    channel_id: str
    message_id: str | None = None
    #: The language of the challenge's messages, and of the game it becomes.
    lang: str = "en"
    created_at: float
    expires_at: float

    @classmethod
    def new(cls, *, expiry_s: float, now: float | None = None, **fields: Any) -> Challenge:
        now = time.time() if now is None else now
        # Same shape as GameSession ids: the buttons' custom_id template accepts both.
        return cls(
            id=secrets.token_urlsafe(12), created_at=now, expires_at=now + expiry_s, **fields
        )

    @property
    def players(self) -> tuple[str, str]:
        """The game's players, the one who moves first first."""
        if self.challenger_first:
            return self.challenger, self.opponent
        return self.opponent, self.challenger


class ChallengeStore:
    def __init__(self, redis: Redis, keys: Keys) -> None:
        self.redis = redis
        self.keys = keys

    async def create(self, challenge: Challenge) -> None:
        # Kept a day past expiry so that a late sweeper still finds it to announce.
        ttl_ms = int((challenge.expires_at - time.time() + 86400) * 1000)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(self.keys.challenge(challenge.id), challenge.model_dump_json(), px=ttl_ms)
            pipe.zadd(self.keys.challenge_deadlines, {challenge.id: challenge.expires_at})
            await pipe.execute()

    async def get(self, challenge_id: str) -> Challenge | None:
        raw = await self.redis.get(self.keys.challenge(challenge_id))
        return None if raw is None else Challenge.model_validate_json(raw)

    async def attach_message(self, challenge_id: str, message_id: str) -> None:
        """Record the message showing the challenge (only if it is still open)."""
        key = self.keys.challenge(challenge_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(key)
                    raw = await pipe.get(key)
                    if raw is None:
                        return
                    updated = Challenge.model_validate_json(raw).model_copy(
                        update={"message_id": message_id}
                    )
                    pipe.multi()
                    pipe.set(key, updated.model_dump_json(), keepttl=True)
                    await pipe.execute()
                    return
                except WatchError:
                    continue

    async def take(self, challenge_id: str) -> Challenge | None:
        """Remove the challenge and return it; ``None`` if someone else took it first."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.getdel(self.keys.challenge(challenge_id))
            pipe.zrem(self.keys.challenge_deadlines, challenge_id)
            raw, _ = await pipe.execute()
        return None if raw is None else Challenge.model_validate_json(raw)

    async def due(self, now: float | None = None) -> list[str]:
        """Ids of challenges past their expiry."""
        now = time.time() if now is None else now
        found = await self.redis.zrangebyscore(self.keys.challenge_deadlines, "-inf", now)
        return [as_str(x) for x in found]

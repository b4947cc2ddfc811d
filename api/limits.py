"""Caps on what a client may hold open and have queued, each refused with a clear 429
(this client is past its share) or 503 (the service is past its capacity), both
with ``Retry-After``.

* :class:`Waits`: event streams and long polls held open at once, per client and
  in all, in this API process. Each holds a Redis connection (a subscription, or
  a blocking wait), so the process's pool is sized from the global cap
  (:func:`redis_pool_size`) and can never run dry of connections for them.
* :class:`QueuedWork`: analyses queued or running per client, and analyses waiting
  on the queue in all, counted in Redis so that every API process shares them.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

from fastapi import HTTPException
from redis.asyncio import Redis

from api.settings import ApiSettings
from worker.core import keys
from worker.core.jobstore import queue_key
from worker.core.kinds import ANALYSIS

#: Redis connections kept for short commands beside the held ones (streams, long
#: polls, callback waits): any number of requests share them, each for a round trip.
SHORT_COMMAND_CONNECTIONS = 64
#: Seconds a request waits for a free pool connection before a 503.
POOL_TIMEOUT_S = 5.0
#: ``Retry-After`` of a refused stream or long poll.
RETRY_AFTER_WAITS_S = 5
#: ``Retry-After`` of refused work (a queued job takes seconds to minutes).
RETRY_AFTER_QUEUED_S = 30


def redis_pool_size(settings: ApiSettings) -> int:
    """Connections the API process's pool may open: one per stream or long poll it allows,
    one per callback delivery in hand, and :data:`SHORT_COMMAND_CONNECTIONS`."""
    return settings.api_max_waits + settings.callback_max_in_flight + SHORT_COMMAND_CONNECTIONS


class Waits:
    """Streams and long polls held open in this process, per client and in all."""

    def __init__(self, *, total: int, per_client: int) -> None:
        self.total = total
        self.per_client = per_client
        self.held: Counter[str] = Counter()

    @property
    def open(self) -> int:
        return sum(self.held.values())

    def take(self, client: str, what: str) -> None:
        """Hold one slot for ``client`` (``what``: "event stream" or "long poll", for the
        message); 429 past the client's cap, 503 past the process's. Give it back with
        :meth:`give`."""
        if self.held[client] >= self.per_client:
            raise HTTPException(
                429,
                f"too many open event streams and long polls for this client: "
                f"{self.per_client} at once; close one, or retry in {RETRY_AFTER_WAITS_S} s",
                {"Retry-After": str(RETRY_AFTER_WAITS_S)},
            )
        if self.open >= self.total:
            raise HTTPException(
                503,
                f"the service holds its limit of {self.total} open event streams and long "
                f"polls; this {what} was refused, retry in {RETRY_AFTER_WAITS_S} s",
                {"Retry-After": str(RETRY_AFTER_WAITS_S)},
            )
        self.held[client] += 1

    def give(self, client: str) -> None:
        self.held[client] -= 1
        if self.held[client] <= 0:
            del self.held[client]

    @contextlib.contextmanager
    def hold_if_free(self, client: str, wait_s: float) -> Iterator[float]:
        """For a wait that may be skipped (a game's reply: the game is answered either
        way): ``wait_s`` while a slot is held, or 0 when none is free (answer at once)."""
        if wait_s <= 0:
            yield 0.0
            return
        try:
            self.take(client, "long poll")
        except HTTPException:
            yield 0.0
            return
        try:
            yield wait_s
        finally:
            self.give(client)

    @contextlib.contextmanager
    def hold(self, client: str, what: str = "long poll") -> Iterator[None]:
        """A slot for the ``with`` block (see :meth:`take`)."""
        self.take(client, what)
        try:
            yield
        finally:
            self.give(client)


# KEYS[1] the client's set of analyses (id -> when submitted). ARGV: cap, now, a
# reservation id, the job-record prefix, how long a reservation stands.
# Drops the finished (or expired) analyses and lapsed reservations, then reserves a
# place if the client is under its cap. Returns {allowed, held}.
_RESERVE = """
local held = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local now = tonumber(ARGV[2])
for i = 1, #held, 2 do
  local id = held[i]
  local gone
  if string.sub(id, 1, 8) == 'reserve:' then
    gone = tonumber(held[i + 1]) < now - tonumber(ARGV[5])
  else
    -- plybot's record of the job: gone (expired), or marked ended when its end was told
    local record = ARGV[4] .. id
    gone = redis.call('EXISTS', record) == 0 or redis.call('HEXISTS', record, 'ended') == 1
  end
  if gone then redis.call('ZREM', KEYS[1], id) end
end
local count = redis.call('ZCARD', KEYS[1])
if count >= tonumber(ARGV[1]) then return {0, count} end
redis.call('ZADD', KEYS[1], now, 'reserve:' .. ARGV[3])
redis.call('EXPIRE', KEYS[1], 86400)
return {1, count + 1}
"""

# KEYS[1] the client's set. ARGV: the reservation id, the job id (empty: nothing was
# queued), now. Turns the reservation into the job it became.
_SETTLE = """
redis.call('ZREM', KEYS[1], 'reserve:' .. ARGV[1])
if ARGV[2] ~= '' then redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2]) end
return 1
"""


class QueuedWork:
    """Caps on queued analyses: ``per_client`` queued or running per client, ``total``
    waiting on the analysis queue in all (shared by every API process through Redis)."""

    #: A reservation not settled within this many seconds (its API process died) lapses.
    RESERVATION_S = 60

    def __init__(
        self, redis: Redis, *, total: int, per_client: int, prefix: str = "plybot:queued:"
    ) -> None:
        self.redis = redis
        self.total = total
        self.per_client = per_client
        self.prefix = prefix
        self._reserve = redis.register_script(_RESERVE)
        self._settle = redis.register_script(_SETTLE)

    @contextlib.asynccontextmanager
    async def admit(self, client: str) -> Any:
        """Admit one analysis of ``client``, or raise 503 (the queue is full) or 429 (the
        client has its share queued). Yields a callable to record the job's id; the
        place is given back if none is recorded."""
        waiting = int(await self.redis.llen(queue_key(ANALYSIS.queue)))
        if waiting >= self.total:
            raise HTTPException(
                503,
                f"the analysis queue is full ({waiting} waiting, limit {self.total}); "
                f"retry in {RETRY_AFTER_QUEUED_S} s",
                {"Retry-After": str(RETRY_AFTER_QUEUED_S)},
            )
        key = self.prefix + client
        reservation = uuid.uuid4().hex
        allowed, held = await self._reserve(
            keys=[key],
            args=[self.per_client, time.time(), reservation, keys.job(""), self.RESERVATION_S],
        )
        if not int(allowed):
            raise HTTPException(
                429,
                f"this client has {int(held)} analyses queued or running, its limit is "
                f"{self.per_client}: wait for one to finish (or cancel one), "
                f"retry in {RETRY_AFTER_QUEUED_S} s",
                {"Retry-After": str(RETRY_AFTER_QUEUED_S)},
            )
        recorded: list[str] = []
        try:
            yield recorded.append
        finally:
            job_id = recorded[0] if recorded else ""
            await self._settle(keys=[key], args=[reservation, job_id, time.time()])

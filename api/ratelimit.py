"""Per-client rate limits, counted in Redis so every API process shares them.

A fixed window: the first request of a client in a window creates a counter
that expires with the window; each request increments it, atomically with the
expiry in one Lua script (no race between ``INCR`` and ``PEXPIRE``, one round
trip). Past the limit the request is refused and ``Retry-After`` is the time
left in the window.

Who the client is (a configured API key, or an address) is :mod:`api.clients`'
business: a header a client invents never makes it someone new.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from redis.asyncio import Redis

# KEYS[1] the counter; ARGV[1] the window in ms.  Returns {count, ms left in window}.
_HIT = """
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}
"""


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    count: int
    limit: int
    retry_after_s: int  # whole seconds until the window ends (>= 1)


class RateLimiter:
    """Counts requests per (bucket, client) in windows of ``window_s`` seconds."""

    def __init__(self, redis: Redis, *, window_s: int, prefix: str = "plybot:ratelimit:") -> None:
        self.redis = redis
        self.window_ms = int(window_s * 1000)
        self.prefix = prefix
        self._script = redis.register_script(_HIT)

    async def hit(self, bucket: str, client: str, limit: int) -> Verdict:
        """Count one request of ``client`` in ``bucket``; allowed while within ``limit``."""
        count, ttl_ms = await self._script(
            keys=[f"{self.prefix}{bucket}:{client}"], args=[self.window_ms]
        )
        return Verdict(
            allowed=int(count) <= limit,
            count=int(count),
            limit=limit,
            retry_after_s=max(1, math.ceil(int(ttl_ms) / 1000)),
        )

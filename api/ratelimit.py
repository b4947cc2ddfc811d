"""Per-client rate limits, counted in Redis so every API process shares them.

A fixed window: the first request of a client in a window creates a counter
that expires with the window; each request increments it, atomically with the
expiry in one Lua script (no race between ``INCR`` and ``PEXPIRE``, one round
trip). Past the limit the request is refused and ``Retry-After`` is the time
left in the window.

A client is the ``X-API-Key`` header when given (hashed: the key itself is
never stored), else the peer address.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from fastapi import Request
from redis.asyncio import Redis

API_KEY_HEADER = "X-API-Key"

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


def client_id(request: Request) -> str:
    """Who the request counts against: its API key (hashed) or its address."""
    key = request.headers.get(API_KEY_HEADER)
    if key:
        return "key:" + hashlib.sha256(key.encode()).hexdigest()[:24]
    host = request.client.host if request.client else "unknown"
    return f"addr:{host}"


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

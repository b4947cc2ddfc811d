"""The shared position cache: :class:`engine.cache.PositionCache` over Redis.

Every worker reads it near the root of each search (the root and its children in
one ``MGET``) and writes back finished results, so a position searched once, in
any game, by any worker, in any orientation or move order, is not searched again.
The worker's in-process transposition table stays the first level.

Key: ``pc:<game>:<variant>:<canonical key>``: the full canonical position
(``Game.key()``; mirror images share it), never a hash that could collide.
Value: ``"lower,upper,depth,best"``: score bounds from the side to move (invariant
``lower <= score <= upper``), the search depth (255 = exact solve) and the best
move in the canonical orientation (empty if none). A write replaces an entry only
if it is at least as deep (checked in Redis, atomically).

Bounded: each entry carries a TTL (``cache_ttl_s``, renewed on rewrite), and the
Redis that ``plybot up`` starts has ``maxmemory`` with ``volatile-lru``, so under
memory pressure the least recently used entries go first while jobs and games
(no TTL) stay.

Never a reason for a search to fail: any Redis error (unreachable, timed out,
flushed) answers "nothing known" and drops the write, and a circuit breaker then
skips Redis for ``cache_retry_after_s`` seconds so a dead Redis costs one short
timeout, not one per node. Hits and misses are counted in Redis
(:data:`CACHE_STATS`, read with :func:`cache_stats`).

Where: ``PLYBOT_CACHE_URL``, a Redis of its own reached at that URL only (no sentinel
setting: losing the cache costs speed, never an answer, and the breaker rides it out);
unset, the job Redis, through the sentinels when they are set
(:mod:`worker.core.connection`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import redis

from engine.cache import CacheEntry
from worker.core import connection
from worker.core.keys import as_str
from worker.core.settings import Settings, get_settings

__all__ = [
    "CACHE_STATS",
    "KEY_PREFIX",
    "CacheProbe",
    "RedisPositionCache",
    "cache_stats",
    "reset_cache_stats",
]

log = logging.getLogger(__name__)

KEY_PREFIX = "pc:"
#: Hash of counters: ``hits``, ``misses`` (per key looked up), ``writes``, ``errors``.
CACHE_STATS = "plybot:cache:stats"

# KEYS: entry keys; ARGV[1]: TTL seconds; ARGV[i + 1]: the entry for KEYS[i].
# The depth is the third field of "lower,upper,depth,best".
_PUT_IF_DEEPER = """
local written = 0
for i = 1, #KEYS do
  local new = ARGV[i + 1]
  local old = redis.call('GET', KEYS[i])
  local keep = false
  if old then
    local old_depth = tonumber(string.match(old, '^[^,]*,[^,]*,([^,]*)'))
    local new_depth = tonumber(string.match(new, '^[^,]*,[^,]*,([^,]*)'))
    keep = old_depth ~= nil and new_depth ~= nil and old_depth > new_depth
  end
  if not keep then
    redis.call('SET', KEYS[i], new, 'EX', ARGV[1])
    written = written + 1
  end
end
return written
"""


def encode(entry: CacheEntry) -> str:
    best = "" if entry.best_move is None else str(entry.best_move)
    return f"{entry.lower},{entry.upper},{entry.depth},{best}"


def decode(text: str) -> CacheEntry:
    lower, upper, depth, best = text.split(",")
    return CacheEntry(int(lower), int(upper), int(depth), int(best) if best else None)


def entry_key(game: str, variant: str, key: str) -> str:
    return f"{KEY_PREFIX}{game}:{variant}:{key}"


class RedisPositionCache:
    """A :class:`engine.cache.PositionCache` in Redis, shared by every worker."""

    def __init__(self, url: str, settings: Settings | None = None) -> None:
        self.settings = settings or get_settings()
        timeout = self.settings.cache_socket_timeout_ms / 1000
        # The job Redis (no PLYBOT_CACHE_URL) is found through the sentinels if they are
        # set; a cache Redis of its own is reached at its URL (see worker.core.connection).
        self.redis = connection.connect(
            url,
            self.settings,
            decode_responses=True,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry_on_timeout=False,
        )
        self._put = self.redis.register_script(_PUT_IF_DEEPER)
        self._down_until = 0.0
        # Counted here, added to Redis with the next round trip (no extra one per lookup).
        self._hits = 0
        self._misses = 0
        self.hits = 0  # this process's totals, for its own logs
        self.misses = 0

    @property
    def available(self) -> bool:
        """False while the circuit breaker is open after a failure."""
        return time.monotonic() >= self._down_until

    def _trip(self, exc: Exception) -> None:
        if self.available:
            log.warning(
                "position cache unavailable (%s); searching without it for %.0f s",
                exc.__class__.__name__,
                self.settings.cache_retry_after_s,
            )
        self._down_until = time.monotonic() + self.settings.cache_retry_after_s

    def _with_counters(self, pipe: redis.client.Pipeline) -> None:
        if self._hits:
            pipe.hincrby(CACHE_STATS, "hits", self._hits)
        if self._misses:
            pipe.hincrby(CACHE_STATS, "misses", self._misses)
        self._hits = self._misses = 0

    def get_many(self, game: str, variant: str, keys: Sequence[str]) -> list[CacheEntry | None]:
        found = self._read(game, variant, keys, send_counts=True)
        hits = sum(entry is not None for entry in found)
        self._hits += hits
        self._misses += len(found) - hits
        self.hits += hits
        self.misses += len(found) - hits
        return found

    def _read(
        self, game: str, variant: str, keys: Sequence[str], *, send_counts: bool
    ) -> list[CacheEntry | None]:
        """One entry (or ``None``) per key, in one round trip that also carries the counts
        not yet sent when ``send_counts``; any trouble reads as "nothing known"."""
        if not keys or not self.available:
            return [None] * len(keys)
        try:
            with self.redis.pipeline(transaction=False) as pipe:
                pipe.mget([entry_key(game, variant, k) for k in keys])
                if send_counts:
                    self._with_counters(pipe)
                values = pipe.execute()[0]
        except (redis.RedisError, OSError) as exc:
            self._trip(exc)
            return [None] * len(keys)
        found: list[CacheEntry | None] = []
        for value in values:
            try:
                found.append(decode(value) if value else None)
            except ValueError:  # a malformed entry is a miss, never a wrong answer
                found.append(None)
        return found

    def put_many(self, game: str, variant: str, items: Sequence[tuple[str, CacheEntry]]) -> None:
        if not items or not self.available:
            return
        try:
            self._put(
                keys=[entry_key(game, variant, k) for k, _ in items],
                args=[self.settings.cache_ttl_s, *(encode(e) for _, e in items)],
            )
            self.flush_stats()
        except (redis.RedisError, OSError) as exc:
            self._trip(exc)

    def take_stats(self) -> tuple[int, int]:
        """The hits and misses not yet sent to Redis, now counted as sent: for a caller
        that adds them in a round trip of its own (the worker's finish script)."""
        counts = (self._hits, self._misses)
        self._hits = self._misses = 0
        return counts

    def flush_stats(self) -> None:
        """Add the counts not yet sent to Redis (a worker calls this after each job)."""
        if not (self._hits or self._misses) or not self.available:
            return
        try:
            with self.redis.pipeline(transaction=False) as pipe:
                self._with_counters(pipe)
                pipe.execute()
        except (redis.RedisError, OSError) as exc:
            self._trip(exc)

    def add_stats(self, hits: int, misses: int) -> None:
        """Add a :class:`CacheProbe`'s counts to the shared counters now (one round trip)."""
        if not (hits or misses) or not self.available:
            return
        try:
            with self.redis.pipeline(transaction=False) as pipe:
                if hits:
                    pipe.hincrby(CACHE_STATS, "hits", hits)
                if misses:
                    pipe.hincrby(CACHE_STATS, "misses", misses)
                pipe.execute()
        except (redis.RedisError, OSError) as exc:
            self._trip(exc)

    def close(self) -> None:
        connection.close(self.redis)


class CacheProbe:
    """A read-only :class:`engine.cache.PositionCache` view of a :class:`RedisPositionCache`
    for one request, counting its own hits and misses instead of the shared cache's.

    For a caller that decides afterwards whether its lookups count: the job client
    answering a request from the cache at submission counts them only when it did
    answer (otherwise the worker that takes the job looks the same keys up again,
    and counts them then). Safe to use from several threads at once: one probe per
    request, and the shared counters are untouched. Writes are dropped.
    """

    def __init__(self, cache: RedisPositionCache) -> None:
        self.cache = cache
        self.hits = 0
        self.misses = 0

    def get_many(self, game: str, variant: str, keys: Sequence[str]) -> list[CacheEntry | None]:
        found = self.cache._read(game, variant, keys, send_counts=False)
        hits = sum(entry is not None for entry in found)
        self.hits += hits
        self.misses += len(found) - hits
        return found

    def put_many(self, _game: str, _variant: str, _items: Sequence[tuple[str, CacheEntry]]) -> None:
        return None


def cache_stats(connection: redis.Redis) -> dict[str, int]:
    """The shared counters: ``hits``, ``misses`` (keys looked up), for /v1/status and /metrics."""
    raw = connection.hgetall(CACHE_STATS)
    counts = {as_str(k): int(v) for k, v in raw.items()}
    return {"hits": counts.get("hits", 0), "misses": counts.get("misses", 0)}


def reset_cache_stats(connection: redis.Redis) -> None:
    connection.delete(CACHE_STATS)

"""Is a Redis safe to run plybot on, memory-wise? Checked by ``plybot serve`` and
``plybot up`` at start when ``REDIS_URL`` points at a Redis they did not start.

plybot keeps queued jobs, running jobs' records and games in the same Redis as
the position cache. So:

* ``maxmemory-policy`` ``allkeys-*`` is refused: it evicts any key, queued jobs
  and games included, so work would vanish under memory pressure.
* ``maxmemory`` 0 (no limit) is warned about: the cache then grows until the
  machine runs out of memory. ``volatile-*`` policies and ``noeviction`` with a
  limit are accepted; when Redis is full the API answers 503, never 500.
* A Redis that refuses ``CONFIG GET`` (managed services often do) or is not
  reachable yet is warned about, not refused: the service rides out an outage.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import redis

from worker.core.keys import as_str

Level = Literal["ok", "warn", "refuse"]


class MemoryVerdict(NamedTuple):
    level: Level
    message: str


ADVICE = (
    "set e.g. `CONFIG SET maxmemory 512mb` and `CONFIG SET maxmemory-policy volatile-lru` "
    "(or noeviction)"
)


def check_redis_memory(url: str, timeout: float = 5.0) -> MemoryVerdict:
    """The verdict on the Redis at ``url`` (see the module docstring). Never raises."""
    client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
    try:
        config = client.config_get("maxmemory*")
    except redis.ConnectionError as exc:
        return MemoryVerdict("warn", f"could not check Redis' memory settings: unreachable ({exc})")
    except redis.RedisError as exc:  # CONFIG disabled or not permitted
        return MemoryVerdict(
            "warn",
            f"could not read Redis' maxmemory settings ({exc}); make sure they are safe: {ADVICE}",
        )
    finally:
        client.close()
    policy = as_str(config.get("maxmemory-policy", ""))
    maxmemory = int(as_str(config.get("maxmemory", 0)) or 0)
    if policy.startswith("allkeys"):
        return MemoryVerdict(
            "refuse",
            f"Redis' maxmemory-policy is {policy}: under memory pressure it would evict queued "
            f"jobs and games, not just cache entries; {ADVICE}",
        )
    if maxmemory == 0:
        return MemoryVerdict(
            "warn",
            "Redis has no maxmemory: the position cache grows until the machine runs out of "
            f"memory; {ADVICE}",
        )
    return MemoryVerdict("ok", f"Redis maxmemory {maxmemory} bytes, policy {policy}")

"""Is a Redis safe to run plybot's jobs on, memory-wise? Checked by ``plybot serve``,
``plybot worker`` and ``plybot up`` at start when ``REDIS_URL`` points at a Redis they
did not start.

The job Redis holds queued jobs, RQ's records of running and finished jobs and their
results (a finished job's records carry RQ's ``result_ttl`` as a Redis TTL) and games.
Nothing a requester still needs may be evicted, so it runs as Sidekiq's and RQ's
operators run theirs: ``maxmemory-policy noeviction``, and the position cache on a Redis
of its own (``PLYBOT_CACHE_URL``) at ``allkeys-lru`` (``plybot up`` starts both). So:

* ``allkeys-*`` is refused: it evicts any key, queued jobs and games included.
* ``volatile-*`` is warned about: it may evict a finished job's result (it has a TTL)
  before its requester read it.
* ``noeviction`` is right; with the cache sharing it (no ``PLYBOT_CACHE_URL``) and no
  ``maxmemory``, the cache grows until its entries expire: warned about. When the job
  Redis is full, the API answers 503 and the workers wait until memory is freed.
* A Redis that refuses ``CONFIG GET`` (managed services often do) or is not
  reachable yet is warned about, not refused: the service rides out an outage.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import redis

from worker.core.connection import close, connect
from worker.core.keys import as_str

Level = Literal["ok", "warn", "refuse"]


class MemoryVerdict(NamedTuple):
    level: Level
    message: str


ADVICE = (
    "run the job Redis with `CONFIG SET maxmemory-policy noeviction`, and the position cache "
    "on a Redis of its own (PLYBOT_CACHE_URL) with maxmemory and allkeys-lru"
)


def check_redis_memory(
    url: str, timeout: float = 5.0, *, cache_apart: bool = False
) -> MemoryVerdict:
    """The verdict on the job Redis at ``url`` (see the module docstring). Never raises.

    ``cache_apart``: the position cache has a Redis of its own (``PLYBOT_CACHE_URL``).
    """
    client = connect(url, socket_timeout=timeout, socket_connect_timeout=timeout)
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
        close(client)
    policy = as_str(config.get("maxmemory-policy", ""))
    maxmemory = int(as_str(config.get("maxmemory", 0)) or 0)
    if policy.startswith("allkeys"):
        return MemoryVerdict(
            "refuse",
            f"Redis' maxmemory-policy is {policy}: under memory pressure it would evict queued "
            f"jobs and games, not just cache entries; {ADVICE}",
        )
    if policy.startswith("volatile"):
        return MemoryVerdict(
            "warn",
            f"Redis' maxmemory-policy is {policy}: under memory pressure it may evict a "
            f"finished job's result before its requester read it; {ADVICE}",
        )
    if maxmemory == 0 and not cache_apart:
        return MemoryVerdict(
            "warn",
            "Redis has no maxmemory and the position cache shares it: the cache grows until "
            f"its entries expire; {ADVICE}",
        )
    return MemoryVerdict("ok", f"Redis maxmemory {maxmemory} bytes, policy {policy}")

"""The one place settings become a Redis connection, synchronous or asyncio.

The job Redis (jobs, games, limits, leases) is ``REDIS_URL``; with
``PLYBOT_REDIS_SENTINELS`` set it is the master that those Redis Sentinels know as
``PLYBOT_REDIS_SENTINEL_MASTER``, found through them by redis-py's Sentinel support
(``redis.sentinel`` / ``redis.asyncio.sentinel``). The URL's db number, user name and
password (and TLS, ``rediss://``) still apply to the master; its host and port are not
used then (``REDIS_URL`` may be left unset: ``redis://``, db 0, no password).

A failover looks like a short outage to every caller: a connection to the lost master
fails (``redis.ConnectionError``), and a new connection asks the sentinels again, so it
reaches the promoted replica. A connection that reaches the old master after it came
back as a replica gets ``READONLY`` on its first write: redis-py's sentinel connection
drops it and raises ``redis.ConnectionError`` instead ("The previous master is now a
slave"), which every retry path here treats as the outage it is (the job client's
retries, the worker's patient connection, :func:`worker.process.backoff.is_transient`).

Any other Redis, the position cache's own (``PLYBOT_CACHE_URL``) or one named by a
caller, is reached at its URL directly: the cache holds nothing a requester needs (a
lost cache costs only speed, and its circuit breaker skips it while it is down), so it
takes no sentinel setting of its own.

Usage::

    redis_client = connect(settings=settings, socket_timeout=5)         # the job Redis
    cache = connect(settings.cache_url, settings, decode_responses=True)  # a URL of its own
    aredis = connect_async(settings=settings, max_connections=64, pool_timeout=5)
    ...
    close(redis_client); await aclose(aredis)   # their sentinel connections too
"""

from __future__ import annotations

import contextlib
from typing import Any
from urllib.parse import urlsplit

import redis
import redis.asyncio as aioredis
import redis.asyncio.sentinel as asentinel
import redis.sentinel as sentinel

from worker.core.settings import Settings, get_settings, parse_sentinels

__all__ = [
    "aclose",
    "close",
    "connect",
    "connect_async",
    "parse_sentinels",
    "sibling",
    "through_sentinels",
]

#: What a master's URL contributes beside its address (which the sentinels give).
_URL_KEYS = ("db", "username", "password")


class _Reresolving:
    """A sentinel-managed connection that asks the sentinels again whenever it reconnects.

    redis-py (8.1) reconnects a dropped connection inside a command's retry with the base
    class's ``connect_check_health``, to the address it had, not through the sentinel
    connection's own ``connect``: a connection to a lost master, retried (the workers'
    connection retries for ever), would knock at the dead address for ever and never
    reach the promoted replica. Connecting here first, the sentinel way, avoids that.
    """

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        if not self._sock:  # type: ignore[attr-defined]
            self.connect()  # type: ignore[attr-defined]
        super().send_packed_command(command, check_health)  # type: ignore[misc]


class _MasterConnection(_Reresolving, sentinel.SentinelManagedConnection):
    pass


class _MasterSSLConnection(_Reresolving, sentinel.SentinelManagedSSLConnection):
    pass


class _AsyncReresolving:
    """:class:`_Reresolving` for asyncio connections (the same reconnect in redis-py)."""

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        if not self.is_connected:  # type: ignore[attr-defined]
            await self.connect()  # type: ignore[attr-defined]
        await super().send_packed_command(command, check_health)  # type: ignore[misc]


class _AsyncMasterConnection(_AsyncReresolving, asentinel.SentinelManagedConnection):
    pass


class _AsyncMasterSSLConnection(_AsyncReresolving, asentinel.SentinelManagedSSLConnection):
    pass


class _BlockingSentinelPool(asentinel.SentinelConnectionPool, aioredis.BlockingConnectionPool):
    """redis-py's sentinel pool that waits for a free connection (as ``BlockingConnectionPool``)
    instead of failing at once when ``max_connections`` are in use."""


def through_sentinels(url: str | None, settings: Settings) -> bool:
    """True if ``url`` (``None``: the job Redis) is reached through the sentinels."""
    return bool(settings.redis_sentinels) and url in (None, "", settings.redis_url)


def _target(url: str | None, settings: Settings) -> str:
    target = url or settings.redis_url
    if not target:
        raise ValueError("no Redis: set REDIS_URL (or PLYBOT_REDIS_SENTINELS)")
    return target


def _master_options(url: str, options: dict[str, Any], *, asyncio: bool) -> dict[str, Any]:
    """The master's connection options: ``url``'s db, user and password, the connection
    class (TLS if ``rediss://``), then ``options`` (a caller's own win)."""
    parsed = redis.connection.parse_url(url)
    found: dict[str, Any] = {k: parsed[k] for k in _URL_KEYS if k in parsed}
    tls = urlsplit(url).scheme == "rediss"
    if asyncio:
        found["connection_class"] = _AsyncMasterSSLConnection if tls else _AsyncMasterConnection
    else:
        found["connection_class"] = _MasterSSLConnection if tls else _MasterConnection
    return {**found, **options}


def _sentinel_options(settings: Settings, options: dict[str, Any]) -> dict[str, Any]:
    """Options of the connections to the sentinels: the caller's timeouts, never the
    master's password (sentinels have their own)."""
    timeout = options.get("socket_connect_timeout") or options.get("socket_timeout")
    timeout = timeout or settings.redis_socket_timeout_s
    return {"socket_timeout": timeout, "socket_connect_timeout": timeout}


def connect(
    url: str | None = None, settings: Settings | None = None, **options: Any
) -> redis.Redis:
    """A synchronous client of ``url`` (``None``: the job Redis), with redis-py's ``options``
    (``socket_timeout``, ``decode_responses``, ``max_connections``, ...).

    The job Redis is reached through the sentinels when they are set (see the module).
    Raises ``ValueError`` if there is no Redis to reach (no URL and no sentinels).
    """
    settings = settings or get_settings()
    target = _target(url, settings)
    if not through_sentinels(url, settings):
        return redis.Redis.from_url(target, **options)
    manager = sentinel.Sentinel(
        settings.sentinel_addresses(), sentinel_kwargs=_sentinel_options(settings, options)
    )
    assert settings.redis_sentinel_master  # the settings refuse sentinels without it
    master: redis.Redis = manager.master_for(
        settings.redis_sentinel_master, **_master_options(target, options, asyncio=False)
    )
    return master


def connect_async(
    url: str | None = None,
    settings: Settings | None = None,
    *,
    max_connections: int | None = None,
    pool_timeout: float = 5.0,
    **options: Any,
) -> aioredis.Redis:
    """An asyncio client of ``url`` (``None``: the job Redis), as :func:`connect`.

    ``max_connections``: a bounded pool that makes a command wait up to ``pool_timeout``
    s for a free connection (redis-py's ``BlockingConnectionPool``, sentinel-managed or
    not), then raises ``redis.ConnectionError`` "No connection available"; ``None``:
    redis-py's default pool.
    """
    settings = settings or get_settings()
    target = _target(url, settings)
    if not through_sentinels(url, settings):
        if max_connections is None:
            return aioredis.Redis.from_url(target, **options)
        pool = aioredis.BlockingConnectionPool.from_url(
            target, max_connections=max_connections, timeout=pool_timeout, **options
        )
        return aioredis.Redis.from_pool(pool)  # owns it: aclose() closes the pool
    manager = asentinel.Sentinel(
        settings.sentinel_addresses(), sentinel_kwargs=_sentinel_options(settings, options)
    )
    master = _master_options(target, options, asyncio=True)
    assert settings.redis_sentinel_master
    if max_connections is None:
        client: aioredis.Redis = manager.master_for(settings.redis_sentinel_master, **master)
        return client
    bounded: aioredis.Redis = manager.master_for(
        settings.redis_sentinel_master,
        connection_pool_class=_BlockingSentinelPool,
        max_connections=max_connections,
        timeout=pool_timeout,
        **master,
    )
    return bounded


def sibling(
    client: redis.Redis, drop: tuple[str, ...] = ("retry", "retry_on_error")
) -> redis.Redis:
    """A new client, with a pool of its own, of the Redis that ``client`` reaches (through
    the same sentinels if it uses them), with ``client``'s options but those in ``drop``."""
    pool = client.connection_pool
    options = {
        k: v for k, v in pool.connection_kwargs.items() if k not in drop and k != "connection_pool"
    }
    if isinstance(pool, sentinel.SentinelConnectionPool):
        return pool.sentinel_manager.master_for(  # type: ignore[no-any-return]
            pool.service_name,
            redis_class=client.__class__,
            connection_class=pool.connection_class,
            **options,
        )
    return client.__class__(
        connection_pool=redis.ConnectionPool(connection_class=pool.connection_class, **options)
    )


def close(client: redis.Redis) -> None:
    """Close ``client`` and, if it found its master through sentinels, its connections to them."""
    pool = client.connection_pool
    client.close()
    if isinstance(pool, sentinel.SentinelConnectionPool):
        for each in pool.sentinel_manager.sentinels:
            with contextlib.suppress(redis.RedisError, OSError):
                each.close()


async def aclose(client: aioredis.Redis) -> None:
    """Close the asyncio ``client`` (its pool) and its connections to the sentinels if any."""
    pool = client.connection_pool
    await client.aclose()
    if isinstance(pool, asentinel.SentinelConnectionPool):
        await pool.sentinel_manager.aclose()

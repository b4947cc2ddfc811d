"""Typed dependencies of the routes: what the lifespan opened, and the rate limit.

Everything here is per app (``request.app.state``), opened and closed by the
lifespan in :mod:`api.main`, so several apps can live in one process.

Every dependency is ``async def``, even those that only read an attribute: FastAPI
runs a plain ``def`` dependency in its thread pool, and those hops (one per
dependency per request) cost more than the rest of a cached answer's path.
"""

from __future__ import annotations

from typing import Annotated, cast

from fastapi import Depends, HTTPException, Request
from redis.asyncio import Redis

from api.callbacks import Callbacks
from api.clients import Identity
from api.errors import unprocessable
from api.limits import QueuedWork, Waits
from api.metrics import Metrics
from api.ratelimit import RateLimiter
from api.settings import ApiSettings
from worker.core.client import JobClient
from worker.core.games import GameStore


async def get_settings(request: Request) -> ApiSettings:
    return cast(ApiSettings, request.app.state.settings)


async def get_redis(request: Request) -> Redis:
    return cast(Redis, request.app.state.redis)


async def get_client(request: Request) -> JobClient:
    return cast(JobClient, request.app.state.client)


async def get_games(request: Request) -> GameStore:
    return cast(GameStore, request.app.state.games)


async def get_callbacks(request: Request) -> Callbacks:
    return cast(Callbacks, request.app.state.callbacks)


async def get_metrics(request: Request) -> Metrics:
    return cast(Metrics, request.app.state.metrics)


async def get_waits(request: Request) -> Waits:
    return cast(Waits, request.app.state.waits)


async def get_queued(request: Request) -> QueuedWork:
    return cast(QueuedWork, request.app.state.queued)


async def get_caller(request: Request) -> str:
    """The request's client (see :mod:`api.clients`): a configured API key's id or an
    address; 401 for a key that is not configured."""
    identity: Identity = request.app.state.identity
    return identity.client(request)


SettingsDep = Annotated[ApiSettings, Depends(get_settings)]
RedisDep = Annotated[Redis, Depends(get_redis)]
ClientDep = Annotated[JobClient, Depends(get_client)]
GamesDep = Annotated[GameStore, Depends(get_games)]
CallbacksDep = Annotated[Callbacks, Depends(get_callbacks)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
WaitsDep = Annotated[Waits, Depends(get_waits)]
QueuedDep = Annotated[QueuedWork, Depends(get_queued)]
CallerDep = Annotated[str, Depends(get_caller)]


async def rate_limit(request: Request, settings: SettingsDep, caller: CallerDep) -> None:
    """Count the request against its client's limit; 429 with ``Retry-After`` past it.

    POSTs (which create work) and GETs are counted apart, with their own limits.
    """
    limiter: RateLimiter = request.app.state.limiter
    reads = request.method in ("GET", "HEAD")
    bucket, limit = (
        ("read", settings.api_rate_limit_reads) if reads else ("write", settings.api_rate_limit)
    )
    verdict = await limiter.hit(bucket, caller, limit)
    if not verdict.allowed:
        kind = "GET" if reads else "POST"
        raise HTTPException(
            status_code=429,
            detail=f"rate limit: {limit} {kind} requests per {settings.api_rate_window_s} s "
            f"for this client; retry in {verdict.retry_after_s} s",
            headers={"Retry-After": str(verdict.retry_after_s)},
        )


RateLimited = Depends(rate_limit)


def check_wait(wait: float, settings: ApiSettings) -> float:
    """``wait`` (seconds, from a ``?wait=`` query), or a 422 past ``PLYBOT_API_MAX_WAIT_S``."""
    if wait > settings.api_max_wait_s:
        raise unprocessable(
            ("query", "wait"), f"wait {wait:g} is beyond the limit of {settings.api_max_wait_s:g} s"
        )
    return wait

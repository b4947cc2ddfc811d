"""The HTTP API's application: ``create_app()`` builds it, its lifespan opens and closes
its connections.

One router per resource under :mod:`api.routes`; the web page (``api/static``,
when present) is mounted at ``/`` after them, so it never shadows the API.
Redis being unreachable gives 503 (never a crash): connections are opened
lazily and reopened by themselves once Redis is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from api import errors
from api.callbacks import Callbacks
from api.errors import BodyLimitMiddleware
from api.metrics import Metrics, MetricsMiddleware
from api.ratelimit import RateLimiter
from api.routes import analyses, games, health, status
from worker.client import JobClient
from worker.games import GameStore
from worker.settings import Settings, get_settings

log = logging.getLogger("plybot.api")

STATIC_DIR = Path(__file__).parent / "static"

#: How often each API process deletes long-idle and long-finished games.
PURGE_INTERVAL_S = 600.0

DESCRIPTION = """\
plybot's HTTP API: analyse positions (Connect Four is solved exactly) and play the bot.

Every analysis and every bot move is a job for plybot's search workers. Submit an
analysis, then poll it (`GET /v1/analyses/{id}?wait=S`), stream its progress
(`GET /v1/analyses/{id}/events`, Server-Sent Events) or have the result POSTed to a
`callback_url`. Positions and moves are in the game's notation (Connect Four: column
digits 1-7, e.g. `4453`); scores are from the side to move (Connect Four: as in
Pascal Pons' benchmark files, positive = win, 22 - stones at the win).

Errors are JSON `{"detail": ..., "message": "one line"}`: 422 names the field and the
problem, 404 an unknown id, 409 a move out of turn, 429 past the rate limit (see
`Retry-After`; a client is its `X-API-Key` header or its address), 503 while Redis is
unreachable.
"""


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings: Settings = app.state.settings
    client = JobClient(settings.redis_url, settings)
    app.state.client = client
    app.state.redis = client.redis  # one pool for jobs, games and limits
    app.state.games = GameStore(client.redis)
    app.state.limiter = RateLimiter(client.redis, window_s=settings.api_rate_window_s)
    callbacks = Callbacks(client.redis, client, settings, app.state.metrics)
    app.state.callbacks = callbacks
    tasks = [
        asyncio.create_task(callbacks.run(), name="callbacks"),
        asyncio.create_task(_purge_games(app.state.games, settings), name="purge-games"),
    ]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await callbacks.aclose()
        await client.aclose()


async def _purge_games(store: GameStore, settings: Settings) -> None:
    while True:
        with contextlib.suppress(Exception):  # Redis down: next time
            await store.purge(
                ongoing_idle=settings.api_games_idle_s, finished_age=settings.api_games_finished_s
            )
        await asyncio.sleep(PURGE_INTERVAL_S)


def create_app(settings: Settings | None = None) -> FastAPI:
    """The API as an ASGI app (``settings``: the environment's by default).

    Needs ``settings.redis_url`` (``REDIS_URL``); ``plybot up`` sets it.
    """
    settings = settings or get_settings()
    if not settings.redis_url:
        raise ValueError("REDIS_URL is not set: run `plybot up`, or point REDIS_URL at a Redis")
    app = FastAPI(
        title="plybot",
        version="0.1.0",
        description=DESCRIPTION,
        lifespan=lifespan,
        openapi_tags=[
            {"name": "analyses", "description": "Analyse a position (solve, depth, time)."},
            {"name": "games", "description": "Play plybot."},
            {"name": "service", "description": "Health, status and metrics."},
        ],
    )
    app.state.settings = settings
    app.state.metrics = Metrics()
    errors.install(app)
    for module in (analyses, games, status, health):
        app.include_router(module.router)
    app.add_middleware(BodyLimitMiddleware, limit=settings.api_max_body_bytes)
    app.add_middleware(MetricsMiddleware, metrics=app.state.metrics)
    if STATIC_DIR.is_dir():  # the web page (api/static); after the API routes
        app.mount("/", StaticFiles(directory=STATIC_DIR, html=True), name="static")
    return app

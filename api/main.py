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
import functools
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.middleware.gzip import DEFAULT_EXCLUDED_CONTENT_TYPES, GZipMiddleware
from starlette.responses import Response
from starlette.types import Scope

from api import errors
from api.callbacks import Callbacks
from api.clients import Identity
from api.errors import BodyLimitMiddleware
from api.limits import POOL_TIMEOUT_S, QueuedWork, Waits, redis_pool_size
from api.metrics import Metrics, MetricsMiddleware
from api.ratelimit import RateLimiter
from api.routes import analyses, games, health, status
from api.settings import ApiSettings, get_settings
from worker.core.client import JobClient
from worker.core.games import GameStore

log = logging.getLogger("plybot.api")

STATIC_DIR = Path(__file__).parent / "static"

#: How long a browser may reuse a static file without asking again. The files are not
#: fingerprinted, so the lifetime is short: a new release reaches everyone within it.
#: The page itself (index.html) is always revalidated (a cheap 304 by ETag).
STATIC_MAX_AGE_S = 600

#: Compress answers bigger than this when the client accepts gzip: every JSON answer of
#: more than 1 KB (``/openapi.json`` is ~30 KB, 6 KB compressed) and the page's scripts
#: and styles (~3x smaller).
GZIP_MIN_BYTES = 500

#: Never compressed: an event stream must reach the client event by event, and a
#: compressor holds output back until it has enough to compress (Starlette's own list
#: already holds text/event-stream; it is named here so that no edit of the list drops it).
GZIP_EXCLUDED = (*DEFAULT_EXCLUDED_CONTENT_TYPES, "text/event-stream")


class CachedStaticFiles(StaticFiles):
    """StaticFiles with a ``Cache-Control`` lifetime (``no-cache`` for HTML)."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        if response.status_code in (200, 304):
            html = response.headers.get("content-type", "").startswith("text/html")
            response.headers["Cache-Control"] = (
                "no-cache" if html else f"public, max-age={STATIC_MAX_AGE_S}"
            )
        return response


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
problem (a body that is JSON but not an object too), 400 a body that cannot be read as
UTF-8 JSON (where and why), 415 a body whose Content-Type is not JSON, 401 an unknown
API key, 404 an unknown id, 409 a move out of turn, 429 past this client's rate limit or
caps (see `Retry-After`; a client is its configured `X-API-Key` or its address), 503
while Redis is unreachable or full, or past the service's caps (with `Retry-After`).
"""


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings: ApiSettings = app.state.settings
    # One bounded pool for jobs, games and limits, sized for every stream and long poll
    # the process allows (api.limits): it cannot run dry at the concurrency it admits.
    client = JobClient(
        settings.redis_url,
        settings,
        max_connections=redis_pool_size(settings),
        pool_timeout=POOL_TIMEOUT_S,
    )
    await asyncio.to_thread(client.warm_up)
    app.state.client = client
    app.state.redis = client.redis
    app.state.games = GameStore(client.redis, finished_ttl_s=settings.api_games_finished_s)
    app.state.limiter = RateLimiter(client.redis, window_s=settings.api_rate_window_s)
    app.state.queued = QueuedWork(
        client.redis,
        total=settings.api_max_queued,
        per_client=settings.api_max_queued_per_client,
    )
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


async def _purge_games(store: GameStore, settings: ApiSettings) -> None:
    while True:
        with contextlib.suppress(Exception):  # Redis down: next time
            await store.purge(
                ongoing_idle=settings.api_games_idle_s, finished_age=settings.api_games_finished_s
            )
        await asyncio.sleep(PURGE_INTERVAL_S)


def create_app(settings: ApiSettings | None = None) -> FastAPI:
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
        # Swagger UI and ReDoc from a package (see _docs), not from a CDN: the docs work
        # offline.
        docs_url=None,
        redoc_url=None,
        openapi_tags=[
            {"name": "analyses", "description": "Analyse a position (solve, depth, time)."},
            {"name": "games", "description": "Play plybot."},
            {"name": "service", "description": "Health, status and metrics."},
        ],
    )
    app.state.settings = settings
    app.state.metrics = Metrics()
    app.state.identity = Identity.of(settings)
    app.state.waits = Waits(
        total=settings.api_max_waits, per_client=settings.api_max_waits_per_client
    )
    errors.install(app)
    for module in (analyses, games, status, health):
        app.include_router(module.router)
    app.add_middleware(BodyLimitMiddleware, limit=settings.api_max_body_bytes)
    app.add_middleware(MetricsMiddleware, metrics=app.state.metrics)
    # Outermost: every answer (the API's, the docs', the page's files) is compressed
    # when asked for, except event streams.
    app.add_middleware(
        GZipMiddleware, minimum_size=GZIP_MIN_BYTES, exclude_content_types=GZIP_EXCLUDED
    )
    _docs(app)
    if STATIC_DIR.is_dir():  # the web page (api/static); after the API routes
        app.mount("/", CachedStaticFiles(directory=STATIC_DIR, html=True), name="static")
    return app


#: What the docs pages may load: their own host only (``data:`` images: ReDoc's icons).
#: Swagger UI runs one inline script and ReDoc sets inline styles and starts its search
#: worker from a ``blob:``; nothing may come from another host, even if a future
#: release of either adds a CDN address.
DOCS_CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; "
    "frame-src 'none'; object-src 'none'; base-uri 'self'; form-action 'self'"
)

#: The one address from another host in ReDoc's bundle: the logo beside its "API docs by
#: Redocly" link, shown in the sidebar of every page. Served without it (an empty image
#: in its place; the link stays).
REDOC_CDN_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"
EMPTY_IMAGE = b"data:image/svg+xml,%3Csvg xmlns=%27http://www.w3.org/2000/svg%27/%3E"


@functools.cache
def _redoc_bundle(path: Path) -> bytes:
    """ReDoc's standalone bundle, read once, with its CDN logo replaced."""
    return path.read_bytes().replace(REDOC_CDN_LOGO, EMPTY_IMAGE)


def _docs(app: FastAPI) -> None:
    """``/docs`` (Swagger UI) and ``/redoc`` by FastAPI's self-hosting recipe, their
    scripts and styles served from ``/docs-assets`` out of the ``fastapi-offline``
    package, so the API docs load nothing from another host (:data:`DOCS_CSP` holds
    the browser to that)."""
    assets = Path(fastapi_offline.__file__).parent / "static"
    openapi_url = app.openapi_url or "/openapi.json"
    own_host_only = {"Content-Security-Policy": DOCS_CSP}

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        page = get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{app.title} - API docs",
            swagger_js_url="/docs-assets/swagger-ui-bundle.js",
            swagger_css_url="/docs-assets/swagger-ui.css",
            swagger_favicon_url="/favicon.svg",
            # No badge from validator.swagger.io (Swagger UI shows one for a spec on a
            # public host): it would send the spec's address to a third party.
            swagger_ui_parameters={"validatorUrl": None},
        )
        page.headers.update(own_host_only)
        return page

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        page = get_redoc_html(
            openapi_url=openapi_url,
            title=f"{app.title} - API docs",
            redoc_js_url="/docs-assets/redoc.standalone.js",
            redoc_favicon_url="/favicon.svg",
            with_google_fonts=False,
        )
        page.headers.update(own_host_only)
        return page

    @app.get("/docs-assets/redoc.standalone.js", include_in_schema=False)
    async def redoc_bundle() -> Response:
        return Response(
            _redoc_bundle(assets / "redoc.standalone.js"),
            media_type="text/javascript",
            headers={"Cache-Control": f"public, max-age={STATIC_MAX_AGE_S}"},
        )

    app.mount("/docs-assets", CachedStaticFiles(directory=assets), name="docs-assets")

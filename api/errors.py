"""Every error the API answers, in one shape: ``{"detail": ..., "message": "one line"}``.

* 422: ``detail`` is FastAPI's list of ``{"loc", "msg", "type"}`` (``loc`` names
  the field, e.g. ``["body", "position"]``), and ``message`` joins them:
  ``"position: '44448': column 8 is outside 1..7 (move 5)"``. The engine's and
  the job contract's messages are passed through as they are.
* 404 unknown id, 409 a move out of turn or in a finished game, 413 a body too
  large, 429 past the rate limit (with ``Retry-After``), 503 while Redis is
  unreachable (with ``Retry-After``): ``detail`` is the message.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from worker.client import UnknownJob
from worker.games import GameConflictError, GameNotFoundError, GameTurnError

log = logging.getLogger("plybot.api")

#: Seconds a client is told to wait after a 503.
RETRY_AFTER_UNAVAILABLE = 2


def unprocessable(loc: Sequence[str | int], message: str) -> RequestValidationError:
    """A 422 naming the field ``loc`` (e.g. ``("body", "move")``) and the problem."""
    return RequestValidationError([{"loc": tuple(loc), "msg": message, "type": "value_error"}])


def _clean(error: dict[str, Any]) -> dict[str, Any]:
    msg = str(error.get("msg", ""))
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix) :]
    return {"loc": list(error.get("loc", ())), "msg": msg, "type": error.get("type", "")}


def _field(loc: list[Any]) -> str:
    # ("body", "position") -> "position"; ("query", "wait") -> "wait"; ("body",) -> "body"
    parts = [str(p) for p in loc[1:]] if len(loc) > 1 else [str(p) for p in loc]
    return ".".join(parts) or "request"


def _json(
    status: int, detail: Any, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse({"detail": detail, "message": message}, status_code=status, headers=headers)


async def _validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [_clean(e) for e in exc.errors()]
    message = "; ".join(f"{_field(e['loc'])}: {e['msg']}" for e in errors)
    return _json(422, errors, message)


async def _http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    return _json(exc.status_code, exc.detail, str(exc.detail), dict(exc.headers or {}))


async def _not_found(request: Request, exc: Exception) -> JSONResponse:
    return _json(404, str(exc), str(exc))


async def _conflict(request: Request, exc: Exception) -> JSONResponse:
    return _json(409, str(exc), str(exc))


async def _unavailable(request: Request, exc: Exception) -> JSONResponse:
    log.warning("redis unreachable: %s %s: %s", request.method, request.url.path, exc)
    message = "the service's Redis is unreachable; try again shortly"
    return _json(503, message, message, {"Retry-After": str(RETRY_AFTER_UNAVAILABLE)})


class _TooLarge(HTTPException):
    """Raised while reading a body past the limit; an ``HTTPException`` so that FastAPI's
    body parsing lets it through (as a 413) instead of turning it into a 400."""

    def __init__(self, limit: int) -> None:
        message = f"request body of more than {limit} bytes is beyond the limit of {limit}"
        super().__init__(413, message, {"Connection": "close"})


class BodyLimitMiddleware:
    """413 (in the API's JSON shape) for a request body over ``limit`` bytes: at once when
    its ``Content-Length`` says so, else as soon as the bytes read pass the limit."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length", b"")
        if length.isdigit() and int(length) > self.limit:
            await self._refuse(int(length), scope, receive, send)
            return
        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise _TooLarge(self.limit)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _TooLarge as exc:  # read outside FastAPI's body parsing
            if started:
                raise
            await _json(413, exc.detail, exc.detail, dict(exc.headers or {}))(scope, receive, send)

    async def _refuse(self, size: int, scope: Scope, receive: Receive, send: Send) -> None:
        message = f"request body of {size} bytes is beyond the limit of {self.limit}"
        await _json(413, message, message, {"Connection": "close"})(scope, receive, send)


def install(app: FastAPI) -> None:
    """Register the handlers on ``app``."""
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(HTTPException, _http)
    app.add_exception_handler(GameNotFoundError, _not_found)
    app.add_exception_handler(UnknownJob, _not_found)
    app.add_exception_handler(GameTurnError, _conflict)
    app.add_exception_handler(GameConflictError, _conflict)
    # redis-py raises these (and subclasses, e.g. BusyLoadingError) while Redis is
    # down; the pool reconnects by itself on the next request once it is back.
    app.add_exception_handler(RedisConnectionError, _unavailable)
    app.add_exception_handler(RedisTimeoutError, _unavailable)

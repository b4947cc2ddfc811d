"""Every error the API answers, in one shape: ``{"detail": ..., "message": "one line"}``.

* 422: ``detail`` is FastAPI's list of ``{"loc", "msg", "type"}`` (``loc`` names
  the field, e.g. ``["body", "position"]``), and ``message`` joins them:
  ``"position: '44448': column 8 is outside 1..7 (move 5)"``. The engine's and
  the job contract's messages are passed through as they are.
  A body that is JSON but not an object (``"hello"``) is a 422 too, on ``["body"]``:
  ``"body: a JSON object is expected, not a string"``.
* 400 a body that cannot be read as JSON (:mod:`api.body` says where and why), 401
  an unknown API key, 404 unknown id, 409 a move out of turn or in a finished game,
  413 a body too large, 415 a body whose ``Content-Type`` is not JSON, 429 past the
  rate limit or a cap (with ``Retry-After``), 503 while Redis is unreachable or full,
  or past a service-wide cap (with ``Retry-After``): ``detail`` is the message.
* Anything unforeseen is a 500 in the same JSON shape (never plain text), logged
  with its traceback, and its connection closed (``Connection: close``).

Every message is encodable: text a client sent that is not valid Unicode (a lone
surrogate such as ``\\ud800``) is quoted with backslash escapes, never passed to
the encoder as it is.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError
from redis.exceptions import ResponseError as RedisResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from worker.core.client import UnknownJob
from worker.core.games import GameConflictError, GameNotFoundError, GameTurnError

log = logging.getLogger("plybot.api")

#: Seconds a client is told to wait after a 503.
RETRY_AFTER_UNAVAILABLE = 2
#: Seconds a client is told to wait after a 503 because Redis is full.
RETRY_AFTER_FULL = 10


def unprocessable(loc: Sequence[str | int], message: str) -> RequestValidationError:
    """A 422 naming the field ``loc`` (e.g. ``("body", "move")``) and the problem."""
    return RequestValidationError([{"loc": tuple(loc), "msg": message, "type": "value_error"}])


def printable(text: str) -> str:
    """``text`` with anything UTF-8 cannot encode (lone surrogates) backslash-escaped."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _plain(value: Any) -> Any:
    """``value`` (a JSON-able tree) with every string made :func:`printable`."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {printable(str(k)): _plain(v) for k, v in value.items()}
    return value


def _clean(error: dict[str, Any]) -> dict[str, Any]:
    msg = str(error.get("msg", ""))
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix) :]
    loc = list(error.get("loc", ()))
    if loc == ["body"] and error.get("type") in _NOT_AN_OBJECT:
        # The whole body is JSON of another kind: say which, not pydantic's "to extract fields"
        msg = f"a JSON object is expected, not {_json_kind(error.get('input'))}"
    elif loc == ["body"] and error.get("type") == "missing":
        msg = "missing: a JSON object is expected"
    return {"loc": loc, "msg": msg, "type": error.get("type", "")}


#: pydantic's error types for a model given something that is not a mapping.
_NOT_AN_OBJECT = ("model_attributes_type", "model_type", "dict_type")


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "an array"
    return "a string"


def _field(loc: list[Any]) -> str:
    # ("body", "position") -> "position"; ("query", "wait") -> "wait"; ("body",) -> "body"
    parts = [str(p) for p in loc[1:]] if len(loc) > 1 else [str(p) for p in loc]
    return ".".join(parts) or "request"


def _json(
    status: int, detail: Any, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    body = _plain({"detail": detail, "message": message})
    return JSONResponse(body, status_code=status, headers=headers)


async def _validation(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [_clean(e) for e in exc.errors()]
    message = "; ".join(f"{_field(e['loc'])}: {e['msg']}" for e in errors)
    return _json(422, errors, message)


async def _http(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    return _json(exc.status_code, exc.detail, str(exc.detail), dict(exc.headers or {}))


async def _not_found(_request: Request, exc: Exception) -> JSONResponse:
    return _json(404, str(exc), str(exc))


async def _conflict(_request: Request, exc: Exception) -> JSONResponse:
    return _json(409, str(exc), str(exc))


async def _unavailable(request: Request, exc: Exception) -> JSONResponse:
    if "No connection available" in str(exc):  # the bounded pool stayed full (api.limits)
        message = "the service is busy (no free Redis connection); try again shortly"
        return _json(503, message, message, {"Retry-After": str(RETRY_AFTER_UNAVAILABLE)})
    log.warning("redis unreachable: %s %s: %s", request.method, request.url.path, exc)
    message = "the service's Redis is unreachable; try again shortly"
    return _json(503, message, message, {"Retry-After": str(RETRY_AFTER_UNAVAILABLE)})


async def _redis_refused(request: Request, exc: Exception) -> JSONResponse:
    """Redis answered with an error: out of memory (``OOM command not allowed``) is a 503
    the client can retry; anything else is a fault of ours (500), logged."""
    if isinstance(exc, OutOfMemoryError) or "OOM command not allowed" in str(exc):
        log.warning("redis is full: %s %s: %s", request.method, request.url.path, exc)
        message = "the service's Redis is full (maxmemory reached); try again later"
        return _json(503, message, message, {"Retry-After": str(RETRY_AFTER_FULL)})
    return await _internal(request, exc)


async def _not_unicode(_request: Request, exc: Exception) -> JSONResponse:
    # Text that passed validation but cannot be encoded (a lone surrogate the schemas
    # did not see, e.g. in a header): the client's fault, so a 400, never a 500.
    message = f"the request holds text that is not valid Unicode ({printable(str(exc))})"
    return _json(400, message, message)


async def _internal(request: Request, exc: Exception) -> JSONResponse:
    """A 500, and its connection closed, saying so (``Connection: close``): Starlette raises
    the exception again once this answer is sent, and uvicorn then closes the connection.
    Kept alive in the answer's headers, it would take the client's next request and reset
    it (the soak's cancel lane: a 500, then a reset on the same connection)."""
    log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    message = "internal error; it has been logged"
    return _json(500, message, message, {"Connection": "close"})


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
    app.add_exception_handler(RedisResponseError, _redis_refused)
    app.add_exception_handler(UnicodeError, _not_unicode)
    app.add_exception_handler(Exception, _internal)  # JSON, never Starlette's plain text

"""Request bodies as the API reads them: UTF-8 JSON, refused with where and why otherwise.

FastAPI's own reading takes any encoding ``json.loads`` guesses (UTF-16 and UTF-32
included), reports nesting too deep for the parser or an integer too long for
Python as "There was an error parsing the body", and hands a body of another media
type to validation as a string. :class:`JsonBodyRoute` (every router's route class)
reads it here instead, so that a body the API cannot read is:

* 400 when it is not JSON: not UTF-8 (the encoding it is in, when it is recognisably
  UTF-16 or UTF-32, or the first bad byte and its offset), not valid JSON, nested
  deeper than :data:`MAX_DEPTH`, a number longer than :data:`MAX_NUMBER_CHARS`, or
  ``NaN``/``Infinity`` (not JSON); each message says where (line, column and
  character) and why;
* 400 when an object gives one key twice (which value counts is not JSON's to say);
* 415 when its ``Content-Type`` is missing or not JSON (``application/json`` or
  ``*+json``), or declares a charset other than UTF-8. A browser sends a cross-site
  form or ``text/plain`` body without asking first; JSON it must ask for (CORS).

A JSON value that is not what the route takes (``"hello"`` where an object is
expected) is JSON, so it goes on to validation: 422 naming the field
(:mod:`api.errors`).
"""

from __future__ import annotations

import email.message
import json
import re
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import HTTPException, Request, Response
from fastapi.routing import APIRoute

from api.errors import printable

#: Deepest nesting of arrays and objects a body may have (the API's bodies are flat;
#: Python's parser gives up near 1,000).
MAX_DEPTH = 32
#: Longest number a body may hold, in characters (a 64-bit integer is 20).
MAX_NUMBER_CHARS = 100

# What the scan for depth and numbers needs to see: strings (skipped whole, escapes
# included), brackets, numbers and the non-JSON constants Python's parser takes.
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]|-?(?:Infinity|[0-9][0-9.eE+\-]*)|NaN', re.DOTALL)


class BodyError(HTTPException):
    """A body the API cannot read: ``status`` (400 or 415) and a message starting ``body:``.

    An ``HTTPException`` so that FastAPI's body reading lets it through unchanged."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(status, message)


def _where(text: str, index: int) -> str:
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return f"line {line} column {column} (character {index})"


def _beyond_limits(text: str, end: int | None = None) -> BodyError | None:
    """The first place in ``text[:end]`` nested deeper than :data:`MAX_DEPTH`, with a
    number longer than :data:`MAX_NUMBER_CHARS` or a non-JSON constant, as an error."""
    depth = 0
    for match in _TOKENS.finditer(text, 0, len(text) if end is None else end):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > MAX_DEPTH:
                return BodyError(
                    f"body: nested deeper than {MAX_DEPTH} at {_where(text, match.start())}: "
                    f"arrays and objects may nest at most {MAX_DEPTH} deep"
                )
        elif token in ("]", "}"):
            depth -= 1
        elif token.lstrip("-") in ("NaN", "Infinity"):
            return BodyError(
                f"body: {token} at {_where(text, match.start())} is not JSON "
                "(JSON numbers are finite)"
            )
        elif token[0] != '"' and len(token) > MAX_NUMBER_CHARS:
            return BodyError(
                f"body: a number {len(token)} characters long at "
                f"{_where(text, match.start())}: numbers may be at most "
                f"{MAX_NUMBER_CHARS} characters long"
            )
    return None


def _refuse_constant(name: str) -> Any:
    raise ValueError(name)  # NaN, Infinity: located by _beyond_limits


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _DuplicateKey(key)
        found[key] = value
    return found


def decode_json(raw: bytes) -> Any:
    """The JSON value of ``raw``, or a :class:`BodyError` (400) saying where and why not."""
    encoding = json.detect_encoding(raw)
    if encoding not in ("utf-8", "utf-8-sig"):  # RFC 8259: JSON exchanged between systems
        raise BodyError(
            f"body: encoded as {encoding.upper()}, not UTF-8; JSON bodies must be UTF-8"
        )
    try:
        text = raw.decode("utf-8-sig")  # a byte order mark may be ignored (RFC 8259 8.1)
    except UnicodeDecodeError as exc:
        raise BodyError(
            f"body: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "JSON bodies must be UTF-8"
        ) from None
    try:
        value = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise BodyError(
            f"body: the key {printable(repr(exc.args[0]))} is given twice in one object"
        ) from None
    except json.JSONDecodeError as exc:
        # A limit passed before the syntax error is the first thing wrong.
        first = _beyond_limits(text, exc.pos)
        raise first or BodyError(
            f"body: not valid JSON at {_where(text, exc.pos)}: {exc.msg}"
        ) from None
    except (RecursionError, ValueError) as exc:  # too deep, an int past Python's limit, NaN
        raise _beyond_limits(text) or BodyError(f"body: not valid JSON: {exc}") from None
    beyond = _beyond_limits(text)
    if beyond is not None:
        raise beyond
    return value


def content_type_refusal(content_type: str | None) -> str | None:
    """Why a body with this ``Content-Type`` is not read (``None``: it is JSON, UTF-8)."""
    if not content_type:
        return "body: no Content-Type; send 'Content-Type: application/json'"
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    if message.get_content_maintype() != "application" or not (
        subtype == "json" or subtype.endswith("+json")
    ):
        return (
            f"body: Content-Type '{content_type}' is not JSON; send "
            "'Content-Type: application/json'"
        )
    charset = message.get_param("charset")
    if isinstance(charset, str) and charset.lower().replace("-", "") != "utf8":
        return f"body: Content-Type declares charset={charset}; JSON bodies must be UTF-8"
    return None


class JsonRequest(Request):
    """A request whose :meth:`json` is :func:`decode_json` of its body."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = decode_json(await self.body())
        return self._json


class JsonBodyRoute(APIRoute):
    """A route whose body is read by :func:`decode_json`, and refused (415) when its
    ``Content-Type`` is missing or not UTF-8 JSON: the route class of every router."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        takes_body = self.body_field is not None

        async def read_as_json(request: Request) -> Response:
            request = JsonRequest(request.scope, request.receive)
            if takes_body:
                refused = content_type_refusal(request.headers.get("content-type"))
                if refused is not None and await request.body():
                    raise BodyError(refused, 415)
            return await handler(request)

        return read_as_json

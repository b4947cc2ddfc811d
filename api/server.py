"""The HTTP server's protocol: uvicorn's httptools protocol, with request read timeouts.

uvicorn times out idle keep-alive connections, but not a client that starts a
request and never finishes it: a connection that sent half its headers (or a
``Content-Length`` and part of the body) is held open for ever, and a few hundred
such clients hold as many sockets and parsers. Here every request must be read
in time, as nginx's ``client_header_timeout`` / ``client_body_timeout`` do:

* its headers within ``PLYBOT_API_HEADER_TIMEOUT_S`` of the connection (or, on a
  kept-alive connection, of the request's first byte): else ``408`` and close;
* its body within ``PLYBOT_API_BODY_TIMEOUT_S`` of its headers: else the
  connection is closed (the application sees the client disconnect).

The clock runs from the start, not from the last byte: trickling one byte at a time
buys nothing. ``plybot serve`` runs uvicorn with ``http=`` this class.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from api.settings import get_settings

log = logging.getLogger("plybot.api.server")

_TIMEOUT_408 = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"content-type: application/json\r\n"
    b"connection: close\r\n"
    b"content-length: %d\r\n\r\n%s"
)


def _timeout_response(message: str) -> bytes:
    body = json.dumps({"detail": message, "message": message}).encode()
    return _TIMEOUT_408 % (len(body), body)


class TimeoutHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with header and body read timeouts (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        settings = get_settings()
        self.header_timeout = settings.api_header_timeout_s
        self.body_timeout = settings.api_body_timeout_s
        self._read_timer: asyncio.TimerHandle | None = None

    # -- the timer -------------------------------------------------------------------

    def _arm(self, seconds: float, reading: str) -> None:
        self._disarm()
        self._read_timer = self.loop.call_later(seconds, self._read_timed_out, reading)

    def _disarm(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _read_timed_out(self, reading: str) -> None:
        self._read_timer = None
        if self.transport.is_closing():
            return
        peer = f"{self.client[0]}:{self.client[1]}" if self.client else "?"
        log.info("%s: closed a connection that did not send its %s in time", peer, reading)
        if reading == "headers" and (self.cycle is None or self.cycle.response_complete):
            limit = f"{self.header_timeout:g}"
            self.transport.write(
                _timeout_response(f"request headers not received within {limit} s")
            )
        self.transport.close()

    # -- uvicorn's hooks -------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.header_timeout, "headers")

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._read_timer is None:  # a kept-alive connection's next request
            self._arm(self.header_timeout, "headers")

    def on_headers_complete(self) -> None:
        self._arm(self.body_timeout, "body")
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()

"""Who a request is: the client every limit counts it against.

* A client with an API key is that key, but only a key the operator configured
  (``PLYBOT_API_KEYS``): any other key is refused with 401, so a new key per
  request cannot buy a new budget. Keys are compared in constant time and only
  a hash of one is ever used as an id (in Redis counters, logs never see it).
* A client without a key is its address: the TCP peer, or, when the peer is one
  of the configured reverse proxies (``PLYBOT_API_TRUSTED_PROXIES``), the
  nearest address in ``X-Forwarded-For`` that is not a trusted proxy itself
  (read from the right: the left part is whatever the client wrote). From any
  other peer the header is ignored, so it cannot be used to change address.

uvicorn's own ``X-Forwarded-For`` handling is switched off (``plybot serve``),
so the peer address in the ASGI scope is the real one.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from dataclasses import dataclass
from functools import cached_property

from fastapi import HTTPException, Request

from api.settings import ApiSettings

API_KEY_HEADER = "X-API-Key"
FORWARDED_FOR = "X-Forwarded-For"

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class Identity:
    """How requests are told apart (built once per app from its settings)."""

    keys: tuple[bytes, ...]
    proxies: tuple[_Network, ...]
    require_key: bool = False

    @classmethod
    def of(cls, settings: ApiSettings) -> Identity:
        """From ``PLYBOT_API_KEYS``, ``PLYBOT_API_TRUSTED_PROXIES`` and
        ``PLYBOT_API_REQUIRE_KEY``; a malformed proxy entry raises ``ValueError``
        naming it (the API then refuses to start)."""
        raw = settings.api_keys.get_secret_value() if settings.api_keys else ""
        keys = tuple(k.strip().encode() for k in raw.split(",") if k.strip())
        proxies = []
        for entry in (p.strip() for p in settings.api_trusted_proxies.split(",")):
            if entry:
                try:
                    proxies.append(ipaddress.ip_network(entry, strict=False))
                except ValueError as exc:
                    raise ValueError(f"PLYBOT_API_TRUSTED_PROXIES: {exc}") from None
        return cls(keys=keys, proxies=tuple(proxies), require_key=settings.api_require_key)

    @cached_property
    def _key_ids(self) -> dict[bytes, str]:
        return {k: "key:" + hashlib.sha256(k).hexdigest()[:24] for k in self.keys}

    def client(self, request: Request) -> str:
        """The request's client id (``key:<hash>`` or ``addr:<ip>``); 401 for a key that
        is not configured (or for none, when a key is required)."""
        sent = request.headers.get(API_KEY_HEADER)
        if sent is not None:
            found = self._known(sent.encode("latin-1"))
            if found is None:
                raise HTTPException(
                    401,
                    f"unknown API key in {API_KEY_HEADER}: send a key the operator configured "
                    "(PLYBOT_API_KEYS), or no key at all",
                    {"WWW-Authenticate": API_KEY_HEADER},
                )
            return found
        if self.require_key:
            raise HTTPException(
                401,
                f"this service requires an API key: send it in {API_KEY_HEADER}",
                {"WWW-Authenticate": API_KEY_HEADER},
            )
        return "addr:" + self.address(request)

    def _known(self, sent: bytes) -> str | None:
        found = None
        for key, key_id in self._key_ids.items():  # every key compared: no early exit
            if hmac.compare_digest(sent, key):
                found = key_id
        return found

    def address(self, request: Request) -> str:
        """The client's address: the peer's, or, behind a trusted proxy, the nearest
        untrusted one in ``X-Forwarded-For``."""
        peer = request.client.host if request.client else "unknown"
        if not self.proxies or not self._trusted(peer):
            return peer
        hops = [h.strip() for h in request.headers.get(FORWARDED_FOR, "").split(",")]
        for hop in reversed(hops):
            if not hop:
                continue
            if not self._trusted(hop):
                try:
                    return str(ipaddress.ip_address(hop))
                except ValueError:  # garbage in the header: the proxy's address stands
                    return peer
        return peer

    def _trusted(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in self.proxies)

"""Where webhook deliveries may connect: public addresses only, checked when connecting.

The allow-list (``PLYBOT_CALLBACK_HOSTS``) judges a host *name*; what a name resolves
to can change between the check and the connection (DNS rebinding), and a listed name
can resolve to the metadata service or to localhost. So every connection a delivery
opens resolves its host once, refuses every address in :data:`BLOCKED` (private,
loopback, link-local and cloud metadata, CGNAT, multicast, reserved, documentation;
IPv4 and IPv6, and IPv4 carried inside IPv6: v4-mapped, NAT64, 6to4, Teredo), and
connects to exactly an address it has checked. The name still goes in the ``Host``
header and the TLS SNI, and the certificate is verified against it: only the address
is pinned.

``PLYBOT_CALLBACK_PRIVATE_NETWORKS`` (empty by default; for tests and development)
names networks deliveries may reach although they are in :data:`BLOCKED`.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from typing import Any

import anyio
import httpcore
import httpx

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

#: Networks no delivery connects to, each with why (the IANA special-purpose registries,
#: plus the cloud metadata addresses within them).
BLOCKED: tuple[tuple[Network, str], ...] = tuple(
    (ipaddress.ip_network(network), why)
    for network, why in (
        ("0.0.0.0/8", "this network"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "shared address space (CGNAT; Alibaba's metadata 100.100.100.200)"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local (cloud metadata 169.254.169.254)"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF protocol assignments (Oracle's metadata 192.0.0.192)"),
        ("192.0.2.0/24", "documentation"),
        ("192.88.99.0/24", "6to4 relay anycast"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),  # 255.255.255.255 (broadcast) included
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("::/96", "IPv4-compatible (deprecated)"),
        ("64:ff9b:1::/48", "local-use NAT64"),
        ("100::/64", "discard-only"),
        ("2001::/23", "IETF protocol assignments"),
        ("2001:db8::/32", "documentation"),
        ("3fff::/20", "documentation"),
        ("fc00::/7", "unique local (private; AWS's metadata fd00:ec2::254)"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local (deprecated)"),
        ("ff00::/8", "multicast"),
    )
)


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries to (v4-mapped, NAT64, 6to4, Teredo)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in ipaddress.ip_network("64:ff9b::/96"):  # NAT64: the gateway goes there
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]  # the client's address
    return None


def blocked(address: Address, allowed: Iterable[Network] = ()) -> str | None:
    """Why no delivery may connect to ``address`` (``None``: it may). ``allowed``:
    networks let through anyway (``PLYBOT_CALLBACK_PRIVATE_NETWORKS``)."""
    if any(address in network for network in allowed if network.version == address.version):
        return None
    if isinstance(address, ipaddress.IPv6Address):
        inner = _embedded_ipv4(address)
        if inner is not None:
            why = blocked(inner, allowed)
            if why is not None:
                return f"carries {inner}: {why}"
            if address.ipv4_mapped is not None:  # the very IPv4 address, in IPv6 clothes
                return None
    for network, why in BLOCKED:
        if network.version == address.version and address in network:
            return f"{why}, {network}"
    if not address.is_global:  # a range this table does not know yet
        return "not globally reachable"
    return None


def private_networks(setting: str) -> tuple[Network, ...]:
    """``PLYBOT_CALLBACK_PRIVATE_NETWORKS`` parsed (comma-separated; a bare address is a
    network of one)."""
    return tuple(
        ipaddress.ip_network(part.strip(), strict=False)
        for part in setting.split(",")
        if part.strip()
    )


class AddressRefused(httpcore.ConnectError):
    """A host resolved only to addresses no delivery may reach: final, never retried."""


class PublicOnlyBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, resolving each host itself and connecting only to an
    address that :func:`blocked` lets through (see the module docstring)."""

    def __init__(self, allowed: tuple[Network, ...] = ()) -> None:
        self.allowed = allowed
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            with anyio.fail_after(timeout):
                found = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"resolving {host} timed out") from exc
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
        addresses = list(dict.fromkeys(ipaddress.ip_address(info[4][0]) for info in found))
        refused = {address: blocked(address, self.allowed) for address in addresses}
        usable = [address for address, why in refused.items() if why is None]
        if not usable:
            reasons = "; ".join(f"{address} ({why})" for address, why in refused.items())
            raise AddressRefused(
                f"refused to connect: {host} resolves to {reasons}; webhooks reach public "
                "addresses only"
            )
        last: Exception | None = None
        for address in usable:  # exactly the addresses checked, in the resolver's order
            try:
                return await self._inner.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except httpcore.ConnectError as exc:
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        del timeout, socket_options  # nothing to connect to
        raise AddressRefused(f"refused to connect to the Unix socket {path}")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class PublicOnlyTransport(httpx.AsyncHTTPTransport):
    """httpx's transport (no proxy, certificates verified) over :class:`PublicOnlyBackend`."""

    def __init__(self, allowed: tuple[Network, ...] = ()) -> None:
        super().__init__(trust_env=False)
        # httpx builds its connection pool with httpcore's default backend and takes no
        # other; the pool is rebuilt the same way (httpx's defaults) on the guarded one.
        limits = httpx.Limits()
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=PublicOnlyBackend(allowed),
        )


def refused_address(exc: BaseException) -> bool:
    """Whether ``exc`` (an ``httpx`` error) is a connection :class:`AddressRefused`."""
    while exc is not None:
        if isinstance(exc, AddressRefused):
            return True
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return False

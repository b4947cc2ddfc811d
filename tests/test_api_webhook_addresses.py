"""Webhook deliveries connect only to public addresses, judged on the address a host name
resolves to when the delivery connects (issue 22: only the name was checked, so a listed
name resolving inward, or rebinding to it, reached internal services).

Real parts: the system's resolver (``localhost`` resolves to 127.0.0.1), real sockets, and
``plybot serve`` with a worker on a Redis of this module's own, so that no other test's
API (whose deliveries may reach loopback: ``PLYBOT_CALLBACK_PRIVATE_NETWORKS`` in
:data:`tests.fixtures.api.TEST_ENV`) can take these deliveries over.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from api.addresses import AddressRefused, PublicOnlyBackend, blocked, private_networks
from tests.fixtures.api import WebhookReceiver, api_server_on
from tests.fixtures.waiting import wait_for
from worker.process.processes import WorkerPool
from worker.process.redis_server import RedisServer

pytestmark = [pytest.mark.redis, pytest.mark.service]

REFUSED = [
    ("127.0.0.1", "loopback, 127.0.0.0/8"),
    ("10.1.2.3", "private, 10.0.0.0/8"),
    ("172.16.5.4", "private, 172.16.0.0/12"),
    ("192.168.1.1", "private, 192.168.0.0/16"),
    ("169.254.169.254", "link-local (cloud metadata 169.254.169.254), 169.254.0.0/16"),
    ("100.64.0.1", "shared address space"),
    ("100.100.100.200", "shared address space"),
    ("192.0.0.192", "IETF protocol assignments"),
    ("0.0.0.0", "this network, 0.0.0.0/8"),
    ("224.0.0.251", "multicast, 224.0.0.0/4"),
    ("255.255.255.255", "reserved, 240.0.0.0/4"),
    ("198.18.0.1", "benchmarking"),
    ("::1", "loopback, ::1/128"),
    ("::", "unspecified, ::/128"),
    ("fe80::1", "link-local, fe80::/10"),
    ("fd00:ec2::254", "unique local"),
    ("ff02::1", "multicast, ff00::/8"),
    ("::ffff:127.0.0.1", "carries 127.0.0.1: loopback"),
    ("::ffff:169.254.169.254", "carries 169.254.169.254: link-local"),
    ("64:ff9b::a9fe:a9fe", "carries 169.254.169.254: link-local"),
    ("2002:7f00:1::1", "carries 127.0.0.1: loopback"),  # 6to4
    ("2001:db8::1", "documentation, 2001:db8::/32"),
    ("2001:0:1:2::f7f7:f7f7", "IETF protocol assignments"),  # Teredo, to 8.8.8.8
]
PUBLIC = ["93.184.215.14", "8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"]


@pytest.mark.parametrize(("address", "why"), REFUSED)
def test_inward_addresses_are_refused_saying_which_range(address: str, why: str) -> None:
    reason = blocked(ipaddress.ip_address(address))
    assert reason is not None, address
    assert reason.startswith(why), reason


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_not(address: str) -> None:
    assert blocked(ipaddress.ip_address(address)) is None


def test_the_test_allowance_lets_through_only_what_it_names() -> None:
    allowed = private_networks("127.0.0.1/32, 10.9.0.0/16")
    assert blocked(ipaddress.ip_address("127.0.0.1"), allowed) is None
    assert blocked(ipaddress.ip_address("::ffff:127.0.0.1"), allowed) is None
    assert blocked(ipaddress.ip_address("10.9.8.7"), allowed) is None
    assert blocked(ipaddress.ip_address("127.0.0.2"), allowed) is not None
    assert blocked(ipaddress.ip_address("::1"), allowed) is not None
    assert blocked(ipaddress.ip_address("169.254.169.254"), allowed) is not None
    with pytest.raises(ValueError, match="does not appear to be an IPv4 or IPv6 network"):
        private_networks("localhost")


def test_the_connection_goes_to_the_address_checked() -> None:
    """``localhost`` resolved by the system: refused by default, and with 127.0.0.1 let
    through, the connection reaches the receiver on 127.0.0.1 (only there: it listens on
    no other address)."""
    with WebhookReceiver() as receiver:
        port = urlsplit(receiver.url).port
        assert port is not None

        async def connect(backend: PublicOnlyBackend) -> str:
            stream = await backend.connect_tcp("localhost", port, timeout=10)
            try:
                peer = stream.get_extra_info("server_addr")
                return str(peer[0])
            finally:
                await stream.aclose()

        with pytest.raises(AddressRefused) as refused:
            asyncio.run(connect(PublicOnlyBackend()))
        assert "localhost resolves to 127.0.0.1 (loopback, 127.0.0.0/8)" in str(refused.value)
        allowed = private_networks("127.0.0.1/32")
        assert asyncio.run(connect(PublicOnlyBackend(allowed))) == "127.0.0.1"


# -- through the service ---------------------------------------------------------------


@pytest.fixture(scope="module")
def own_redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="module")
def worker(own_redis: RedisServer) -> Iterator[WorkerPool]:
    pool = WorkerPool(own_redis.url, 1)
    try:
        pool.wait_ready()
        yield pool
    finally:
        pool.stop()


def callbacks_failed(http: httpx.Client) -> float:
    for line in http.get("/metrics").text.splitlines():
        if line.startswith('plybot_callbacks_total{outcome="failed"}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


@pytest.mark.usefixtures("worker")
def test_a_listed_name_that_resolves_to_loopback_is_refused_when_connecting(
    own_redis: RedisServer,
) -> None:
    """``localhost`` is on the allow-list, and the default (no test allowance) still never
    connects to it: the delivery is given up at its first attempt, saying why, and the
    receiver gets nothing."""
    with WebhookReceiver() as receiver:
        port = urlsplit(receiver.url).port
        env = {
            "PLYBOT_CALLBACK_HOSTS": f"localhost:{port},127.0.0.1",
            "PLYBOT_CALLBACK_PRIVATE_NETWORKS": "",  # the default
        }
        with api_server_on(own_redis.url, env=env) as server, server.client() as http:
            url = f"http://localhost:{port}/hook"
            body = {"game": "tictactoe", "position": "5", "mode": "solve", "callback_url": url}
            answer = http.post("/v1/analyses?wait=20", json=body)
            assert answer.status_code == 200, answer.text  # accepted, and done
            wait_for(
                lambda: callbacks_failed(http) >= 1 or receiver.requests,
                "the delivery given up (or made)",
                timeout=60,
            )
            assert receiver.requests == []
            assert http.get("/v1/status").json()["callbacks_pending"] == 0
            log = server.log()
            # An address literal inward is refused at once, when submitted.
            literal = {**body, "callback_url": f"http://127.0.0.1:{port}/hook"}
            r = http.post("/v1/analyses", json=literal)
        assert receiver.requests == []
    assert "refused to connect: localhost resolves to 127.0.0.1 (loopback, 127.0.0.0/8)" in log
    assert "(attempt 1)" in log  # final at once: no retry gives a rebinding name more tries
    assert r.status_code == 422
    assert r.json()["message"] == (
        "callback_url: '127.0.0.1' is not a public address (loopback, 127.0.0.0/8): "
        "webhooks reach only those"
    )


@pytest.mark.usefixtures("worker")
def test_the_test_allowance_lets_a_delivery_reach_loopback(own_redis: RedisServer) -> None:
    with WebhookReceiver() as receiver:
        port = urlsplit(receiver.url).port
        env = {
            "PLYBOT_CALLBACK_HOSTS": f"localhost:{port}",
            "PLYBOT_CALLBACK_PRIVATE_NETWORKS": "127.0.0.1/32",
        }
        with api_server_on(own_redis.url, env=env) as server, server.client() as http:
            url = f"http://localhost:{port}/hook"
            body = {"game": "tictactoe", "position": "1", "mode": "solve", "callback_url": url}
            answer = http.post("/v1/analyses?wait=20", json=body)
            assert answer.status_code == 200, answer.text
            receiver.wait_for(1)
            headers, delivered = receiver.requests[0]
            assert delivered["id"] == answer.json()["id"]
            assert headers["Host"] == f"localhost:{port}"  # the name, though the address was pinned

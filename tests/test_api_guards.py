"""The API stays up, fair and safe under hostile clients, load and a full Redis (issue 9):
undecodable input, API keys and forwarded addresses, caps on streams, long polls and
queued work, the Redis pool at concurrency 200, slow clients, a full Redis, the Redis
check at start, and signed, bounded webhooks.

Real parts throughout: ``plybot serve`` (uvicorn) on a Redis of this module's own
(tests that need answers use the session's Redis and workers instead). Nothing waits
for a duration: every wait is for a state, with a deadline only as a safety net.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from tests.fixtures.api import CALLBACK_SECRET, ApiServer, WebhookReceiver, api_server_on
from tests.fixtures.positions import PAST_THE_BOOK
from tests.fixtures.waiting import wait_for
from worker.bench.chaos import mixed_load, open_slow_clients
from worker.core.redis_memory import check_redis_memory
from worker.process.processes import WorkerPool
from worker.process.redis_server import RedisServer

pytestmark = [pytest.mark.redis, pytest.mark.service]

KEYS = [f"key-{i:03d}" for i in range(220)]
GUARDED = {
    "PLYBOT_API_KEYS": ",".join(KEYS),
    "PLYBOT_API_RATE_LIMIT": "8",
    "PLYBOT_API_MAX_WAITS": "3",
    "PLYBOT_API_MAX_WAITS_PER_CLIENT": "2",
    "PLYBOT_API_MAX_QUEUED": "6",
    "PLYBOT_API_MAX_QUEUED_PER_CLIENT": "3",
    "PLYBOT_API_HEADER_TIMEOUT_S": "1",
    "PLYBOT_API_BODY_TIMEOUT_S": "2",
    "PLYBOT_API_MAX_WAIT_S": "30",
    "PLYBOT_CALLBACK_MAX_PER_HOST": "2",
    # The gated receiver holds POSTs for as long as the test runs its analyses (longer than the
    # default 5 s on a loaded machine): a POST the API gave up on would free its slot while the
    # receiver still counted it as held.
    "PLYBOT_CALLBACK_TIMEOUT_S": "600",
}


@pytest.fixture(scope="module")
def own_redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="module")
def server(own_redis: RedisServer) -> Iterator[ApiServer]:
    # At "info", so that the server's own lines (a slow client cut off) can be read.
    with api_server_on(own_redis.url, env=GUARDED, log_level="info") as api:
        yield api


JSON = {"Content-Type": "application/json"}
_next_key = iter(KEYS[10:])


@pytest.fixture
def key() -> str:
    """A configured API key no other test uses (its own budgets)."""
    return next(_next_key)


@pytest.fixture
def fresh(own_redis: RedisServer) -> redis.Redis:
    """This module's Redis, emptied (no workers use it)."""
    client = redis.Redis.from_url(own_redis.url)
    client.flushall()
    yield client
    client.close()


# -- undecodable input: a clear 4xx naming what was wrong, never a 500 ---------------


def test_lone_surrogates_and_undecodable_bodies_get_a_clear_4xx(
    server: ApiServer, key: str
) -> None:
    with server.client(headers={"X-API-Key": key}) as http:
        for path, body, field in [
            ("/v1/analyses", '{"position":"\\ud800"}', "position"),
            ("/v1/analyses", '{"game":"\\udfff","position":"4"}', "game"),
            ("/v1/analyses", '{"position":"4","callback_url":"http://127.0.0.1/\\ud800"}',
             "callback_url"),
            ("/v1/games", '{"game":"connect4","variant":"\\ud83d"}', "variant"),
        ]:  # fmt: skip
            r = http.post(path, content=body, headers={"Content-Type": "application/json"})
            assert r.status_code == 422, (body, r.text)
            assert r.json()["message"].startswith(f"{field}: \\ud"), r.json()
            assert "lone UTF-16 surrogate, not valid Unicode text" in r.json()["message"]

        game = http.post("/v1/games", json={"first": "human"}).json()
        r = http.post(
            f"/v1/games/{game['id']}/moves",
            content='{"move":"4\\ud800"}',
            headers={"Content-Type": "application/json"},
        )
        assert r.status_code == 422
        assert r.json()["message"].startswith("move: \\ud800 at index 1")


#: The bodies of the README's table of bad bodies, by their cell in its first column:
#: (bytes, Content-Type or none).
BAD_BODIES = {
    '`"hello"`': (b'"hello"', "application/json"),
    "`hello`": (b"hello", "application/json"),
    '`{"position":`': (b'{"position":', "application/json"),
    '`{"position":"4"}` in UTF-16-LE': ('{"position":"4"}'.encode("utf-16-le"), "application/json"),
    '`{"position":"\\xff"}` with the byte 0xff': (b'{"position":"\xff"}', "application/json"),
    "`[` 8,000 times, then `]` 8,000 times": (b"[" * 8000 + b"]" * 8000, "application/json"),
    '`{"depth":` a 5,000-digit integer `}`': (
        b'{"depth":' + b"7" * 5000 + b"}",
        "application/json",
    ),
    '`{"mode":"depth","depth":NaN}`': (b'{"mode":"depth","depth":NaN}', "application/json"),
    '`{"position":"4"}` as `Content-Type: text/plain`': (b'{"position":"4"}', "text/plain"),
    '`{"position":"4"}` without a `Content-Type`': (b'{"position":"4"}', None),
    '`{"position":"4"}` as `Content-Type: application/json; charset=utf-16`': (
        b'{"position":"4"}',
        "application/json; charset=utf-16",
    ),
    '`{"position":"4","position":"5"}`': (b'{"position":"4","position":"5"}', "application/json"),
    "nothing": (b"", "application/json"),
    '`{"variant":"7x６"}` (a fullwidth 6)': (
        '{"variant":"7x６"}'.encode(),
        "application/json",
    ),
}


def readme_bad_bodies() -> dict[str, tuple[int, str]]:
    """The README's table of bad bodies: first cell -> (status, message)."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    table = readme.split("| body | status | `message` |\n|---|---|---|\n", 1)[1]
    rows: dict[str, tuple[int, str]] = {}
    for line in table.splitlines():
        if not line.startswith("| "):
            break
        body, status, message = (cell.strip() for cell in line.strip("|").split(" | "))
        rows[body] = (int(status), message.strip("`"))
    return rows


def test_bad_bodies_get_what_the_readme_says(server: ApiServer, key: str) -> None:
    """Every bad body of the README's table gets the status and the message it states,
    naming where and why (issue 22: UTF-16 accepted, depth and long integers answered
    "There was an error parsing the body", fullwidth digits in a variant accepted)."""
    rows = readme_bad_bodies()
    assert set(rows) == set(BAD_BODIES), "the README's table and this test's bodies differ"
    with server.client(headers={"X-API-Key": key}) as http:
        for cell, (body, content_type) in BAD_BODIES.items():
            headers = {"Content-Type": content_type} if content_type else {}
            r = http.post("/v1/analyses", content=body, headers=headers)
            assert (r.status_code, r.json()["message"]) == rows[cell], cell
        # A game's variant is refused the same way as an analysis's.
        r = http.post("/v1/games", json={"variant": "7x６"})
        assert r.status_code == 422
        assert r.json()["message"] == rows['`{"variant":"7x６"}` (a fullwidth 6)'][1]


# -- API keys and X-Forwarded-For: the rate limit cannot be escaped ----------------------


@pytest.mark.usefixtures("fresh")
def test_an_unknown_api_key_is_refused_and_new_headers_buy_no_new_budget(
    server: ApiServer, key: str
) -> None:
    body = {"position": "4", "mode": "solve"}
    with server.client() as http:
        r = http.post("/v1/analyses", json=body, headers={"X-API-Key": "made-up"})
        assert r.status_code == 401
        assert r.json()["message"].startswith("unknown API key in X-API-Key")
        assert http.get("/v1/status", headers={"X-API-Key": "made-up"}).status_code == 401

        # A configured key is a client of its own: 8 writes (POSTs and DELETEs), then
        # 429, whatever X-Forwarded-For says.
        codes = []
        for i in range(9):
            headers = {"X-API-Key": key, "X-Forwarded-For": f"10.0.0.{i}"}
            if i < 3:
                position = {"position": str(i + 1), "mode": "depth", "depth": 1}
                codes.append(http.post("/v1/analyses", json=position, headers=headers))
            else:
                codes.append(http.delete("/v1/analyses/nope", headers=headers))
        assert [r.status_code for r in codes] == [202] * 3 + [404] * 5 + [429]
        assert codes[-1].json()["message"].startswith("rate limit: 8 POST requests per 60 s")

        # Without a key a client is its address; X-Forwarded-For from a peer that is not a
        # trusted proxy changes nothing (here, 127.0.0.1 is not one).
        anon = [
            http.post("/v1/analyses", json=body, headers={"X-Forwarded-For": f"10.1.0.{i}"})
            for i in range(9)
        ]
        assert [r.status_code for r in anon] == [202] * 8 + [429]


def test_x_forwarded_for_is_believed_from_a_trusted_proxy_only(own_redis: RedisServer) -> None:
    env = {"PLYBOT_API_RATE_LIMIT": "2", "PLYBOT_API_TRUSTED_PROXIES": "127.0.0.0/8"}
    body = {"position": "4", "mode": "solve"}
    with api_server_on(own_redis.url, env=env) as proxy_side, proxy_side.client() as http:
        # Behind the proxy (the peer 127.0.0.1 is trusted), each forwarded client has its
        # own budget: the nearest untrusted hop, read from the right.
        for client in ("198.51.100.7", "198.51.100.8"):
            forwarded = {"X-Forwarded-For": f"6.6.6.6, {client}, 127.0.0.2"}
            codes = [http.post("/v1/analyses", json=body, headers=forwarded).status_code
                     for _ in range(3)]  # fmt: skip
            assert codes == [202, 202, 429], (client, codes)
        # What the client wrote at the left of the header does not make it someone else.
        spoofed = {"X-Forwarded-For": "1.2.3.4, 198.51.100.7"}
        assert http.post("/v1/analyses", json=body, headers=spoofed).status_code == 429


# -- caps on open streams and long polls ----------------------------------------------


@pytest.mark.usefixtures("fresh")
def test_streams_and_long_polls_are_capped_per_client_and_in_all(server: ApiServer) -> None:
    a, b = KEYS[0], KEYS[1]
    with server.client(headers={"X-API-Key": a}) as http:
        job = http.post("/v1/analyses", json={"position": PAST_THE_BOOK, "mode": "solve"}).json()
    events = f"/v1/analyses/{job['id']}/events"
    with (
        server.client(headers={"X-API-Key": a}) as client_a,
        server.client(headers={"X-API-Key": b}) as client_b,
        client_a.stream("GET", events) as first,
        client_a.stream("GET", events) as second,
    ):
        # No workers: the job stays queued, the streams stay open (200 = slot held).
        assert first.status_code == second.status_code == 200
        third = client_a.get(events)
        assert third.status_code == 429
        assert third.headers["Retry-After"] == "5"
        assert (
            "too many open event streams and long polls for this client: 2"
            in (third.json()["message"])
        )
        poll = client_a.get(f"/v1/analyses/{job['id']}?wait=20")  # a long poll counts too
        assert poll.status_code == 429
        with client_b.stream("GET", events) as other:
            assert other.status_code == 200  # 3 open in all: the process's cap
            full = client_b.get(f"/v1/analyses/{job['id']}?wait=20")
            assert full.status_code == 503
            assert full.headers["Retry-After"] == "5"
            assert (
                "holds its limit of 3 open event streams and long polls" in (full.json()["message"])
            )
            # A plain read needs no slot.
            assert client_b.get(f"/v1/analyses/{job['id']}").status_code == 200
    # Streams closed: their slots come back (wait for that state).
    with server.client(headers={"X-API-Key": b}) as client_b:
        deadline = time.monotonic() + 30
        while (r := client_b.get(f"/v1/analyses/{job['id']}?wait=0.05")).status_code != 200:
            assert r.status_code in (429, 503), r.text
            assert time.monotonic() < deadline, r.text


# -- caps on queued work --------------------------------------------------------------


@pytest.mark.usefixtures("fresh")
def test_queued_analyses_are_capped_per_client_and_in_all(server: ApiServer) -> None:
    def post(http: httpx.Client, position: str) -> httpx.Response:
        return http.post("/v1/analyses", json={"position": position, "mode": "depth", "depth": 3})

    with (
        server.client(headers={"X-API-Key": KEYS[2]}) as one,
        server.client(headers={"X-API-Key": KEYS[3]}) as two,
        server.client(headers={"X-API-Key": KEYS[4]}) as three,
    ):
        ids = [post(one, p).json()["id"] for p in ("1", "2", "3")]
        r = post(one, "4")
        assert r.status_code == 429
        assert r.headers["Retry-After"] == "30"
        assert (
            "this client has 3 analyses queued or running, its limit is 3" in (r.json()["message"])
        )
        # A cancel gives the place back.
        assert one.delete(f"/v1/analyses/{ids[0]}").json()["outcome"] == "canceled"
        assert post(one, "4").status_code == 202
        # 3 + 3 waiting on the queue: the service's cap of 6.
        assert [post(two, p).status_code for p in ("5", "6", "7")] == [202] * 3
        r = post(three, "11")
        assert r.status_code == 503
        assert r.headers["Retry-After"] == "30"
        assert "the analysis queue is full (6 waiting, limit 6)" in r.json()["message"]


# -- concurrency 200 over streams, long polls and POSTs: no spurious 5xx ----------------


@pytest.mark.serial
@pytest.mark.usefixtures("workers")
def test_concurrency_200_over_streams_long_polls_and_posts_gives_no_5xx(redis_url: str) -> None:
    env = {"PLYBOT_API_KEYS": ",".join(KEYS)}
    with api_server_on(redis_url, env=env) as api:
        lanes = {i: {"X-API-Key": KEYS[i]} for i in range(200)}
        errors: Counter[str] = Counter()
        load = mixed_load(api.url, lanes=200, rounds=3, headers=lanes.__getitem__, errors=errors)
        statuses = asyncio.run(load)
    print(f"concurrency 200: {dict(statuses)}")
    assert not [s for s in statuses if s >= 500 or s == 0], (statuses, errors)  # 0: no answer
    assert set(statuses) <= {200, 201, 202}, statuses


def test_each_load_lane_keeps_one_connection_of_its_own(
    api_service: ApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chaos load's lanes never share a connection pool (issue 22's resets): one pool of
    2 x 400 connections cost the client most of its CPU in httpcore's housekeeping (over
    every connection of the pool at every request and response), its event loop fell up to
    17 s behind, and it wrote requests into connections the API had closed meanwhile (idle
    past the keep-alive, or silent 10 s since connecting), which the API's kernel reset.
    Checked by state: the most connections any pool held while the lanes ran."""
    from httpcore._async.connection_pool import AsyncConnectionPool
    from httpcore._async.interfaces import AsyncConnectionInterface

    held: dict[int, int] = {}  # pool -> the most connections it held
    housekeeping = AsyncConnectionPool._assign_requests_to_connections

    def counted(pool: AsyncConnectionPool) -> list[AsyncConnectionInterface]:
        closing = housekeeping(pool)
        held[id(pool)] = max(held.get(id(pool), 0), len(pool._connections))
        return closing

    monkeypatch.setattr(AsyncConnectionPool, "_assign_requests_to_connections", counted)
    statuses = asyncio.run(mixed_load(api_service.url, lanes=6, rounds=2))
    assert set(statuses) <= {200, 201, 202}, statuses
    assert len(held) == 6  # a pool a lane
    assert set(held.values()) == {1}, held  # each with its one connection, kept alive


# -- slow clients -----------------------------------------------------------------------


@pytest.mark.serial
def test_slow_clients_are_cut_off_and_others_are_served(server: ApiServer, key: str) -> None:
    slow = open_slow_clients(server.port, 100)  # odd ones: half the headers; even: part body
    try:
        with server.client(headers={"X-API-Key": key}) as http:
            times = []
            for _ in range(20):
                start = time.perf_counter()
                assert http.get("/v1/status").status_code == 200
                times.append(time.perf_counter() - start)
        print(f"with 100 slow clients: /v1/status median {sorted(times)[10] * 1000:.1f} ms")
        # The server closes every slow connection (header timeout 1 s, body 2 s); a
        # client that never sent its headers gets a 408 first.
        for i, sock in enumerate(slow):
            sock.settimeout(30)
            answer = b""
            while chunk := sock.recv(4096):
                answer += chunk
            if i % 2:
                assert answer.startswith(b"HTTP/1.1 408 "), answer
                assert b"request headers not received within 1 s" in answer

        # ... and says so in its log, each by its reason (the connections are closed, so the
        # lines are being written to the file).
        def said(why: str) -> bool:
            return server.log(tail=10**7).count(f"did not send its {why} in time") >= 50

        wait_for(lambda: said("headers"), "50 header cut-offs in the log", timeout=30)
        wait_for(lambda: said("body"), "50 body cut-offs in the log", timeout=30)
    finally:
        for sock in slow:
            sock.close()


# -- a full Redis: 503, and /healthz says so -------------------------------------------


def test_a_full_redis_gives_503_and_healthz_not_ok(
    server: ApiServer, fresh: redis.Redis, key: str
) -> None:
    with server.client(headers={"X-API-Key": key}) as http:
        assert http.get("/healthz").status_code == 200
        fresh.config_set("maxmemory-policy", "noeviction")
        fresh.set("ballast", b"x" * 2_000_000)
        # 1 MB under what it uses (the ballast's half): full still after connections' buffers
        # come and go (100 KB under let a loaded run's second write through once).
        fresh.config_set("maxmemory", str(int(fresh.info("memory")["used_memory"]) - 1_000_000))
        try:
            r = http.get("/healthz")
            assert r.status_code == 503, r.text
            assert "Redis is full" in r.json()["message"], r.text
            for method, path, body in [
                ("POST", "/v1/analyses", {"position": "4", "mode": "solve"}),
                ("POST", "/v1/games", {"game": "tictactoe"}),
            ]:
                r = http.request(method, path, json=body)
                assert r.status_code == 503, (path, r.text)
                assert r.json()["message"] == (
                    "the service's Redis is full (maxmemory reached); try again later"
                )
                assert r.headers["Retry-After"] == "10"
        finally:
            fresh.config_set("maxmemory", "0")
            fresh.delete("ballast")
        assert http.get("/healthz").status_code == 200


# -- the Redis check at start ----------------------------------------------------------


def test_serve_refuses_a_redis_that_evicts_any_key_and_warns_without_a_limit(
    own_redis: RedisServer, fresh: redis.Redis
) -> None:
    fresh.config_set("maxmemory-policy", "noeviction")
    assert check_redis_memory(own_redis.url).level == "warn"  # maxmemory 0, the cache shares it
    assert check_redis_memory(own_redis.url, cache_apart=True).level == "ok"
    fresh.config_set("maxmemory", "64mb")
    assert check_redis_memory(own_redis.url).level == "ok"
    fresh.config_set("maxmemory-policy", "volatile-lru")  # a result with a TTL may go
    assert check_redis_memory(own_redis.url).level == "warn"
    fresh.config_set("maxmemory-policy", "allkeys-lru")
    try:
        env = {**os.environ, "REDIS_URL": own_redis.url}
        done = subprocess.run(
            [sys.executable, "-c", "import sys; from engine.cli import main; sys.exit(main())",
             "serve", "--port", "1"],
            env=env, capture_output=True, text=True, timeout=60, cwd=tempfile.gettempdir(),
        )  # fmt: skip
        assert done.returncode == 2
        assert done.stderr.startswith(
            "plybot serve: refusing to start: Redis' maxmemory-policy is allkeys-lru"
        ), done.stderr
    finally:
        fresh.config_set("maxmemory-policy", "noeviction")
        fresh.config_set("maxmemory", "0")


# -- webhooks: signed, validated once, bounded ------------------------------------------


def verify(secret: str, header: str, body: bytes, tolerance_s: int = 300) -> bool:
    """The README's verification snippet, as a receiver would write it."""
    fields = dict(part.split("=", 1) for part in header.split(","))
    expected = hmac.new(secret.encode(), f"{fields['t']}.".encode() + body, hashlib.sha256)
    fresh_enough = abs(time.time() - int(fields["t"])) <= tolerance_s
    return fresh_enough and hmac.compare_digest(expected.hexdigest(), fields["v1"])


@pytest.mark.usefixtures("fresh")
def test_webhooks_are_signed_and_capped_per_host(server: ApiServer, own_redis: RedisServer) -> None:
    # The module's API (2 POSTs at once per host) is the only one on this Redis.
    pool = WorkerPool(own_redis.url, 1)
    try:
        pool.wait_ready()
        with WebhookReceiver(gated=True) as hook:
            ids = []
            for i, position in enumerate(("1", "2", "3", "4", "5", "6")):
                body = {"game": "tictactoe", "position": position, "mode": "solve",
                        "callback_url": hook.url}  # fmt: skip
                with server.client(headers={"X-API-Key": KEYS[5 + i % 2]}) as http:
                    answer = http.post("/v1/analyses?wait=20", json=body)
                    assert answer.status_code == 200, answer.text
                    ids.append(answer.json()["id"])
            hook.wait_in_flight(2)  # every job is done: all six deliveries are due
            hook.release(6)
            hook.wait_for(6)
        assert hook.peak <= 2, hook.peak
        assert len(hook.requests) == 6  # each delivered once: none was given up and sent again
        assert {body["id"] for _, body in hook.requests} == set(ids)
        for (headers, _), raw in zip(hook.requests, hook.raw, strict=True):
            assert verify(CALLBACK_SECRET, headers["Plybot-Signature"], raw)
            assert not verify("another secret", headers["Plybot-Signature"], raw)
    finally:
        pool.stop()


def test_callback_urls_are_validated_once_completely(server: ApiServer, key: str) -> None:
    body = {"position": "4", "mode": "solve"}
    with server.client(headers={"X-API-Key": key}) as http:
        for url, says in [
            ("http://127.0.0.1/a\tb", "holds \\t at index 18"),
            ("http://127.0.0.1/a b", "holds a space at index 18"),
            ("http://127.0.0.1/\r\nX-Evil: 1", "holds \\r at index 17"),
            ("http://u:p@127.0.0.1/", "holds credentials"),
        ]:
            r = http.post("/v1/analyses", json={**body, "callback_url": url})
            assert r.status_code == 422, (url, r.text)
            assert r.json()["message"].startswith("callback_url: '"), r.json()
            assert says in r.json()["message"], r.json()
    unsigned = api_server_on(server.redis_url, env={"PLYBOT_CALLBACK_SECRET": ""})
    with unsigned, unsigned.client() as http:
        r = http.post("/v1/analyses", json={**body, "callback_url": "http://127.0.0.1/h"})
        assert r.status_code == 422
        assert "no PLYBOT_CALLBACK_SECRET to sign them" in r.json()["message"]


# -- retention -----------------------------------------------------------------------------


def test_finished_games_and_callback_records_expire(
    server: ApiServer, fresh: redis.Redis, key: str
) -> None:
    with server.client(headers={"X-API-Key": key}) as http:
        game = http.post("/v1/games", json={"game": "tictactoe", "first": "human"}).json()
        assert fresh.ttl(f"plybot:game:{game['id']}") == -1  # in play: never evicted
        assert http.post(f"/v1/games/{game['id']}/resign").status_code == 200
        ttl = fresh.ttl(f"plybot:game:{game['id']}")
        assert 30 * 86400 - 60 < ttl <= 30 * 86400  # PLYBOT_API_GAMES_FINISHED_S

        # No workers here: the delivery waits for its job, its record already bounded.
        body = {"position": "4", "mode": "solve", "callback_url": "http://127.0.0.1:9/hook"}
        assert http.post("/v1/analyses", json=body).status_code == 202
        records = fresh.keys("plybot:callback:*")
        assert len(records) == 1
        assert 86400 - 60 < fresh.ttl(records[0]) <= 86400  # PLYBOT_CALLBACK_TTL_S

"""Every error the HTTP API answers, with its message, against a real API and Redis.

This module runs an API of its own (tight limits, no workers: nothing here needs
an answer from the engine) on a Redis of its own, which the last test stops and
starts again on the same port.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import httpx
import pytest
import redis

from tests.fixtures.api import ApiServer, api_server_on
from tests.fixtures.positions import PAST_THE_BOOK
from worker.core import keys
from worker.process.redis_server import RedisServer

pytestmark = [pytest.mark.redis, pytest.mark.service]

#: Configured API keys: each test takes one of its own (its own rate-limit budget).
KEYS = [f"key-{i}" for i in range(40)]
_unused_keys = iter(KEYS[1:])

LIMITS = {
    "PLYBOT_API_KEYS": ",".join(KEYS),
    "PLYBOT_API_RATE_LIMIT": "5",
    "PLYBOT_API_RATE_WINDOW_S": "60",
    "PLYBOT_MAX_DEPTH": "20",
    "PLYBOT_MAX_TIME_MS": "5000",
    "PLYBOT_MAX_POSITION_LENGTH": "20",
    "PLYBOT_API_MAX_WAIT_S": "10",
    "PLYBOT_API_MOVE_WAIT_S": "0.2",
    "PLYBOT_API_MAX_BODY_BYTES": "2048",
    "PLYBOT_CALLBACK_HOSTS": "127.0.0.1,hooks.example.org:8443",
}


@pytest.fixture(scope="module")
def own_redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="module")
def server(own_redis: RedisServer) -> Iterator[ApiServer]:
    with api_server_on(own_redis.url, env=LIMITS) as api:
        yield api


@pytest.fixture
def http(server: ApiServer, own_redis: RedisServer):
    """A client with an API key of its own: each test has its own rate-limit budget."""
    if not own_redis.running:
        own_redis.start()
    with server.client(headers={"X-API-Key": next(_unused_keys)}) as client:
        yield client


def unprocessable(response: httpx.Response, field: str) -> str:
    """Assert a 422 naming ``field``; return its message."""
    assert response.status_code == 422, response.text
    body = response.json()
    fields = [".".join(str(p) for p in e["loc"][1:]) for e in body["detail"]]
    assert field in fields, body
    assert body["message"].startswith(f"{field}: ") or f"; {field}: " in body["message"]
    return body["message"]


# -- 422: the field and the problem ---------------------------------------------------


def test_unknown_game(http: httpx.Client) -> None:
    r = http.post("/v1/analyses", json={"game": "chess", "position": "e4", "mode": "solve"})
    assert "'chess': unknown game (known: connect4, tictactoe)" in unprocessable(r, "game")
    r = http.post("/v1/games", json={"game": "chess"})
    assert "'chess': unknown game" in unprocessable(r, "game")


def test_illegal_positions_quote_the_engine(http: httpx.Client) -> None:
    r = http.post("/v1/analyses", json={"game": "connect4", "position": "44448", "mode": "solve"})
    assert unprocessable(r, "position") == "position: '44448': column 8 is outside 1..7 (move 5)"
    r = http.post("/v1/analyses", json={"position": "4444444", "mode": "solve"})
    assert unprocessable(r, "position") == "position: '4444444': column 4 is full (move 7)"
    r = http.post("/v1/analyses", json={"position": "4343434", "mode": "solve"})
    assert "'4343434': the game is already over after move 7" in unprocessable(r, "position")


def test_limits_of_the_search(http: httpx.Client) -> None:
    too_long = "1234567" * 3  # 21 moves, the limit is 20
    r = http.post("/v1/analyses", json={"position": too_long, "mode": "solve"})
    assert "position is 21 moves long, beyond the limit of 20" in unprocessable(r, "position")
    r = http.post("/v1/analyses", json={"position": "4", "mode": "depth", "depth": 99})
    assert "depth 99 is beyond the limit of 20" in unprocessable(r, "depth")
    r = http.post("/v1/analyses", json={"position": "4", "mode": "time", "time_ms": 60000})
    assert "time_ms 60000 is beyond the limit of 5000" in unprocessable(r, "time_ms")
    r = http.post("/v1/analyses", json={"position": "4", "mode": "depth"})
    assert "mode 'depth' needs a depth" in unprocessable(r, "depth")


def test_unknown_fields_and_levels(http: httpx.Client) -> None:
    r = http.post("/v1/analyses", json={"position": "4", "mode": "solve", "colour": "red"})
    unprocessable(r, "colour")
    r = http.post("/v1/games", json={"game": "connect4", "level": "godlike"})
    unprocessable(r, "level")
    r = http.post("/v1/games", json={"game": "connect4", "variant": "banana"})
    assert "'banana': a Connect Four variant is WIDTHxHEIGHT" in unprocessable(r, "variant")


def test_wait_is_bounded(http: httpx.Client) -> None:
    accepted = http.post("/v1/analyses", json={"position": "44", "mode": "solve"})
    assert accepted.status_code == 202
    r = http.get(f"{accepted.headers['Location']}?wait=600")
    assert "wait 600 is beyond the limit of 10 s" in unprocessable(r, "wait")


def test_callbacks_only_to_allow_listed_hosts(http: httpx.Client) -> None:
    body = {"position": "4", "mode": "solve"}
    for url, host in [
        ("http://10.0.0.7/hook", "10.0.0.7"),
        ("http://localhost:9/hook", "localhost"),
        ("https://hooks.example.org/hook", "hooks.example.org"),  # allowed on 8443 only
    ]:
        r = http.post("/v1/analyses", json={**body, "callback_url": url})
        message = unprocessable(r, "callback_url")
        assert f"host '{host}' is not on the callback allow-list" in message
    r = http.post("/v1/analyses", json={**body, "callback_url": "ftp://127.0.0.1/x"})
    assert "is not an http(s) URL" in unprocessable(r, "callback_url")
    r = http.post("/v1/analyses", json={**body, "callback_url": "https://hooks.example.org:8443/h"})
    assert r.status_code == 202


def test_illegal_move_in_a_game(http: httpx.Client) -> None:
    game = http.post("/v1/games", json={"game": "connect4", "first": "human"}).json()
    r = http.post(f"/v1/games/{game['id']}/moves", json={"move": "8"})
    assert unprocessable(r, "move") == "move: '8': column 8 is outside 1..7 (move 1)"
    r = http.post(f"/v1/games/{game['id']}/moves", json={"move": ""})
    unprocessable(r, "move")


# -- 404, 409, 413 -----------------------------------------------------------------------


def test_unknown_ids(http: httpx.Client) -> None:
    for path in ("/v1/analyses/0123abc", "/v1/analyses/0123abc/events", "/v1/games/nope"):
        r = http.get(path)
        assert r.status_code == 404, path
        assert "no such" in r.json()["message"]
    r = http.post("/v1/games/nope/moves", json={"move": "4"})
    assert r.status_code == 404
    assert r.json()["message"] == "'nope': no such game"


def test_moves_out_of_turn_or_after_the_end(http: httpx.Client) -> None:
    # No workers here: the bot, moving first, is still thinking when the API answers.
    game = http.post("/v1/games", json={"game": "tictactoe", "first": "bot"}).json()
    assert game["turn"] == "bot"
    assert game["bot_thinking"]
    assert game["legal_moves"] == []
    r = http.post(f"/v1/games/{game['id']}/moves", json={"move": "5"})
    assert r.status_code == 409
    assert "not your turn" in r.json()["message"]
    assert "bot is thinking" in r.json()["message"]

    game = http.post("/v1/games", json={"game": "tictactoe", "first": "human"}).json()
    resigned = http.post(f"/v1/games/{game['id']}/resign")
    assert resigned.status_code == 200
    assert resigned.json()["result"] == "bot wins"
    r = http.post(f"/v1/games/{game['id']}/moves", json={"move": "5"})
    assert r.status_code == 409
    assert "is over (resigned)" in r.json()["message"]


def test_body_size_limit(http: httpx.Client) -> None:
    r = http.post(
        "/v1/analyses",
        content=b'{"position": "' + b"4" * 4000 + b'"}',
        headers={"Content-Type": "application/json"},
    )
    assert r.status_code == 413
    assert r.json()["message"] == "request body of 4016 bytes is beyond the limit of 2048"
    # Without a Content-Length (chunked), cut off as soon as the limit is passed.
    chunks = (b"4" * 1000 for _ in range(100))
    r = http.post("/v1/analyses", content=chunks, headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    assert "beyond the limit of 2048" in r.json()["message"]


# -- 429 ------------------------------------------------------------------------------------


def test_rate_limit_per_client(server: ApiServer, http: httpx.Client) -> None:
    body = {"position": "4", "mode": "solve"}
    codes = [http.post("/v1/analyses", json=body).status_code for _ in range(5)]
    assert codes == [202] * 5
    r = http.post("/v1/analyses", json=body)
    assert r.status_code == 429
    retry_after = int(r.headers["Retry-After"])
    assert 1 <= retry_after <= 60
    assert "rate limit: 5 POST requests per 60 s" in r.json()["message"]
    # Reads have their own budget; another client has its own.
    assert http.get("/v1/status").status_code == 200
    with server.client(headers={"X-API-Key": KEYS[0]}) as other:
        assert other.post("/v1/analyses", json=body).status_code == 202


# -- 500: anything unforeseen ---------------------------------------------------------


def test_a_500_closes_its_connection_and_says_so(
    own_redis: RedisServer, http: httpx.Client
) -> None:
    """Starlette raises an unforeseen exception again once its 500 is sent, and uvicorn
    then closes the connection: a 500 kept alive took the client's next request on that
    connection and reset it (issue 22's soak: a cancel's 500, then a reset). The 500 says
    ``Connection: close``, and the client's next request goes on a new connection."""
    broken = redis.Redis.from_url(own_redis.url)
    # A job record the API cannot read (its request is not JSON): an unforeseen error.
    broken.hset(keys.job("0123broken"), mapping={"kind": "analysis", "request": "{"})
    try:
        r = http.get("/v1/analyses/0123broken")
        assert r.status_code == 500
        assert r.json()["message"] == "internal error; it has been logged"
        assert r.headers["connection"] == "close"
        assert http.get("/healthz").status_code == 200  # at once, on the same client
    finally:
        broken.delete(keys.job("0123broken"))
        broken.close()


# -- 503 while Redis is down, service again once it is back ------------------------------


def test_redis_down_then_back(own_redis: RedisServer, http: httpx.Client) -> None:
    assert http.get("/healthz").status_code == 200
    own_redis.stop()
    try:
        for method, path, body in [
            ("GET", "/healthz", None),
            ("POST", "/v1/analyses", {"position": PAST_THE_BOOK, "mode": "solve"}),
            ("GET", "/v1/games/abc", None),
            ("GET", "/v1/status", None),
        ]:
            r = http.request(method, path, json=body)
            assert r.status_code == 503, (path, r.text)
            assert r.headers["Retry-After"] == "2"
            assert "Redis is unreachable" in r.json()["message"]
    finally:
        own_redis.start()  # same port; the API is not restarted
    r = http.get("/healthz")
    assert r.status_code == 200, r.text
    r = http.post("/v1/analyses", json={"position": PAST_THE_BOOK, "mode": "solve"})
    assert r.status_code == 202
    assert http.get(r.headers["Location"]).json()["status"] == "queued"


# -- the docs, and `plybot serve`'s own errors -------------------------------------------


def test_openapi_docs_with_examples(http: httpx.Client) -> None:
    assert "swagger" in http.get("/docs").text.lower()
    spec = http.get("/openapi.json").json()
    assert {"/v1/analyses", "/v1/analyses/{analysis_id}/events", "/v1/games/{game_id}/moves",
            "/v1/status", "/healthz", "/metrics"} <= set(spec["paths"])  # fmt: skip
    examples = spec["components"]["schemas"]["AnalysisCreate"]["examples"]
    assert {"game": "connect4", "position": "4453", "mode": "solve"} in examples
    assert {"game": "connect4", "position": "4453", "mode": "depth", "depth": 12} in examples
    assert spec["components"]["schemas"]["GameView"]["examples"]


def test_serve_refuses_to_start_without_redis() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "PLYBOT_REDIS_URL")}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from engine.cli import main; sys.exit(main())",
            "serve",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tempfile.gettempdir(),  # no .env file from the checkout
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "plybot serve: REDIS_URL is not set (run `plybot up`, or point REDIS_URL at a Redis)"
    ]

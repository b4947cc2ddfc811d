"""Analyses over HTTP, end to end: the real API under uvicorn, real workers, a real Redis.

Exact scores (benchmark positions and self-contained ones), ``?wait``, the
event stream, webhooks (with a retry and a refusal), the shared cache seen
through HTTP, and the status and metrics that report on all of it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from engine.analysis import analyze
from engine.game import new_game
from tests.fixtures.api import ApiServer, WebhookReceiver
from tests.fixtures.waiting import wait_for
from worker.core.client import JobClient

pytestmark = [pytest.mark.redis, pytest.mark.service]

WAIT = 20  # seconds a test waits for one answer at most


def solve(http: httpx.Client, **body: Any) -> dict[str, Any]:
    """POST an analysis, wait for it, return the analysis (status ``done`` asserted)."""
    accepted = http.post("/v1/analyses", json=body)
    assert accepted.status_code == 202, accepted.text
    location = accepted.headers["Location"]
    assert location == accepted.json()["status_url"] == f"/v1/analyses/{accepted.json()['id']}"
    analysis = http.get(location, params={"wait": WAIT}).json()
    assert analysis["status"] == "done", analysis
    return analysis


@pytest.fixture(scope="module")
def http(api_service: ApiServer) -> Iterator[httpx.Client]:
    with api_service.client() as client:
        yield client


# -- exact scores -------------------------------------------------------------------------


def test_exact_scores_of_self_contained_positions(http: httpx.Client) -> None:
    # Connect Four: X holds 4, 5, 6 on the bottom row and wins now with its 4th stone.
    result = solve(http, game="connect4", position="445566", mode="solve")["result"]
    assert result["score"] == 22 - 4
    assert result["best_move"] in ("3", "7")
    assert result["pv"][0] == result["best_move"]
    assert result["exact"] is True
    assert result["cache"] in ("hit", "miss")
    assert result["worker"]
    for key in ("depth", "nodes", "time_ms"):
        assert isinstance(result[key], int | float)
    # Tic-tac-toe, every move scored, against the engine's own answer.
    position = "52"
    analysis = solve(http, game="tictactoe", position=position, mode="solve", moves="all")
    engine = analyze(new_game("tictactoe", position), mode="solve", all_moves=True)
    result = analysis["result"]
    assert result["score"] == engine.score
    assert engine.exact
    assert engine.moves is not None
    assert result["moves"] == {str(m + 1): s for m, s in engine.moves.items()}
    assert max(result["moves"].values()) == result["score"] == result["moves"][result["best_move"]]
    assert analysis["request"]["moves"] == "all"
    assert analysis["request"]["variant"] == "3x3"


@pytest.mark.benchmarks
def test_benchmark_positions_give_their_exact_scores(
    http: httpx.Client, benchmarks_dir: Path
) -> None:
    cases = []
    for name, count in (("Test_L3_R1", 4), ("Test_L2_R1", 3), ("Test_L2_R2", 2)):
        lines = (benchmarks_dir / name).read_text().splitlines()
        cases += [line.split() for line in lines[:count]]
    # Submit all, then collect: the workers answer them in parallel.
    ids = {}
    for position, _ in cases:
        accepted = http.post(
            "/v1/analyses", json={"game": "connect4", "position": position, "mode": "solve"}
        )
        assert accepted.status_code == 202, accepted.text
        ids[position] = accepted.json()["id"]
    for position, score in cases:
        analysis = http.get(f"/v1/analyses/{ids[position]}", params={"wait": WAIT}).json()
        assert analysis["status"] == "done", analysis
        assert analysis["result"]["score"] == int(score), position
        assert analysis["result"]["exact"] is True


@pytest.mark.benchmarks
def test_every_move_scored_agrees_with_each_child(http: httpx.Client, benchmarks_dir: Path) -> None:
    position, score = (benchmarks_dir / "Test_L3_R1").read_text().splitlines()[10].split()
    result = solve(http, game="connect4", position=position, mode="solve", moves="all")["result"]
    assert result["score"] == int(score)
    moves = result["moves"]
    assert moves
    assert max(moves.values()) == int(score) == moves[result["best_move"]]
    for move, move_score in moves.items():
        child = new_game("connect4", position + move)
        if child.outcome() is not None:  # the move wins at once
            assert move_score == -child.terminal_score()
            continue
        child_result = solve(http, game="connect4", position=position + move, mode="solve")
        assert move_score == -child_result["result"]["score"], move


def test_depth_and_time_modes(http: httpx.Client) -> None:
    result = solve(http, game="connect4", position="4453", mode="depth", depth=6)["result"]
    assert result["depth"] >= 6
    assert result["best_move"] in list("1234567")
    result = solve(http, game="connect4", position="44536", mode="time", time_ms=300)["result"]
    assert result["best_move"] in list("1234567")
    assert result["depth"] >= 1


# -- the event stream -------------------------------------------------------------------


def read_events(http: httpx.Client, analysis_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Every event of the stream, until the server closes it."""
    events = []
    with http.stream("GET", f"/v1/analyses/{analysis_id}/events") as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        name, data = "message", ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                data += line[len("data: ") :]
            elif line == "" and data:
                events.append((name, json.loads(data)))
                name, data = "message", ""
    return events


def test_event_stream_gives_depths_in_order_then_the_result(http: httpx.Client) -> None:
    # A position no other test analyses (tests/test_rq.py solves 3344 on the same service): a
    # service that has seen it before answers from what it knows at once, with no depth to tell.
    body = {"game": "connect4", "position": "3354", "mode": "depth", "depth": 9}
    accepted = http.post("/v1/analyses", json=body).json()
    events = read_events(http, accepted["id"])
    names = [name for name, _ in events]
    assert names[-1] == "done", names
    assert set(names[:-1]) == {"progress"}, names
    depths = [data["depth"] for name, data in events if name == "progress"]
    assert depths == sorted(set(depths)), depths
    assert depths[-1] == 9, depths
    final = events[-1][1]
    assert final["status"] == "done"
    assert final["id"] == accepted["id"]
    assert final["result"]["depth"] == 9
    assert final == http.get(accepted["status_url"]).json()
    # A late subscriber gets the whole history, then the result.
    assert read_events(http, accepted["id"]) == events
    # An answer with nothing searched (this ply-4 position is in the book) still has a step.
    solved = http.post("/v1/analyses", json={**body, "mode": "solve", "depth": None}).json()
    answered = read_events(http, solved["id"])
    assert [name for name, _ in answered] == ["progress", "done"], answered
    step, final = answered[0][1], answered[1][1]["result"]
    assert (step["depth"], step["score"], step["exact"]) == (final["depth"], final["score"], True)


def test_event_stream_of_a_failed_analysis_ends_with_the_error(
    http: httpx.Client, redis_url: str
) -> None:
    # A bad position never gets queued (422); a job canceled mid-search really fails.
    # A depth search past the opening book (the generic search, 30 plies deep: running until
    # it is canceled; nothing answers it at once).
    body = {"game": "connect4", "position": "7447442311", "mode": "depth", "depth": 30}
    accepted = http.post("/v1/analyses", json=body).json()

    async def cancel() -> bool:
        async with JobClient(redis_url) as client:  # as an operator's tool would
            return await client.cancel(accepted["id"])

    assert asyncio.run(cancel())
    events = read_events(http, accepted["id"])
    assert events[-1][0] == "failed"
    assert events[-1][1]["status"] == "failed"
    assert "canceled" in events[-1][1]["error"]


# -- webhooks ---------------------------------------------------------------------------------


def test_webhook_is_retried_until_delivered(http: httpx.Client, redis_client: redis.Redis) -> None:
    with WebhookReceiver(failures=1) as receiver:
        body = {"game": "connect4", "position": "445", "mode": "depth", "depth": 5}
        accepted = http.post("/v1/analyses", json={**body, "callback_url": receiver.url})
        assert accepted.status_code == 202, accepted.text
        receiver.wait_for(2)
        (first_headers, first), (second_headers, second) = receiver.requests[:2]
        assert first_headers["X-Plybot-Attempt"] == "1"
        assert second_headers["X-Plybot-Attempt"] == "2"
        assert first_headers["X-Plybot-Delivery"] == second_headers["X-Plybot-Delivery"]
        assert first == second  # the same body each attempt
        assert second["id"] == accepted.json()["id"]
        assert second["status"] == "done"
        assert second == http.get(accepted.headers["Location"]).json()
        # Delivered: its record goes once the 204 is in, and with it any further attempt.
        record = f"plybot:callback:{second_headers['X-Plybot-Delivery']}"
        wait_for(lambda: not redis_client.exists(record), "the delivery's record deleted")
        assert len(receiver.requests) == 2


def test_webhook_to_a_host_off_the_allow_list_is_refused(http: httpx.Client) -> None:
    body = {
        "game": "connect4",
        "position": "4",
        "mode": "solve",
        "callback_url": "http://localhost/x",
    }
    r = http.post("/v1/analyses", json=body)
    assert r.status_code == 422
    assert "host 'localhost' is not on the callback allow-list" in r.json()["message"]


# -- the shared cache through HTTP ---------------------------------------------------------


@pytest.mark.benchmarks
def test_a_solved_position_comes_back_from_the_cache(
    http: httpx.Client, benchmarks_dir: Path
) -> None:
    position, score = (benchmarks_dir / "Test_L2_R2").read_text().splitlines()[500].split()
    body = {"game": "connect4", "position": position, "mode": "solve"}
    first = solve(http, **body)["result"]
    again = solve(http, **body)["result"]  # a new job: the first one finished
    assert first["score"] == again["score"] == int(score)
    assert again["cache"] == "hit"
    assert again["worker"] == "cache"  # answered at submission, never queued


# -- what the service reports -----------------------------------------------------------------


def _metrics(http: httpx.Client) -> dict[str, float]:
    """``/metrics``' samples, by name with labels."""
    samples = {}
    for line in http.get("/metrics").text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


def test_status_and_metrics_report_the_service(http: httpx.Client) -> None:
    delivered = 'plybot_callbacks_total{outcome="delivered"}'
    # Its own webhook, so the test stands alone (it once counted on the webhook tests' ones).
    with WebhookReceiver() as receiver:
        solve(http, game="tictactoe", position="1", mode="solve", callback_url=receiver.url)
        receiver.wait_for(1)
        wait_for(lambda: _metrics(http).get(delivered, 0) >= 1, "the webhook counted delivered")
    status = http.get("/v1/status").json()
    assert [q["name"] for q in status["queues"]] == ["interactive", "analysis", "book"]
    for queue in status["queues"]:
        assert queue["waiting"] >= 0
        assert queue["oldest_wait_s"] >= 0
    assert status["workers_alive"] == 2
    assert 0 <= status["workers_busy"] <= 2
    assert status["jobs"]["done"] >= 1
    assert status["jobs"]["submitted"] >= status["jobs"]["done"]
    lookups = status["cache_hits"] + status["cache_misses"]
    assert lookups > 0
    assert status["cache_hit_rate"] == round(status["cache_hits"] / lookups, 4)
    assert status["callbacks_pending"] >= 0

    samples = _metrics(http)
    assert (
        samples['plybot_http_requests_total{method="POST",route="/v1/analyses",status="202"}'] >= 1
    )
    assert samples['plybot_workers{state="alive"}'] == 2
    assert 'plybot_queue_length{queue="analysis"}' in samples
    assert 'plybot_queue_oldest_age_seconds{queue="interactive"}' in samples
    assert samples['plybot_cache_lookups_total{result="hit"}'] == status["cache_hits"]
    assert samples['plybot_cache_lookups_total{result="miss"}'] >= status["cache_misses"]
    assert samples['plybot_jobs_total{outcome="done"}'] >= status["jobs"]["done"]
    assert any(k.startswith("plybot_http_request_duration_seconds_bucket{") for k in samples)
    assert samples[delivered] >= 1


# -- compression -------------------------------------------------------------------------------


def test_json_answers_over_1_kb_are_compressed_when_asked(http: httpx.Client) -> None:
    """Every JSON answer over 1 KB is gzipped for a client that accepts gzip (issue 22:
    ``/openapi.json``, 29 KB, was not), and sent as it is to one that does not."""
    analysis = solve(http, game="connect4", position="4453", mode="solve", moves="all")
    game = http.post("/v1/games", json={"game": "connect4", "first": "human"}).json()
    # A 422 quoting what it refuses: a callback host of 1,200 characters, twice.
    bad = {"position": "4", "callback_url": f"http://{'h' * 1200}.example/hook"}
    sent = [
        ("GET", "/openapi.json", None),
        ("GET", f"/v1/analyses/{analysis['id']}", None),
        ("GET", f"/v1/games/{game['id']}", None),
        ("GET", "/v1/status", None),
        ("POST", "/v1/analyses", bad),
    ]
    large = 0
    for method, path, body in sent:
        plain = http.request(method, path, json=body, headers={"Accept-Encoding": "identity"})
        assert plain.headers["content-type"].startswith("application/json"), path
        assert "content-encoding" not in plain.headers, path
        asked = http.request(method, path, json=body, headers={"Accept-Encoding": "gzip"})
        assert asked.json() == plain.json() or path == "/v1/status", path
        if len(plain.content) > 1024:
            large += 1
            assert asked.headers.get("content-encoding") == "gzip", (path, len(plain.content))
            assert int(asked.headers["content-length"]) < len(plain.content) / 2, path
    assert large >= 2  # the spec and the 422 at least


def test_an_event_stream_is_not_held_back_by_compression(http: httpx.Client) -> None:
    """A client that accepts gzip still gets each event as it happens: the first progress
    event arrives while the analysis is running (a compressor would hold it back)."""
    # 8x7 to depth 40 with the generic search: no book or cache answers it, and no machine
    # finishes it; it is canceled below.
    body = {"game": "connect4", "variant": "8x7", "position": "", "mode": "depth", "depth": 40}
    accepted = http.post("/v1/analyses", json=body).json()
    names: list[str] = []
    try:
        with http.stream(
            "GET", accepted["events_url"], headers={"Accept-Encoding": "gzip"}
        ) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            assert "content-encoding" not in response.headers
            for line in response.iter_lines():
                if line.startswith("event: "):
                    names.append(line[len("event: ") :])
                if names == ["progress"]:
                    status = http.get(accepted["status_url"]).json()["status"]
                    assert status == "running", status
                    assert http.delete(accepted["status_url"]).json()["outcome"] == "stopping"
                    names.append("(canceled)")
    finally:
        http.delete(accepted["status_url"])
    assert names[:2] == ["progress", "(canceled)"], names
    assert names[-1] == "failed", names

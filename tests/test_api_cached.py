"""Answers at submission, end to end: an exact solve the opening book and the 12-stone
database settle, or that the shared cache holds, is finished by the API itself, never
queued; ``POST /v1/analyses?wait=S``.

Real API under uvicorn, real workers, real Redis. To show that no worker answered,
the workers are stopped before the cached request: an answer then can only have
come from the API.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
import redis
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from engine.analysis import analyze
from engine.bench.slow import SLOW
from engine.connect4 import Connect4
from engine.game import new_game
from tests.fixtures.api import WebhookReceiver, api_server_on
from tests.test_api_analyses import read_events
from worker.core.position_cache import entry_key
from worker.process.processes import WorkerPool
from worker.process.redis_server import free_port

pytestmark = [pytest.mark.redis, pytest.mark.service]

WAIT = 20  # seconds a test waits for one answer at most
# Mid-game positions (from Pons' Test_L2_R2, score -1 and 2), solved by a worker in well
# under a second here, and not by a lookup.
POSITION = "5455174361263362"
OTHER = "2531276566711153"


def post(http: httpx.Client, wait: float = 0, **body: Any) -> httpx.Response:
    params = {"wait": wait} if wait else {}
    return http.post("/v1/analyses", params=params, json={"game": "connect4", **body})


def queued(r: redis.Redis) -> int:
    return sum(int(r.llen(f"rq:queue:{name}")) for name in ("interactive", "analysis"))


@pytest.fixture
def solved_by_a_worker(
    api: httpx.Client,
    clean_redis: redis.Redis,  # noqa: ARG001 (requested for its effect)
    worker_pool: Callable[..., WorkerPool],
) -> dict[str, dict[str, Any]]:
    """POSITION solved by a worker, best move only and every move; then no worker runs."""
    pool = worker_pool(1)
    views = {}
    for moves in ("best", "all"):
        response = post(api, WAIT, position=POSITION, mode="solve", moves=moves)
        assert response.status_code == 200, response.text
        views[moves] = response.json()
        assert views[moves]["result"]["worker"] not in ("", "cache")
    pool.stop()
    assert api.get("/v1/status").json()["workers_alive"] == 0
    return views


def test_an_exact_hit_is_finished_at_submission_with_no_worker(
    api: httpx.Client, clean_redis: redis.Redis, solved_by_a_worker: dict[str, dict[str, Any]]
) -> None:
    before = api.get("/v1/status").json()
    response = post(api, WAIT, position=POSITION, mode="solve")
    assert response.status_code == 200, response.text
    view = response.json()
    assert view["status"] == "done"
    assert view["error"] is None
    result, first = view["result"], solved_by_a_worker["best"]["result"]
    assert result["cache"] == "hit"
    assert result["worker"] == "cache"
    assert result["nodes"] == 0
    assert result["score"] == first["score"] == -1
    assert solved_by_a_worker["all"]["result"]["moves"][result["best_move"]] == -1
    assert result["exact"] is True
    assert view["attempts"] == 0
    assert response.headers["Location"] == f"/v1/analyses/{view['id']}"

    # The same job record as a worker's: GET and the event stream give the same analysis.
    assert api.get(f"/v1/analyses/{view['id']}").json() == view
    assert api.get(f"/v1/analyses/{view['id']}", params={"wait": 1}).json() == view
    # Its one step is the answer itself, as a worker's answer read and not searched has.
    step = {"depth": result["depth"], "score": -1, "exact": True, "pv": result["pv"]}
    assert view["progress"] == {
        **step,
        "nodes": 0,
        "time_ms": view["progress"]["time_ms"],
        "bounds": None,
    }
    assert read_events(api, view["id"]) == [("progress", view["progress"]), ("done", view)]

    # Nothing was queued; the lookup counted as hits, the job as done and answered by the cache.
    assert queued(clean_redis) == 0
    # An RQ job all the same, run by RQ at submission: never queued, done at once.
    job = Job.fetch(view["id"], connection=clean_redis, serializer=JSONSerializer)
    assert job.return_value() == result
    assert job.get_status() == JobStatus.FINISHED
    after = api.get("/v1/status").json()
    assert after["cache_hits"] > before["cache_hits"]
    assert after["cache_misses"] == before["cache_misses"]
    assert after["jobs"]["cached"] == before["jobs"].get("cached", 0) + 1
    assert after["jobs"]["done"] == before["jobs"]["done"] + 1
    metrics = api.get("/metrics").text
    assert f'plybot_cache_lookups_total{{result="hit"}} {float(after["cache_hits"])}' in metrics


def test_every_move_scored_is_answered_at_submission_when_each_child_is_cached(
    api: httpx.Client, clean_redis: redis.Redis, solved_by_a_worker: dict[str, dict[str, Any]]
) -> None:
    response = post(api, WAIT, position=POSITION, mode="solve", moves="all")
    assert response.status_code == 200, response.text
    result, first = response.json()["result"], solved_by_a_worker["all"]["result"]
    assert result["worker"] == "cache"
    assert result["moves"] == first["moves"]
    assert result["score"] == first["score"] == max(result["moves"].values())
    assert result["moves"][result["best_move"]] == result["score"]
    assert queued(clean_redis) == 0


@pytest.mark.usefixtures("solved_by_a_worker")
def test_without_wait_a_cached_answer_is_accepted_already_done(
    api: httpx.Client, clean_redis: redis.Redis
) -> None:
    response = post(api, position=POSITION, mode="solve")
    assert response.status_code == 202, response.text
    assert response.json()["status"] == "done"
    view = api.get(response.headers["Location"]).json()
    assert view["result"]["worker"] == "cache"
    assert queued(clean_redis) == 0


@pytest.mark.usefixtures("clean_redis", "solved_by_a_worker")
def test_a_cached_answer_is_delivered_to_its_webhook(api: httpx.Client) -> None:
    with WebhookReceiver() as receiver:
        response = post(api, position=POSITION, mode="solve", callback_url=receiver.url)
        assert response.status_code == 202, response.text
        receiver.wait_for(1)
        _, body = receiver.requests[0]
        assert body == api.get(response.headers["Location"]).json()
        assert body["result"]["worker"] == "cache"


@pytest.mark.usefixtures("solved_by_a_worker")
def test_what_the_cache_cannot_answer_exactly_goes_to_a_worker(
    api: httpx.Client, clean_redis: redis.Redis
) -> None:
    # Not a solve; a position never solved; another game: all queued, none answered yet.
    bodies = [
        {"position": POSITION, "mode": "depth", "depth": 3},
        {"position": OTHER, "mode": "solve"},
        {"game": "tictactoe", "position": "5", "mode": "solve"},
    ]
    accepted = []
    for body in bodies:
        response = api.post("/v1/analyses", params={"wait": 0.2}, json=body)
        assert response.status_code == 202, response.text
        assert response.json()["status"] == "queued"
        accepted.append(response.json())
    assert queued(clean_redis) == len(bodies)


@pytest.mark.usefixtures("clean_redis")
def test_post_wait_answers_200_once_a_worker_is_done(
    api: httpx.Client, worker_pool: Callable[..., WorkerPool]
) -> None:
    worker_pool(1)
    response = post(api, WAIT, position=OTHER, mode="solve")
    assert response.status_code == 200, response.text
    view = response.json()
    assert view["status"] == "done"
    assert view["result"]["score"] == 2
    assert view["result"]["worker"] not in ("", "cache")
    assert view["attempts"] == 1
    assert api.get(response.headers["Location"]).json() == view


def test_post_wait_is_bounded_like_get_wait(api: httpx.Client) -> None:
    response = post(api, 10_000, position=POSITION, mode="solve")
    assert response.status_code == 422
    assert response.json()["message"].startswith("wait: wait 10000 is beyond the limit of")
    assert post(api, -1, position=POSITION, mode="solve").status_code == 422


def test_openapi_documents_both_answers_of_post(api: httpx.Client) -> None:
    operation = api.get("/openapi.json").json()["paths"]["/v1/analyses"]["post"]
    answers = operation["responses"]
    assert answers["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/AnalysisView")
    assert answers["202"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/AnalysisAccepted"
    )
    assert any(p["name"] == "wait" and p["in"] == "query" for p in operation["parameters"])


@pytest.mark.usefixtures("solved_by_a_worker")
def test_a_malformed_cache_entry_sends_the_request_to_the_queue(
    api: httpx.Client, clean_redis: redis.Redis
) -> None:
    board = new_game("connect4", POSITION)
    clean_redis.set(entry_key("connect4", board.variant, board.key()), "not,an,entry")
    response = post(api, 0.2, position=POSITION, mode="solve")
    assert response.status_code == 202, response.text
    assert response.json()["status"] == "queued"
    assert queued(clean_redis) == 1


def test_an_unreachable_cache_sends_the_request_to_the_queue(
    redis_url: str, clean_redis: redis.Redis, worker_pool: Callable[..., WorkerPool]
) -> None:
    env = {"PLYBOT_CACHE_URL": f"redis://127.0.0.1:{free_port()}/0"}
    with api_server_on(redis_url, env=env) as server, server.client() as http:
        for _ in range(2):  # the first trips the circuit breaker, the second skips the cache
            response = post(http, 0.2, position=POSITION, mode="solve")
            assert response.status_code == 202, response.text
        assert queued(clean_redis) == 1  # both requests share the one job in flight
        worker_pool(1, env=env)
        view = http.get(response.headers["Location"], params={"wait": WAIT}).json()
        assert view["status"] == "done"
        assert view["result"]["score"] == -1
        assert view["result"]["worker"] not in ("", "cache")


def test_what_the_book_and_the_database_settle_is_answered_at_submission(
    redis_url: str, clean_redis: redis.Redis
) -> None:
    # The tests' APIs run without the database; this one has it. No worker runs, and the
    # analysis queue is full: a position past the database is refused, while every column
    # of a position the book settles (ply 5), or two plies above the database (ply 10, a
    # solve of seconds without it), is answered by the API alone.
    env = {"PLYBOT_SOLVER_DATABASE": "true", "PLYBOT_API_MAX_QUEUED": "1"}
    with api_server_on(redis_url, env=env) as server, server.client() as http:
        assert post(http, position=POSITION, mode="solve").status_code == 202
        refused = post(http, position=OTHER, mode="solve")
        assert refused.status_code == 503, refused.text
        assert "the analysis queue is full" in refused.json()["message"]
        slow = "5655723221"
        for position in ("44533", slow):
            response = post(http, WAIT, position=position, mode="solve", moves="all")
            assert response.status_code == 200, response.text
            view = response.json()
            result = view["result"]
            assert (view["status"], result["worker"], result["nodes"]) == ("done", "book", 0)
            assert result["exact"] is True
            reference = analyze(Connect4.parse(position), mode="solve", all_moves=True)
            assert result["moves"] == {str(c + 1): v for c, v in reference.moves.items()}
            assert result["score"] == max(result["moves"].values())
            assert result["moves"][result["best_move"]] == result["score"]
            if position == slow:
                assert result["score"] == SLOW[slow]
            # The line read from the book and the databases: best moves, to 13 stones at
            # least (further where the 13-stone database, built as it goes, holds them).
            assert result["pv"][0] == result["best_move"]
            assert len(position) + len(result["pv"]) >= 13, result["pv"]
            assert read_events(http, view["id"]) == [("progress", view["progress"]), ("done", view)]
            job = Job.fetch(view["id"], connection=clean_redis, serializer=JSONSerializer)
            assert job.get_status() == JobStatus.FINISHED
            assert job.return_value() == result
            # The best move alone, too.
            best = post(http, WAIT, position=position, mode="solve").json()["result"]
            assert (best["worker"], best["score"]) == ("book", result["score"])
            assert result["moves"][best["best_move"]] == result["score"]
        assert queued(clean_redis) == 1  # the first request's, still waiting for a worker

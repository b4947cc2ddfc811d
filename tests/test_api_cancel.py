"""``DELETE /v1/analyses/{id}``, end to end (real API under uvicorn, real workers, real Redis).

Waiting jobs are made by submitting with no worker running; a running one is a long
depth search caught at its first progress event.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import redis
from rq.executions import Execution, ExecutionRegistry
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from tests.fixtures.api import api_server_on
from tests.fixtures.waiting import wait_for
from worker.process.processes import WorkerPool

pytestmark = [pytest.mark.redis, pytest.mark.service]

WAIT = 20
BODY = {"game": "tictactoe", "position": "3", "mode": "solve"}
# Long enough to cancel mid-way, with a progress event per completed depth.
LONG = {"game": "connect4", "position": "44", "mode": "depth", "depth": 14}
# A search that runs until the job's timeout: still running whenever a test stops its worker.
ENDLESS = {"game": "connect4", "position": "44", "mode": "depth", "depth": 30}


def submit(http: httpx.Client, body: dict[str, Any] = BODY) -> dict[str, Any]:
    response = http.post("/v1/analyses", json=body)
    assert response.status_code == 202, response.text
    return response.json()


def test_cancel_a_waiting_analysis(api: httpx.Client, clean_redis: redis.Redis) -> None:
    accepted = submit(api)
    assert accepted["status"] == "queued"
    assert clean_redis.llen("rq:queue:analysis") == 1
    response = api.delete(accepted["status_url"])
    assert response.status_code == 200, response.text
    assert response.json() == {
        "id": accepted["id"],
        "outcome": "canceled",
        "message": "canceled: it had not started",
        "status": "failed",
    }
    view = api.get(accepted["status_url"]).json()
    assert view["status"] == "failed"
    assert view["error"] == "canceled by the requester"
    assert clean_redis.llen("rq:queue:analysis") == 0
    # Finished now: a second cancel is a conflict, and an identical request gets a new job.
    again = api.delete(accepted["status_url"])
    assert again.status_code == 409
    assert again.json()["message"] == (
        f"analysis {accepted['id']} has already finished (failed); nothing to cancel"
    )
    assert submit(api)["id"] != accepted["id"]


def test_a_shared_analysis_goes_on_until_its_last_requester_cancels(
    api: httpx.Client, clean_redis: redis.Redis
) -> None:
    first, second = submit(api), submit(api)
    assert first["id"] == second["id"]  # identical requests in flight share one job
    withdrawn = api.delete(first["status_url"]).json()
    assert withdrawn["outcome"] == "shared"
    assert withdrawn["status"] == "queued"
    assert submit(api)["id"] == first["id"]  # a third requester joins it
    assert api.delete(first["status_url"]).json()["outcome"] == "shared"
    last = api.delete(first["status_url"]).json()
    assert last["outcome"] == "canceled"
    assert last["status"] == "failed"
    assert clean_redis.llen("rq:queue:analysis") == 0


@pytest.mark.usefixtures("clean_redis")
def test_cancel_a_running_analysis_stops_it(
    api: httpx.Client, worker_pool: Callable[..., WorkerPool]
) -> None:
    worker_pool(1)
    accepted = submit(api, LONG)
    with api.stream("GET", accepted["events_url"]) as stream:  # wait for its first depth
        for line in stream.iter_lines():
            if line == "event: progress":
                break
    response = api.delete(accepted["status_url"])
    assert response.status_code == 200, response.text
    assert response.json()["outcome"] == "stopping"
    view = api.get(accepted["status_url"], params={"wait": WAIT}).json()
    assert view["status"] == "failed"
    assert view["error"] == "canceled by the requester"
    assert view["progress"]["depth"] < 14


def test_cancel_an_analysis_whose_worker_hung_stops_it(
    api: httpx.Client, clean_redis: redis.Redis, worker_pool: Callable[..., WorkerPool]
) -> None:
    """Its worker hung (or died) with the job: RQ still says it started, and lists its run
    (RQ's execution) a minute longer than it keeps the run's record (the lease). RQ's
    cancel read that record and raised (``Execution ... not found in Redis``): a 500, and
    the connection closed under the next request (the soak's cancel lane: a 500, a reset)."""
    pool = worker_pool(1, env={"PLYBOT_CACHE_ENABLED": "false"})
    accepted = submit(api, ENDLESS)
    with api.stream("GET", accepted["events_url"]) as stream:  # wait for its first depth
        for line in stream.iter_lines():
            if line == "event: progress":
                break
    job_id = accepted["id"]
    (name,) = pool.workers()
    pid = pool.kill_worker(name, signal.SIGSTOP)
    try:

        def run_record_gone() -> bool:
            listed = ExecutionRegistry(job_id, clean_redis).get_execution_ids()
            gone = [
                e for e in listed if not clean_redis.exists(Execution(e, job_id, clean_redis).key)
            ]
            return bool(gone)

        wait_for(run_record_gone, "the hung run's record expired, RQ still listing the run")
        job = Job.fetch(job_id, connection=clean_redis, serializer=JSONSerializer)
        assert job.get_status() == JobStatus.STARTED  # nobody reclaimed it: one worker
        response = api.delete(accepted["status_url"])
        assert response.status_code == 200, response.text
        assert response.json()["outcome"] == "stopping"
    finally:
        os.kill(pid, signal.SIGCONT)
    view = api.get(accepted["status_url"], params={"wait": WAIT}).json()
    assert view["status"] == "failed"
    assert view["error"] == "canceled by the requester"


@pytest.mark.usefixtures("clean_redis")
def test_cancel_a_finished_analysis_is_a_conflict(
    api: httpx.Client, worker_pool: Callable[..., WorkerPool]
) -> None:
    worker_pool(1)
    response = api.post("/v1/analyses", params={"wait": WAIT}, json=BODY)
    assert response.status_code == 200, response.text
    conflict = api.delete(response.headers["Location"])
    assert conflict.status_code == 409
    assert "has already finished (done); nothing to cancel" in conflict.json()["message"]
    assert api.get(response.headers["Location"]).json() == response.json()  # untouched


def test_cancel_an_unknown_analysis_is_not_found(api: httpx.Client) -> None:
    response = api.delete("/v1/analyses/nope")
    assert response.status_code == 404
    assert response.json()["message"] == "'nope': no such job"


@pytest.mark.usefixtures("clean_redis")
def test_cancel_is_rate_limited_with_the_posts(redis_url: str) -> None:
    with (
        api_server_on(redis_url, env={"PLYBOT_API_RATE_LIMIT": "2"}) as server,
        server.client() as http,
    ):
        accepted = submit(http)
        assert http.delete(accepted["status_url"]).status_code == 200
        limited = http.delete(accepted["status_url"])
        assert limited.status_code == 429
        assert int(limited.headers["Retry-After"]) > 0


def test_openapi_documents_the_cancel(api: httpx.Client) -> None:
    operation = api.get("/openapi.json").json()["paths"]["/v1/analyses/{analysis_id}"]["delete"]
    assert {"200", "404", "409", "429"} <= set(operation["responses"])
    assert "withdraws one requester" in json.dumps(operation)

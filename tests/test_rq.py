"""plybot's jobs are RQ jobs and its workers RQ workers: what an RQ user does works.

Real ``redis-server``, real worker processes (``plybot worker``, and RQ's own ``rq worker``
command with plybot's class), real HTTP through uvicorn. Each test waits for states.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import redis
from rq import Queue, Worker
from rq.command import send_stop_job_command
from rq.job import Job, JobStatus
from rq.registry import CanceledJobRegistry, FailedJobRegistry, FinishedJobRegistry
from rq.serializers import JSONSerializer
from rq.suspension import resume, suspend

from tests.fixtures.rq_callbacks import SUCCESSES
from tests.fixtures.tools import TOOLS, require_tool
from tests.fixtures.waiting import wait_for
from worker.core.contract import AnalysisRequest, JobState, MoveRequest
from worker.core.jobstore import JobStore
from worker.core.kinds import KINDS
from worker.process.processes import WorkerPool, stop_process

pytestmark = [pytest.mark.redis, pytest.mark.service, pytest.mark.slow]

RQ = os.path.join(os.path.dirname(sys.executable), "rq")
#: A search that runs until its job's timeout (the generic search, 30 plies deep): running
#: whenever a test looks, whatever the machine's speed or the cache holds.
ENDLESS = {"game": "connect4", "position": "44", "mode": "depth", "depth": 30}


def analysis_queue(conn: redis.Redis) -> Queue:
    return Queue(KINDS["analysis"].queue, connection=conn, serializer=JSONSerializer)


def fetch(conn: redis.Redis, job_id: str) -> Job:
    return Job.fetch(job_id, connection=conn, serializer=JSONSerializer)


def status(conn: redis.Redis, job_id: str) -> JobStatus | None:
    return fetch(conn, job_id).get_status(refresh=True)


def rq_command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([RQ, *args], capture_output=True, text=True, check=True, timeout=60)


@pytest.fixture
def store(clean_redis: redis.Redis) -> JobStore:
    return JobStore(clean_redis)


@pytest.mark.parametrize(
    ("function", "payload", "reason"),
    [
        ("no.such.module.function", {"position": "4"}, "no.such.module"),
        (KINDS["analysis"].function, {"position": "448", "mode": "solve"}, "'448'"),
        (KINDS["move"].function, {"level": "godlike"}, "level"),
    ],
)
def test_a_job_plybot_cannot_run_fails_visibly_with_its_reason(
    clean_redis: redis.Redis,
    worker_pool: Callable[..., WorkerPool],
    function: str,
    payload: dict[str, Any],
    reason: str,
) -> None:
    worker_pool(1, queues="interactive,analysis")
    job = analysis_queue(clean_redis).enqueue(function, payload)
    wait_for(lambda: status(clean_redis, job.id) == JobStatus.FAILED, "failed")
    failed = FailedJobRegistry(queue=analysis_queue(clean_redis)).get_job_ids()
    assert job.id in failed
    info = fetch(clean_redis, job.id).latest_result()
    assert info is not None
    assert info.exc_string is not None
    assert reason in info.exc_string
    # Not retried: the same payload would fail the same way.
    assert fetch(clean_redis, job.id).retries_left in (None, 0)


def test_rq_suspend_holds_new_jobs_until_rq_resume(
    clean_redis: redis.Redis, worker_pool: Callable[..., WorkerPool], store: JobStore
) -> None:
    pool = worker_pool(1)
    suspend(clean_redis)
    try:
        job_id = store.submit(MoveRequest(game="tictactoe", position="5", level="hard")).id
        # The worker, blocked waiting when RQ was suspended, hands it back and waits.
        wait_for(
            lambda: any(w.get_state() == "suspended" for w in Worker.all(connection=clean_redis)),
            "the worker suspended",
        )
        assert status(clean_redis, job_id) == JobStatus.QUEUED
        assert pool.workers()
    finally:
        resume(clean_redis)
    wait_for(lambda: status(clean_redis, job_id) == JobStatus.FINISHED, "run after rq resume")


def _running(store: JobStore, job_id: str) -> JobState | None:
    state = store.state(job_id)
    assert state is not None
    assert not state.finished, state
    return state if state.status == "running" else None


def test_job_cancel_on_a_running_analysis_stops_it_and_it_stays_canceled(
    clean_redis: redis.Redis, worker_pool: Callable[..., WorkerPool], store: JobStore
) -> None:
    pool = worker_pool(1)
    job_id = store.submit(AnalysisRequest(**ENDLESS)).id
    wait_for(lambda: _running(store, job_id), "running")
    fetch(clean_redis, job_id).cancel()  # RQ's own API, as an operator would
    wait_for(lambda: all(not w.get("job") for w in pool.workers().values()), "worker free")
    assert status(clean_redis, job_id) == JobStatus.CANCELED
    queue = analysis_queue(clean_redis)
    assert CanceledJobRegistry(queue=queue).get_job_ids() == [job_id]
    assert job_id not in FinishedJobRegistry(queue=queue).get_job_ids()
    state = store.state(job_id)
    assert state is not None
    assert state.status == "failed"
    assert state.error is not None
    assert state.error.startswith("canceled")


def test_rq_empty_is_not_undone_and_the_requester_is_told(
    clean_redis: redis.Redis, worker_pool: Callable[..., WorkerPool], store: JobStore
) -> None:
    ids = [store.submit(AnalysisRequest(game="tictactoe", position=p)).id for p in "123"]
    rq_command("empty", "--url", _url(clean_redis), "--serializer", "json", "analysis")
    assert analysis_queue(clean_redis).count == 0
    pool = worker_pool(1)  # workers that come later find nothing to run again
    for job_id in ids:
        assert not Job.exists(job_id, connection=clean_redis)
        state = store.state(job_id)
        assert state is not None
        assert state.status == "failed"
        assert state.error is not None
        assert "removed" in state.error
    # Served since: a job submitted after the empty runs, the emptied ones never do.
    later = store.submit(AnalysisRequest(game="tictactoe", position="5")).id
    wait_for(lambda: status(clean_redis, later) == JobStatus.FINISHED, "a later job")
    assert analysis_queue(clean_redis).count == 0
    assert pool.workers()
    assert all(not Job.exists(job_id, connection=clean_redis) for job_id in ids)


def test_rq_requeue_runs_a_failed_job_again(
    clean_redis: redis.Redis, worker_pool: Callable[..., WorkerPool]
) -> None:
    worker_pool(1)
    job = analysis_queue(clean_redis).enqueue(
        KINDS["analysis"].function, {"game": "tictactoe", "position": "55"}
    )
    wait_for(lambda: status(clean_redis, job.id) == JobStatus.FAILED, "failed")
    # The operator fixes the payload, then requeues it with RQ's own command.
    fixed = fetch(clean_redis, job.id)
    assert fixed.func_name == KINDS["analysis"].function
    fixed.args = [{"game": "tictactoe", "position": "5"}]
    fixed.save()
    rq_command(
        "requeue",
        "--url",
        _url(clean_redis),
        "--serializer",
        "json",
        "--queue",
        "analysis",
        "--all",
    )
    wait_for(lambda: status(clean_redis, job.id) == JobStatus.FINISHED, "requeued, done")
    assert fetch(clean_redis, job.id).return_value()["exact"] is True


def test_rq_worker_command_with_plybots_class_serves_a_bot_move(
    clean_redis: redis.Redis, redis_url: str, store: JobStore
) -> None:
    job_id = store.submit(MoveRequest(game="connect4", position="44", level="hard")).id
    env = {**os.environ, "REDIS_URL": redis_url}
    worker = subprocess.Popen(
        [
            RQ,
            "worker",
            "--url",
            redis_url,
            "--worker-class",
            "worker.process.runner.PlybotWorker",
            "--serializer",
            "rq.serializers.JSONSerializer",
            "interactive",
            "analysis",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(
            lambda: status(clean_redis, job_id) == JobStatus.FINISHED,
            "the bot move done by `rq worker`",
            timeout=180,
        )
        state = store.state(job_id)
        assert state is not None
        assert state.result is not None
        assert state.result.move in "1234567"
        assert any(w.pid == worker.pid for w in Worker.all(connection=clean_redis))
    finally:
        stop_process(worker)


def test_rq_info_sees_the_workers_and_the_job_they_run(
    clean_redis: redis.Redis, worker_pool: Callable[..., WorkerPool], store: JobStore
) -> None:
    pool = worker_pool(2)
    job_id = store.submit(AnalysisRequest(**ENDLESS)).id
    wait_for(lambda: _running(store, job_id), "running")
    names = set(pool.workers())
    assert {w.name for w in Worker.all(connection=clean_redis)} == names
    busy = {w.get_current_job_id() for w in Worker.all(connection=clean_redis)}
    assert job_id in busy
    shown = rq_command("info", "--url", _url(clean_redis)).stdout
    assert "2 workers" in shown, shown
    assert "1 executing" in shown, shown
    assert all(name in shown for name in names), shown
    store.cancel(job_id)


def test_depends_on_and_success_callbacks_work_for_plybots_jobs(
    clean_redis: redis.Redis, worker_pool: Callable[..., WorkerPool]
) -> None:
    from rq import Callback

    worker_pool(1)
    queue = analysis_queue(clean_redis)
    first = queue.enqueue(KINDS["analysis"].function, {"game": "tictactoe", "position": "5"})
    second = queue.enqueue(
        KINDS["analysis"].function,
        {"game": "tictactoe", "position": "51"},
        depends_on=first,
        on_success=Callback("tests.fixtures.rq_callbacks.record_success"),
    )
    wait_for(lambda: status(clean_redis, second.id) == JobStatus.FINISHED, "dependent done")
    assert fetch(clean_redis, first.id).ended_at <= fetch(clean_redis, second.id).started_at
    recorded = clean_redis.lrange(SUCCESSES, 0, -1)
    assert recorded == [second.id.encode()]


def _url(conn: redis.Redis) -> str:
    kwargs = conn.connection_pool.connection_kwargs
    return f"redis://{kwargs['host']}:{kwargs['port']}/{kwargs.get('db', 0)}"


#: rq-dashboard, in a virtualenv of its own (a tool, never a dependency): `make tools`.
DASHBOARD = TOOLS / "rq-dashboard" / "bin" / "rq-dashboard"


@pytest.fixture
def dashboard(redis_url: str) -> Iterator[str]:
    """rq-dashboard with its JSON serializer option, on a free port."""
    binary = os.environ.get("PLYBOT_RQ_DASHBOARD") or str(DASHBOARD)
    require_tool(binary, "rq-dashboard")
    from worker.process.redis_server import free_port

    port = free_port()
    process = subprocess.Popen(
        [binary, "--json", "--redis-url", redis_url, "--port", str(port), "--bind", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _answers(url), "rq-dashboard up")
        yield url
    finally:
        stop_process(process)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url).status_code == 200
    except httpx.HTTPError:
        return False


def test_rq_dashboard_pages_answer(
    dashboard: str, worker_pool: Callable[..., WorkerPool], store: JobStore
) -> None:
    worker_pool(1)
    done = store.submit(AnalysisRequest(game="tictactoe", position="5")).id
    wait_for(lambda: (s := store.state(done)) is not None and s.finished, "done")
    pages = [
        "/0/view/queues",
        "/0/view/workers",
        "/0/view/jobs",
        f"/0/view/job/{done}",
        "/0/data/queues.json",
        "/0/data/jobs/analysis/finished/8/asc/1.json",
        f"/0/data/job/{done}.json",
        # With every worker idle: rq-dashboard 0.9.0 reads a busy worker's job with RQ's
        # default serializer, whatever its --json option says (the README says so).
        "/0/data/workers.json",
    ]
    for page in pages:
        answer = httpx.get(dashboard + page, follow_redirects=True)
        assert answer.status_code == 200, (page, answer.status_code)
    assert done in httpx.get(dashboard + f"/0/data/job/{done}.json").text


# The HTTP API's tests last: the module's workers they start serve the rest of the module.


def test_a_job_enqueued_with_plain_rq_runs_and_its_return_value_is_the_http_result(
    clean_redis: redis.Redis, api_service: Any
) -> None:
    # Any Python program: RQ's queue, the JSON serializer, the job function by name.
    job = analysis_queue(clean_redis).enqueue(
        KINDS["analysis"].function, {"game": "connect4", "position": "3344", "mode": "solve"}
    )
    wait_for(lambda: status(clean_redis, job.id) == JobStatus.FINISHED, "plain RQ job done")
    value = fetch(clean_redis, job.id).return_value()
    assert isinstance(value, dict)
    with api_service.client() as http:
        shown = http.get(f"/v1/analyses/{job.id}")
        assert shown.status_code == 200, shown.text
        assert shown.json()["result"] == value
        # And an analysis submitted over HTTP is an RQ job with the same result.
        posted = http.post("/v1/analyses?wait=30", json={"position": "3344", "mode": "solve"})
        assert posted.status_code == 200, posted.text
        body = posted.json()
    assert fetch(clean_redis, body["id"]).return_value() == body["result"]
    assert body["result"]["score"] == value["score"]
    assert value["exact"] is True


def test_a_cache_hit_is_an_rq_job_too(clean_redis: redis.Redis, api_service: Any) -> None:
    with api_service.client() as http:
        first = http.post("/v1/analyses?wait=30", json={"position": "7172", "mode": "solve"}).json()
        again = http.post("/v1/analyses?wait=30", json={"position": "7172", "mode": "solve"}).json()
    assert again["result"]["cache"] == "hit", again
    job = fetch(clean_redis, again["id"])  # raises NoSuchJobError if RQ does not know it
    assert job.get_status() == JobStatus.FINISHED
    assert job.return_value() == again["result"]
    assert again["result"]["score"] == first["result"]["score"]


def test_stop_job_command_on_a_running_analysis_stops_it_and_http_sees_it(
    clean_redis: redis.Redis, api_service: Any
) -> None:
    with api_service.client() as http:
        posted = http.post("/v1/analyses", json=ENDLESS)
        assert posted.status_code == 202, posted.text
        job_id = posted.json()["id"]
        wait_for(lambda: status(clean_redis, job_id) == JobStatus.STARTED, "running")
        send_stop_job_command(clean_redis, job_id, serializer=JSONSerializer)
        wait_for(lambda: status(clean_redis, job_id) == JobStatus.STOPPED, "stopped")
        shown = http.get(f"/v1/analyses/{job_id}?wait=10").json()
    assert shown["status"] == "failed", shown
    assert "stopped" in shown["error"], shown

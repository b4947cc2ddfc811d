"""One warm worker process: pops jobs from RQ's queues and runs them in-process, no fork.

Each process compiles and loads the engine once (:func:`worker.jobs.warm_up`),
keeps the solver's transposition table from job to job, and serves the
``interactive`` queue before ``analysis`` (one ``BLPOP`` over both, in order).

The loop is our own on RQ's primitives (its queues, its job records, its
``UnixSignalDeathPenalty`` for the job timeout) rather than RQ's
``SimpleWorker``, whose per-job bookkeeping (registries, executions, results
stream: a dozen round trips) alone would exceed the 5 ms queue-overhead budget.
A job costs three round trips: ``BLPOP``, a start script, a finish script (which also
carries the position cache's hit and miss counts).

Liveness and recovery (RQ alone notices a dead worker only after minutes):

* A worker's lease is the key ``plybot:alive:<name>`` with a short TTL
  (``worker_lease_s``), renewed by a thread in the worker and, from outside the
  process (so a long compiled search holding the GIL cannot starve it), by the
  supervisor (:mod:`worker.supervisor`) for every child it sees alive.
* ``plybot:running`` maps each running job to its worker. A reaper in every
  worker (every ``reaper_interval_s``) and in the supervisor (at once when a
  child dies) finds jobs whose worker's lease lapsed and puts them back at the
  front of their queue, or, when they already ran ``job_max_attempts`` times,
  fails them with an error that reaches the requester.
* The reaper also drops bot moves that waited past ``interactive_ttl_s``.

SIGTERM / Ctrl-C: finish the job in hand, take no new one, exit. A second
signal: exit at once; the job in hand goes back to the queue.

Run by the supervisor as ``python -m worker.runner --name NAME``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from types import FrameType
from typing import Any

import redis
from rq.timeouts import JobTimeoutException, UnixSignalDeathPenalty

from worker import jobs, keys
from worker.contract import AnalysisResult, MoveResult
from worker.jobstore import JobStore, Started
from worker.processes import die_with_parent
from worker.settings import Settings, get_settings

__all__ = ["Worker", "reap"]

log = logging.getLogger("plybot.worker")

#: The job function of each kind of job (the same RQ names in the job's record).
JOB_FUNCTIONS = {"analysis": jobs.analysis_job, "move": jobs.move_job}
RESULT_MODELS: dict[str, type[AnalysisResult] | type[MoveResult]] = {
    "analysis": AnalysisResult,
    "move": MoveResult,
}


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class _Stop(Exception):
    """Raised by the signal handler to leave an idle ``BLPOP``."""


def reap(store: JobStore) -> list[str]:
    """Requeue (or, past the attempt limit, fail) jobs whose worker's lease lapsed.

    Safe to run in any number of processes at once: ``HDEL`` on ``plybot:running``
    decides which one handles a job. Returns the ids handled.
    """
    conn = store.redis
    handled = []
    for raw_job, raw_worker in conn.hgetall(keys.RUNNING).items():
        job_id, worker = _text(raw_job), _text(raw_worker)
        if conn.exists(keys.alive(worker)):
            continue
        if not conn.hdel(keys.RUNNING, job_id):
            continue  # another reaper took it
        state = store.state(job_id)
        if state is None or state.finished:
            continue
        limit = store.settings.job_max_attempts
        if state.attempts >= limit:
            error = (
                f"failed: the worker running this job died, {state.attempts} times "
                f"(the limit is {limit} runs); last on worker {worker}"
            )
            log.warning("job %s: worker %s died; giving up after %d runs", job_id, worker, limit)
            store.finish(job_id, None, error=error)
        else:
            log.warning("job %s: worker %s died; back on the queue", job_id, worker)
            store.requeue(job_id)
        handled.append(job_id)
    for name in conn.hkeys(keys.WORKERS):
        if not conn.exists(keys.alive(_text(name))):
            conn.hdel(keys.WORKERS, name)
    handled += store.expire_waiting()
    handled += store.recover_lost()
    return handled


def _describe(started: Started, timeout: int, exc: BaseException) -> str:
    """One line for the requester: what went wrong, never a traceback."""
    if isinstance(exc, jobs.JobCanceled | jobs.JobDropped | ValueError):
        return str(exc)
    if isinstance(exc, JobTimeoutException):
        return f"timed out: the job ran past its limit of {timeout} s"
    return f"internal error in the worker: {type(exc).__name__}: {exc}"


class Worker:
    """A warm worker: the loop, the lease, the reaper."""

    def __init__(
        self,
        name: str,
        connection: redis.Redis,
        settings: Settings,
        queues: list[str] | None = None,
    ) -> None:
        self.name = name
        self.connection = connection
        self.settings = settings
        self.queues = queues or list(keys.QUEUES)
        self.store = JobStore(connection, settings)
        self.cache = None
        if settings.cache_enabled:
            from worker.position_cache import RedisPositionCache

            cache_url = settings.cache_url or settings.redis_url
            assert cache_url
            self.cache = RedisPositionCache(cache_url, settings)
        # The cache's counters ride with each job's finish script when it lives in this Redis.
        self.cache_in_job_redis = settings.cache_url in (None, "", settings.redis_url)
        self.busy = False
        self.stop_requested = False
        self._stop_threads = threading.Event()

    # -- lease and reaper ------------------------------------------------------------

    def renew_lease(self) -> None:
        context = jobs.current
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "queues": self.queues,
            "job": context.job_id if context else None,
        }
        with self.connection.pipeline(transaction=False) as pipe:
            pipe.set(keys.alive(self.name), 1, px=int(self.settings.worker_lease_s * 1000))
            pipe.hset(keys.WORKERS, self.name, json.dumps(info))
            pipe.execute()

    def _housekeeping(self) -> None:
        """Renew the lease and run the reaper, until the process ends."""
        store = JobStore(
            redis.Redis(connection_pool=self.connection.connection_pool), self.settings
        )
        interval = min(self.settings.worker_lease_s / 3, self.settings.reaper_interval_s)
        last_reap = 0.0
        while not self._stop_threads.wait(interval):
            try:
                self.renew_lease()
                if time.monotonic() - last_reap >= self.settings.reaper_interval_s:
                    last_reap = time.monotonic()
                    reap(store)
            except (redis.RedisError, OSError) as exc:
                log.warning("housekeeping failed: %s", exc)

    # -- signals ---------------------------------------------------------------------

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.stop_requested:  # second signal: leave now, the reaper requeues the job
            log.warning("cold shutdown: the job in hand goes back to the queue")
            self._stop_threads.set()
            try:
                self.connection.delete(keys.alive(self.name))
            finally:
                os._exit(1)
        self.stop_requested = True
        if not self.busy:
            raise _Stop()
        log.info("stopping after the job in hand")

    # -- the loop --------------------------------------------------------------------

    def run(self) -> None:
        """Serve jobs until a signal asks to stop."""
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        self.renew_lease()
        threading.Thread(target=self._housekeeping, name="housekeeping", daemon=True).start()
        queue_keys = [keys.rq_queue(q) for q in self.queues]
        backoff = 0.5
        try:
            while not self.stop_requested:
                try:
                    popped = self.connection.blpop(queue_keys, timeout=5)
                    backoff = 0.5
                except (redis.ConnectionError, redis.TimeoutError) as exc:
                    log.warning("Redis unreachable (%s); retrying in %.1f s", exc, backoff)
                    time.sleep(backoff)
                    backoff = min(backoff * 2, 2.0)
                    continue
                if popped is None:
                    continue
                self.busy = True
                try:
                    self.execute(_text(popped[1]))
                finally:
                    self.busy = False
        except _Stop:
            pass
        finally:
            self.teardown()

    def execute(self, job_id: str) -> None:
        """Run one job and record its result or error (exactly once, see ``JobStore.finish``)."""
        started = self.store.start(job_id, self.name)
        if started is None:  # canceled, dropped or answered while it waited
            return
        timeout = (
            self.settings.analysis_timeout_s
            if started.kind == "analysis"
            else self.settings.interactive_timeout_s
        )
        jobs.current = jobs.JobContext(
            store=self.store,
            worker=self.name,
            cache=self.cache,
            job_id=job_id,
            attempt=started.attempt,
            enqueued_at=started.enqueued_at,
            last_flush=time.monotonic(),
        )
        try:
            with UnixSignalDeathPenalty(timeout, JobTimeoutException, job_id=job_id):
                output: Any = JOB_FUNCTIONS[started.kind](started.request)
            result = RESULT_MODELS[started.kind].model_validate(output)
        except Exception as exc:
            if not isinstance(exc, jobs.JobCanceled | jobs.JobDropped | ValueError):
                log.exception("job %s failed", job_id)
            error = _describe(started, timeout, exc)
            context = jobs.current
            self.store.finish(
                job_id,
                None,
                error=error,
                worker=self.name,
                dedupe=started.dedupe,
                progress=(context.seq, context.pending),
                cache_counts=self._cache_counts(),
            )
            log.info("job %s (%s) failed: %s", job_id, started.kind, error)
        else:
            context = jobs.current
            self.store.finish(
                job_id,
                result,
                worker=self.name,
                dedupe=started.dedupe,
                progress=(context.seq, context.pending),  # every depth, before the result
                cache_counts=self._cache_counts(),
            )
            log.info(
                "job %s (%s, attempt %d) done: engine %.1f ms, cache %s",
                job_id,
                started.kind,
                started.attempt,
                result.time_ms,
                result.cache,
            )
        finally:
            jobs.current = None
            if self.cache is not None:
                self.cache.flush_stats()  # counts the finish script did not carry, if any
            if self.settings.solver_fresh_table:
                jobs.clear_tables()  # after the answer, not before: off the next request's path

    def _cache_counts(self) -> tuple[str, int, int] | None:
        """The cache's pending hit and miss counts, for the finish script to carry."""
        if self.cache is None or not self.cache_in_job_redis:
            return None
        from worker.position_cache import CACHE_STATS

        return (CACHE_STATS, *self.cache.take_stats())

    def teardown(self) -> None:
        self._stop_threads.set()
        try:
            with self.connection.pipeline(transaction=False) as pipe:
                pipe.delete(keys.alive(self.name))
                pipe.hdel(keys.WORKERS, self.name)
                pipe.execute()
        except redis.RedisError:
            pass


def run(name: str, url: str, queues: list[str] | None = None) -> int:
    """Warm up, then serve jobs until told to stop."""
    settings = get_settings().model_copy(update={"redis_url": url})
    if not die_with_parent():  # the supervisor died before we could follow it
        return 1
    connection = redis.Redis.from_url(
        url,
        socket_timeout=settings.redis_socket_timeout_s + 5,  # above BLPOP's 5 s
        socket_connect_timeout=settings.redis_socket_timeout_s,
        health_check_interval=30,
    )
    worker = Worker(name, connection, settings, queues)
    seconds = jobs.warm_up(worker.cache)
    if settings.solver_fresh_table:
        jobs.clear_tables()  # the first job, too, starts from an empty table
    log.info("pid %d: engine warm in %.2f s, serving %s", os.getpid(), seconds, worker.queues)
    worker.run()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m worker.runner")
    parser.add_argument("--name", required=True)
    parser.add_argument("--url", default=None)
    parser.add_argument("--queues", default=",".join(keys.QUEUES))
    args = parser.parse_args(argv)
    url = args.url or get_settings().redis_url
    if not url:
        print("worker: no Redis (set REDIS_URL or pass --url)", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(asctime)s worker {args.name} %(levelname)s %(message)s",
        datefmt="%H:%M:%S",
    )
    return run(args.name, url, args.queues.split(","))


if __name__ == "__main__":
    sys.exit(main())

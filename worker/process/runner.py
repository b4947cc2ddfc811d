"""One warm worker process: pops jobs from RQ's queues and runs them in-process, no fork.

Each process compiles and loads the engine once (:func:`worker.process.jobs.warm_up`),
keeps the solver's transposition table from job to job, and serves the
``interactive`` queue before ``analysis`` (one ``BLPOP`` over both, in order).

The loop is our own on RQ's primitives (its queues, its job records, its
``UnixSignalDeathPenalty`` for the job timeout) rather than RQ's
``SimpleWorker``, whose per-job bookkeeping (registries, executions, results
stream: a dozen round trips) alone would exceed the 5 ms queue-overhead budget.
A job costs three round trips: ``BLPOP``, a start script, a finish script (which also
carries the position cache's hit and miss counts).

Liveness and recovery (RQ alone notices a dead worker only after minutes):

* A worker's lease is its heartbeat in ``plybot:heartbeats``, stamped with
  Redis's clock by a thread of the worker itself (the compiled solver releases
  the GIL, so a long search cannot starve it) and held while younger than
  ``worker_lease_s``. Nobody beats for another process, so a hung or stopped
  worker loses its jobs; and the hash has no TTL, so ``volatile-lru`` never
  evicts a lease.
* ``plybot:running`` maps each running job to its worker. A reaper in every
  worker (every ``reaper_interval_s``) and in the supervisor (at once when a
  child dies) finds jobs whose worker's lease lapsed and puts them back at the
  front of their queue, or, when they already ran ``job_max_attempts`` times,
  fails them with an error that reaches the requester.
* The reaper also drops bot moves that waited past ``interactive_ttl_s``.

Redis outages (:mod:`worker.process.backoff`): every Redis call waits out a passing error
with backoff; a job in hand stays in hand (its start, progress and result are
sent when Redis is back), and the reaper judges nobody right after Redis restarts.

Cancels and bot moves: the same thread looks every ``WATCH_INTERVAL_S`` for a
cancel of the running job, and for a bot move that waits while every worker is
busy; either interrupts the job (the solver returns within milliseconds). A
preempted analysis goes back to the front of its queue, the run not counted.

SIGTERM / Ctrl-C: finish the job in hand, take no new one, exit. A second
signal: exit at once; the job in hand goes back to the queue. Memory within
``JOB_GROWTH_BYTES`` of ``worker_memory_mb`` after a job: the same, exiting with
``RECYCLE_EXIT`` so the supervisor starts a fresh process in its place.

Run by the supervisor as ``python -m worker.process.runner --name NAME`` with ``REDIS_URL``
in its environment (never on a command line: it may hold a password).
"""

from __future__ import annotations

import _thread
import argparse
import contextlib
import importlib
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

import redis
from rq.timeouts import JobTimeoutException, UnixSignalDeathPenalty

from worker.core import keys
from worker.core.jobstore import JobStore, Started
from worker.core.keys import as_str
from worker.core.kinds import KINDS, QUEUES
from worker.core.settings import Settings, get_settings
from worker.process import jobs
from worker.process.backoff import Backoff, is_transient, until_done
from worker.process.processes import die_with_parent

__all__ = ["Worker", "reap"]

log = logging.getLogger("plybot.worker")


def _function(path: str) -> Callable[[Any], Any]:
    module, _, name = path.rpartition(".")
    function: Callable[[Any], Any] = getattr(importlib.import_module(module), name)
    return function


#: The job function of each kind of job: the one its RQ record names (``kinds.KINDS``).
JOB_FUNCTIONS = {kind.name: _function(kind.function) for kind in KINDS.values()}


class _Stop(Exception):
    """Raised by the signal handler to leave an idle ``BLPOP``."""


def reap(store: JobStore, judge: bool = True) -> list[str]:
    """Requeue (or, past the attempt limit, fail) jobs whose worker's lease lapsed.

    A worker's lease lapses when its own heartbeat (``plybot:heartbeats``, stamped
    with Redis's clock) is older than ``worker_lease_s``: a dead, hung or stopped
    process. Right after Redis itself (re)started, every heartbeat is as old as the
    outage, so nobody is judged until each worker had a lease's time to beat again;
    likewise the caller passes ``judge=False`` until its own Redis calls have
    succeeded for a whole lease (Redis was full, or out of its reach, and so it
    was for the others' heartbeats): a Redis outage is never a worker's death,
    nor one of a job's attempts.

    Also deletes the records of finished jobs past their retention.

    Safe to run in any number of processes at once: ``HDEL`` on ``plybot:running``
    decides which one handles a job. Returns the ids handled.
    """
    conn = store.redis
    store.forget_expired()  # finished jobs past their retention (they carry no TTL)
    now, beats = store.heartbeats()
    lease_ms = store.settings.worker_lease_s * 1000

    def alive(name: str) -> bool:
        return name in beats and now - beats[name] <= lease_ms

    handled = []
    uptime_ms = int(conn.info("server").get("uptime_in_seconds", 0)) * 1000
    running = conn.hgetall(keys.RUNNING) if judge and uptime_ms > 2 * lease_ms else {}
    for raw_job, raw_worker in running.items():
        job_id, worker = as_str(raw_job), as_str(raw_worker)
        if alive(worker):
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
    for raw_name in conn.hkeys(keys.WORKERS):
        if not alive(as_str(raw_name)):
            conn.hdel(keys.WORKERS, raw_name)
    for name, beat in beats.items():  # long gone: keep the hash small
        if now - beat > 10 * lease_ms:
            conn.hdel(keys.HEARTBEATS, name)
    handled += store.expire_waiting()
    handled += store.recover_lost()
    store.trim_registries()
    return handled


def _describe(timeout: int, exc: BaseException) -> str:
    """One line for the requester: what went wrong, never a traceback."""
    if isinstance(exc, jobs.JobCanceled | jobs.JobDropped | ValueError):
        return str(exc)
    if isinstance(exc, JobTimeoutException):
        return f"timed out: the job ran past its limit of {timeout} s"
    return f"internal error in the worker: {type(exc).__name__}: {exc}"


#: A bot move that waited this long while every worker was busy preempts an analysis
#: (a free worker takes a move at once, so this never takes one from a free worker).
PREEMPT_AFTER_S = 0.15
#: How often a busy worker looks for a cancel of its job or a bot move waiting.
WATCH_INTERVAL_S = 0.1
#: The most one job adds to a worker's resident memory: a board size compiled afresh (86 MB
#: for 3x3, about 32 MB for larger boards, measured), its table being within the table budget.
JOB_GROWTH_BYTES = 128 << 20
#: The exit status of a worker that left to be replaced (memory past its budget): the
#: supervisor starts a fresh one at once, with no backoff and no warning.
RECYCLE_EXIT = 3


def _rss_bytes() -> int:
    """This process's resident memory (Linux; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class Worker:
    """A warm worker: the loop, the heartbeat, the reaper, cancels and preemption."""

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
        self.queues = queues or list(QUEUES)
        self.store = JobStore(connection, settings)
        self.cache = None
        if settings.cache_enabled:
            from worker.core.position_cache import RedisPositionCache

            cache_url = settings.cache_url or settings.redis_url
            assert cache_url
            self.cache = RedisPositionCache(cache_url, settings)
        # The cache's counters ride with each job's finish script when it lives in this Redis.
        self.cache_in_job_redis = settings.cache_url in (None, "", settings.redis_url)
        self.busy = False
        self.stop_requested = False
        self._stop_threads = threading.Event()
        #: The id of the job in hand, from its pop to its finish (orphans are the others).
        self.in_hand: str | None = None
        #: The job in hand, and whether its job function runs (only then may it be interrupted).
        self.current: Started | None = None
        self._in_job = False
        #: Set by the housekeeping thread: the exception to raise in the job (cancel, preempt).
        self._interrupt: Exception | None = None
        #: A bot move the housekeeping thread took for this worker: run next, before any pop.
        self._taken: str | None = None
        #: Stopping to be replaced by a fresh process (memory past its budget), not told to.
        self.recycle = False

    # -- heartbeat, reaper, watch ----------------------------------------------------

    def beat(self) -> None:
        """Stamp this worker's heartbeat (Redis's clock) and publish what it does."""
        current = self.current
        info: dict[str, Any] = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "queues": self.queues,
            "job": current.job_id if current else None,
            "table_bytes": jobs.table_bytes(),
            "rss": _rss_bytes(),
        }
        orphans = self._beat_store.beat(self.name, info, self.in_hand)
        if orphans:
            log.warning("gave back %d job(s) recorded as running here but not held", orphans)

    def _housekeeping(self) -> None:
        """Beat, reap, and watch the job in hand, until the process ends.

        A thread of the worker itself, on a connection of its own: the heartbeat
        stops when the process stops (SIGSTOP, a hang), so only a live worker holds
        its lease. The compiled solver releases the GIL, so a long search does not
        starve it.
        """
        store = self._beat_store
        beat_every = min(self.settings.worker_lease_s / 3, self.settings.reaper_interval_s)
        last_beat = last_reap = 0.0
        failing = False
        healthy_since = time.monotonic()  # Redis has taken our writes since then
        while not self._stop_threads.wait(WATCH_INTERVAL_S):
            try:
                now = time.monotonic()
                if now - last_beat >= beat_every:
                    self.beat()
                    last_beat = now
                if now - last_reap >= self.settings.reaper_interval_s:
                    last_reap = now
                    reap(store, judge=now - healthy_since >= self.settings.worker_lease_s)
                self._watch(store)
                if failing:
                    log.info("housekeeping: Redis is back")
                failing = False
            except (redis.RedisError, OSError) as exc:
                if not failing:
                    log.warning("housekeeping: Redis unavailable (%s); retrying", exc)
                failing = True
                healthy_since = time.monotonic()

    def _watch(self, store: JobStore) -> None:
        """Interrupt the running job if its requester canceled it, or a bot move waits.

        A bot move preempts an analysis only (never another move), and only when it
        waited ``PREEMPT_AFTER_S``: every worker is busy. The move is taken here,
        atomically, so one worker preempts per move; the analysis goes back to the
        front of its queue, its run not counted.
        """
        started = self.current
        if started is None or not self._in_job or self._interrupt is not None:
            return
        take = (
            "interactive"
            if started.kind == "analysis" and "interactive" in self.queues and not self._taken
            else None
        )
        canceled, taken = store.watch(started.job_id, take, PREEMPT_AFTER_S)
        if taken:
            self._taken = taken
            self._interrupt = jobs.JobPreempted(f"preempted by bot move {taken}")
        elif canceled:
            self._interrupt = jobs.JobCanceled("canceled by the requester")
        else:
            return
        log.info("job %s: %s", started.job_id, self._interrupt)
        _thread.interrupt_main(signal.SIGUSR1)  # raised in the job once it runs Python
        jobs.interrupt()  # and the compiled solver returns within milliseconds

    def _on_interrupt(self, _signum: int, _frame: FrameType | None) -> None:
        exc = self._interrupt
        if exc is not None and self._in_job:
            self._in_job = False  # raised once, and never outside the job function
            raise exc

    # -- signals ---------------------------------------------------------------------

    def _on_signal(self, _signum: int, _frame: FrameType | None) -> None:
        if self.stop_requested:  # second signal: leave now, the reaper requeues the job
            log.warning("cold shutdown: the job in hand goes back to the queue")
            self._stop_threads.set()
            try:
                self.store.forget_worker(self.name)
            finally:
                os._exit(1)
        self.stop_requested = True
        if not self.busy and not self._taken:
            raise _Stop()
        log.info("stopping after the job in hand")

    # -- the loop --------------------------------------------------------------------

    def run(self) -> None:
        """Serve jobs until a signal asks to stop; Redis outages are waited out."""
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGUSR1, self._on_interrupt)
        self._beat_store = JobStore(
            redis.Redis(connection_pool=self.connection.connection_pool), self.settings
        )
        queue_keys = [keys.rq_queue(q) for q in self.queues]
        backoff = Backoff(cap=2.0)
        try:
            until_done(self.beat, "first heartbeat", log)
            threading.Thread(target=self._housekeeping, name="housekeeping", daemon=True).start()
            while self._taken or not self.stop_requested:
                if self._taken:  # a bot move taken while preempting an analysis
                    job_id, self._taken = self._taken, None
                    self._serve(job_id)
                    continue
                try:
                    popped = self.connection.blpop(queue_keys, timeout=5)
                    backoff.reset()
                except redis.RedisError as exc:
                    if not is_transient(exc):
                        raise
                    delay = backoff.next()
                    log.warning("Redis unavailable (%s); retrying in %.1f s", exc, delay)
                    time.sleep(delay)
                    continue
                if popped is not None:
                    self._serve(as_str(popped[1]))
        except _Stop:
            pass
        finally:
            self.teardown()

    def _serve(self, job_id: str) -> None:
        self.busy = True
        self.in_hand = job_id
        try:
            self.execute(job_id)
        finally:
            self.busy = False
            self.in_hand = None
        self._check_memory()

    def _check_memory(self) -> None:
        """Near ``worker_memory_mb`` (less than ``JOB_GROWTH_BYTES`` left), stop taking jobs so
        that a fresh process replaces this one, and no job takes the process past its budget.

        Each board size a worker is asked about leaves compiled code behind (tens of MB
        when it was compiled here, a few when loaded), which no process can unload; its
        solver tables alone are budgeted by ``worker_table_mb``, and the book build's table,
        when one is held, by ``book_table_mb`` on top of the budget. As Celery's
        max-memory-per-child, the process is replaced between jobs, never during one.
        """
        budget = self.settings.worker_memory_mb << 20
        if budget:
            budget += jobs.book_table_bytes()
        rss = _rss_bytes()
        # The next job may compile a board size of its own: it must fit in what is left.
        if budget and rss > budget - JOB_GROWTH_BYTES and not self.stop_requested:
            log.info(
                "resident memory %d MB, within %d MB of the budget of %d MB: making way for "
                "a fresh worker",
                rss >> 20,
                JOB_GROWTH_BYTES >> 20,
                budget >> 20,
            )
            self.stop_requested = self.recycle = True

    def execute(self, job_id: str) -> None:
        """Run one job and record its result or error (exactly once, see ``JobStore.finish``).

        The job is in hand from its pop to its finish: a Redis outage on the way
        is waited out (the start, the result), never turned into the job's failure.
        """
        started = until_done(lambda: self.store.start(job_id, self.name), f"job {job_id}", log)
        if started is None:  # canceled, dropped or answered while it waited
            return
        kind = KINDS[started.kind]
        timeout = kind.timeout(self.settings)
        jobs.current = jobs.JobContext(
            store=self.store,
            worker=self.name,
            cache=self.cache,
            job_id=job_id,
            attempt=started.attempt,
            enqueued_at=started.enqueued_at,
            last_flush=time.monotonic(),
        )
        self.current, self._interrupt = started, None
        result: Any = None
        error: str | None = None
        try:
            with UnixSignalDeathPenalty(timeout, JobTimeoutException, job_id=job_id):
                self._in_job = True
                try:
                    # Read from Redis here, once: the job function takes and returns models,
                    # and the result is serialised once, by the finish script's caller.
                    request = kind.request.model_validate(started.request)
                    result = JOB_FUNCTIONS[kind.name](request)
                finally:
                    self._in_job = False
            assert isinstance(result, kind.result)
        except jobs.JobPreempted:
            until_done(lambda: self.store.release(job_id, self.name), f"job {job_id}", log)
            log.info("job %s (%s) preempted: back at the front of its queue", job_id, started.kind)
            return
        except Exception as exc:
            if not isinstance(exc, jobs.JobCanceled | jobs.JobDropped | ValueError):
                log.exception("job %s failed", job_id)
            error = _describe(timeout, exc)
        finally:
            self.current = None
            jobs.current, context = None, jobs.current
            if self.settings.solver_fresh_table and result is None:
                jobs.clear_tables()
        assert context is not None
        until_done(
            lambda: self.store.finish(
                job_id,
                result,
                error=error,
                worker=self.name,
                dedupe=started.dedupe,
                progress=(context.seq, context.pending),  # every depth, before the result
                cache_counts=self._cache_counts(),
            ),
            f"job {job_id}",
            log,
        )
        if result is None:
            log.info("job %s (%s) failed: %s", job_id, started.kind, error)
        else:
            log.info(
                "job %s (%s, attempt %d) done: engine %.1f ms, cache %s",
                job_id,
                started.kind,
                started.attempt,
                result.time_ms,
                result.cache,
            )
        if self.cache is not None:
            self.cache.flush_stats()  # counts the finish script did not carry, if any
        if self.settings.solver_fresh_table and result is not None:
            jobs.clear_tables()  # after the answer, not before: off the next request's path

    def _cache_counts(self) -> tuple[str, int, int] | None:
        """The cache's pending hit and miss counts, for the finish script to carry."""
        if self.cache is None or not self.cache_in_job_redis:
            return None
        from worker.core.position_cache import CACHE_STATS

        return (CACHE_STATS, *self.cache.take_stats())

    def teardown(self) -> None:
        self._stop_threads.set()
        with contextlib.suppress(redis.RedisError):
            self.store.forget_worker(self.name)


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
    return RECYCLE_EXIT if worker.recycle else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m worker.process.runner")
    parser.add_argument("--name", required=True)
    parser.add_argument("--queues", default=",".join(QUEUES))
    args = parser.parse_args(argv)
    url = get_settings().redis_url
    if not url:
        print("worker: no Redis (set REDIS_URL)", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(asctime)s worker {args.name} %(levelname)s %(message)s",
        datefmt="%H:%M:%S",
    )
    return run(args.name, url, args.queues.split(","))


if __name__ == "__main__":
    sys.exit(main())

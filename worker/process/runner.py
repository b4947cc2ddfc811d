"""plybot's worker: an RQ ``SimpleWorker`` that keeps the engine warm, plus what RQ lacks.

RQ's own loop dequeues (queues in order: bot moves before analyses before book chunks),
keeps the registries, stores results and failures, handles ``rq suspend``, the stop-job
and shutdown commands, abandoned jobs and retries. :class:`PlybotWorker` is started by
``plybot worker`` (its supervisor) and equally by RQ's own command::

    rq worker --worker-class worker.process.runner.PlybotWorker interactive analysis book

It adds, only through RQ's extension points (this subclass, an exception handler, job
meta, a job function returning RQ's ``Retry``):

* **No fork per job** (``SimpleWorker``): the engine is compiled and loaded once per
  process (:func:`worker.process.jobs.warm_up`) and its tables stay warm from job to job.
* **A lease for hung workers.** A job's execution is kept in RQ's ``StartedJobRegistry``
  for ``worker_lease_s`` and renewed by a housekeeping thread of the worker itself every
  third of it (``maintain_heartbeats``: the compiled solver releases the GIL, so a long
  search does not starve it). A stopped (SIGSTOP) or dead worker stops renewing, and the
  housekeeping of any live worker runs RQ's own ``StartedJobRegistry.cleanup`` every
  ``reaper_interval_s``: the abandoned job is retried by RQ (``Retry``, ``job_max_attempts``
  runs) within about ``worker_lease_s + reaper_interval_s``, or fails with a clear error.
  Right after a Redis outage nobody is judged until the judge's own calls have succeeded
  for a whole lease (the others' renewals failed too).
* **Cancels and stops.** The same thread looks every ``WATCH_INTERVAL_S`` at the running
  job's status: ``Job.cancel()`` (RQ records it canceled at once) interrupts it, and it stays
  canceled. ``send_stop_job_command`` reaches :meth:`PlybotWorker.kill_horse` (RQ's hook for
  it), which interrupts it the same way, and RQ records it stopped.
* **Preemption.** A bot move that waited ``PREEMPT_AFTER_S`` while this worker runs a
  preemptible job (an analysis) interrupts it (one worker per move: a claim in Redis); the
  job function then returns RQ's ``Retry(enqueue_at_front=True)``, so RQ puts it back at the
  front of its queue, its run not counted against its retries, and the move is taken next.
* **Redis outages** are waited out: the worker's connection retries every command for ever
  with backoff (:func:`worker.process.backoff.patient`), so RQ's loop neither quits nor
  loses the job in hand; progress events wait in the job until Redis is back. A failover
  (Redis Sentinel) is such an outage: every reconnect asks the sentinels for the master
  (:mod:`worker.core.connection`).
* **Memory recycling.** Near ``worker_memory_mb`` after a job, the worker stops the way RQ
  stops (a warm shutdown) and exits with ``RECYCLE_EXIT`` so the supervisor starts a fresh
  one; never during a job.
* **Progress events and the end of a job** for plybot's event streams and waiters: the
  progress before RQ records the end (the job function publishes it), the end
  (:meth:`worker.core.jobstore.JobStore.announce`) after.
* **A clear error**: the exception handler puts a one-line reason in the job's meta beside
  RQ's ``exc_info``; a request that cannot run (a bad payload, a foreign function) fails at
  once (no retry), visibly, in RQ's failed registry.

Run by the supervisor as ``python -m worker.process.runner --name NAME`` with ``REDIS_URL``
in its environment (never on a command line: it may hold a password).
"""

from __future__ import annotations

import _thread
import argparse
import contextlib
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from types import FrameType, TracebackType
from typing import Any

import redis
from rq import Queue
from rq.exceptions import AbandonedJobError
from rq.executions import Execution
from rq.job import Job, JobStatus
from rq.registry import StartedJobRegistry
from rq.serializers import JSONSerializer
from rq.suspension import is_suspended
from rq.timeouts import JobTimeoutException
from rq.worker import SimpleWorker

from engine.memory import rss_bytes
from worker.core import keys
from worker.core.connection import connect, sibling
from worker.core.jobstore import JobStore
from worker.core.kinds import INTERACTIVE, QUEUES
from worker.core.records import META_ERROR, kind_of_job, runs, state_of, timestamp
from worker.core.settings import Settings, get_settings
from worker.process import jobs
from worker.process.backoff import is_transient, patient
from worker.process.processes import RECYCLE_EXIT, die_with_parent

__all__ = ["PlybotWorker", "main"]

log = logging.getLogger("plybot.worker")

#: A bot move that waited this long while every worker was busy preempts an analysis
#: (a free worker takes a move at once, so this never takes one from a free worker).
PREEMPT_AFTER_S = 0.15
#: How often a busy worker looks for a cancel of its job or a bot move waiting.
WATCH_INTERVAL_S = 0.1
#: The most one job adds to a worker's resident memory beyond its tables' budget (the solver's
#: core is compiled once for every board size: a new size costs its table and about 1 MB).
JOB_GROWTH_BYTES = 32 << 20


def describe(exc: BaseException, timeout: float | None) -> str:
    """One line for the requester: what went wrong, never a traceback."""
    if isinstance(exc, jobs.JobCanceled | jobs.JobDropped | ValueError):
        return str(exc)
    if isinstance(exc, JobTimeoutException):
        return f"timed out: the job ran past its limit of {timeout:g} s"
    return f"internal error in the worker: {type(exc).__name__}: {exc}"


#: Failures the same request would meet again: RQ does not retry them.
_FINAL = (ValueError, TypeError, KeyError, jobs.JobCanceled, jobs.JobDropped, AttributeError)


class _Running:
    """The job in hand, as the housekeeping thread sees it."""

    def __init__(self, job: Job, execution: Execution, preemptible: bool) -> None:
        self.job = job
        self.execution = execution
        self.preemptible = preemptible
        self.head: str | None = None  # the bot move seen waiting at the last look
        self.head_since = 0.0


class PlybotWorker(SimpleWorker):
    """RQ's ``SimpleWorker`` serving plybot's queues with a warm engine (see the module)."""

    #: One line per job is enough in a worker's log (RQ adds one on its result's lifespan).
    log_result_lifespan = False

    def __init__(self, queues: Any = None, *, serializer: Any = None, **kwargs: Any) -> None:
        names = [q.name if isinstance(q, Queue) else str(q) for q in (queues or QUEUES)]
        super().__init__(names, serializer=serializer or JSONSerializer, **kwargs)
        patient(self.connection)
        self.settings = get_settings()
        self.store = JobStore(self.connection, self.settings)
        self.cache: Any = None
        if self.settings.cache_enabled:
            from worker.core.position_cache import RedisPositionCache

            url = self.settings.cache_url or self.settings.redis_url
            if url:
                self.cache = RedisPositionCache(url, self.settings)
        #: A connection of the job's own, not patient: progress events never stall a search.
        self._events = sibling(self.connection)
        self.recycle = False
        self._running: _Running | None = None
        self._interrupt: BaseException | None = None
        #: When the running job's lease was last renewed (from before the renewal was sent).
        self._renewed_at = time.monotonic()
        #: This run lost its job (see :meth:`_lost`): its end is told by the one that has it.
        self._lost_run = False
        self._housekeeping_stop = threading.Event()
        #: Since when Redis has taken this worker's calls without a failure (housekeeping).
        self._healthy_since = time.monotonic()
        self.push_exc_handler(self._on_exception)

    # -- start and stop --------------------------------------------------------------

    def bootstrap(self, *args: Any, **kwargs: Any) -> None:
        """Warm the engine before RQ registers the worker, so it takes no job cold."""
        seconds = jobs.warm_up(self.cache)
        if self.settings.solver_fresh_table:
            jobs.clear_tables()  # the first job, too, starts from an empty table
        super().bootstrap(*args, **kwargs)
        self.log.info(
            "pid %d: engine warm in %.2f s, serving %s", os.getpid(), seconds, self.queue_names()
        )
        signal.signal(signal.SIGUSR1, self._on_interrupt)
        threading.Thread(target=self._housekeeping, name="housekeeping", daemon=True).start()

    def teardown(self) -> None:
        self._housekeeping_stop.set()
        super().teardown()
        self.connection.delete(keys.worker_info(self.name))

    def request_force_stop(self, signum: int, _frame: FrameType | None) -> None:
        """A second signal: leave now; the job in hand goes back to the front of its queue."""
        running = self._running
        self.log.warning("cold shutdown (signal %d)", signum)
        if running is not None:
            self.log.warning("job %s goes back to the front of its queue", running.job.id)
            # (if Redis refuses, its lease lapses, and RQ's cleanup retries it)
            with contextlib.suppress(redis.RedisError):
                self._give_back(running.job, running.execution)
        with contextlib.suppress(redis.RedisError):
            self.register_death()
        # Not RQ's SystemExit: raised inside the job, RQ would record the job failed.
        os._exit(1)

    def _give_back(self, job: Job, execution: Execution) -> None:
        queue = Queue(job.origin, connection=self.connection, serializer=self.serializer)
        with self.connection.pipeline() as pipe:
            self.cleanup_execution(job, pipeline=pipe, execution=execution)
            queue.enqueue_job(job, pipeline=pipe, at_front=True)
            pipe.execute()

    # -- one job -----------------------------------------------------------------------

    def execute_job(self, job: Job, queue: Queue) -> None:
        """Run ``job``, unless RQ's workers were suspended after this one blocked waiting:
        then it goes back to the front of its queue, and RQ's loop waits for ``rq resume``."""
        if is_suspended(self.connection, self):
            queue.enqueue_job(job, at_front=True)
            return
        # Canceled as RQ's loop took it (RQ's status as it fetched the job, microseconds ago;
        # a cancel after that is seen by the watch, through plybot's record): it never runs.
        if job.get_status(refresh=False) == JobStatus.CANCELED:
            return
        super().execute_job(job, queue)

    def get_heartbeat_ttl(self, job: Job, working_time: float = 0.0) -> int:
        """A running job's lease in RQ's StartedJobRegistry: renewed by the housekeeping."""
        del job, working_time  # the same lease for every job, however long it has run
        return max(1, round(self.settings.worker_lease_s))

    def perform_job(self, job: Job, queue: Queue, execution: Execution) -> bool:
        kind = kind_of_job(job)
        jobs.current = jobs.JobContext(
            store=self.store,
            events=self._events,
            worker=self.name,
            cache=self.cache,
            job_id=job.id,
            enqueued_at=timestamp(job.enqueued_at),
            last_flush=time.monotonic(),
            # RQ counts a retry after a worker's death down from ``job_max_attempts - 1``
            first_run=job.retries_left is None
            or job.retries_left >= self.settings.job_max_attempts - 1,
        )
        self._interrupt = None
        self._lost_run = False
        self._renewed_at = time.monotonic()  # RQ sets the lease as it prepares the job
        self._running = _Running(job, execution, kind is not None and kind.preemptible)
        try:
            return bool(super().perform_job(job, queue, execution))
        finally:
            self._running = None
            context, jobs.current = jobs.current, None
            self._after(job, context)

    def _after(self, job: Job, context: jobs.JobContext | None) -> None:
        """Tell the waiters how it ended (RQ has recorded it, and ``job`` holds what it
        recorded: no round trip to read it back), and make way if memory is short. Its
        progress is out already: the job function publishes it before it returns."""
        if self.cache is not None:
            self.cache.flush_stats()  # counted before the end is told: a reader sees them
        status = job.get_status(refresh=False)
        if not self._lost_run and status in (
            JobStatus.FINISHED,
            JobStatus.FAILED,
            JobStatus.STOPPED,
        ):
            state = state_of(
                job,
                self.settings,
                result=context.result
                if context is not None and status == JobStatus.FINISHED
                else None,
                progress=context.last if context is not None else None,
            )
            if state is not None:
                self.store.announce(state)
        if self.settings.solver_fresh_table:
            jobs.clear_tables()
        self._check_memory()

    def handle_job_success(
        self, job: Job, queue: Queue, started_job_registry: Any, execution: Execution
    ) -> None:
        """RQ's success handling, if the job is still this run's (see :meth:`_lost`)."""
        if self._lost(job, execution):
            return
        super().handle_job_success(job, queue, started_job_registry, execution)

    def handle_job_failure(
        self,
        job: Job,
        queue: Queue,
        started_job_registry: Any = None,
        exc_string: str = "",
        execution: Execution | None = None,
    ) -> None:
        """RQ's failure handling, if the job is still this run's (see :meth:`_lost`)."""
        if self._lost(job, execution):
            return
        super().handle_job_failure(job, queue, started_job_registry, exc_string, execution)

    def _lost(self, job: Job, execution: Execution | None) -> bool:
        """True if this run no longer owns ``job`` (then only its execution ends here):
        it was canceled while it ran (RQ recorded it canceled: it stays so), or it was
        given to another run while this worker hung (its lease lapsed: that run answers).
        So a job ends once, with one answer.

        A cancel is looked up every time (one that came as the job ended must hold); who
        holds the job, only when the lease was not renewed within its length (a lease renewed
        since can have been taken by nobody).
        """
        if self.store.canceled(job.id):
            self._let_go(job, execution, "it was canceled as it ended: it stays canceled")
            # RQ's start may have been written over the cancel (it came between the pop and
            # the start): the job must end canceled, not stay running.
            self.store.settle_canceled(job.id)
            return True
        if time.monotonic() - self._renewed_at < self.settings.worker_lease_s:
            return False
        current = self.store.job(job.id)
        status = current.get_status(refresh=False) if current is not None else None
        if current is None or status != JobStatus.STARTED or current.worker_name != self.name:
            return self._let_go(job, execution, f"another run has it ({status})")
        return False

    def _let_go(self, job: Job, execution: Execution | None, why: str) -> bool:
        """End only this run's execution of ``job``, whose end is not this run's to record."""
        self._lost_run = True
        log.info("job %s: %s; its end is not recorded here", job.id, why)
        with self.connection.pipeline() as pipe:
            self.cleanup_execution(job, pipeline=pipe, execution=execution)
            pipe.execute()
        return True

    def clean_registries(self) -> None:
        """RQ's maintenance, once this worker's own Redis calls have succeeded for a whole
        lease: right after an outage (or this worker's start) every lease looks lapsed,
        and RQ would take running jobs for abandoned."""
        if time.monotonic() - self._healthy_since >= self.settings.worker_lease_s:
            super().clean_registries()

    def _on_exception(
        self,
        job: Job,
        _exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        _tb: TracebackType | None,
    ) -> bool:
        """RQ's exception handler: the one-line reason in the job's meta; no retry for a
        failure the same request would meet again (only a worker's death is retried)."""
        if exc_value is None:
            return True
        if isinstance(exc_value, AbandonedJobError):
            limit = self.settings.job_max_attempts
            job.meta[META_ERROR] = (
                f"failed: the worker running this job died or hung, {runs(job, self.settings)} "
                f"times (the limit is {limit} runs); last on worker {job.worker_name}"
            )
        else:
            job.meta[META_ERROR] = describe(exc_value, job.timeout)
        job.save_meta()
        if isinstance(exc_value, (*_FINAL, JobTimeoutException)):
            job.retries_left = 0  # RQ retries only while some are left
        return True

    def kill_horse(self, sig: signal.Signals = signal.SIGKILL) -> None:
        """RQ's stop-job command (and ``kill-horse``): a SimpleWorker has no horse to kill, so
        the job in hand is interrupted; RQ then records it stopped."""
        del sig  # no process to signal: the job is interrupted in this one
        running = self._running
        if running is not None:
            self._stop_job(jobs.JobStopped("stopped by an operator (RQ's stop-job command)"))

    # -- interrupting the job in hand ----------------------------------------------------

    def _stop_job(self, exc: BaseException) -> None:
        """Raise ``exc`` in the running job function (from another thread), now if it runs
        Python, or as soon as it starts if it has not yet."""
        if self._interrupt is not None:
            return
        self._interrupt = exc
        context = jobs.current
        if context is not None:
            context.interrupt = exc
        log.info("job %s: %s", self._running.job.id if self._running else "-", exc)
        _thread.interrupt_main(signal.SIGUSR1)  # raised in the job once it runs Python
        jobs.interrupt()  # and the compiled solver returns within milliseconds

    def _on_interrupt(self, _signum: int, _frame: FrameType | None) -> None:
        context = jobs.current
        if context is not None and context.in_function and context.interrupt is not None:
            context.in_function = False  # raised once, and never outside the job function
            raise context.interrupt

    # -- housekeeping ------------------------------------------------------------------

    def _housekeeping(self) -> None:
        """Renew the job's lease, watch it, clean up after dead workers, publish what we do.

        A thread of the worker itself, so a hung or stopped worker renews nothing.
        """
        lease = self.settings.worker_lease_s
        beat_every = min(lease / 3, self.settings.reaper_interval_s)
        last_beat = last_reap = 0.0
        failing = False
        while not self._housekeeping_stop.wait(WATCH_INTERVAL_S):
            try:
                # On the impatient connection: an outage is seen here (the worker's own
                # connection waits it out without a word).
                self._events.ping()
                now = time.monotonic()
                running = self._running
                if now - last_beat >= beat_every:
                    self._beat(running)
                    last_beat = now
                if running is not None:
                    self._watch(running)
                if now - last_reap >= self.settings.reaper_interval_s:
                    last_reap = now
                    if now - self._healthy_since >= lease:
                        self._reap()
                if failing:
                    log.info("housekeeping: Redis is back")
                failing = False
            except Exception as exc:
                if not is_transient(exc) and not isinstance(exc, redis.RedisError):
                    log.exception("housekeeping")
                elif not failing:
                    log.warning("housekeeping: Redis unavailable (%s); retrying", exc)
                failing = True
                self._healthy_since = time.monotonic()

    def _beat(self, running: _Running | None) -> None:
        """Renew this worker's registration (and the running job's lease), and its info."""
        lease = self.settings.worker_lease_s
        if not self.connection.exists(self.key):
            # Its registration lapsed while it hung (SIGSTOP), and RQ dropped it: born again.
            self.register_birth()
        if running is not None:
            beat_at = time.monotonic()
            self.maintain_heartbeats(running.job, running.execution)
            if self._running is running:
                self._renewed_at = beat_at
        else:
            self.heartbeat(int(lease * 3) + 1)
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "queues": self.queue_names(),
            "job": running.job.id if running is not None else None,
            "table_bytes": jobs.table_bytes(),
            "rss": rss_bytes(),
            "at": time.time(),
        }
        self._events.set(keys.worker_info(self.name), json.dumps(info), ex=int(lease * 3) + 1)

    def _watch(self, running: _Running) -> None:
        """Interrupt the running job if it was canceled, or for a bot move that waits."""
        if self._interrupt is not None:
            return
        job = running.job
        if self.store.canceled(job.id):
            self._stop_job(jobs.JobCanceled("canceled"))
            return
        if not running.preemptible or INTERACTIVE not in self.queue_names():
            return
        head = next(iter(Queue(INTERACTIVE, connection=self.connection).get_job_ids(0, 1)), None)
        now = time.monotonic()
        if head is None or head != running.head:
            running.head, running.head_since = head, now
            return
        if now - running.head_since < PREEMPT_AFTER_S:
            return
        # One worker makes way per move: the first to claim it.
        if self.connection.set(keys.preempt(head), self.name, nx=True, ex=60):
            self.connection.hincrby(keys.STATS, "preempted", 1)
            self._stop_job(jobs.JobPreempted(f"preempted by bot move {head}"))

    def _reap(self) -> None:
        """RQ's cleanup of abandoned jobs (their lease lapsed), one worker at a time per queue."""
        for queue in self.queues:
            lock = keys.reaper(queue.name)
            if not self.connection.set(
                lock, self.name, nx=True, px=max(100, int(self.settings.reaper_interval_s * 900))
            ):
                continue
            registry = StartedJobRegistry(
                queue.name, connection=self.connection, serializer=self.serializer
            )
            expired = registry.get_expired_job_ids()
            if not expired:
                continue
            log.warning("jobs %s: their worker died or hung; RQ retries or fails them", expired)
            registry.cleanup(exception_handlers=[self._on_exception])
            for job_id in expired:
                state = self.store.state(job_id, with_progress=False)
                if state is not None and state.finished:
                    self.store.announce(state)

    def _check_memory(self) -> None:
        """Near ``worker_memory_mb`` (less than ``JOB_GROWTH_BYTES`` left), stop as RQ stops
        (warm shutdown, between jobs) so that a fresh process replaces this one.

        Its solver tables are budgeted by ``worker_table_mb``, and the book build's table by
        ``book_table_mb`` on top; what else a process keeps (Python's own heap) is bounded
        here, as Celery's max-memory-per-child.
        """
        budget = self.settings.worker_memory_mb << 20
        if not budget or self.recycle:
            return
        budget += jobs.book_table_bytes()
        rss = rss_bytes()
        if rss > budget - JOB_GROWTH_BYTES:
            log.info(
                "resident memory %d MB, within %d MB of the budget of %d MB: making way for "
                "a fresh worker",
                rss >> 20,
                JOB_GROWTH_BYTES >> 20,
                budget >> 20,
            )
            self.recycle = True
            os.kill(os.getpid(), signal.SIGTERM)  # RQ's warm shutdown: no job taken after this


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m worker.process.runner")
    parser.add_argument("--name", required=True)
    parser.add_argument("--queues", default=",".join(QUEUES))
    args = parser.parse_args(argv)
    settings: Settings = get_settings()
    url = settings.redis_url
    if not url:
        print("worker: no Redis (set REDIS_URL)", file=sys.stderr)
        return 2
    if not die_with_parent():  # the supervisor died before we could follow it
        return 1
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(asctime)s worker {args.name} %(levelname)s %(message)s",
        datefmt="%H:%M:%S",
    )
    connection = connect(
        url,
        settings,
        socket_connect_timeout=settings.redis_socket_timeout_s,
        health_check_interval=30,
    )
    worker = PlybotWorker(args.queues.split(","), name=args.name, connection=connection)
    worker.work(logging_level="INFO")
    return RECYCLE_EXIT if worker.recycle else 0


if __name__ == "__main__":
    sys.exit(main())

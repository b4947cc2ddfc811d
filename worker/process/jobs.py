"""The job functions: plain functions that RQ runs, one per kind of job.

Each takes the request as a JSON dict (the contract's model, dumped) and returns the
result as a JSON dict, so any Python program can enqueue one with plain RQ and the JSON
serializer, and any RQ worker can run it (:data:`worker.core.kinds.KINDS` names them).
A payload that does not validate fails the job at once with the reason (a
``ValueError``: RQ does not retry it). In plybot's worker (:mod:`worker.process.runner`)
they run warm: the engine's compiled code and the solver's transposition table are kept
from one job to the next, the shared Redis position cache is the second level, and
progress events are published. Elsewhere (a stock RQ worker, a direct call) they run the
same, without progress events.

Limits: every search gets a deadline from :class:`~worker.core.settings.Settings`
(``solve_deadline_ms`` for a solve, ``time_ms`` for a timed search, the job
timeout for a depth search), so no request can keep a worker busy without bound.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import redis
from pydantic import BaseModel, ValidationError
from rq import Queue, Retry

from engine.cache import PositionCache
from engine.game import Game, has_exact_solver
from engine.memory import release
from engine.pool import solvers
from worker.core import keys
from worker.core.contract import (
    AnalysisRequest,
    AnalysisResult,
    BookChunkRequest,
    BookChunkResult,
    MoveRequest,
    MoveResult,
    Progress,
)
from worker.core.jobstore import JobStore
from worker.core.kinds import KINDS
from worker.core.settings import Settings, get_settings
from worker.process.backoff import is_transient
from worker.process.cores import spare_threads

if TYPE_CHECKING:
    from engine.solver import Solver

__all__ = [
    "JobCanceled",
    "JobContext",
    "JobDropped",
    "JobInterrupted",
    "JobPreempted",
    "JobStopped",
    "analysis_job",
    "book_chunk_job",
    "clear_tables",
    "interrupt",
    "move_job",
    "table_bytes",
    "warm_up",
]


class JobInterrupted(BaseException):
    """The worker stops the job in hand (raised in it from another thread).

    A ``BaseException``, as ``KeyboardInterrupt`` is: raised at whatever line the job runs,
    it must pass through the engine's ``except Exception`` (a cache that fails quietly),
    never be taken for an error there and swallowed.
    """


class JobCanceled(JobInterrupted):
    """The job was canceled (RQ's ``Job.cancel``) while it ran."""


class JobStopped(JobInterrupted):
    """An operator stopped the job (RQ's stop-job command) while it ran."""


class JobDropped(ValueError):
    """A bot move that waited in the queue past its time-to-live."""


class JobPreempted(JobInterrupted):
    """A bot move waits and every worker is busy: this analysis goes back to its queue."""


#: How many times one job may make way for bot moves (RQ's ``Retry`` of a preempted run,
#: at the front of its queue; not counted against the job's retries after a worker death).
MAX_PREEMPTIONS = 1000


@dataclass
class JobContext:
    """What the worker running a job lends it: where to publish, the cache, its name."""

    store: JobStore
    #: The connection progress events go out on: not the worker's patient one, so that a
    #: Redis outage never stalls the search (the events wait in ``pending``).
    events: redis.Redis | None
    worker: str
    cache: PositionCache | None
    job_id: str = ""
    enqueued_at: float | None = None
    #: False when RQ runs the job again (after a worker died, or after making way).
    first_run: bool = True
    seq: int = field(default=0)
    #: Progress not yet published: sent by the next flush, or after the job.
    pending: list[Progress] = field(default_factory=list)
    #: The last progress event published (the job's state shows it).
    last: Progress | None = None
    last_flush: float = field(default_factory=time.monotonic)
    #: True while the job function runs: only then may the worker interrupt it.
    in_function: bool = False
    #: What the job function returned (JSON), for the worker to tell the waiters.
    result: dict[str, Any] | None = None
    #: The exception the worker asked to raise in the job (cancel, stop, preemption); raised
    #: as soon as the job function runs, if asked before it did.
    interrupt: BaseException | None = None

    def flush(self, *, final: bool = False) -> None:
        """Publish the buffered progress events.

        While Redis is unavailable they stay buffered (sent by a later flush) and the
        search goes on; ``final``: on the worker's patient connection, waiting Redis out.
        """
        if not self.pending:
            return
        steps, self.pending = self.pending, []
        try:
            self.store.publish_progress(
                self.job_id, self.seq, steps, client=None if final else self.events
            )
        except Exception as exc:
            if not is_transient(exc):
                raise
            self.pending = steps + self.pending
            self.last_flush = time.monotonic()
            return
        self.seq += len(steps)
        self.last = steps[-1]
        self.last_flush = time.monotonic()


#: Set by the worker around each job (one job at a time per process).
current: JobContext | None = None


def _solver(board: Game, cache: PositionCache | None) -> Any:
    """This process's solver for a board with an exact solver (``None`` for other games).

    The engine's pool (:data:`engine.pool.solvers`), its tables within
    ``worker_table_mb``, each at most ``solver_table_mb``: solvers of other sizes
    are dropped, least recently used first, until a new one's table fits. Its analyses
    take up to ``solver_threads`` threads, one for each core no other task runs on as the
    job starts (:mod:`worker.process.cores`).
    """
    if not has_exact_solver(board):
        return None
    settings = _settings()
    solvers.configure(
        table_bytes=settings.solver_table_mb << 20,
        budget_bytes=settings.worker_table_mb << 20,
        database=settings.solver_database,
    )
    solver = solvers.solver(board.width, board.height, cache)
    solver.threads = spare_threads(settings.solver_threads)
    return solver


def table_bytes() -> int:
    """Bytes of this process's solver tables."""
    return solvers.table_bytes()


def book_table_bytes() -> int:
    """Bytes of the book build's solver table held by this process (0 before its first chunk).

    It is budgeted by ``book_table_mb``, on top of ``worker_memory_mb``: a worker serving the
    ``book`` queue keeps it between chunks, since siblings share their subtrees.
    """
    return sum(solver.table_bytes for solver in _book_solver.values())


def interrupt() -> None:
    """Make a running compiled search return now (from another thread); it reports an
    incomplete result, and the caller's interrupt (cancel, stop, preemption) takes over."""
    solvers.interrupt()
    for solver in list(_book_solver.values()):
        solver.interrupt()


def _settings() -> Settings:
    return current.store.settings if current is not None else get_settings()


#: Progress events are sent at most this often (each in order, none dropped): a search's
#: shallow depths take microseconds, and a round trip each would cost more than they do.
PROGRESS_INTERVAL_S = 0.05


def _on_progress(board: Game) -> Callable[[Any], None] | None:
    """A callback for the engine's progress that publishes each step and honours cancels."""
    context = current
    if context is None or not context.job_id:
        return None

    def publish(step: Any) -> None:
        context.pending.append(Progress.of(board, step))
        if time.monotonic() - context.last_flush >= PROGRESS_INTERVAL_S:
            context.flush()

    return publish


Request = TypeVar("Request", bound=BaseModel)


def _job_function(
    request_model: type[Request],
) -> Callable[[Callable[[Request], BaseModel]], Callable[[dict[str, Any]], Any]]:
    """Make a function of a request model into a job function of JSON: the payload is
    validated (a one-line ``ValueError`` naming the field if it does not), the result
    dumped; a run interrupted to make way for a bot move returns RQ's ``Retry`` at the
    front of its queue."""

    def wrap(function: Callable[[Request], BaseModel]) -> Callable[[dict[str, Any]], Any]:
        @functools.wraps(function)
        def run(payload: dict[str, Any]) -> Any:
            try:
                request = request_model.model_validate(payload)
            except ValidationError as exc:
                raise ValueError(_one_line(exc)) from None
            context = current
            try:
                try:
                    if context is not None:
                        context.in_function = True
                        if context.interrupt is not None:  # asked before the function ran
                            context.in_function = False
                            raise context.interrupt
                    result = function(request)
                finally:
                    if context is not None:
                        context.in_function = False
            except JobPreempted:
                return Retry(max=MAX_PREEMPTIONS, enqueue_at_front=True)
            finally:
                release()  # what a further board size left beyond its small table
                if context is not None:
                    # Before RQ records the job ended: a reader that sees it ended (an event
                    # stream, a poll) finds all its progress there already.
                    context.flush(final=True)
            dumped = result.model_dump(mode="json")
            if context is not None:
                context.result = dumped
            return dumped

        return run

    return wrap


def _one_line(exc: ValidationError) -> str:
    """A validation error in one line: ``field: what is wrong; ...``."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "request"
        parts.append(f"{where}: {error['msg']}")
    return f"bad request: {'; '.join(parts)}"


@_job_function(AnalysisRequest)
def analysis_job(req: AnalysisRequest) -> AnalysisResult:
    """Analyse a position."""
    from engine.analysis import analyze

    settings = _settings()
    board = req.board()
    now = time.monotonic()
    if req.mode == "solve":
        deadline = now + settings.solve_deadline_ms / 1000
    else:  # depth, time: the job timeout is the outer bound (time mode also stops at time_ms)
        deadline = now + settings.analysis_timeout_s * 0.9
    cache = current.cache if current is not None else None
    solver = _solver(board, cache)
    if (
        req.mode == "solve"
        and req.moves == "all"
        and has_exact_solver(board)
        and settings.split_analyses
        and current is not None
        and current.job_id
    ):
        from worker.process.split import split_analysis

        split = split_analysis(board, solver, current, deadline)
        if split is not None:
            return AnalysisResult.of(board, split, current.worker)
    analysis = analyze(
        board,
        mode=req.mode,
        depth=req.depth,
        time_ms=req.time_ms,
        all_moves=req.moves == "all",
        deadline=deadline,
        cache=cache,
        solver=solver,
        on_progress=_on_progress(board),
    )
    return AnalysisResult.of(board, analysis, current.worker if current is not None else "")


@_job_function(MoveRequest)
def move_job(req: MoveRequest) -> MoveResult:
    """The bot's move."""
    from engine.levels import choose_move

    settings = _settings()
    if current is not None and current.first_run and current.enqueued_at is not None:
        waited = time.time() - current.enqueued_at
        if waited > settings.interactive_ttl_s:
            raise JobDropped(
                f"dropped: no worker started this bot move within "
                f"{settings.interactive_ttl_s:g} s (waited {waited:.1f} s)"
            )
    board = req.board()
    start = time.monotonic()
    cache = current.cache if current is not None else None
    choice = choose_move(
        board,
        req.level,
        deadline=start + req.deadline_ms / 1000,
        cache=cache,
        solver=_solver(board, cache),
    )
    return MoveResult(
        move=board.move_name(choice.move),
        score=choice.score,
        exact=choice.exact,
        depth=choice.depth,
        nodes=choice.nodes,
        time_ms=round(choice.time_ms, 3),
        cache="miss",
        worker=current.worker if current is not None else "",
        note=choice.note,
    )


#: The process's solver for book chunks, apart from the pool (:data:`engine.pool.solvers`) on
#: purpose: a large table of its own budget (``book_table_mb``), no cache and no book (a book
#: is the solver's own work), kept from chunk to chunk (neighbouring chunks share subtrees).
#: It reads the shipped databases (unless ``solver_database`` is off): a 13-stone position's
#: parents in the 12-stone one bound it from below (0.74-0.89 times the nodes).
_book_solver: dict[tuple[int, int], Any] = {}


@_job_function(BookChunkRequest)
def book_chunk_job(req: BookChunkRequest) -> BookChunkResult:
    """Solve a chunk of a book layer.

    Solves the chunk in one compiled call, and stops early (``complete`` False,
    the lines of the positions solved so far) as soon as a bot move or an
    analysis waits (:func:`_giving_way`), so book work never holds a worker from
    them. The lines are also
    kept in the build's results hash, so a builder that was not there to read
    the result finds them when it starts again.
    """
    from engine.book import BookLine
    from engine.connect4 import Connect4
    from engine.database import shipped_databases
    from engine.layer import solve_chunk
    from engine.solver import Solver

    width, height = Connect4.parse_variant(req.variant)
    start = time.monotonic()
    build = keys.book_results(req.variant, req.plies, req.size)
    connection = current.store.redis if current is not None and current.job_id else None
    if connection is not None:
        # Solved already (a builder that looked before this chunk was done sends it again):
        # the same lines, no search.
        known = connection.hget(build, str(req.index))
        if known is not None:
            return BookChunkResult(lines=json.loads(known), complete=True, worker=_worker_name())
    # One board size at a time: another size's table goes before this one is made.
    solver = _book_solver.get((width, height))
    if solver is None:
        _book_solver.clear()
        settings = _settings()
        databases = shipped_databases(width, height) if settings.solver_database else ()
        solver = _book_solver[(width, height)] = Solver(
            width, height, table_bytes=settings.book_table_mb << 20, databases=databases
        )
    lines: list[BookLine]
    with _giving_way(solver):
        lines = solve_chunk(solver, req.notations)
    texts = [line.text() for line in lines]
    complete = len(texts) == len(req.notations)
    if connection is not None and current is not None:
        field = str(req.index) if complete else f"{req.index}:{current.job_id}"
        with connection.pipeline(transaction=False) as pipe:
            pipe.hset(build, field, json.dumps(texts))
            pipe.hincrby(keys.STATS, "book_positions_solved", len(texts))
            pipe.execute()
    return BookChunkResult(
        lines=texts,
        complete=complete,
        time_ms=round((time.monotonic() - start) * 1000, 3),
        worker=_worker_name(),
    )


def _worker_name() -> str:
    return current.worker if current is not None else ""


#: How often a book chunk looks for a bot move or an analysis waiting (a Redis round trip).
GIVE_WAY_POLL_S = 0.05


@contextlib.contextmanager
def _giving_way(solver: Solver) -> Iterator[None]:
    """While the block runs, interrupt ``solver`` as soon as a bot move or an analysis waits.

    A chunk never holds a worker that interactive work needs: the position in hand is
    abandoned within about ``GIVE_WAY_POLL_S`` (its work is lost, the positions solved
    before it are kept; the builder sends the rest again). The interrupt is repeated while
    work waits, so one that comes before the compiled call starts is not lost. A Redis
    error in the check is retried at the next poll; the chunk goes on meanwhile.
    """
    waiting = _other_work_waiting()
    if waiting is None:
        yield
        return
    done = threading.Event()

    def watch() -> None:
        while not done.wait(GIVE_WAY_POLL_S):
            try:
                if waiting():
                    solver.interrupt()
            except Exception as exc:
                if not is_transient(exc):
                    raise

    thread = threading.Thread(target=watch, name="book-chunk-gives-way", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def _other_work_waiting() -> Callable[[], bool] | None:
    """A check that a bot move or an analysis waits in its queue (``None`` outside a worker)."""
    if current is None:
        return None
    connection = current.events or current.store.redis
    queues = [Queue(k.queue, connection=connection) for k in KINDS.values() if not k.gives_way]

    def waiting() -> bool:
        return any(queue.count for queue in queues)

    return waiting


def clear_tables() -> None:
    """Forget what this process's solvers proved (``solver_fresh_table``: between jobs)."""
    solvers.reset()


def warm_up(cache: PositionCache | None = None) -> float:
    """Load the engine once per process (before the first job); seconds taken.

    The solver's core is compiled ahead of time (at install): this imports the engine, opens
    the book and makes the process's solver, with ``cache``, the one the jobs will use.
    """
    from engine.analysis import warm_up as warm_engine
    from engine.connect4 import Connect4

    start = time.monotonic()
    warm_engine(_solver(Connect4(), cache))
    return time.monotonic() - start

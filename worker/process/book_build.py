"""Building a complete opening book with the workers (``plybot book build``).

The layer at ply ``N`` is cut into chunks (:func:`engine.layer.chunks`); each
chunk still unsolved becomes a job on the ``book`` queue, which every worker
serves only when no bot move or analysis waits. Any number of workers, on any
number of machines, take them. The builder collects the solved lines, appends
them to the *layer file* as they come (text, :class:`engine.book.BookLine`, a
file that can be committed: a build may span days), and once the layer is
complete derives plies ``0..N-1`` by negamax (:func:`engine.layer.derive`) and
writes the book (:class:`engine.book.OpeningBook`), keeping the entries of the
previous book that lie beyond ply ``N``.

Resuming, whatever was killed:

* the builder: run it again. Positions in the layer file are not solved again;
  chunks finished while no builder ran are in the build's results hash
  (:func:`worker.core.keys.book_results`, written by the job itself); chunks in
  flight are joined, not duplicated (the job's dedupe key is the chunk's).
* a worker: its job goes back to the queue (the workers' leases); a job that
  failed is sent again, up to ``MAX_TRIES`` times.
* Redis: the builder waits for it with backoff; jobs lost with it are sent again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np
import redis
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from engine.book import BookLine, OpeningBook, parse
from engine.connect4 import Connect4
from engine.database import CHUNKS_PER_PART, UNKNOWN, Parts, records_of
from engine.layer import CHUNK_SIZE, Chunk, chunks, derive
from worker.core import keys
from worker.core.contract import BookChunkRequest, BookChunkResult
from worker.core.jobstore import IN_FLIGHT, JobStore, LostJobs
from worker.core.kinds import BOOK
from worker.core.settings import Settings

__all__ = ["BookBuild", "BuildProgress", "DatabaseBuild", "LayerBuild"]

log = logging.getLogger("plybot.book")

#: Runs of one chunk that may fail (not counting worker deaths, which the leases handle).
MAX_TRIES = 3
#: Seconds between two looks at the jobs in flight.
POLL_S = 0.5
#: How often the builder writes what it has kept (a database's parts) and then lets the
#: build's results hash, which holds every chunk's lines until then, drop them.
FLUSH_S = 30.0


class BuildError(Exception):
    """The build cannot go on (a chunk failed ``MAX_TRIES`` times); the message says why."""


@dataclass(frozen=True)
class BuildProgress:
    """Where a build stands: ``done`` of ``total`` layer positions solved."""

    done: int
    total: int
    solved_now: int  # by this run of the builder
    seconds: float  # since this run started
    chunks_waiting: int
    note: str = ""

    @property
    def rate(self) -> float:
        """Positions per second, over this run."""
        return self.solved_now / self.seconds if self.seconds > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        left = self.total - self.done
        return left / self.rate if self.rate > 0 else (0.0 if left == 0 else None)


@dataclass
class _InFlight:
    job_id: str
    tries: int = 1


#: Chunks in flight at once: enough to keep every worker busy, few enough that a build of
#: 64,000 chunks never puts them all in Redis at once.
WINDOW = 64


@dataclass
class LayerBuild:
    """One build of a layer with the workers: the loop (send chunks, collect lines, ride
    out Redis); a subclass says which chunks are left and keeps the lines it gets."""

    connection: redis.Redis
    settings: Settings
    width: int
    height: int
    plies: int
    size: int = CHUNK_SIZE
    _lost: LostJobs = field(default_factory=LostJobs)
    _unflushed: list[str] = field(default_factory=list)  # results-hash fields kept, not flushed

    @property
    def variant(self) -> str:
        return f"{self.width}x{self.height}"

    @property
    def results_key(self) -> str:
        return keys.book_results(self.variant, self.plies, self.size)

    # -- what a subclass says -------------------------------------------------------

    def _prepare(self) -> tuple[int, int]:
        """Plan the layer and read what is solved: (positions in all, positions solved)."""
        raise NotImplementedError

    def _left(self) -> list[int]:
        """Indices of the chunks with a position still unsolved, in order."""
        raise NotImplementedError

    def _missing(self, index: int) -> list[str]:
        """Notations of chunk ``index``'s positions still unsolved, in order."""
        raise NotImplementedError

    def _keep(self, texts: list[str], index: int) -> int:
        """Keep solved lines of chunk ``index``; returns how many are new. Durable once
        :meth:`_flush` has written them (until then the results hash holds them too)."""
        raise NotImplementedError

    def _flush(self) -> None:
        """Write durably all that :meth:`_keep` holds in memory only."""

    def _close(self) -> None:
        """Release what :meth:`_prepare` opened (the loop ended or failed)."""

    # -- the loop -------------------------------------------------------------------

    def solve_layer(self, report: Callable[[BuildProgress], None] | None = None) -> None:
        """Solve what is left of the layer with the workers. Blocks until done; rides out
        Redis outages. Raises :class:`BuildError`."""
        total, done = self._prepare()
        start = time.monotonic()
        before = done
        in_flight: dict[int, _InFlight] = {}
        store = JobStore(self.connection, self.settings)
        backoff = 0.5
        note = ""
        rescan = True  # chunks solved while no builder looked: in the results hash
        left: list[int] = []
        flushed = time.monotonic()
        try:
            while True:
                try:
                    if rescan:
                        done += self._collect_results_hash()
                        rescan = False
                    left = self._left()
                    if not left:
                        break
                    self._submit(store, left, in_flight)
                    lost, new = self._poll(store, in_flight)
                    rescan, done = lost, done + new
                    if time.monotonic() - flushed >= FLUSH_S:
                        self._checkpoint()
                        flushed = time.monotonic()
                    backoff = 0.5
                    note = ""
                except (redis.ConnectionError, redis.TimeoutError) as exc:
                    rescan = True
                    in_flight.clear()  # looked up again by their dedupe keys once it is back
                    note = f"Redis unreachable ({exc}); retrying in {backoff:.1f} s"
                    log.warning(note)
                    time.sleep(backoff)
                    backoff = min(backoff * 2, 5.0)
                if report is not None:
                    report(
                        BuildProgress(
                            done,
                            total,
                            done - before,
                            time.monotonic() - start,
                            len(in_flight),
                            note,
                        )
                    )
                if left:
                    time.sleep(POLL_S)
        finally:
            self._close()
        # A stale hash costs nothing: its chunks are all kept already.
        with contextlib.suppress(redis.RedisError):
            self.connection.delete(self.results_key)
        if report is not None:
            report(BuildProgress(total, total, done - before, time.monotonic() - start, 0))

    def _checkpoint(self) -> None:
        """Make what was kept durable, then drop it from the results hash."""
        self._flush()
        if self._unflushed:
            self.connection.hdel(self.results_key, *self._unflushed)
            self._unflushed.clear()

    def _collect_results_hash(self) -> int:
        new = 0
        fields = self.connection.hgetall(self.results_key)
        for field_name, value in fields.items():
            name = field_name.decode() if isinstance(field_name, bytes) else str(field_name)
            index = int(name.split(":")[0])  # "<index>", or "<index>:<job>" for a part
            new += self._keep(json.loads(value), index)
        self._flush()
        if fields:
            # Kept durably: the hash need not hold them any more (it would grow with the layer).
            self.connection.hdel(self.results_key, *fields)
        return new

    def _submit(self, store: JobStore, left: list[int], in_flight: dict[int, _InFlight]) -> None:
        for index in left:
            if len(in_flight) >= WINDOW:
                break
            if index not in in_flight:
                in_flight[index] = self._send(store, index)

    def _send(self, store: JobStore, index: int, tries: int = 1) -> _InFlight:
        """A job for the positions of chunk ``index`` not solved yet (joins one in flight)."""
        request = BookChunkRequest(
            variant=self.variant,
            plies=self.plies,
            size=self.size,
            index=index,
            notations=self._missing(index),
        )
        return _InFlight(store.submit(request).id, tries)

    def _poll(self, store: JobStore, in_flight: dict[int, _InFlight]) -> tuple[bool, int]:
        """Take the lines of finished jobs; send again what failed.
        (a job was lost, positions newly solved)."""
        lost = False
        new = 0
        # The queue read first, one LRANGE: a job in it is waiting, neither ended nor lost, and
        # needs no look of its own. Looking at all 64 chunks in flight each poll (their whole
        # records, and two more round trips for each waiting one) cost the builder a tenth of
        # a core, taken from the workers.
        waiting = set(store.queue(BOOK.queue).get_job_ids())
        indices = []
        for index, flight in in_flight.items():
            if flight.job_id in waiting:
                self._lost.forget(flight.job_id)
            else:
                indices.append(index)
        jobs = Job.fetch_many(
            [in_flight[index].job_id for index in indices],
            connection=self.connection,
            serializer=JSONSerializer,
        )
        for index, job in zip(indices, jobs, strict=True):
            flight = in_flight[index]
            status = job.get_status(refresh=False) if job is not None else None
            if status == JobStatus.QUEUED:
                # Not in its queue: a worker may have taken it and died before starting it
                # (RQ's window), or took it just now.
                if self._lost.seen(flight.job_id, store.lost(flight.job_id), time.monotonic()):
                    store.requeue_lost(flight.job_id)
                continue
            if status in IN_FLIGHT:
                self._lost.forget(flight.job_id)
                continue
            del in_flight[index]
            state = store.state(flight.job_id, with_progress=False) if job is not None else None
            if state is None:  # the record was lost (Redis restarted without it, or removed)
                lost = True
            elif state.status == "done" and isinstance(state.result, BookChunkResult):
                new += self._keep(state.result.lines, index)
                # The worker's copy in the results hash: under either name it may have.
                self._unflushed += [str(index), f"{index}:{flight.job_id}"]
            else:
                why = state.error or "failed"
                if flight.tries >= MAX_TRIES:
                    raise BuildError(f"chunk {index} failed {flight.tries} times: {why}")
                log.warning("chunk %d failed (%s); sending it again", index, why)
                in_flight[index] = self._send(store, index, flight.tries + 1)
        return lost, new


@dataclass
class BookBuild(LayerBuild):
    """A book's build: its layer appended to a text file, then the book derived from it."""

    layer_path: Path = Path()
    book_path: Path = Path()
    solved: dict[str, BookLine] = field(default_factory=dict)
    #: The layer's chunks, by index (made by :meth:`_prepare`).
    _plan: list[Chunk] = field(default_factory=list)
    _layer: TextIO | None = None

    def run(self, report: Callable[[BuildProgress], None] | None = None) -> OpeningBook:
        """Solve what is left of the layer with the workers, then write and return the book.

        Blocks until done; rides out Redis outages. Raises :class:`BuildError`.
        """
        self.solve_layer(report)
        return self.write_book()

    def write_book(self) -> OpeningBook:
        """Derive the book from the complete layer and write it (old entries past ply N kept)."""
        lines = list(derive(self.solved.values(), self.plies, self.width, self.height))
        book = OpeningBook.from_lines(self.width, self.height, lines, complete=self.plies)
        if self.book_path.is_file():
            old = OpeningBook.load(self.book_path)
            if old.variant == book.variant:
                book = merged(book, old)
        self.book_path.parent.mkdir(parents=True, exist_ok=True)
        book.save(self.book_path)
        return book

    # -- the layer file ---------------------------------------------------------------

    def _prepare(self) -> tuple[int, int]:
        self._plan = chunks(self.plies, self.width, self.height, self.size)
        self.solved = {line.moves: line for line in parse(self._layer_text(), self.variant)}
        self._layer = self._open_layer()
        return sum(len(c.notations) for c in self._plan), len(self.solved)

    def _close(self) -> None:
        if self._layer is not None:
            self._layer.close()
            self._layer = None

    def _layer_text(self) -> str:
        """The layer file's whole lines. A last line without its newline is a write that a
        kill cut short: it is cut off the file (its position is solved again)."""
        if not self.layer_path.is_file():
            return ""
        text = self.layer_path.read_text("ascii")
        whole = text[: text.rfind("\n") + 1]
        if whole != text:
            with self.layer_path.open("r+", encoding="ascii") as layer:
                layer.truncate(len(whole))
        return whole

    def _open_layer(self) -> TextIO:
        new = not self.layer_path.is_file()
        self.layer_path.parent.mkdir(parents=True, exist_ok=True)
        out = self.layer_path.open("a", encoding="ascii")
        if new:
            out.write(
                f"# plybot book layer: Connect Four {self.variant}, ply {self.plies}, "
                f"chunks of {self.size}; <moves> <score> <best column>, exact, side to move\n"
            )
            out.flush()
        return out

    def _left(self) -> list[int]:
        return [c.index for c in self._plan if self._missing(c.index)]

    def _missing(self, index: int) -> list[str]:
        return [n for n in self._plan[index].notations if n not in self.solved]

    def _keep(self, texts: list[str], index: int) -> int:  # noqa: ARG002 (one file, any chunk)
        new = [
            line for line in parse("\n".join(texts), self.variant) if line.moves not in self.solved
        ]
        for line in new:
            self.solved[line.moves] = line
        if new and self._layer is not None:
            self._layer.write("".join(line.text() + "\n" for line in new))
            self._layer.flush()
        return len(new)


@dataclass
class DatabaseBuild(LayerBuild):
    """A stones database's build (:mod:`engine.database`): every position with ``plies``
    stones that needs a search, solved into the database's part files."""

    directory: Path = Path()
    _keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    _starts: np.ndarray = field(default_factory=lambda: np.zeros(1, np.uint64))
    _slots: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    _values: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))
    _incomplete: set[int] = field(default_factory=set)
    _dirty: set[int] = field(default_factory=set)  # parts with lines kept but not written

    @property
    def parts(self) -> Parts:
        return Parts(self.directory, self.width, self.height, self.plies)

    def _prepare(self) -> tuple[int, int]:
        from engine.solver import _core

        raw_keys, raw_starts = _core.layer_plan(self.width, self.height, self.plies, self.size)
        self._keys = np.frombuffer(raw_keys, dtype=np.uint64)
        self._starts = np.frombuffer(raw_starts, dtype=np.uint64).astype(np.int64)
        raw_slots, _ = _core.database_slots(self.width, self.height, self.plies, raw_keys)
        self._slots = np.frombuffer(raw_slots, dtype=np.uint32)
        self._values = self.parts.dense()
        unknown = self._values[self._slots] == UNKNOWN
        per_chunk = np.add.reduceat(unknown.astype(np.int64), self._starts[:-1])
        self._incomplete = {int(i) for i in np.flatnonzero(per_chunk)}
        return len(self._keys), int(len(self._keys) - unknown.sum())

    def _span(self, first: int, last: int) -> slice:
        """The positions of chunks ``first .. last - 1`` (clipped to the plan)."""
        chunks_ = len(self._starts) - 1
        return slice(int(self._starts[min(first, chunks_)]), int(self._starts[min(last, chunks_)]))

    def _left(self) -> list[int]:
        return sorted(self._incomplete)

    def _missing(self, index: int) -> list[str]:
        span = self._span(index, index + 1)
        keys_ = self._keys[span][self._values[self._slots[span]] == UNKNOWN]
        return [Connect4.from_key(int(k), self.width, self.height).notation() for k in keys_]

    def _keep(self, texts: list[str], index: int) -> int:
        lines = parse("\n".join(texts), self.variant)
        if not lines:
            return 0
        positions = [Connect4.parse(line.moves, self.variant) for line in lines]
        slots, values = records_of(
            self.parts,
            (p.current + p.mask for p in positions),
            (line.score for line in lines),
            (line.best for line in lines),
        )
        new = int((self._values[slots] == UNKNOWN).sum())
        self._values[slots] = values
        # A part holds up to 1000 chunks: rewriting (and compressing) it for each chunk cost
        # the builder a tenth of a core, taken from the workers. It is written every FLUSH_S.
        self._dirty.add(index // CHUNKS_PER_PART)
        span = self._span(index, index + 1)
        if not (self._values[self._slots[span]] == UNKNOWN).any():
            self._incomplete.discard(index)
        return new

    def _flush(self) -> None:
        for part in sorted(self._dirty):
            span = self._span(part * CHUNKS_PER_PART, (part + 1) * CHUNKS_PER_PART)
            part_slots = self._slots[span]
            solved = part_slots[self._values[part_slots] != UNKNOWN]
            self.parts.write(part, solved, self._values[solved])
        self._dirty.clear()

    def _close(self) -> None:
        self._flush()


def merged(new: OpeningBook, old: OpeningBook) -> OpeningBook:
    """``new`` plus the entries of ``old`` it lacks (exact, beyond its complete ply)."""
    extra = ~np.isin(old.keys, new.keys)
    keys_ = np.concatenate([new.keys, old.keys[extra]])
    order = np.argsort(keys_, kind="stable")
    return OpeningBook(
        new.width,
        new.height,
        keys_[order],
        np.concatenate([new.scores, old.scores[extra]])[order],
        np.concatenate([new.best, old.best[extra]])[order],
        new.complete,
    )

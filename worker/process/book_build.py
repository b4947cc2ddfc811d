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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import redis
from rq.job import Job
from rq.serializers import JSONSerializer

from engine.book import BookLine, OpeningBook, parse
from engine.layer import CHUNK_SIZE, Chunk, chunks, derive
from worker.core import keys
from worker.core.contract import BookChunkRequest, BookChunkResult
from worker.core.jobstore import IN_FLIGHT, JobStore
from worker.core.settings import Settings

__all__ = ["BookBuild", "BuildProgress"]

log = logging.getLogger("plybot.book")

#: Runs of one chunk that may fail (not counting worker deaths, which the leases handle).
MAX_TRIES = 3
#: Seconds between two looks at the jobs in flight.
POLL_S = 0.5


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


@dataclass
class BookBuild:
    """One build: a board, a layer ply, a chunk size, a layer file and a book file."""

    connection: redis.Redis
    settings: Settings
    width: int
    height: int
    plies: int
    layer_path: Path
    book_path: Path
    size: int = CHUNK_SIZE
    solved: dict[str, BookLine] = field(default_factory=dict)
    #: The layer's chunks, by index (made by :meth:`run`).
    _plan: list[Chunk] = field(default_factory=list)

    @property
    def variant(self) -> str:
        return f"{self.width}x{self.height}"

    @property
    def results_key(self) -> str:
        return keys.book_results(self.variant, self.plies, self.size)

    def run(self, report: Callable[[BuildProgress], None] | None = None) -> OpeningBook:
        """Solve what is left of the layer with the workers, then write and return the book.

        Blocks until done; rides out Redis outages. Raises :class:`BuildError`.
        """
        plan = self._plan = chunks(self.plies, self.width, self.height, self.size)
        total = sum(len(c.notations) for c in plan)
        self.solved = {line.moves: line for line in parse(self._layer_text(), self.variant)}
        layer = self._open_layer()
        start = time.monotonic()
        before = len(self.solved)
        in_flight: dict[int, _InFlight] = {}
        store = JobStore(self.connection, self.settings)
        backoff = 0.5
        note = ""
        rescan = True  # chunks solved while no builder looked: in the results hash
        left = plan
        try:
            while True:
                try:
                    if rescan:
                        self._collect_results_hash(layer)
                        rescan = False
                    left = [c for c in plan if self._missing(c)]
                    if not left:
                        break
                    self._submit(store, left, in_flight)
                    rescan = self._poll(store, in_flight, layer)
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
                            len(self.solved),
                            total,
                            len(self.solved) - before,
                            time.monotonic() - start,
                            len(in_flight),
                            note,
                        )
                    )
                if left:
                    time.sleep(POLL_S)
        finally:
            layer.close()
        book = self.write_book()
        # A stale hash costs nothing: its chunks are all in the layer file.
        with contextlib.suppress(redis.RedisError):
            self.connection.delete(self.results_key)
        if report is not None:
            elapsed = time.monotonic() - start
            report(BuildProgress(total, total, len(self.solved) - before, elapsed, 0))
        return book

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

    # -- steps ----------------------------------------------------------------------

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

    def _missing(self, chunk: Chunk) -> list[str]:
        return [n for n in chunk.notations if n not in self.solved]

    def _keep(self, texts: Iterable[str], layer: TextIO) -> int:
        """Add solved lines not known yet; append them to the layer file. How many were new."""
        new = [
            line for line in parse("\n".join(texts), self.variant) if line.moves not in self.solved
        ]
        for line in new:
            self.solved[line.moves] = line
        if new:
            layer.write("".join(line.text() + "\n" for line in new))
            layer.flush()
        return len(new)

    def _collect_results_hash(self, layer: TextIO) -> None:
        for value in self.connection.hvals(self.results_key):
            self._keep(json.loads(value), layer)

    def _submit(self, store: JobStore, left: list[Chunk], in_flight: dict[int, _InFlight]) -> None:
        for chunk in left:
            if chunk.index not in in_flight:
                in_flight[chunk.index] = self._send(store, chunk)

    def _send(self, store: JobStore, chunk: Chunk, tries: int = 1) -> _InFlight:
        """A job for the positions of ``chunk`` not solved yet (joins one in flight)."""
        request = BookChunkRequest(
            variant=self.variant,
            plies=self.plies,
            size=self.size,
            index=chunk.index,
            notations=self._missing(chunk),
        )
        return _InFlight(store.submit(request).id, tries)

    def _poll(self, store: JobStore, in_flight: dict[int, _InFlight], layer: TextIO) -> bool:
        """Take the lines of finished jobs; send again what failed. True if a job was lost."""
        lost = False
        indices = list(in_flight)
        jobs = Job.fetch_many(
            [in_flight[index].job_id for index in indices],
            connection=self.connection,
            serializer=JSONSerializer,
        )
        for index, job in zip(indices, jobs, strict=True):
            flight = in_flight[index]
            if job is not None and job.get_status(refresh=False) in IN_FLIGHT:
                continue
            del in_flight[index]
            state = store.state(flight.job_id, with_progress=False) if job is not None else None
            if state is None:  # the record was lost (Redis restarted without it, or removed)
                lost = True
            elif state.status == "done" and isinstance(state.result, BookChunkResult):
                self._keep(state.result.lines, layer)
            else:
                why = state.error or "failed"
                if flight.tries >= MAX_TRIES:
                    raise BuildError(f"chunk {index} failed {flight.tries} times: {why}")
                log.warning("chunk %d failed (%s); sending it again", index, why)
                in_flight[index] = self._send(store, self._plan[index], flight.tries + 1)
        return lost


def merged(new: OpeningBook, old: OpeningBook) -> OpeningBook:
    """``new`` plus the entries of ``old`` it lacks (exact, beyond its complete ply)."""
    import numpy as np

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

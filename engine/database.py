"""The stones databases: the exact score and a best move of every position with N stones.

Every distinct 7x6 position with exactly 12 stones whose player to move cannot
win at once (4,200,899 of them, mirror images merged) is solved once, by the
workers (``plybot book build --database``), and read inside every search: a
node with 12 stones asks the database before its table (the compiled core's
lookup ladder, :meth:`engine.solver.Solver`), so every position before ply 12
is a few plies of search away from exact answers. The 13-stone database
(10,881,076 positions; built the same way, ``--plies 13``, read for what it
holds while it grows) makes every column of a 12-stone position a lookup.

Two forms on disk:

* **Parts** (``engine/data/connect4-7x6-stones12/part-NNNN.bin``): what the
  build writes and the repository holds. Part ``k`` holds the solved positions
  of the build's chunks ``k * CHUNKS_PER_PART ..`` (:func:`engine.layer`'s
  order), so a build adds or rewrites a few small files at a time, and a
  partial build is committed as it goes. Format (little-endian)::

      plybot-db-part 1 connect4 <W>x<H> stones=<S> records=<n>\\n
      zlib(
        gaps    n x uint32   slots (database.h's rank), strictly increasing, each as
                             its difference from the one before (the first as itself)
        values  n x uint8    value bytes: (score - lowest) * W + best (canonical column)
      )

* **Packed** (``connect4-7x6-stones12.db``, beside the parts, not in the
  repository): one byte per slot (7.1 MB; ``0xFF`` unknown) after a 256-byte
  header naming the parts it was packed from. It is memory-mapped read-only,
  so the worker processes of one machine share one copy in the page cache.
  :func:`open_database` packs it again whenever the parts changed (a build's
  progress, a pull); opening a packed file that is up to date maps it and
  reads its header, nothing more.

The slot layout and the value byte are defined once, in
``engine/solver/csrc/database.h``; this module only moves bytes.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from engine.connect4 import Connect4
from engine.errors import PlybotError
from engine.solver import _core

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "CHUNKS_PER_PART",
    "SHIPPED_STONES",
    "DatabaseError",
    "Parts",
    "StoneDatabase",
    "open_database",
    "shipped_databases",
    "shipped_parts",
]

#: The stone count of the shipped database.
STONES = 12
#: The stone counts of the shipped 7x6 databases: 12, and 13 (every column of a 12-stone
#: position), each in its own directory of parts (:func:`shipped_parts`).
SHIPPED_STONES = (12, 13)
#: Build chunks per part file: about 64,000 positions, 0.15 MB on disk.
CHUNKS_PER_PART = 1000
UNKNOWN = _core.DB_UNKNOWN
_PART_MAGIC = b"plybot-db-part 1"
_PACKED_MAGIC = b"plybot-db-packed 1"
_HEADER = 256


class DatabaseError(PlybotError, ValueError):
    """A database file that cannot be read; the message names it and why."""


def score_bounds(width: int, height: int, stones: int) -> tuple[int, int]:
    """The scores a value byte spans: (lowest, highest), as database.h defines them."""
    max_stones = (width * height + 1) // 2
    return -(max_stones - (stones + 1) // 2), max_stones - 1 - stones // 2


@dataclass(frozen=True)
class Parts:
    """The part files of one database (one board, one stone count) in ``directory``."""

    directory: Path
    width: int = 7
    height: int = 6
    stones: int = STONES

    @property
    def variant(self) -> str:
        return f"{self.width}x{self.height}"

    @property
    def slots(self) -> int:
        return int(_core.database_size(self.width, self.height, self.stones))

    def paths(self) -> list[Path]:
        return sorted(self.directory.glob("part-*.bin")) if self.directory.is_dir() else []

    def path(self, index: int) -> Path:
        return self.directory / f"part-{index:04d}.bin"

    def read(self, path: Path) -> tuple[np.ndarray, np.ndarray]:
        """The slots (uint32, ascending) and value bytes of one part file.

        Raises :class:`DatabaseError` naming the file if it is not one of this database's.
        """
        import numpy as np  # not at the top: opening a packed database needs none (0.13 s)

        data = path.read_bytes()
        head, _, body = data.partition(b"\n")
        want = (
            f"{_PART_MAGIC.decode()} connect4 {self.variant} stones={self.stones} records="
        ).encode()
        if not head.startswith(want):
            raise DatabaseError(
                f"{path}: not a part of the {self.variant} {self.stones}-stone database"
            )
        try:
            n = int(head[len(want) :])
            raw = zlib.decompress(body)
        except (ValueError, zlib.error) as exc:
            raise DatabaseError(f"{path}: damaged ({exc})") from None
        if len(raw) != 5 * n:
            raise DatabaseError(f"{path}: {len(raw)} bytes of records, {5 * n} expected")
        slots = np.cumsum(np.frombuffer(raw[: 4 * n], dtype="<u4"), dtype=np.uint64)
        values = np.frombuffer(raw[4 * n :], dtype=np.uint8)
        if n and (slots[-1] >= self.slots or (n > 1 and not (np.diff(slots) > 0).all())):
            raise DatabaseError(f"{path}: slots out of order or out of range")
        return slots.astype(np.uint32), values

    def write(self, index: int, slots: np.ndarray, values: np.ndarray) -> Path:
        """Write part ``index`` atomically (a kill leaves the old file or the new one)."""
        import numpy as np

        order = np.argsort(slots, kind="stable")
        slots, values = slots[order].astype(np.uint32), values[order].astype(np.uint8)
        gaps = np.diff(slots, prepend=np.uint32(0)).astype("<u4")
        head = (
            f"{_PART_MAGIC.decode()} connect4 {self.variant} stones={self.stones} "
            f"records={len(slots)}\n"
        ).encode()
        path = self.path(index)
        _atomic_write(path, head + zlib.compress(gaps.tobytes() + values.tobytes(), 9))
        return path

    def dense(self) -> np.ndarray:
        """Every slot's value byte from all parts (``UNKNOWN`` where none holds it)."""
        import numpy as np

        out = np.full(self.slots, UNKNOWN, dtype=np.uint8)
        for path in self.paths():
            slots, values = self.read(path)
            out[slots] = values
        return out

    def fingerprint(self) -> bytes:
        """A digest of the parts' names, sizes and modification times (cheap: stat only)."""
        h = hashlib.sha256(f"{self.variant} {self.stones}".encode())
        for path in self.paths():
            st = path.stat()
            h.update(f"{path.name} {st.st_size} {st.st_mtime_ns}\n".encode())
        return h.digest()


class StoneDatabase:
    """A packed database, memory-mapped: ``lookup`` answers one position, the core all others.

    Holds the map open as long as it lives; :meth:`values` is the buffer the
    compiled core reads (:meth:`engine.solver._core.Core.add_database`).
    """

    def __init__(self, path: Path, width: int, height: int, stones: int) -> None:
        self.path = path
        self.width, self.height, self.stones = width, height, stones
        self.lowest, _ = score_bounds(width, height, stones)
        with path.open("rb") as f:
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self.values = memoryview(self._map)[_HEADER:]

    @property
    def variant(self) -> str:
        return f"{self.width}x{self.height}"

    def __len__(self) -> int:
        """Positions it knows (a scan of 7 MB: not for a hot path)."""
        return len(self.values) - self.values.tobytes().count(UNKNOWN)

    def held_keys(self) -> tuple[np.ndarray, int]:
        """The keys (canonical, ``uint64``, in build order) of the positions it holds, and how
        many positions a complete database holds (the build's plan: seconds, not a hot path)."""
        import numpy as np

        raw_keys, _ = _core.layer_plan(self.width, self.height, self.stones, 1 << 30)
        raw_slots, _ = _core.database_slots(self.width, self.height, self.stones, raw_keys)
        values = np.frombuffer(self.values, dtype=np.uint8)[np.frombuffer(raw_slots, np.uint32)]
        return np.frombuffer(raw_keys, dtype=np.uint64)[values != UNKNOWN], len(values)

    def lookup(self, position: Connect4) -> tuple[int, int] | None:
        """``(score, best)`` of ``position`` (best in its own orientation), or ``None``."""
        if position.ply != self.stones or position.variant != self.variant:
            return None
        key = position.current + position.mask
        slots, flips = _core.database_slots(
            self.width, self.height, self.stones, key.to_bytes(8, "little")
        )
        value = self.values[int.from_bytes(slots, "little")]
        if value == UNKNOWN:
            return None
        best = value % self.width
        return self.lowest + value // self.width, (self.width - 1 - best if flips[0] else best)


def open_database(parts: Parts, packed: Path | None = None) -> StoneDatabase | None:
    """The database of ``parts``, packed first if the packed file is missing or stale.

    ``packed`` defaults to the file beside the parts' directory (or, where that
    is not writable, one in the user's cache directory). ``None`` if there is
    no part at all. Several processes may call it at once: one packs (holding
    the parts directory's lock) while the others wait, and all map its file,
    one copy in the page cache; it is written to a temporary file and renamed,
    so a reader never sees half a file.
    """
    if not parts.paths():
        return None
    path = packed or _packed_path(parts)
    header = _PACKED_MAGIC + b" " + parts.fingerprint().hex().encode()
    if not _packed_from(path, header):
        # One process packs, the others wait for it and map its file: each packing its own
        # and renaming it over the others' left every process of a fresh machine's workers
        # with a copy of its own (its map of a file since replaced), not one shared copy.
        with _exclusive(parts.directory):
            if not _packed_from(path, header):
                _atomic_write(path, header.ljust(_HEADER, b"\0") + parts.dense().tobytes())
    return StoneDatabase(path, parts.width, parts.height, parts.stones)


def _packed_from(path: Path, header: bytes) -> bool:
    """Whether the packed file at ``path`` exists and was packed from the parts ``header``
    names."""
    try:
        with path.open("rb") as f:
            return f.read(_HEADER).rstrip(b"\0") == header
    except OSError:
        return False


@contextmanager
def _exclusive(directory: Path) -> Iterator[None]:
    """Hold ``directory``'s exclusive lock (``flock``; released if the process dies), where
    the system has one."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, the processes may pack a copy each
        yield
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def shipped_parts(stones: int) -> Path:
    """The directory of the shipped 7x6 database of ``stones`` stones (one of
    :data:`SHIPPED_STONES`; its parts may not exist yet)."""
    return Path(__file__).parent / "data" / f"connect4-7x6-stones{stones}"


@cache
def shipped_databases(width: int = 7, height: int = 6) -> tuple[StoneDatabase, ...]:
    """The shipped databases of this board (opened once per process), by stone count:
    those of :data:`SHIPPED_STONES` that have a part (none for another board)."""
    if (width, height) != (7, 6):
        return ()
    opened = (open_database(Parts(shipped_parts(n), stones=n)) for n in SHIPPED_STONES)
    return tuple(database for database in opened if database is not None)


def _packed_path(parts: Parts) -> Path:
    name = f"{parts.directory.name}.db"
    if os.access(parts.directory.parent, os.W_OK):
        return parts.directory.parent / name
    cache_home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache_home / "plybot" / name


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would keep a committed part from other users
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def records_of(
    parts: Parts, keys: Iterable[int], scores: Iterable[int], best: Iterable[int]
) -> tuple[np.ndarray, np.ndarray]:
    """Slots and value bytes of solved positions given by key (``current + mask``), score
    and a best column in the key's own orientation."""
    import numpy as np

    key_array = np.fromiter(keys, dtype=np.uint64)
    raw_slots, raw_flips = _core.database_slots(
        parts.width, parts.height, parts.stones, key_array.astype("<u8").tobytes()
    )
    slots = np.frombuffer(raw_slots, dtype=np.uint32)
    flips = np.frombuffer(raw_flips, dtype=np.uint8).astype(bool)
    best_array = np.fromiter(best, dtype=np.int64)
    best_array = np.where(flips, parts.width - 1 - best_array, best_array)
    lowest, highest = score_bounds(parts.width, parts.height, parts.stones)
    score_array = np.fromiter(scores, dtype=np.int64)
    if len(score_array) and (score_array.min() < lowest or score_array.max() > highest):
        raise DatabaseError(f"a score outside [{lowest}, {highest}] for {parts.stones} stones")
    values = (score_array - lowest) * parts.width + best_array
    return slots, values.astype(np.uint8)

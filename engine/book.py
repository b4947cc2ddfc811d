"""The Connect Four opening book: exact scores and best moves of early positions, by lookup.

Early positions are the solver's costliest: the empty 7x6 board takes minutes,
a position after two moves a quarter of an hour for Pons' C++ solver. A
*complete* book to ply ``N`` holds every distinct position of plies ``0..N``
(mirror images share an entry), whatever both sides played: the layer at ply
``N`` solved by this package's solver, every shallower position derived from
its children by negamax (:mod:`engine.layer`, ``plybot book build``). A book
may also hold exact entries beyond its complete depth.

The solver hands the book's arrays to its compiled core, which asks them at
the root and at every node of the book's plies (an exact root answers at once,
exact children make an analysis of every column instant): the first rung of
the solver's lookup ladder. The book is also a read-only
:class:`engine.cache.PositionCache` (:meth:`OpeningBook.get_many`), for tools
that read it as one. It is never written by a search.

File format (binary, little-endian): a header line, then one zlib stream of three
arrays::

    plybot-book 2 connect4 <W>x<H> complete=<N> entries=<n>\\n
    zlib(
      gaps    n x uint64   canonical keys (current + mask, the lesser of a position
                           and its mirror), strictly increasing, each stored as its
                           difference from the one before (the first as itself)
      scores  n x int8     exact score from the side to move (Pons' convention)
      best    n x int8     a best move, 0-based column in the canonical orientation
    )

The gaps between sorted keys are small and regular, so the stream takes about
1.2 bytes an entry where the arrays take 10; it unpacks in milliseconds.
``complete=-1`` says nothing is known to be complete. A 7x6 book complete to
ply 8 (131,733 entries) takes 0.15 MB on disk and 1.3 MB in memory.

Text lines (``<moves> <score> <best>``, :class:`BookLine`, ``#`` comments) are
the format of a layer being built (:mod:`engine.layer`): readable, appendable,
diffable.
"""

from __future__ import annotations

import operator
import os
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from engine.cache import EXACT_DEPTH, CacheEntry
from engine.connect4 import Connect4
from engine.errors import PlybotError

if TYPE_CHECKING:
    import numpy as np

#: The book shipped for the standard board, in the ``engine.data`` package.
SHIPPED_PATH = Path(__file__).parent / "data" / "connect4-7x6.book"

_MAGIC = "plybot-book 2 connect4"


class BookError(PlybotError):
    """A malformed book file or line; the message quotes it."""


@dataclass(frozen=True, slots=True)
class BookLine:
    """One solved position: ``moves`` reach it, ``score`` is exact, ``best`` is 0-based."""

    moves: str
    score: int
    best: int

    def text(self) -> str:
        return f"{self.moves or '-'} {self.score} {self.best + 1}"


#: numpy's dtype of each column's ``array`` typecode.
_DTYPES = {"Q": "<u8", "b": "i1"}


def _packed(typecode: str, values: Iterable[int]) -> array[int]:
    """``values`` (an ``array``, a numpy array or ints) as an ``array`` of ``typecode``."""
    if isinstance(values, array) and values.typecode == typecode:
        return values
    astype = getattr(values, "astype", None)
    if astype is not None:  # a numpy array: its bytes, converted once
        raw: bytes = astype(_DTYPES[typecode]).tobytes()
        return array(typecode, raw)
    return array(typecode, values)


class OpeningBook:
    """Exact entries by canonical key, for one board size; a read-only ``PositionCache``.

    Invariant: ``keys`` strictly increasing; entry ``i`` is exact (``scores[i]``)
    with the playable canonical move ``best[i]``. ``complete`` is the ply up to
    which every ongoing position is in the book (-1: none promised).

    The columns are kept as ``array.array`` (uint64 keys, int8 scores and moves), so
    reading a book imports no numpy (a tenth of a second of a ``plybot solve``);
    :attr:`keys`, :attr:`scores` and :attr:`best` are numpy views of them for callers
    that compute over a whole book (the builder), and :meth:`columns` hands the arrays
    themselves to the solver's core, which reads them in place.
    """

    name = "connect4"

    def __init__(
        self,
        width: int,
        height: int,
        keys: Iterable[int],
        scores: Iterable[int],
        best: Iterable[int],
        complete: int = -1,
    ) -> None:
        """``keys``, ``scores``, ``best``: numpy arrays, ``array.array`` or sequences of ints."""
        packed = _packed("Q", keys), _packed("b", scores), _packed("b", best)
        if not (len(packed[0]) == len(packed[1]) == len(packed[2])):
            raise BookError("a book needs as many scores and moves as keys")
        if not all(map(operator.lt, packed[0], islice(packed[0], 1, None))):
            raise BookError("a book's keys must be strictly increasing")
        self._keys, self._scores, self._best = packed
        self.width = width
        self.height = height
        self.variant = f"{width}x{height}"
        self.complete = complete

    @property
    def keys(self) -> np.ndarray:
        """The canonical keys, strictly increasing (a numpy view)."""
        import numpy as np

        return np.frombuffer(self._keys, dtype=np.uint64)

    @property
    def scores(self) -> np.ndarray:
        """The exact scores (a numpy view)."""
        import numpy as np

        return np.frombuffer(self._scores, dtype=np.int8)

    @property
    def best(self) -> np.ndarray:
        """A best move of each entry, 0-based, in the canonical orientation (a numpy view)."""
        import numpy as np

        return np.frombuffer(self._best, dtype=np.int8)

    def columns(self) -> tuple[array[int], array[int], array[int]]:
        """The keys, scores and best moves themselves (buffers the solver's core reads)."""
        return self._keys, self._scores, self._best

    # -- construction -------------------------------------------------------------

    @classmethod
    def from_lines(
        cls, width: int, height: int, lines: Iterable[BookLine], complete: int = -1
    ) -> OpeningBook:
        """A book of ``lines`` (a later line for the same position wins)."""
        variant = f"{width}x{height}"
        entries: dict[int, tuple[int, int]] = {}
        for line in lines:
            position = Connect4.parse(line.moves, variant)
            entries[int(position.key(), 16)] = (line.score, position.to_canonical(line.best))
        order = sorted(entries)
        return cls(
            width,
            height,
            array("Q", order),
            array("b", [entries[k][0] for k in order]),
            array("b", [entries[k][1] for k in order]),
            complete,
        )

    @classmethod
    def load(cls, path: Path) -> OpeningBook:
        """Read a book file. Raises ``BookError`` naming the file and what is wrong."""
        # Here, not at the top: engine.solver imports this module.
        from engine.solver._core import prefix_sums

        data = path.read_bytes()
        end = data.find(b"\n")
        header = data[:end].decode("ascii", "replace") if end > 0 else ""
        fields = header.removeprefix(_MAGIC).split()
        try:
            if not header.startswith(_MAGIC) or len(fields) != 3:
                raise ValueError("not a plybot book")
            width, height = Connect4.parse_variant(fields[0])
            complete = int(fields[1].removeprefix("complete="))
            n = int(fields[2].removeprefix("entries="))
            try:
                body = zlib.decompress(data[end + 1 :])
            except zlib.error:
                raise ValueError("the body after the header is not a zlib stream") from None
            if len(body) != 10 * n:
                raise ValueError(f"expected {n} entries of 10 bytes, found {len(body)} bytes")
            keys = array("Q", bytes(8 * n))
            # The keys from the gaps, in C (the core's helper: milliseconds, no numpy).
            if not prefix_sums(memoryview(body)[: 8 * n], keys):
                raise ValueError("its keys are not strictly increasing")
        except ValueError as exc:
            raise BookError(f"{path}: {exc}") from None
        book = cls.__new__(cls)  # checked above: not again, entry by entry, in __init__
        book._keys = keys
        book._scores = array("b", body[8 * n : 9 * n])
        book._best = array("b", body[9 * n :])
        book.width, book.height, book.variant = width, height, f"{width}x{height}"
        book.complete = complete
        return book

    def save(self, path: Path) -> None:
        """Write the book to ``path`` atomically (a reader never sees half a file)."""
        import numpy as np

        header = f"{_MAGIC} {self.variant} complete={self.complete} entries={len(self)}\n"
        tmp = path.with_name(path.name + ".tmp")
        gaps = np.diff(self.keys, prepend=np.uint64(0))
        body = b"".join(
            [gaps.astype("<u8").tobytes(), self._scores.tobytes(), self._best.tobytes()]
        )
        with tmp.open("wb") as out:
            out.write(header.encode("ascii"))
            out.write(zlib.compress(body, 9))
        os.replace(tmp, path)

    # -- reading ------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, position: object) -> bool:
        # The type, not the capability: the book's keys are Connect Four bitboard keys.
        return isinstance(position, Connect4) and self._index(position.key()) >= 0

    def _index(self, key: str) -> int:
        """The entry of canonical key ``key`` (hex), or -1."""
        try:
            k = int(key, 16)
        except ValueError:
            return -1
        i = bisect_left(self._keys, k)
        return i if i < len(self._keys) and self._keys[i] == k else -1

    def lookup(self, position: Connect4) -> tuple[int, int] | None:
        """``(score, best move)`` of ``position`` in its own orientation, or ``None``."""
        if position.variant != self.variant:
            return None
        i = self._index(position.key())
        if i < 0:
            return None
        return self._scores[i], position.from_canonical(self._best[i])

    def get_many(self, game: str, variant: str, keys: Sequence[str]) -> list[CacheEntry | None]:
        if game != self.name or variant != self.variant:
            return [None] * len(keys)
        found: list[CacheEntry | None] = []
        for key in keys:
            i = self._index(key)
            if i < 0:
                found.append(None)
            else:
                score = self._scores[i]
                found.append(CacheEntry(score, score, EXACT_DEPTH, self._best[i]))
        return found

    def put_many(self, game: str, variant: str, items: Sequence[tuple[str, CacheEntry]]) -> None:
        """A book is read-only: writes go nowhere."""

    def positions(self) -> Iterator[tuple[Connect4, int, int]]:
        """Every entry as ``(position, score, best move in its orientation)``, by key."""
        for key, score, best in zip(self._keys, self._scores, self._best, strict=True):
            position = Connect4.from_key(key, self.width, self.height)
            yield position, score, position.from_canonical(best)


@cache
def shipped_book(width: int = 7, height: int = 6) -> OpeningBook | None:
    """The book shipped for this board size (loaded once per process), or ``None``."""
    if (width, height) != (7, 6) or not SHIPPED_PATH.is_file():
        return None
    return OpeningBook.load(SHIPPED_PATH)


def parse(text: str, variant: str = "7x6") -> list[BookLine]:
    """The text lines of a layer file for ``variant``.

    Raises ``BookError`` (a ``ValueError``) quoting a malformed line.
    """
    lines = []
    for number, raw in enumerate(text.splitlines(), 1):
        body = raw.split("#", 1)[0].strip()
        if not body:
            continue
        fields = body.split()
        try:
            if len(fields) != 3:
                raise ValueError("expected '<moves> <score> <best>'")
            moves = "" if fields[0] == "-" else fields[0]
            position = Connect4.parse(moves, variant)
            best = int(fields[2]) - 1
            if not (0 <= best < position.width and position.can_play(best)):
                raise ValueError(f"column {fields[2]} is not playable")
            lines.append(BookLine(moves, int(fields[1]), best))
        except ValueError as exc:
            raise BookError(f"'{raw.strip()}': {exc} (book line {number})") from None
    return lines


def read(path: Path, variant: str = "7x6") -> list[BookLine]:
    """The text lines of the layer file at ``path`` (none if it does not exist)."""
    if not path.exists():
        return []
    return parse(path.read_text(encoding="ascii"), variant)

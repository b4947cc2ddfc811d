"""Connect Four: the position, its rules and notation, over bitboards (pure Python).

Bit layout, for a board ``W`` columns wide and ``H`` rows high (7x6 drawn).
Each column takes ``H + 1`` bits; the extra top bit of each column is always
0, so shifting a board never carries a stone from one column into the next::

      .  .  .  .  .  .  .     <- sentinel row (bit H of each column)
      5 12 19 26 33 40 47
      4 11 18 25 32 39 46
      3 10 17 24 31 38 45
      2  9 16 23 30 37 44
      1  8 15 22 29 36 43
      0  7 14 21 28 35 42     <- bottom row

A position is two bitboards: ``mask`` (every stone) and ``current`` (the stones
of the side to move). ``current + mask`` encodes the position exactly (within
a column, ``mask`` is a run of ``h`` ones from the bottom, and adding it to
``current`` gives a value in ``[2**h - 1, 2**(h+1) - 2]``, disjoint for each
``h``), so it is the key: no hash, no collision. Any board with
``(H + 1) * W <= 64`` fits in 64 bits, which the compiled solver relies on.

Notation: the 1-based column digits of the moves from the empty board
(``"4453"``), exactly as in Pascal Pons' benchmark files.
"""

from __future__ import annotations

from typing import ClassVar, Self

from engine.errors import GameOverError, IllegalMoveError, NotationError
from engine.game import Outcome, register_game
from engine.scores import score_bounds, win_score


def _popcount(x: int) -> int:
    return x.bit_count()


class Geometry:
    """The masks of one board size; shared by every position of that size."""

    _cache: ClassVar[dict[tuple[int, int], Geometry]] = {}

    def __init__(self, width: int, height: int) -> None:
        self.width = width
        self.height = height
        self.variant = f"{width}x{height}"
        self.h1 = height + 1
        self.bottom_mask = sum(1 << (c * self.h1) for c in range(width))
        self.board_mask = self.bottom_mask * ((1 << height) - 1)
        self.column_masks = [((1 << height) - 1) << (c * self.h1) for c in range(width)]
        self.top_masks = [1 << (height - 1 + c * self.h1) for c in range(width)]
        self.bottom_masks = [1 << (c * self.h1) for c in range(width)]
        center = (width - 1) / 2
        # Centre columns first: they take part in the most alignments.
        self.order = sorted(range(width), key=lambda c: (abs(c - center), c))
        self.max_stones = (width * height + 1) // 2
        self.cells = width * height
        self.top_mask = sum(self.top_masks)
        # Shifts by 1, 2 and 3 cells along a row and the two diagonals.
        self.line_shifts = tuple((d, 2 * d, 3 * d) for d in (self.h1, self.h1 - 1, self.h1 + 1))
        # Legal moves by the set of full columns (their top cells), in the search order: all
        # 2**width sets made here (at most 512), not one by one in the middle of a search,
        # where each would pin an allocator arena that the search's records leave empty.
        self.legal_by_full: dict[int, tuple[int, ...]] = {}
        for columns in range(1 << width):
            full = sum(self.top_masks[c] for c in range(width) if columns >> c & 1)
            self.legal_by_full[full] = tuple(c for c in self.order if not full & self.top_masks[c])

    @classmethod
    def of(cls, width: int, height: int) -> Geometry:
        key = (width, height)
        geometry = cls._cache.get(key)
        if geometry is None:
            geometry = cls._cache[key] = cls(width, height)
        return geometry

    def alignment(self, stones: int) -> bool:
        """True if ``stones`` hold four in a row in any direction."""
        h1 = self.h1
        for shift in (1, h1, h1 - 1, h1 + 1):  # vertical, horizontal, two diagonals
            pairs = stones & (stones >> shift)
            if pairs & (pairs >> (2 * shift)):
                return True
        return False

    def winning_cells(self, stones: int, mask: int) -> int:
        """Empty cells (not necessarily playable yet) that would complete four for ``stones``."""
        r = (stones << 1) & (stones << 2) & (stones << 3)  # vertical: three below
        # Unrolled over the three other directions (this is the search's hottest helper).
        for s1, s2, s3 in self.line_shifts:
            p = (stones << s1) & (stones << s2)
            q = (stones >> s1) & (stones >> s2)
            r |= (p & ((stones << s3) | (stones >> s1))) | (q & ((stones << s1) | (stones >> s3)))
        return r & (self.board_mask ^ mask)

    def mirror(self, bits: int) -> int:
        """``bits`` with the columns in reverse order."""
        h1, w = self.h1, self.width
        col = (1 << h1) - 1
        out = 0
        for c in range(w):
            out |= ((bits >> (c * h1)) & col) << ((w - 1 - c) * h1)
        return out


@register_game
class Connect4:
    """A Connect Four position with undo. Satisfies :class:`engine.game.Game`."""

    name = "connect4"
    DEFAULT_VARIANT = "7x6"
    #: The compiled exact solver (``engine.solver``) and the opening book play this game.
    exact_solver: ClassVar[bool] = True

    __slots__ = ("_g", "_history", "_threats", "_winner", "current", "mask", "moves")

    def __init__(self, width: int = 7, height: int = 6) -> None:
        self._check_size(width, height)
        self._g = Geometry.of(width, height)
        self.current = 0
        self.mask = 0
        self.moves: list[int] = []
        self._history: list[tuple[int, int]] = []
        self._winner: int | None = None
        self._threats = (-1, -1, 0)  # (mask, current, the opponent's winning cells)

    # -- construction and notation ------------------------------------------------

    @staticmethod
    def _check_size(width: int, height: int) -> None:
        if not (1 <= width <= 9 and height >= 1 and (height + 1) * width <= 64):
            raise NotationError(
                f"'{width}x{height}': a Connect Four board needs 1 <= width <= 9, "
                "height >= 1 and (height + 1) * width <= 64"
            )

    @staticmethod
    def parse_variant(variant: str | None) -> tuple[int, int]:
        """``"7x6"`` -> ``(7, 6)``; ``None`` gives the default board.

        Raises ``NotationError`` for a malformed variant or a board too large for the bitboards.
        """
        text = variant or Connect4.DEFAULT_VARIANT
        try:
            width, height = (int(part) for part in text.lower().split("x"))
        except ValueError:
            raise NotationError(
                f"'{text}': a Connect Four variant is WIDTHxHEIGHT, e.g. '7x6'"
            ) from None
        Connect4._check_size(width, height)
        return width, height

    @classmethod
    def parse(cls, notation: str, variant: str | None = None) -> Self:
        position = cls(*cls.parse_variant(variant))
        width = position.width
        for index, char in enumerate(notation, 1):
            if not ("0" <= char <= "9"):
                raise NotationError(f"'{notation}': '{char}' is not a column digit (move {index})")
            column = int(char)
            if not 1 <= column <= width:
                raise NotationError(
                    f"'{notation}': column {column} is outside 1..{width} (move {index})"
                )
            if position._winner is not None or position.ply == width * position.height:
                raise GameOverError(
                    f"'{notation}': the game is already over after move {index - 1}"
                )
            if not position.can_play(column - 1):
                raise IllegalMoveError(f"'{notation}': column {column} is full (move {index})")
            position.push(column - 1)
        return position

    @classmethod
    def from_key(cls, key: int, width: int = 7, height: int = 6) -> Self:
        """The position whose key (``current + mask``) is ``key``, reached by some line.

        In each column of ``h + 1`` bits, ``mask`` holds ``2**h - 1`` for
        ``h`` stones and ``current`` a subset of it, so their sum has ``h``
        as its bit length (of sum + 1) less one. The line is found by taking
        stones off the tops, the last mover's first, backtracking (each mask
        tried once). Raises ``NotationError`` if no line of play reaches it.
        """
        g = Geometry.of(width, height)
        current = mask = 0
        for c in range(width):
            v = (key >> (c * g.h1)) & ((1 << g.h1) - 1)
            h = (v + 1).bit_length() - 1
            if h > height:
                raise NotationError(f"'{key:x}': column {c + 1} holds more than {height} stones")
            current |= (v - ((1 << h) - 1)) << (c * g.h1)
            mask |= ((1 << h) - 1) << (c * g.h1)
        failed: set[int] = set()

        def unplay(last: int, other: int, mask: int) -> list[int] | None:
            """Columns of a line ending in ``mask`` where ``last`` moved last."""
            if not mask:
                return []
            if mask in failed:
                return None
            for c in range(width):
                column = (mask >> (c * g.h1)) & ((1 << g.h1) - 1)
                top = (column + 1) >> 1 << (c * g.h1)  # the column's highest stone
                if column and last & top:
                    line = unplay(other, last ^ top, mask ^ top)
                    if line is not None:
                        return [*line, c]
            failed.add(mask)
            return None

        line = unplay(current ^ mask, current, mask)
        if line is None:
            raise NotationError(f"'{key:x}': no line of play reaches this position")
        return cls.parse("".join(str(c + 1) for c in line), f"{width}x{height}")

    def notation(self) -> str:
        return "".join(str(c + 1) for c in self.moves)

    def copy(self) -> Self:
        other = type(self).__new__(type(self))
        other._g = self._g
        other.current = self.current
        other.mask = self.mask
        other.moves = list(self.moves)
        other._history = list(self._history)
        other._winner = self._winner
        other._threats = self._threats
        return other

    def __repr__(self) -> str:
        return f"Connect4.parse({self.notation()!r}, {self.variant!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Connect4):
            return NotImplemented
        return (self.variant, self.current, self.mask) == (other.variant, other.current, other.mask)

    def __hash__(self) -> int:
        return hash((self.variant, self.current, self.mask))

    # -- the Game protocol --------------------------------------------------------

    @property
    def width(self) -> int:
        return self._g.width

    @property
    def height(self) -> int:
        return self._g.height

    @property
    def variant(self) -> str:
        return self._g.variant

    @property
    def side_to_move(self) -> int:
        return len(self.moves) & 1

    @property
    def ply(self) -> int:
        return len(self.moves)

    def can_play(self, column: int) -> bool:
        return 0 <= column < self._g.width and not self.mask & self._g.top_masks[column]

    def legal_moves(self) -> list[int]:
        if self._winner is not None:
            return []
        g = self._g
        full = self.mask & g.top_mask
        return list(g.legal_by_full[full])

    def push(self, move: int) -> None:
        # The search's innermost call: checks first, then plain local arithmetic.
        g = self._g
        moves = self.moves
        mask = self.mask
        if self._winner is not None or len(moves) == g.cells:
            raise GameOverError(f"the game is already over after move {len(moves)}")
        if not 0 <= move < g.width:
            raise NotationError(f"column {move + 1} is outside 1..{g.width}")
        if mask & g.top_masks[move]:
            raise IllegalMoveError(f"column {move + 1} is full")
        current = self.current
        self._history.append((current, mask))
        current ^= mask
        mask |= mask + g.bottom_masks[move]
        self.current = current
        self.mask = mask
        moves.append(move)
        # ``current ^ mask`` is now the stones of the side that just moved.
        stones = current ^ mask
        h1 = g.h1
        for shift in (1, h1, h1 - 1, h1 + 1):  # vertical, horizontal, two diagonals
            pairs = stones & (stones >> shift)
            if pairs & (pairs >> (2 * shift)):
                self._winner = (len(moves) - 1) & 1
                return

    def pop(self) -> int:
        if not self.moves:
            raise IndexError("pop from the starting position")
        self.current, self.mask = self._history.pop()
        self._winner = None
        return self.moves.pop()

    def outcome(self) -> Outcome | None:
        if self._winner is not None:
            return Outcome(self._winner)
        if len(self.moves) == self._g.cells:
            return Outcome(None)
        return None

    def terminal_score(self) -> int:
        if self._winner is None:
            return 0
        return -win_score(self._g.max_stones, (len(self.moves) + 1) // 2)

    def max_score(self) -> int:
        return win_score(self._g.max_stones, 4)  # four in a row with the fourth stone

    @property
    def max_stones(self) -> int:
        """Stones the first player has on a full board: ``(width * height + 1) // 2``."""
        return self._g.max_stones

    def score_range(self) -> tuple[int, int]:
        """The lowest and highest exact score possible now, from the side to move
        (:func:`engine.scores.score_bounds`; Pons' convention)."""
        return score_bounds(self._g.max_stones, len(self.moves))

    def evaluate(self) -> int:
        """Threat count and centre control, from the side to move."""
        g = self._g
        opponent = self.current ^ self.mask
        own_threats = g.winning_cells(self.current, self.mask)
        opp_threats = self._opponent_threats()
        score = 3 * (_popcount(own_threats) - _popcount(opp_threats))
        centre = g.column_masks[g.order[0]]
        score += _popcount(self.current & centre) - _popcount(opponent & centre)
        return score

    def table_key(self) -> int:
        """Exact key of this orientation (not mirror-merged): cheap, for in-process tables."""
        return self.current + self.mask

    def key(self) -> str:
        code = self.current + self.mask
        return format(min(code, self._g.mirror(code)), "x")

    def _mirrored(self) -> bool:
        code = self.current + self.mask
        return self._g.mirror(code) < code

    def to_canonical(self, move: int) -> int:
        return self._g.width - 1 - move if self._mirrored() else move

    from_canonical = to_canonical  # a mirror is its own inverse

    def move_name(self, move: int) -> str:
        return str(move + 1)

    def parse_move(self, text: str) -> int:
        text = text.strip()
        if not (len(text) == 1 and "0" <= text <= "9"):
            raise NotationError(f"'{text}': a move is one column digit 1..{self._g.width}")
        column = int(text)
        if not 1 <= column <= self._g.width:
            raise NotationError(f"'{text}': column {column} is outside 1..{self._g.width}")
        return column - 1

    def forcing(self) -> bool:
        return bool(self._opponent_threats() & self.possible())

    def _opponent_threats(self) -> int:
        """The opponent's winning cells, remembered for the last position asked.

        A search asks :meth:`forcing` and then :meth:`evaluate` of the same
        horizon position; both need these cells.
        """
        memo = self._threats
        if memo[0] == self.mask and memo[1] == self.current:
            return memo[2]
        threats = self._g.winning_cells(self.current ^ self.mask, self.mask)
        self._threats = (self.mask, self.current, threats)
        return threats

    def render(self) -> str:
        g = self._g
        first = self.current if self.side_to_move == 0 else self.current ^ self.mask
        last = self.moves[-1] if self.moves else None
        rows = []
        for row in range(g.height - 1, -1, -1):
            cells = []
            for col in range(g.width):
                bit = 1 << (col * g.h1 + row)
                cells.append("." if not self.mask & bit else ("X" if first & bit else "O"))
            rows.append(" ".join(cells))
        rows.append(" ".join(str(c + 1) for c in range(g.width)))
        if last is not None:
            rows.append(" ".join("^" if c == last else " " for c in range(g.width)).rstrip())
        return "\n".join(rows)

    # -- Connect Four specifics ---------------------------------------------------

    def possible(self) -> int:
        """Bitboard of the cells playable now (the lowest empty cell of each column)."""
        return (self.mask + self._g.bottom_mask) & self._g.board_mask

    def winning_moves(self) -> list[int]:
        """Columns where the side to move connects four at once."""
        if self._winner is not None:
            return []
        wins = self._g.winning_cells(self.current, self.mask) & self.possible()
        return [c for c in self._g.order if wins & self._g.column_masks[c]]

    def non_losing_moves(self) -> list[int]:
        """Columns after which the opponent cannot win at once.

        Precondition: the side to move has no immediate win (check
        :meth:`winning_moves` first). Empty when every move loses.
        """
        if self._winner is not None:
            return []
        g = self._g
        possible = self.possible()
        opponent_wins = g.winning_cells(self.current ^ self.mask, self.mask)
        forced = possible & opponent_wins
        if forced:
            if forced & (forced - 1):  # two threats at once: no defence
                return []
            possible = forced
        possible &= ~(opponent_wins >> 1)  # never play right below an opponent's win
        return [c for c in g.order if possible & g.column_masks[c]]

    def cell(self, column: int, row: int) -> int | None:
        """Who holds ``(column, row)`` (0-based, row 0 at the bottom): 0, 1 or ``None``."""
        bit = 1 << (column * self._g.h1 + row)
        if not self.mask & bit:
            return None
        first = self.current if self.side_to_move == 0 else self.current ^ self.mask
        return 0 if first & bit else 1

    def column_height(self, column: int) -> int:
        return _popcount(self.mask & self._g.column_masks[column])

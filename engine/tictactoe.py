"""Tic-tac-toe: the position, its rules and notation.

Cells are numbered 1-9 like a phone keypad, and a move is the 0-based cell::

    1 | 2 | 3
    4 | 5 | 6
    7 | 8 | 9

Bitboards: ``boards[p]`` has bit ``i`` set when player ``p`` holds cell ``i + 1``.
The canonical key is the least encoding over the board's eight symmetries.
"""

from __future__ import annotations

from typing import ClassVar, Self

from engine.errors import GameOverError, IllegalMoveError, NotationError
from engine.game import Outcome, register_game
from engine.scores import score_bounds, win_score

_LINES = tuple(
    sum(1 << c for c in cells)
    for cells in (
        (0, 1, 2), (3, 4, 5), (6, 7, 8),
        (0, 3, 6), (1, 4, 7), (2, 5, 8),
        (0, 4, 8), (2, 4, 6),
    )
)  # fmt: skip

# The eight symmetries of the square, each as a map new_cell[i] = old cell.
_ROTATE = (6, 3, 0, 7, 4, 1, 8, 5, 2)
_REFLECT = (2, 1, 0, 5, 4, 3, 8, 7, 6)


def _compose(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(a[b[i]] for i in range(9))


def _symmetries() -> tuple[tuple[int, ...], ...]:
    found = [tuple(range(9))]
    for _ in range(3):
        found.append(_compose(found[-1], _ROTATE))
    found += [_compose(s, _REFLECT) for s in found]
    return tuple(found)


_SYMMETRIES = _symmetries()
_ORDER = (4, 0, 2, 6, 8, 1, 3, 5, 7)  # centre, corners, edges


def _transform(bits: int, sym: tuple[int, ...]) -> int:
    return sum(1 << i for i in range(9) if bits >> sym[i] & 1)


@register_game
class TicTacToe:
    """A tic-tac-toe position with undo. Satisfies :class:`engine.game.Game`."""

    name = "tictactoe"
    #: Solved by the generic search: nine cells are too few to need a solver.
    exact_solver: ClassVar[bool] = False
    #: The first player's marks on a full board.
    max_stones = 5

    __slots__ = ("boards", "moves")

    def __init__(self) -> None:
        self.boards = [0, 0]
        self.moves: list[int] = []

    @classmethod
    def parse(cls, notation: str, variant: str | None = None) -> Self:
        if variant not in (None, "", "3x3"):
            raise NotationError(f"'{variant}': tic-tac-toe has only the '3x3' variant")
        position = cls()
        for index, char in enumerate(notation, 1):
            if not ("0" <= char <= "9"):
                raise NotationError(f"'{notation}': '{char}' is not a cell digit (move {index})")
            cell = int(char)
            if not 1 <= cell <= 9:
                raise NotationError(f"'{notation}': cell {cell} is outside 1..9 (move {index})")
            if position.outcome() is not None:
                raise GameOverError(
                    f"'{notation}': the game is already over after move {index - 1}"
                )
            if (position.boards[0] | position.boards[1]) >> (cell - 1) & 1:
                raise IllegalMoveError(f"'{notation}': cell {cell} is taken (move {index})")
            position.push(cell - 1)
        return position

    def notation(self) -> str:
        return "".join(str(c + 1) for c in self.moves)

    def copy(self) -> Self:
        other = type(self)()
        other.boards = list(self.boards)
        other.moves = list(self.moves)
        return other

    def __repr__(self) -> str:
        return f"TicTacToe.parse({self.notation()!r})"

    @property
    def variant(self) -> str:
        return "3x3"

    @property
    def side_to_move(self) -> int:
        return len(self.moves) & 1

    @property
    def ply(self) -> int:
        return len(self.moves)

    def _winner(self) -> int | None:
        if not self.moves:
            return None
        last = (len(self.moves) - 1) & 1  # only the side that just moved can have won
        board = self.boards[last]
        return last if any(board & line == line for line in _LINES) else None

    def legal_moves(self) -> list[int]:
        if self.outcome() is not None:
            return []
        taken = self.boards[0] | self.boards[1]
        return [c for c in _ORDER if not taken >> c & 1]

    def push(self, move: int) -> None:
        if self.outcome() is not None:
            raise GameOverError(f"the game is already over after move {len(self.moves)}")
        if not 0 <= move < 9:
            raise NotationError(f"cell {move + 1} is outside 1..9")
        if (self.boards[0] | self.boards[1]) >> move & 1:
            raise IllegalMoveError(f"cell {move + 1} is taken")
        self.boards[len(self.moves) & 1] |= 1 << move
        self.moves.append(move)

    def pop(self) -> int:
        if not self.moves:
            raise IndexError("pop from the starting position")
        move = self.moves.pop()
        self.boards[len(self.moves) & 1] &= ~(1 << move)
        return move

    def outcome(self) -> Outcome | None:
        winner = self._winner()
        if winner is not None:
            return Outcome(winner)
        return Outcome(None) if len(self.moves) == 9 else None

    def terminal_score(self) -> int:
        if self._winner() is None:
            return 0
        return -win_score(self.max_stones, (len(self.moves) + 1) // 2)

    def max_score(self) -> int:
        return win_score(self.max_stones, 3)  # three in a row with the third mark

    def score_range(self) -> tuple[int, int]:
        return score_bounds(self.max_stones, len(self.moves))

    def winning_moves(self) -> list[int]:
        """Cells that complete a line of the side to move's at once."""
        if self.outcome() is not None:
            return []
        mine = self.boards[len(self.moves) & 1]
        taken = self.boards[0] | self.boards[1]
        return [
            c
            for c in _ORDER
            if not taken >> c & 1
            and any(line >> c & 1 and (mine | 1 << c) & line == line for line in _LINES)
        ]

    def evaluate(self) -> int:
        """Open lines: a line held by one side only counts its marks squared, for the mover."""
        me, them = self.boards[self.side_to_move], self.boards[1 - self.side_to_move]
        score = 0
        for line in _LINES:
            mine, theirs = (me & line).bit_count(), (them & line).bit_count()
            if not theirs:
                score += mine * mine
            elif not mine:
                score -= theirs * theirs
        return score

    def _canonical(self) -> tuple[int, tuple[int, ...]]:
        return min(
            (_transform(self.boards[0], s) | _transform(self.boards[1], s) << 9, s)
            for s in _SYMMETRIES
        )

    def table_key(self) -> int:
        """Exact key of this orientation (not symmetry-merged): cheap, for in-process tables."""
        return self.boards[0] | self.boards[1] << 9

    def key(self) -> str:
        return format(self._canonical()[0], "x")

    def to_canonical(self, move: int) -> int:
        sym = self._canonical()[1]
        return sym.index(move)

    def from_canonical(self, move: int) -> int:
        return self._canonical()[1][move]

    def move_name(self, move: int) -> str:
        return str(move + 1)

    def parse_move(self, text: str) -> int:
        text = text.strip()
        if not (len(text) == 1 and "1" <= text <= "9"):
            raise NotationError(f"'{text}': a move is one cell digit 1..9")
        return int(text) - 1

    def forcing(self) -> bool:
        them = self.boards[1 - self.side_to_move]
        taken = self.boards[0] | self.boards[1]
        return any((them & line).bit_count() == 2 and not (taken & line & ~them) for line in _LINES)

    def render(self) -> str:
        marks = []
        for c in range(9):
            if self.boards[0] >> c & 1:
                marks.append("X")
            elif self.boards[1] >> c & 1:
                marks.append("O")
            else:
                marks.append(str(c + 1))
        return "\n".join(" | ".join(marks[r * 3 : r * 3 + 3]) for r in range(3))

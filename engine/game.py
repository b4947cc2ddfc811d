"""The ``Game`` protocol every game implements, and the registry that finds games by name.

Conventions every game follows, so that the search, the levels and the service
can treat them alike:

* Players are ``0`` (moves first) and ``1``. ``side_to_move`` is whose turn it is.
* A move is a small non-negative ``int`` (Connect Four: the 0-based column;
  tic-tac-toe: the 0-based cell). ``move_name``/``parse_move`` convert to and
  from the game's notation (Connect Four: the 1-based column digit).
* A position's notation is the string of its moves from the start, and it
  round-trips: ``G.parse(s).notation() == s`` for every legal ``s``.
* Scores are from the side to move. A decided position scores
  ``(max stones a side can play + 1) - (stones the winner has at the win)``
  (:mod:`engine.scores` writes the convention once):
  positive for a win, negative for a loss, 0 for a draw. For Connect Four
  7x6 that is ``22 - stones``, exactly the benchmark files' convention, so a
  quicker win scores higher. ``evaluate()`` is a heuristic for undecided
  positions and is unrelated in scale; the search keeps the two apart.
* ``key()`` is canonical: positions equal up to the game's symmetry share it.
  It is the full position (an exact encoding), never a lossy hash, so it can
  key a shared cache. ``to_canonical``/``from_canonical`` map moves between a
  position and its canonical orientation (a cached best move is stored
  canonically).
* ``exact_solver`` says whether the engine has a dedicated exact solver for
  the game (Connect Four: the compiled solver and its opening book). A game
  without one is solved by the generic search to the end of every line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol, Self, TypeGuard, TypeVar, runtime_checkable

from engine.errors import GameOverError, UnknownGameError

if TYPE_CHECKING:
    from engine.connect4 import Connect4


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a finished game ended: ``winner`` is 0 or 1, or ``None`` for a draw."""

    winner: int | None

    @property
    def is_draw(self) -> bool:
        return self.winner is None

    def __str__(self) -> str:
        return "draw" if self.winner is None else f"player {self.winner + 1} wins"


@runtime_checkable
class Game(Protocol):
    """A two-player, zero-sum, perfect-information game position with undo."""

    #: Registry name, e.g. ``"connect4"``.
    name: str
    #: True when the engine has an exact solver for this game (``engine.solver``, with an
    #: opening book and a worker's solver pool); False when the generic search solves it.
    #: The capability to ask, rather than the game's type.
    exact_solver: ClassVar[bool]

    @property
    def variant(self) -> str:
        """The board's size or rules variant, e.g. ``"7x6"``; part of every cache key."""
        ...

    @classmethod
    def parse(cls, notation: str, variant: str | None = None) -> Self:
        """The position reached by playing ``notation`` from the start.

        Raises a :class:`~engine.errors.PlybotError` (a ``ValueError``) that
        quotes ``notation`` and names the bad move and its 1-based index.
        """
        ...

    def notation(self) -> str:
        """The moves played so far; ``parse(notation())`` gives this position back."""
        ...

    def copy(self) -> Self: ...

    @property
    def side_to_move(self) -> int: ...

    @property
    def ply(self) -> int:
        """Number of moves played from the start."""
        ...

    def legal_moves(self) -> list[int]:
        """Moves playable now, in the game's preferred search order; empty once the game is over."""
        ...

    def push(self, move: int) -> None:
        """Play ``move``.

        Raises ``IllegalMoveError`` (or ``GameOverError``) and leaves the position unchanged.
        """
        ...

    def pop(self) -> int:
        """Undo the last move and return it. Raises ``IndexError`` at the start."""
        ...

    def outcome(self) -> Outcome | None:
        """``None`` while the game goes on."""
        ...

    def terminal_score(self) -> int:
        """Score of a finished position from the side to move (see the module's convention)."""
        ...

    def max_score(self) -> int:
        """Upper bound of ``abs(score)`` for any decided position of this game."""
        ...

    @property
    def max_stones(self) -> int:
        """Most stones (marks) one side can place in a game: the base of every score."""
        ...

    def score_range(self) -> tuple[int, int]:
        """The lowest and highest exact score possible now (:func:`engine.scores.score_bounds`)."""
        ...

    def winning_moves(self) -> list[int]:
        """The moves that win at once, in ``legal_moves()`` order (the one immediate-win finder)."""
        ...

    def evaluate(self) -> int:
        """Heuristic value from the side to move; larger is better."""
        ...

    def key(self) -> str:
        """Canonical key: equal for positions equal up to symmetry, distinct otherwise."""
        ...

    def to_canonical(self, move: int) -> int:
        """This position's ``move`` as the same move in the canonical orientation."""
        ...

    def from_canonical(self, move: int) -> int:
        """Inverse of :meth:`to_canonical`."""
        ...

    def move_name(self, move: int) -> str: ...

    def parse_move(self, text: str) -> int:
        """A move in the game's notation; raises ``NotationError`` naming the text."""
        ...

    def forcing(self) -> bool:
        """True when the side to move must answer a threat (searched one ply deeper)."""
        ...

    def render(self) -> str:
        """A plain-text picture of the board for terminals and logs."""
        ...


_REGISTRY: dict[str, type[Game]] = {}

G = TypeVar("G", bound=type)


def register_game(cls: G) -> G:
    """Class decorator: make ``cls`` findable by ``get_game(cls.name)``."""
    _REGISTRY[cls.name] = cls  # type: ignore[attr-defined]  # every game class sets ``name``
    return cls


def game_names() -> list[str]:
    """Registered game names, sorted."""
    _load_builtin_games()
    return sorted(_REGISTRY)


def get_game(name: str) -> type[Game]:
    """The game class registered as ``name``; ``UnknownGameError`` quotes an unknown one."""
    _load_builtin_games()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise UnknownGameError(f"'{name}': unknown game (known: {known})") from None


def new_game(name: str, notation: str = "", variant: str | None = None) -> Game:
    """The position ``notation`` of game ``name`` (the start by default)."""
    game: Game = get_game(name).parse(notation, variant)
    return game


def require_ongoing(game: Game) -> None:
    """Raise ``GameOverError`` if ``game`` has ended: a finished position has nothing to search.

    The message quotes the position: ``'1212121': the game is already over after move 7``.
    """
    if game.outcome() is not None:
        raise GameOverError(f"'{game.notation()}': the game is already over after move {game.ply}")


def has_exact_solver(game: Game) -> TypeGuard[Connect4]:
    """``game.exact_solver``: the engine's exact solver (and book) can take this position.

    Read the capability, never the type. The guard tells the type checker what the
    solver's API takes (today's only solver is Connect Four's bitboard one).
    """
    return game.exact_solver


def _load_builtin_games() -> None:
    # Imported here, not at module top, because the game modules import this one.
    import engine.connect4
    import engine.tictactoe  # noqa: F401


def iter_positions(game: Game, depth: int) -> Iterable[Game]:
    """Every line of ``depth`` plies from ``game`` (fewer where a game ends); for tests."""
    if depth == 0 or game.outcome() is not None:
        yield game
        return
    for move in game.legal_moves():
        game.push(move)
        yield from iter_positions(game, depth - 1)
        game.pop()

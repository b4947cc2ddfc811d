"""The one job contract: every request a job can carry and every answer it gives back.

Pydantic models, sent as JSON (never pickle). The API, the Discord bot, the web
page and the workers all use these, so a field means the same everywhere.

Requests validate against the engine (the game exists, the position parses and is
not over) and against the limits in :class:`worker.core.settings.Settings`, so a
request that validates can be searched, and within bounds. A
``pydantic.ValidationError`` names the field (``loc``) and says what is wrong
(``msg``), e.g. ``position: Value error, '44448': column 8 is outside 1..7 (move 5)``.

Moves and principal variations are written in the game's notation (Connect
Four: the 1-based column digit); scores follow the engine's convention (from
the side to move; Connect Four 7x6 as in Pons' benchmark files).
"""

from __future__ import annotations

import functools
import hashlib
from typing import TYPE_CHECKING, Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from engine.game import Game, get_game, new_game, require_ongoing
from engine.vocabulary import LEVELS, Level, Mode  # defined once, in the engine
from worker.core.settings import get_settings

if TYPE_CHECKING:
    from engine.analysis import Analysis
    from engine.analysis import Progress as EngineProgress

__all__ = [
    "LEVELS",
    "AnalysisRequest",
    "AnalysisResult",
    "BookChunkRequest",
    "BookChunkResult",
    "Event",
    "JobRequest",
    "JobResult",
    "JobState",
    "JobStatus",
    "KindName",
    "Level",
    "Mode",
    "MoveRequest",
    "MoveResult",
    "Progress",
    "variant_text",
]

JobStatus = Literal["queued", "running", "done", "failed"]
#: The validation context's key for the parsed position of a request (see ``_PositionRequest.of``).
_BOARD = "board"
#: The kinds of job (their table: :data:`worker.core.kinds.KINDS`).
KindName = Literal["analysis", "move", "book"]

_STRICT = ConfigDict(extra="forbid", frozen=True)


class _PositionRequest(BaseModel):
    """Common to both requests: a game, its variant and a position in the game's notation."""

    model_config = _STRICT

    game: str = Field("connect4", description="Game name, e.g. `connect4`, `tictactoe`.")
    variant: str | None = Field(
        None,
        validate_default=True,
        description="Board size or rules variant (Connect Four: `7x6`); default: the game's.",
    )
    position: str = Field(
        "",
        description="Moves from the start in the game's notation (Connect Four: column digits).",
        examples=["4453"],
    )

    @field_validator("game")
    @classmethod
    def _known_game(cls, name: str) -> str:
        get_game(name)  # UnknownGameError (a ValueError) lists the known games
        return name

    @field_validator("variant")
    @classmethod
    def _known_variant(cls, variant: str | None, info: ValidationInfo) -> str | None:
        variant = variant_text(variant)
        if "game" not in info.data:
            return variant
        return new_game(info.data["game"], "", variant).variant  # canonical spelling, e.g. '7x6'

    @field_validator("position")
    @classmethod
    def _playable(cls, position: str, info: ValidationInfo) -> str:
        limit = get_settings().max_position_length
        if len(position) > limit:
            raise ValueError(f"position is {len(position)} moves long, beyond the limit of {limit}")
        if "game" in info.data and "variant" in info.data:
            game, variant = info.data["game"], info.data["variant"]
            board: Game | None = (info.context or {}).get(_BOARD)  # given parsed by ``of``
            wanted = (game, variant, position)
            if board is None or (board.name, board.variant, board.notation()) != wanted:
                board = _parsed(game, position, variant)
            require_ongoing(board)
        return position

    @classmethod
    def of(cls, board: Game, **fields: Any) -> Self:
        """The request for ``board`` (its game, variant and notation) and ``fields``,
        validated like any other, but against ``board`` itself: a caller that holds the
        position parsed (a game session) has it checked, not parsed again."""
        data = {"game": board.name, "variant": board.variant, "position": board.notation()}
        return cls.model_validate({**data, **fields}, context={_BOARD: board})

    def board(self) -> Game:
        """The position as an engine ``Game`` (already validated): a copy of the one the
        validation parsed, so each process parses a request's notation once."""
        return _parsed(self.game, self.position, self.variant).copy()


def variant_text(variant: str | None) -> str | None:
    """``variant`` if it is written in ASCII letters and digits (``7x6``), else a
    ``ValueError`` naming the first other character.

    The engine reads a board size with ``int()``, which also takes fullwidth and other
    Unicode digits (``'7x６'``), signs and spaces; a position's notation takes ASCII
    digits only, and a variant is refused the same way.
    """
    for index, char in enumerate(variant or "", 1):
        if not (char.isascii() and char.isalnum()):
            raise ValueError(
                f"'{variant}': {char!r} is not an ASCII letter or digit (character {index})"
            )
    return variant


@functools.lru_cache(maxsize=1024)
def _parsed(game: str, position: str, variant: str) -> Game:
    """The parsed position, shared: never handed out to be changed (``board()`` copies it).

    Raises the parser's ``ValueError`` naming a bad move; errors are not cached.
    """
    return new_game(game, position, variant)


def _for_mode(
    field: str, mode: str, value: int | None, limit: int, info: ValidationInfo, needs: str = ""
) -> int | None:
    """``value`` of ``field``, which mode ``mode`` needs (within ``limit``) and no other takes."""
    given = info.data.get("mode")
    if given == mode:
        if value is None:
            raise ValueError(f"mode '{mode}' needs {needs or field}")
        if value > limit:
            raise ValueError(f"{field} {value} is beyond the limit of {limit}")
    elif value is not None and given is not None:
        raise ValueError(f"{field} is only for mode '{mode}' (mode is '{given}')")
    return value


class AnalysisRequest(_PositionRequest):
    """Analyse a position: solve it exactly, search to a depth, or search for a time."""

    mode: Mode = Field("solve", description="`solve` (exact), `depth` (needs `depth`), `time`.")
    depth: Annotated[int, Field(ge=1)] | None = Field(
        None, validate_default=True, description="Search depth in plies, for mode `depth`."
    )
    time_ms: Annotated[int, Field(ge=1)] | None = Field(
        None, validate_default=True, description="Search time in milliseconds, for mode `time`."
    )
    moves: Literal["best", "all"] = Field("best", description="`all` also scores every legal move.")

    @field_validator("depth", mode="after")
    @classmethod
    def _depth_for_mode(cls, depth: int | None, info: ValidationInfo) -> int | None:
        return _for_mode("depth", "depth", depth, get_settings().max_depth, info, "a depth")

    @field_validator("time_ms", mode="after")
    @classmethod
    def _time_for_mode(cls, time_ms: int | None, info: ValidationInfo) -> int | None:
        return _for_mode("time_ms", "time", time_ms, get_settings().max_time_ms, info)

    def dedupe_key(self) -> str:
        """Equal for identical requests: a digest of the validated request's canonical JSON."""
        canonical = self.model_dump_json(exclude_none=False)
        return hashlib.sha256(canonical.encode()).hexdigest()[:32]


class MoveRequest(_PositionRequest):
    """The bot's move in a game: the position so far, the level, and a deadline."""

    level: Level = Field("hard", description="One of `easy`, `medium`, `hard`, `perfect`.")
    deadline_ms: Annotated[int, Field(ge=1)] = Field(
        2000, description="The bot must answer within this many milliseconds of starting."
    )

    @field_validator("deadline_ms")
    @classmethod
    def _deadline_in_bounds(cls, deadline_ms: int) -> int:
        limit = get_settings().max_move_deadline_ms
        if deadline_ms > limit:
            raise ValueError(f"deadline_ms {deadline_ms} is beyond the limit of {limit}")
        return deadline_ms


class BookChunkRequest(BaseModel):
    """A chunk of an opening book's layer to solve (:func:`engine.layer.chunks`).

    Sent by ``plybot book build``, never by a stranger: it is not reachable
    over HTTP. ``notations`` are the chunk's positions still unsolved, in order.
    """

    model_config = _STRICT

    variant: str = Field(description="Connect Four board, `WxH`.")
    plies: int = Field(ge=1, le=64, description="The layer's ply.")
    size: int = Field(ge=1, description="Chunk size of the build (part of the build's name).")
    index: int = Field(ge=0, description="The chunk's index in the layer.")
    notations: list[str] = Field(max_length=100_000)

    @field_validator("variant")
    @classmethod
    def _board(cls, variant: str) -> str:
        from engine.connect4 import Connect4

        Connect4.parse_variant(variant)
        return variant


class BookChunkResult(BaseModel):
    """Solved lines of a chunk, ``<moves> <score> <best>`` (:class:`engine.book.BookLine`).

    ``complete`` is False when the worker stopped early to serve a bot move or
    an analysis: ``lines`` then hold the positions solved so far, and the
    builder sends the rest again.
    """

    model_config = ConfigDict(frozen=True)

    lines: list[str]
    complete: bool
    time_ms: float = 0.0
    cache: Literal["hit", "miss"] = "miss"
    worker: str = ""


class Progress(BaseModel):
    """One completed search depth (or, for an exact solve, one narrowing of the score window)."""

    model_config = ConfigDict(frozen=True)

    depth: int
    score: int
    exact: bool = False
    pv: list[str] = Field(default_factory=list)
    nodes: int = 0
    time_ms: float = 0.0
    bounds: dict[str, tuple[int, int]] | None = Field(
        None,
        description="An exact analysis of every move under way: each move's proven "
        "`[lower, upper]` so far (equal once that move is solved).",
    )

    @classmethod
    def of(cls, board: Game, step: EngineProgress) -> Progress:
        """The contract's view of the engine's ``step`` of an analysis of ``board``."""
        return cls(
            depth=step.depth,
            score=step.score,
            exact=step.exact,
            pv=[board.move_name(m) for m in step.pv],
            nodes=step.nodes,
            time_ms=round(step.time_ms, 3),
            bounds=None
            if step.bounds is None
            else {board.move_name(m): b for m, b in sorted(step.bounds.items())},
        )


class AnalysisResult(BaseModel):
    """The answer to an :class:`AnalysisRequest`."""

    model_config = ConfigDict(frozen=True)

    best_move: str | None = Field(description="Best move in the game's notation.")
    score: int = Field(description="From the side to move, in the engine's convention.")
    exact: bool = Field(description="True when `score` is the game-theoretic value.")
    pv: list[str] = Field(default_factory=list, description="Principal variation.")
    moves: dict[str, int] | None = Field(None, description="Every move's score, when asked.")
    depth: int
    nodes: int
    time_ms: float = Field(description="Engine time.")
    cache: Literal["hit", "miss"] = Field(
        description="`hit` when the root position came from the shared cache."
    )
    worker: str = Field(
        description="Name of the worker that answered; at submission, with no worker: `book` "
        "when the opening book and the 12-stone database answered the request exactly, `cache` "
        "when the shared cache did."
    )
    note: str = Field("", description="Why a figure is not exact, in words, when it is not.")
    lower: int | None = Field(
        None, description="Proven lower bound of the exact score (when the solver ran)."
    )
    upper: int | None = Field(
        None, description="Proven upper bound of the exact score (when the solver ran)."
    )
    bounds: dict[str, tuple[int, int]] | None = Field(
        None,
        description="Each move's proven `[lower, upper]` (exact units): equal for a move "
        "solved exactly; where they differ, `moves` holds an estimate within them.",
    )

    @classmethod
    def of(cls, board: Game, analysis: Analysis, worker: str) -> AnalysisResult:
        """The contract's view of the engine's ``analysis`` of ``board`` (moves in its notation)."""
        moves = None
        if analysis.moves is not None:
            moves = {board.move_name(m): s for m, s in sorted(analysis.moves.items())}
        best = analysis.best_move
        return cls(
            best_move=None if best is None else board.move_name(best),
            score=analysis.score,
            exact=analysis.exact,
            pv=[board.move_name(m) for m in analysis.pv],
            moves=moves,
            depth=analysis.depth,
            nodes=analysis.nodes,
            time_ms=round(analysis.time_ms, 3),
            cache="hit" if analysis.cache_hit else "miss",
            worker=worker,
            note=analysis.note,
            lower=analysis.lower,
            upper=analysis.upper,
            bounds=None
            if analysis.bounds is None
            else {board.move_name(m): b for m, b in sorted(analysis.bounds.items())},
        )


class MoveResult(BaseModel):
    """The answer to a :class:`MoveRequest`: the bot's move."""

    model_config = ConfigDict(frozen=True)

    move: str = Field(description="The bot's move in the game's notation.")
    score: int | None = None
    exact: bool = False
    depth: int = 0
    nodes: int = 0
    time_ms: float = 0.0
    cache: Literal["hit", "miss"] = "miss"
    worker: str = ""
    note: str = ""


JobRequest = AnalysisRequest | MoveRequest | BookChunkRequest
JobResult = AnalysisResult | MoveResult | BookChunkResult


class JobState(BaseModel):
    """What is known of a job now: what the API's ``GET /v1/analyses/{id}`` is built from."""

    id: str
    kind: KindName
    status: JobStatus
    request: AnalysisRequest | MoveRequest | BookChunkRequest
    progress: Progress | None = Field(None, description="The latest progress event.")
    result: AnalysisResult | MoveResult | BookChunkResult | None = None
    error: str | None = Field(None, description="Why the job failed (status `failed`).")
    worker: str | None = None
    attempts: int = Field(0, description="Times a worker started the job.")
    enqueued_at: float | None = Field(None, description="Unix time.")
    started_at: float | None = None
    ended_at: float | None = None

    @property
    def finished(self) -> bool:
        return self.status in ("done", "failed")


class Event(BaseModel):
    """One message on a job's event stream: a progress event, then ``done`` or ``failed``."""

    type: Literal["progress", "done", "failed"]
    job_id: str
    seq: int = Field(0, description="Index of a progress event in the job's run (0, 1, ...).")
    progress: Progress | None = None
    result: AnalysisResult | MoveResult | BookChunkResult | None = None
    error: str | None = None

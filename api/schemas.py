"""The HTTP API's request and response bodies (the job contract's models, plus what HTTP adds).

Analyses reuse :mod:`worker.core.contract` as they are (so a field means the same
to the API, the bot and the workers); games are shown from the HTTP player's
side (``"human"`` against ``"bot"``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from engine.game import game_names
from worker.core.client import ServiceStatus
from worker.core.contract import (
    AnalysisRequest,
    AnalysisResult,
    JobState,
    JobStatus,
    Level,
    Progress,
    variant_text,
)
from worker.core.games import BOT, BotMove, GameSession, GameStatus

#: The HTTP player's id in its games (the bot is :data:`worker.core.games.BOT`).
HUMAN = "human"

Side = Literal["human", "bot"]


def unicode_text(value: object) -> object:
    """``value``, or a ``ValueError`` naming the offence if it is text that is not valid
    Unicode: JSON lets a client write a lone surrogate (``"\\ud800"``), which no
    encoder (the response's, Redis') can take."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            bad = value[exc.start].encode("unicode_escape").decode("ascii")
            raise ValueError(
                f"{bad} at index {exc.start} is a lone UTF-16 surrogate, not valid Unicode text"
            ) from None
    return value


class _UnicodeBody(BaseModel):
    """A request body whose every text field is valid Unicode (checked before any other
    validator quotes it back)."""

    @field_validator("*", mode="before")
    @classmethod
    def _unicode(cls, value: object) -> object:
        return unicode_text(value)


class AnalysisCreate(_UnicodeBody, AnalysisRequest):
    """``POST /v1/analyses``: an analysis request, and where to POST its result."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        json_schema_extra={
            "examples": [
                {"game": "connect4", "position": "4453", "mode": "solve"},
                {"game": "connect4", "position": "4453", "mode": "depth", "depth": 12},
                {"game": "connect4", "position": "", "mode": "time", "time_ms": 500},
                {"game": "connect4", "position": "4453", "mode": "solve", "moves": "all"},
                {"game": "tictactoe", "position": "15", "mode": "solve", "moves": "all"},
                {
                    "game": "connect4",
                    "position": "4453",
                    "mode": "solve",
                    "callback_url": "https://hooks.example.org/plybot",
                },
            ]
        },
    )

    callback_url: str | None = Field(
        None,
        max_length=2048,
        description="POST the result here when done (retried with backoff). Its host must be on "
        "the server's allow-list (`PLYBOT_CALLBACK_HOSTS`); redirects are not followed.",
    )

    def job_request(self) -> AnalysisRequest:
        """The contract's request, without what only HTTP uses.

        Built without validating again: this body passed the very same validators
        (each parses the position), and the submit path is the cached answer's path.
        """
        fields = {name: getattr(self, name) for name in AnalysisRequest.model_fields}
        return AnalysisRequest.model_construct(**fields)


class AnalysisAccepted(BaseModel):
    """``202``: the analysis is queued (or joined an identical one in flight)."""

    id: str = Field(examples=["3f2a9c0d8e7b4a1f9c2d3e4f5a6b7c8d"])
    status: JobStatus
    status_url: str = Field(examples=["/v1/analyses/3f2a9c0d8e7b4a1f9c2d3e4f5a6b7c8d"])
    events_url: str = Field(examples=["/v1/analyses/3f2a9c0d8e7b4a1f9c2d3e4f5a6b7c8d/events"])


class AnalysisView(BaseModel):
    """``GET /v1/analyses/{id}``: where the analysis stands; ``result`` once ``done``."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "3f2a9c0d8e7b4a1f9c2d3e4f5a6b7c8d",
                    "status": "done",
                    "progress": {"depth": 9, "score": 1, "exact": True, "pv": ["4"], "nodes": 9,
                                 "time_ms": 3.1},
                    "result": {
                        "best_move": "4", "score": 1, "exact": True, "pv": ["4", "4", "4"],
                        "moves": None, "depth": 38, "nodes": 18234, "time_ms": 41.7,
                        "cache": "miss", "worker": "host-12345-0", "note": "",
                    },
                    "error": None,
                    "request": {"game": "connect4", "variant": "7x6", "position": "4453",
                                "mode": "solve", "depth": None, "time_ms": None, "moves": "best"},
                }
            ]
        }
    )  # fmt: skip

    id: str
    status: JobStatus
    progress: Progress | None = Field(None, description="The latest completed depth.")
    result: AnalysisResult | None = None
    error: str | None = Field(None, description="Why it failed (status `failed`).")
    request: AnalysisRequest
    attempts: int = 0
    enqueued_at: float | None = Field(None, description="Unix time.")
    started_at: float | None = None
    ended_at: float | None = None

    @classmethod
    def of(cls, state: JobState) -> AnalysisView:
        assert isinstance(state.request, AnalysisRequest)
        assert state.result is None or isinstance(state.result, AnalysisResult)
        return cls(
            id=state.id,
            status=state.status,
            progress=state.progress,
            result=state.result,
            error=state.error,
            request=state.request,
            attempts=state.attempts,
            enqueued_at=state.enqueued_at,
            started_at=state.started_at,
            ended_at=state.ended_at,
        )


class AnalysisCanceled(BaseModel):
    """``DELETE /v1/analyses/{id}``: what the cancel did, and the analysis then."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "3f2a9c0d8e7b4a1f9c2d3e4f5a6b7c8d",
                    "outcome": "canceled",
                    "message": "canceled: it had not started",
                    "status": "failed",
                }
            ]
        }
    )

    id: str
    outcome: Literal["canceled", "stopping", "shared"] = Field(
        description="`canceled`: it was waiting and has failed now; `stopping`: it is running "
        "and fails at its next progress event (unless it finishes first); `shared`: identical "
        "requests share this job and another requester still waits for it, so it goes on."
    )
    message: str = Field(description="The outcome in one line.")
    status: JobStatus = Field(description="The analysis's status after the cancel.")


class GameCreate(_UnicodeBody):
    """``POST /v1/games``: a game against plybot."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"game": "connect4", "level": "medium", "first": "human"},
                {"game": "tictactoe", "level": "perfect", "first": "bot"},
            ]
        },
    )

    game: str = Field(
        "connect4", description=" or ".join(f"`{name}`" for name in game_names()) + "."
    )
    variant: str | None = Field(None, description="Board size (Connect Four: `7x6`).")
    level: Level = Field("medium", description="`easy`, `medium`, `hard` or `perfect`.")
    first: Side = Field("human", description="Who moves first.")

    @field_validator("variant")
    @classmethod
    def _variant_text(cls, variant: str | None) -> str | None:
        return variant_text(variant)  # the contract's rule: ASCII letters and digits


class GameMove(_UnicodeBody):
    """``POST /v1/games/{id}/moves``: your move in the game's notation."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"move": "4"}]})

    move: str = Field(
        min_length=1,
        max_length=8,
        description="Connect Four: the column digit (1-7); tic-tac-toe: the cell (1-9).",
    )


class GameView(BaseModel):
    """A game against plybot, as the HTTP player sees it."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "kq3VbX0c9mWZ2a1e",
                    "game": "connect4",
                    "variant": "7x6",
                    "level": "medium",
                    "first": "human",
                    "position": "443",
                    "moves": ["4", "4", "3"],
                    "status": "ongoing",
                    "turn": "bot",
                    "bot_thinking": True,
                    "legal_moves": ["1", "2", "3", "4", "5", "6", "7"],
                    "winner": None,
                    "result": None,
                    "last_bot_move": None,
                    "board": ". . . . . . .\n...",
                    "version": 4,
                    "created_at": 1732233600.0,
                    "updated_at": 1732233605.2,
                }
            ]
        }
    )

    id: str
    game: str
    variant: str
    level: str | None
    first: Side
    position: str = Field(description="The moves so far in the game's notation (a position).")
    moves: list[str] = Field(description="Each move in the game's notation.")
    status: GameStatus = Field(description="`ongoing`, `won`, `drawn`, `resigned` or `forfeit`.")
    turn: Side | None = Field(description="Who is to move; null once the game is over.")
    bot_thinking: bool = Field(description="The bot's move is being computed.")
    legal_moves: list[str] = Field(description="Moves playable now (empty when over or not yours).")
    winner: Side | None = Field(description="Who won (null while ongoing, or a draw).")
    result: str | None = Field(
        description="`human wins`, `bot wins` or `draw`; null while ongoing."
    )
    last_bot_move: BotMove | None = None
    takebacks: int = Field(0, description="Moves you took back in this game.")
    board: str = Field(description="The board as text.")
    version: int = Field(description="Bumped on every change.")
    created_at: float
    updated_at: float

    @classmethod
    def of(cls, session: GameSession) -> GameView:
        def side(player: str | None) -> Side | None:
            return None if player is None else ("bot" if player == BOT else "human")

        winner = side(session.winner_id)
        result = None
        if not session.ongoing:
            result = "draw" if winner is None else f"{winner} wins"
        human_turn = session.to_move == HUMAN
        return cls(
            id=session.id,
            game=session.game,
            variant=session.variant,
            level=session.level,
            first="bot" if session.players[0] == BOT else "human",
            position=session.notation,
            moves=session.moves,
            status=session.status,
            turn=side(session.to_move),
            bot_thinking=session.bot_to_move,
            legal_moves=session.legal_moves() if human_turn else [],
            winner=winner,
            result=result,
            last_bot_move=session.last_bot_move,
            takebacks=session.takebacks,
            board=session.position().render(),
            version=session.version,
            created_at=session.created_at,
            updated_at=session.updated_at,
        )


class GameMoveResult(BaseModel):
    """The bot's reply to your move, and the game."""

    reply: BotMove | None = Field(
        description="The bot's move played in answer (null: game over, or still thinking: "
        "then `GET /v1/games/{id}?wait=S`)."
    )
    game: GameView
    notice: str | None = Field(None, description="Why the bot has not answered yet, if known.")


class StatusView(ServiceStatus):
    """``GET /v1/status``: what an autoscaler reads."""

    callbacks_pending: int = Field(description="Callbacks not yet delivered (or being retried).")

"""``/v1/games``: play plybot. Games live in Redis (:mod:`worker.core.games`), so they
survive a restart of the API; the bot's moves are jobs on the ``interactive`` queue, asked
for and played by :mod:`worker.core.bot_moves`."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from api.body import JsonBodyRoute
from api.deps import CallerDep, ClientDep, GamesDep, RateLimited, SettingsDep, WaitsDep, check_wait
from api.errors import unprocessable
from api.limits import Waits
from api.schemas import HUMAN, GameCreate, GameMove, GameMoveResult, GameView
from api.settings import ApiSettings
from engine.errors import PlybotError, UnknownGameError
from worker.core.bot_moves import BotMoves, BotTurn
from worker.core.client import JobClient
from worker.core.games import BOT, GameSession, GameStore

router = APIRouter(
    prefix="/v1/games", tags=["games"], dependencies=[RateLimited], route_class=JsonBodyRoute
)

_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"description": "No game has this id (or it expired)."}
}
_CONFLICT: dict[int | str, dict[str, Any]] = {
    409: {"description": "Not your turn (the bot is thinking), or the game is over."}
}
ReplyWait = Annotated[
    float | None,
    Query(
        ge=0,
        description="Wait up to this many seconds for the bot's move (default: the server's "
        "`PLYBOT_API_MOVE_WAIT_S`; 0: answer at once, the bot moves meanwhile).",
    ),
]


def _reply_wait(wait: float | None, settings: ApiSettings) -> float:
    return settings.api_move_wait_s if wait is None else check_wait(wait, settings)


async def _advance(
    session: GameSession,
    games: GameStore,
    client: JobClient,
    settings: ApiSettings,
    wait_s: float,
    waits: Waits,
    caller: str,
) -> BotTurn:
    """The bot's move in ``session`` asked for, awaited up to ``wait_s`` s and played
    (:meth:`worker.core.bot_moves.BotMoves.advance`, with the API's thinking time).

    Waiting holds a long-poll slot (:class:`api.limits.Waits`); with none free the game
    is answered at once, the bot still thinking, rather than refused."""
    moves = BotMoves(games, client, settings, deadline_ms=settings.api_move_deadline_ms)
    with waits.hold_if_free(caller, wait_s) as held_s:
        return await moves.advance(session, wait_s=held_s)


@router.post(
    "",
    status_code=201,
    response_model=GameView,
    responses={422: {"description": "Unknown game, variant or level."}},
)
async def create_game(
    body: GameCreate,
    response: Response,
    games: GamesDep,
    client: ClientDep,
    settings: SettingsDep,
    waits: WaitsDep,
    caller: CallerDep,
    wait: ReplyWait = None,
) -> GameView:
    """Start a game against plybot. If the bot moves first, its move is asked for and
    awaited."""
    players = (HUMAN, BOT) if body.first == "human" else (BOT, HUMAN)
    try:
        session = GameSession.start(body.game, players, variant=body.variant, level=body.level)
    except UnknownGameError as exc:
        raise unprocessable(("body", "game"), str(exc)) from None
    except PlybotError as exc:
        raise unprocessable(("body", "variant"), str(exc)) from None
    session = await games.create(session)
    if session.bot_to_move:
        wait_s = _reply_wait(wait, settings)
        session = (await _advance(session, games, client, settings, wait_s, waits, caller)).session
    response.headers["Location"] = f"/v1/games/{session.id}"
    return GameView.of(session)


@router.get("/{game_id}", response_model=GameView, responses=_NOT_FOUND)
async def get_game(
    game_id: str,
    games: GamesDep,
    client: ClientDep,
    settings: SettingsDep,
    waits: WaitsDep,
    caller: CallerDep,
    wait: float = Query(
        0,
        ge=0,
        description="While the bot thinks, wait up to this many seconds for its move.",
    ),
) -> GameView:
    """The game now. A bot move that finished meanwhile is played first (and one that
    failed or was lost is asked for again)."""
    check_wait(wait, settings)
    session = await games.get(game_id)
    if session.bot_to_move:
        session = (await _advance(session, games, client, settings, wait, waits, caller)).session
    return GameView.of(session)


@router.post(
    "/{game_id}/moves",
    response_model=GameMoveResult,
    responses={
        **_NOT_FOUND,
        **_CONFLICT,
        422: {"description": "An illegal move: the engine's message names it and its index."},
    },
)
async def play_move(
    game_id: str,
    body: GameMove,
    games: GamesDep,
    client: ClientDep,
    settings: SettingsDep,
    waits: WaitsDep,
    caller: CallerDep,
    wait: ReplyWait = None,
) -> GameMoveResult:
    """Play your move; answers with the bot's reply and the game."""
    wait_s = _reply_wait(wait, settings)
    try:
        session = await games.play(game_id, HUMAN, body.move)
    except PlybotError as exc:
        raise unprocessable(("body", "move"), str(exc)) from None
    if not session.bot_to_move:
        return GameMoveResult(reply=None, game=GameView.of(session), notice=None)
    moved = await _advance(session, games, client, settings, wait_s, waits, caller)
    return GameMoveResult(reply=moved.reply, game=GameView.of(moved.session), notice=moved.notice)


@router.post("/{game_id}/takeback", response_model=GameView, responses={**_NOT_FOUND, **_CONFLICT})
async def take_back(game_id: str, games: GamesDep) -> GameView:
    """Take back your last move and the bot's reply to it (counted in `takebacks`)."""
    return GameView.of(await games.take_back(game_id, HUMAN))


@router.post("/{game_id}/resign", response_model=GameView, responses={**_NOT_FOUND, **_CONFLICT})
async def resign(game_id: str, games: GamesDep) -> GameView:
    """Resign: the bot wins."""
    return GameView.of(await games.resign(game_id, HUMAN))

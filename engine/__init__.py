"""plybot's engine: games, the generic alpha-beta search, and the exact Connect Four solver.

Imports nothing of ``worker``, ``api`` or ``bot``, and no Redis.
"""

from engine.cache import EXACT_DEPTH, CacheEntry, MemoryCache, PositionCache
from engine.connect4 import Connect4
from engine.errors import (
    GameOverError,
    IllegalMoveError,
    NotationError,
    PlybotError,
    UnknownGameError,
)
from engine.game import (
    Game,
    Outcome,
    game_names,
    get_game,
    new_game,
    register_game,
    require_ongoing,
)
from engine.tictactoe import TicTacToe

__all__ = [
    "EXACT_DEPTH",
    "CacheEntry",
    "Connect4",
    "Game",
    "GameOverError",
    "IllegalMoveError",
    "MemoryCache",
    "NotationError",
    "Outcome",
    "PlybotError",
    "PositionCache",
    "TicTacToe",
    "UnknownGameError",
    "game_names",
    "get_game",
    "new_game",
    "register_game",
    "require_ongoing",
]

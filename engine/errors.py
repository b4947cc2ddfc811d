"""Errors raised for bad positions and moves.

Every error subclasses :class:`ValueError`, quotes the input it rejects and says
what is wrong and where, e.g. ``'44448': column 8 is outside 1..7 (move 5)``.
"""

from __future__ import annotations


class PlybotError(ValueError):
    """Base class of every error about input the engine was given."""


class NotationError(PlybotError):
    """A position or move string that cannot be read (bad character, out of range)."""


class IllegalMoveError(PlybotError):
    """A well-formed move that the rules forbid here (a full column, a taken cell)."""


class GameOverError(IllegalMoveError):
    """A move played after the game has ended."""


class UnknownGameError(PlybotError):
    """A game name that the registry does not know."""


class UnknownLevelError(PlybotError):
    """A level of play that ``engine.levels`` does not know."""

"""The service's words, defined once: the analysis modes and the bot's levels.

It imports nothing, so that the job contract (``worker.core.contract``) and the
front-ends take their ``Literal`` types and their lists from here without
loading the engine. What each word does lives beside its code:
:mod:`engine.analysis` (modes) and :mod:`engine.levels` (levels).
"""

from __future__ import annotations

from typing import Literal, get_args

#: How an analysis searches: exactly, to a depth, or for a time.
Mode = Literal["solve", "depth", "time"]
MODES: tuple[Mode, ...] = get_args(Mode)

#: The bot's levels of play, easiest first.
Level = Literal["easy", "medium", "hard", "perfect"]
LEVELS: tuple[Level, ...] = get_args(Level)

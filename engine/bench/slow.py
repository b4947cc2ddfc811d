"""Connect Four positions whose exact solve takes seconds: for what needs a search to take a while.

Every position up to ply 8 is in the shipped opening book and answers at once, and the
ply-9 layer is being added to it, so whatever needs a worker busy, a deadline to pass or an
estimate to show (the tests, ``plybot chaos``) uses these: positions at ply 10, past any
book the project builds soon, sampled uniformly (``engine.sampling``, seed 11) and kept
where a plain solve took 1.6-5.6 s on one core of a 2-core machine here, with a fresh 64 MB
table (an exact analysis of every column 3.2-9.6 s). The faster solver of 2026-11-28 takes
0.3-2.8 s of CPU for the solve and 0.9-3.9 s for the analysis (the book read inside the
search), so a test that must catch one mid-way holds it there instead of counting on its length
(``tests/test_web_page.py``, ``hold_a_solve``). Users that share a Redis or a process take
different ones, so the shared cache or a solver's table never answers one at once.

They are slow only without the 12-stone database: a ply-10 position is two plies above it, so
with the database its every column is read with no search (and the service answers it at
submission). Whoever relies on them runs without it (the setting
``PLYBOT_SOLVER_DATABASE=false`` of the workers and the API: the test suite's and ``plybot
chaos``'s do).
"""

from __future__ import annotations

__all__ = ["SLOW"]

#: notation -> exact score for the side to move (Pons' convention).
SLOW: dict[str, int] = {
    "5655723221": 0,
    "7737333613": 0,
    "7447442311": 3,
    "6674413113": 0,
    "5333361116": 1,
    "7776366712": -3,
    "7777545512": -2,
    "7677655115": 2,
    "7555222261": -2,
}

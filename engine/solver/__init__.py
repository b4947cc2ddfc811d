"""The exact Connect Four solver: a compiled (numba) core behind :class:`Solver`.

Pascal Pons' algorithm, one concern per module:

* :mod:`~engine.solver.bitboard` -- the board layout and its bit tricks;
* :mod:`~engine.solver.movesorter` -- which move to try first;
* :mod:`~engine.solver.table` -- the transposition table of proven bounds;
* :mod:`~engine.solver.negamax` -- the node search (null windows, pruning);
* :mod:`~engine.solver.root` -- narrowing the root's bounds, analysis, parsing;
* :mod:`~engine.solver.kernels` -- the compiled entry points, cached on disk;
* :mod:`~engine.solver.results` -- what a solve answers;
* :mod:`~engine.solver.run` -- the driver of one solve around the compiled steps;
* :mod:`~engine.solver.cache_io` -- the book and the shared cache, read and written;
* :mod:`~engine.solver.solver` -- :class:`Solver`, the façade;
* the process's solvers, one per board size within a budget, are :mod:`engine.pool`'s.

Usage::

    from engine.connect4 import Connect4
    from engine.solver import Solver

    solver = Solver()                      # 7x6, 64 MB table, kept across solves
    result = solver.solve(Connect4.parse("4453"))
    result.score, result.best_move, result.pv
"""

from engine.solver.results import Batch, SolveProgress, SolveResult
from engine.solver.solver import DEFAULT_TABLE_BYTES, Solver

__all__ = ["DEFAULT_TABLE_BYTES", "Batch", "SolveProgress", "SolveResult", "Solver"]

"""The exact Connect Four solver: a core compiled ahead of time (C) behind :class:`Solver`.

Pascal Pons' algorithm, one concern per file. The core, in ``csrc/`` (built by
setuptools at install into :mod:`engine.solver._core`; board size chosen at run time):

* ``position.h`` -- the board layout (drawn there once), its bit tricks, the named
  score bounds;
* ``movesorter.h`` -- which move to try first;
* ``table.h`` -- the transposition table of proven bounds;
* ``known.h`` -- exact scores known before any search (the book), asked inside it;
* ``search.h`` -- the node search (null windows, pruning, interruptible);
* ``root.h`` -- narrowing the root's bounds, analysis, parsing;
* ``module.c`` -- ``Core``, the Python type (every search releases the GIL).

And in Python:

* :mod:`~engine.solver.results` -- a batch's raw rows, an unfinished solve's answer;
* :mod:`~engine.solver.run` -- the driver of one solve around the compiled steps;
* :mod:`~engine.solver.cache_io` -- the book and the shared cache, read and written;
* :mod:`~engine.solver.solver` -- :class:`Solver`, the façade;
* the process's solvers, one per board size within a budget, are :mod:`engine.pool`'s.

Usage::

    from engine.connect4 import Connect4
    from engine.solver import Solver

    solver = Solver()                      # 7x6, 64 MB table, kept across solves
    result = solver.solve(Connect4.parse("4453"))   # an engine.answer.Analysis
    result.score, result.best_move, result.pv
"""

from engine.solver.results import Batch
from engine.solver.solver import DEFAULT_TABLE_BYTES, Solver

__all__ = ["DEFAULT_TABLE_BYTES", "Batch", "Solver"]

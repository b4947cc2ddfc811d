"""plybot's in-process analysis side by side with bitbully's, position by position.

    plybot bench --vs-bitbully PYTHON [--per-ply N] [--plies A-B] [--seed S]

PYTHON is the interpreter of a virtualenv that has bitbully (``make tools``
makes ``.tools/bitbully``). bitbully is AGPL: it runs in its own process, from
its own virtualenv, through a driver script (:data:`DRIVER`, handed to that
interpreter as ``-c``); this package never imports it.

For every ply in A..B (default 0..20), ``N`` positions from uniformly random
games and ``N`` positions drawn uniformly among all positions of the ply
(:mod:`engine.sampling`); for each, in turn:

- plybot scores every column in-process (the worker's 7x6 solver,
  :meth:`engine.solver.Solver.analyze` without a principal variation: the
  book and the 12-stone database inside the search), what bitbully's call
  answers;
- bitbully scores every column (``BitBully.score_all_moves``, its default book);
- plybot's whole analysis as a worker makes it (:func:`engine.analysis.analyze`,
  mode ``solve``: the scores again, with a best move and a principal variation);
- plybot's ``perfect`` bot move (:func:`engine.levels.choose_move`).

Each of plybot's three calls has a solver of its own, made as a worker's
(the book, the database, a 64 MB table faulted in) and kept from position
to position as a worker keeps it, so none is helped by another call's search
of the same position; bitbully keeps its own state from call to call too.
Each tool times its own call with ``time.perf_counter`` in its own process,
so neither pays for the pipe. Every column's score must agree (both use Pons'
convention), in both of plybot's calls: a disagreement is printed and the exit
status is 1. The ratio compares like with like: plybot's scores to bitbully's.
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from engine.bench.stats import quantile
from engine.connect4 import Connect4
from engine.sampling import uniform_positions

if TYPE_CHECKING:
    from engine.answer import Analysis
    from engine.solver import Solver

#: The driver run by bitbully's own interpreter: one position a line (0-based columns), one
#: JSON answer a line: the score of each column (null: full) and the call's microseconds.
DRIVER = r"""
import json, sys, time
from bitbully import BitBully, Board
agent = BitBully()
agent.score_all_moves(Board())  # warm: its book loaded
print("ready", flush=True)
for line in sys.stdin:
    board = Board(line.strip())
    t = time.perf_counter()
    scores = agent.score_all_moves(board)
    us = (time.perf_counter() - t) * 1e6
    print(json.dumps({"scores": [scores.get(c) for c in range(7)], "us": us}), flush=True)
"""


@dataclass
class PlyFigures:
    """The figures of one ply: microseconds per position of each tool, disagreements."""

    ply: int
    plybot_us: list[float] = field(default_factory=list)
    analysis_us: list[float] = field(default_factory=list)
    peer_us: list[float] = field(default_factory=list)
    move_us: list[float] = field(default_factory=list)
    disagreements: list[str] = field(default_factory=list)


def random_game_position(ply: int, rng: random.Random) -> Connect4:
    """A position after ``ply`` uniformly random moves (drawn again if the game ended)."""
    while True:
        position = Connect4()
        for _ in range(ply):
            if position.outcome() is not None:
                break
            position.push(rng.choice(position.legal_moves()))
        if position.outcome() is None and position.ply == ply:
            return position


def positions_for(ply: int, per_ply: int, seed: int) -> list[Connect4]:
    """``per_ply`` positions of random games, then ``per_ply`` uniform positions."""
    rng = random.Random(f"{seed}:{ply}")
    games = [random_game_position(ply, rng) for _ in range(per_ply)]
    return games + uniform_positions(ply, per_ply, seed=seed)


class Peer:
    """bitbully's driver in its own process."""

    def __init__(self, python: str) -> None:
        self.process = subprocess.Popen(
            [python, "-c", DRIVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        ready = self.process.stdout.readline().strip()
        if ready != "ready":
            raise RuntimeError(f"{python}: bitbully's driver did not start (is bitbully there?)")

    def scores(self, position: Connect4) -> tuple[list[int | None], float]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        moves = "".join(str(m) for m in position.moves)
        self.process.stdin.write(moves + "\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        return answer["scores"], float(answer["us"])

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=10)


def plybot_scores(solver: Solver, position: Connect4) -> tuple[list[int | None], float]:
    """Every column's exact score by plybot's solver in-process (no principal variation:
    what bitbully's call answers), and its microseconds."""
    t = time.perf_counter()
    answer = solver.analyze(position, pv=False)
    us = (time.perf_counter() - t) * 1e6
    return _columns(position, answer), us


def plybot_analysis(solver: Solver, position: Connect4) -> tuple[list[int | None], float]:
    """Every column's exact score by plybot's whole analysis, as a worker makes it (with a
    best move and a principal variation), and its microseconds."""
    from engine.analysis import analyze

    t = time.perf_counter()
    answer = analyze(position, mode="solve", all_moves=True, solver=solver)
    us = (time.perf_counter() - t) * 1e6
    return _columns(position, answer), us


def _columns(position: Connect4, answer: Analysis) -> list[int | None]:
    if not answer.exact or answer.moves is None:
        raise RuntimeError(f"'{position.notation()}': the analysis is not exact")
    return [answer.moves.get(c) for c in range(position.width)]


def perfect_move_us(solver: Solver, position: Connect4) -> float:
    from engine.levels import choose_move

    t = time.perf_counter()
    choose_move(position, "perfect", solver=solver)
    return (time.perf_counter() - t) * 1e6


def worker_solver() -> Solver:
    """A 7x6 solver made as a worker's pool makes it, in a pool of its own."""
    from engine.pool import SolverPool

    return SolverPool().solver(7, 6, None)


def run(
    python: str, plies: range, per_ply: int, seed: int, out: TextIO = sys.stdout
) -> list[PlyFigures]:
    """Measure every ply of ``plies``, printing a row per ply as it is done."""
    scoring, analysing, moving = worker_solver(), worker_solver(), worker_solver()
    plybot_scores(scoring, Connect4())  # warm, as the peer is
    plybot_analysis(analysing, Connect4())
    perfect_move_us(moving, Connect4())
    peer = Peer(python)
    figures: list[PlyFigures] = []
    out.write(_HEADER)
    try:
        for ply in plies:
            row = PlyFigures(ply)
            for position in positions_for(ply, per_ply, seed):
                ours, us = plybot_scores(scoring, position)
                theirs, peer_us = peer.scores(position)
                whole, analysis_us = plybot_analysis(analysing, position)
                row.plybot_us.append(us)
                row.peer_us.append(peer_us)
                row.analysis_us.append(analysis_us)
                row.move_us.append(perfect_move_us(moving, position))
                if not ours == whole == theirs:
                    row.disagreements.append(
                        f"{position.notation() or '-'}: {ours} / {whole} / {theirs}"
                    )
            figures.append(row)
            out.write(format_row(row))
            out.flush()
    finally:
        peer.close()
    return figures


_HEADER = (
    "| ply | positions | plybot scores median / p99 / max (ms) "
    "| bitbully scores median / p99 / max (ms) | median ratio "
    "| plybot analysis with PV median / p99 (ms) | perfect move median / p99 (ms) | agree |\n"
    "|---|---|---|---|---|---|---|---|\n"
)


def format_row(row: PlyFigures) -> str:
    def ms(values: list[float], longest: bool = True) -> str:
        """Median / p99 (/ max), in milliseconds."""
        shown = [statistics.median(values), quantile(values, 0.99)]
        return " / ".join(f"{v / 1000:.3f}" for v in shown + ([max(values)] if longest else []))

    ratio = statistics.median(row.plybot_us) / max(statistics.median(row.peer_us), 1e-9)
    n = len(row.plybot_us)
    cells = [
        str(row.ply),
        str(n),
        ms(row.plybot_us),
        ms(row.peer_us),
        f"{ratio:.2f}",
        ms(row.analysis_us, longest=False),
        ms(row.move_us, longest=False),
        f"{n - len(row.disagreements)}/{n}",
    ]
    return "| " + " | ".join(cells) + " |\n"

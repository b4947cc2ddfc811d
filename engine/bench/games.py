"""The ``perfect`` level in play: games against a weaker level or random moves, and their times."""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass, field

from engine.bench.solving import format_seconds
from engine.bench.stats import quantile


@dataclass
class GamesReport:
    """``perfect`` against ``opponent``: results and the time of each of perfect's moves by ply."""

    opponent: str
    move_s: float | None  # None: no deadline (every move exact)
    games: int = 0
    won: int = 0
    drawn: int = 0
    lost: int = 0
    not_exact: int = 0
    times: dict[int, list[float]] = field(default_factory=dict)
    start_ply: int = 0
    #: Games perfect began to move in a position it could win (or draw) and did not.
    worse_than_start: int = 0

    @property
    def all_times(self) -> list[float]:
        return sorted(t for ts in self.times.values() for t in ts)


#: The opponent that plays a uniformly random legal move (not a level of the bot's).
RANDOM = "random"


def play_games(games: int, opponent: str, move_s: float | None, start_ply: int = 0) -> GamesReport:
    """Play ``perfect`` against ``opponent`` on 7x6, ``games`` games, sides alternating.

    Each of perfect's moves gets ``move_s`` seconds (its deadline; ``None``: none, so every
    move is exact, whatever the machine's speed); the
    opponent (a level, or :data:`RANDOM`) is seeded by the game's number, so a
    run is repeatable but for where a deadline falls. With ``start_ply``, game
    ``n`` starts from a position drawn uniformly from all positions of a ply
    in ``0..start_ply`` (:mod:`engine.sampling`): perfect may start lost, so
    the report counts the games it ends worse than its first exact score said.
    Perfect uses the process's solver with the shipped opening book, as a worker does.
    """
    from engine.connect4 import Connect4
    from engine.levels import choose_move, warm_up
    from engine.sampling import uniform_positions

    warm_up(Connect4(), "perfect")
    report = GamesReport(opponent, move_s, start_ply=start_ply)
    for number in range(games):
        rng = random.Random(number)
        perfect = number % 2
        game = Connect4()
        if start_ply:
            game = uniform_positions(rng.randint(0, start_ply), 1, seed=number)[0]
        promised: int | None = None  # the sign of perfect's first exact score
        while game.outcome() is None:
            if game.side_to_move == perfect:
                start = time.monotonic()
                deadline = None if move_s is None else start + move_s
                choice = choose_move(game, "perfect", deadline=deadline)
                report.times.setdefault(game.ply, []).append(time.monotonic() - start)
                report.not_exact += not choice.exact
                if promised is None and choice.exact and choice.score is not None:
                    promised = (choice.score > 0) - (choice.score < 0)
                move = choice.move
            elif opponent == RANDOM:
                move = rng.choice(game.legal_moves())
            else:
                move = choose_move(game, opponent, rng=rng).move
            game.push(move)
        outcome = game.outcome()
        assert outcome is not None
        report.games += 1
        result = 0 if outcome.winner is None else (1 if outcome.winner == perfect else -1)
        report.won += result == 1
        report.drawn += result == 0
        report.lost += result == -1
        report.worse_than_start += promised is not None and result < promised
    return report


def format_games(report: GamesReport) -> str:
    """The result of :func:`play_games`, and perfect's move times (overall and by ply)."""
    times = report.all_times
    p99 = quantile(times, 0.99)
    start = f", from random positions of plies 0-{report.start_ply}" if report.start_ply else ""
    limit = "no time limit" if report.move_s is None else f"{report.move_s:g} s a move"
    lines = [
        f"perfect vs {report.opponent}, {report.games} games{start}, {limit}: "
        f"won {report.won}, drawn {report.drawn}, lost {report.lost}; "
        f"worse than its first exact score said: {report.worse_than_start}",
        f"perfect's moves: {len(times)}, not exact {report.not_exact}; "
        f"median {format_seconds(statistics.median(times))}, p99 {format_seconds(p99)}, "
        f"max {format_seconds(times[-1])}",
        "ply  moves   median      max",
    ]
    for ply in sorted(report.times):
        ts = report.times[ply]
        lines.append(
            f"{ply:>3}  {len(ts):>5}  {format_seconds(statistics.median(ts)):>7}  "
            f"{format_seconds(max(ts)):>7}"
        )
    return "\n".join(lines)

"""The score convention, written once: bounds, a decided score, moves to the end, and words.

Every game scores a decided position from the side to move as ``max stones + 1 -
the winner's stones at the win`` (:mod:`engine.game`): a win is positive, a loss
negative, a draw 0, and a quicker win scores higher. ``max stones`` is the most
one side can place (Connect Four 7x6: 21; tic-tac-toe: 5), which each game
declares (``Game.max_stones``). The compiled solver's core states the same bounds
in C (``engine/solver/csrc/position.h``, the named score bounds), which cannot call these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.game import Game


def win_score(max_stones: int, winner_stones: int) -> int:
    """The winner's score of a win made with its ``winner_stones``-th stone."""
    return max_stones + 1 - winner_stones


def score_bounds(max_stones: int, ply: int) -> tuple[int, int]:
    """The lowest and highest exact score possible ``ply`` moves in, from the side to move.

    Lowest: a loss at the opponent's next stone (it has ``(ply + 1) // 2``
    down); highest: a win with the side to move's next stone (``ply // 2`` down).
    """
    return -win_score(max_stones, (ply + 1) // 2 + 1), win_score(max_stones, ply // 2 + 1)


def moves_to_end(position: Game, score: int) -> int | None:
    """For a decided ``score`` of ``position``, the winner's moves until the win (it included).

    The side to move has played ``ply // 2`` stones, the other side
    ``(ply + 1) // 2``. ``None`` for a draw.
    """
    if score == 0:
        return None
    winner_stones = position.max_stones + 1 - abs(score)
    played = position.ply // 2 if score > 0 else (position.ply + 1) // 2
    return winner_stones - played


def score_words(position: Game, score: int, exact: bool) -> str:
    """A score in words, from the side to move: ``+3: win in 9``, ``0: draw``, ``+4 (heuristic)``.

    "win in N": the side to move wins with its N-th move from now; "loss in
    N": the opponent wins with its N-th move.
    """
    if not exact:
        return f"{score:+d} (heuristic)"
    if score == 0:
        return "0: draw"
    distance = moves_to_end(position, score)
    word = "win" if score > 0 else "loss"
    return f"{score:+d}: {word}" + ("" if distance is None else f" in {distance}")

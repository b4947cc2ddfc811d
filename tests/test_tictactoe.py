"""Tic-tac-toe: rules, notation, symmetry, and the exact solution of every reachable position."""

from __future__ import annotations

import random

import pytest

from engine.analysis import analyze
from engine.errors import GameOverError, IllegalMoveError, NotationError
from engine.search import SearchLimits, search
from engine.table import TranspositionTable
from engine.tictactoe import TicTacToe

LINES = [(1, 2, 3), (4, 5, 6), (7, 8, 9), (1, 4, 7), (2, 5, 8), (3, 6, 9), (1, 5, 9), (3, 5, 7)]


def reachable() -> dict[int, TicTacToe]:
    """Every position reachable from the start (finished ones too), by exact key."""
    found: dict[int, TicTacToe] = {}

    def walk(game: TicTacToe) -> None:
        key = game.table_key()
        if key in found:
            return
        found[key] = game.copy()
        for move in game.legal_moves():
            game.push(move)
            walk(game)
            game.pop()

    walk(TicTacToe())
    return found


def brute_force(game: TicTacToe, memo: dict[int, int]) -> int:
    """Plain minimax in the game's score convention (6 - winner's marks; 0 a draw)."""
    key = game.table_key()
    if key not in memo:
        if game.outcome() is not None:
            memo[key] = game.terminal_score()
        else:
            best = -10
            for move in game.legal_moves():
                game.push(move)
                best = max(best, -brute_force(game, memo))
                game.pop()
            memo[key] = best
    return memo[key]


@pytest.fixture(scope="module")
def positions() -> dict[int, TicTacToe]:
    return reachable()


def test_counts_of_positions(positions: dict[int, TicTacToe]) -> None:
    assert len(positions) == 5478  # legal positions reachable in play
    assert len({p.key() for p in positions.values()}) == 765  # up to the board's symmetries


def test_every_reachable_position_solved_exactly(positions: dict[int, TicTacToe]) -> None:
    memo: dict[int, int] = {}
    table = TranspositionTable(1 << 14)
    ongoing = [p for p in positions.values() if p.outcome() is None]
    ongoing.sort(key=lambda p: -p.ply)  # each search does real work at its root
    for game in ongoing:
        result = search(game, SearchLimits(), all_moves=True, table=table)
        assert result.decided, game.notation()
        assert result.score == brute_force(game, memo), game.notation()
        assert result.moves is not None
        for move, score in result.moves.items():
            game.push(move)
            assert score == -brute_force(game, memo), (game.notation(), move)
            game.pop()
        assert result.moves[result.best_move] == result.score
    assert brute_force(TicTacToe(), memo) == 0  # a draw with best play


def test_solve_mode_from_scratch_on_a_sample(positions: dict[int, TicTacToe]) -> None:
    memo: dict[int, int] = {}
    rng = random.Random(3)
    ongoing = [p for p in positions.values() if p.outcome() is None]
    for game in rng.sample(ongoing, 25):
        analysis = analyze(game, mode="solve", all_moves=True)
        assert analysis.exact
        assert analysis.score == brute_force(game, memo)
        assert analysis.best_move is not None
        assert analysis.pv[0] == analysis.best_move


@pytest.mark.parametrize("line", LINES)
def test_each_line_wins(line: tuple[int, int, int]) -> None:
    others = [c for c in range(1, 10) if c not in line][:2]
    notation = f"{line[0]}{others[0]}{line[1]}{others[1]}{line[2]}"
    game = TicTacToe.parse(notation)
    outcome = game.outcome()
    assert outcome is not None
    assert outcome.winner == 0
    assert game.terminal_score() == -(6 - 3)
    assert game.legal_moves() == []


def test_draw() -> None:
    game = TicTacToe.parse("513746829")
    outcome = game.outcome()
    assert outcome is not None
    assert outcome.is_draw
    assert game.terminal_score() == 0


def test_second_player_wins() -> None:
    game = TicTacToe.parse("152347")  # O: 5, 3, 7 (a diagonal) at move 6
    outcome = game.outcome()
    assert outcome is not None
    assert outcome.winner == 1
    assert str(outcome) == "player 2 wins"
    assert game.terminal_score() == -(6 - 3)


@pytest.mark.parametrize(
    ("notation", "error", "message"),
    [
        ("55", IllegalMoveError, "'55': cell 5 is taken (move 2)"),
        ("10", NotationError, "'10': cell 0 is outside 1..9 (move 2)"),
        ("1x", NotationError, "'1x': 'x' is not a cell digit (move 2)"),
        ("1425369", GameOverError, "'1425369': the game is already over after move 5"),
    ],
)
def test_errors_quote_the_input(notation: str, error: type, message: str) -> None:
    with pytest.raises(error) as caught:
        TicTacToe.parse(notation)
    assert str(caught.value) == message


def test_finished_position_refused_for_analysis() -> None:
    with pytest.raises(GameOverError) as caught:
        analyze(TicTacToe.parse("14253"), mode="solve")
    assert str(caught.value) == "'14253': the game is already over after move 5"


def test_notation_round_trips_and_undo(positions: dict[int, TicTacToe]) -> None:
    for game in positions.values():
        notation = game.notation()
        assert TicTacToe.parse(notation).notation() == notation
        copy = game.copy()
        while copy.moves:
            copy.pop()
        assert copy.boards == [0, 0]
    game = TicTacToe()
    for move in range(9):
        assert game.parse_move(game.move_name(move)) == move
    with pytest.raises(NotationError):
        game.parse_move("0")


SYMMETRIES = [
    (0, 1, 2, 3, 4, 5, 6, 7, 8),
    (6, 3, 0, 7, 4, 1, 8, 5, 2),
    (8, 7, 6, 5, 4, 3, 2, 1, 0),
    (2, 5, 8, 1, 4, 7, 0, 3, 6),
    (2, 1, 0, 5, 4, 3, 8, 7, 6),
    (0, 3, 6, 1, 4, 7, 2, 5, 8),
    (6, 7, 8, 3, 4, 5, 0, 1, 2),
    (8, 5, 2, 7, 4, 1, 6, 3, 0),
]


def test_symmetric_positions_share_the_key_and_map_moves(positions: dict[int, TicTacToe]) -> None:
    rng = random.Random(4)
    for game in rng.sample(list(positions.values()), 150):
        for sym in SYMMETRIES:
            image = TicTacToe.parse("".join(str(sym[m] + 1) for m in game.moves))
            assert image.key() == game.key()
            for move in game.legal_moves():
                assert game.from_canonical(game.to_canonical(move)) == move
                game.push(move)
                image.push(sym[move])
                assert game.key() == image.key()
                game.pop()
                image.pop()


def test_render() -> None:
    assert TicTacToe.parse("59").render() == "1 | 2 | 3\n4 | X | 6\n7 | 8 | O"

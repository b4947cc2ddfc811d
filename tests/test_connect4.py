"""Connect Four rules, notation and keys, checked against a naive board and published counts."""

from __future__ import annotations

import random

import pytest

from engine.connect4 import Connect4
from engine.errors import GameOverError, IllegalMoveError, NotationError, PlybotError
from engine.game import new_game, require_ongoing

# -- a naive reference: a 2-D grid and a scan of every line of four ------------------------

DIRECTIONS = {
    "vertical": (0, 1),
    "horizontal": (1, 0),
    "diagonal /": (1, 1),
    "diagonal \\": (1, -1),
}


def grid(notation: str, width: int = 7, height: int = 6) -> list[list[int | None]]:
    """``cells[column][row]``: 0 for the first player's stone, 1 for the second's."""
    cells: list[list[int | None]] = [[None] * height for _ in range(width)]
    heights = [0] * width
    for index, char in enumerate(notation):
        column = int(char) - 1
        cells[column][heights[column]] = index % 2
        heights[column] += 1
    return cells


def fours(notation: str, width: int = 7, height: int = 6) -> dict[str, set[int]]:
    """Direction -> the players with four in a row that way."""
    cells = grid(notation, width, height)
    found: dict[str, set[int]] = {name: set() for name in DIRECTIONS}
    for name, (dc, dr) in DIRECTIONS.items():
        for c in range(width):
            for r in range(height):
                line = [(c + k * dc, r + k * dr) for k in range(4)]
                if all(0 <= x < width and 0 <= y < height for x, y in line):
                    owners = {cells[x][y] for x, y in line}
                    if len(owners) == 1 and None not in owners:
                        found[name] |= owners  # type: ignore[arg-type]
    return found


def random_game(rng: random.Random, width: int = 7, height: int = 6) -> Connect4:
    game = Connect4(width, height)
    while game.outcome() is None:
        game.push(rng.choice(game.legal_moves()))
    return game


# -- wins, draws ---------------------------------------------------------------------------

WINS = {
    "vertical": "1412171",
    "horizontal": "3346231",
    "diagonal /": "45233545564",
    "diagonal \\": "11224113362",
}


@pytest.mark.parametrize("direction", list(WINS))
def test_win_in_each_direction(direction: str) -> None:
    notation = WINS[direction]
    game = Connect4.parse(notation)
    outcome = game.outcome()
    winner = (len(notation) - 1) % 2
    assert outcome is not None
    assert outcome.winner == winner
    assert not outcome.is_draw
    assert {d for d, players in fours(notation).items() if players} == {direction}
    assert game.legal_moves() == []
    assert game.winning_moves() == []
    # From the loser's side, to move: a loss with the winner's stones counted (Pons' convention).
    assert game.terminal_score() == -(22 - (len(notation) + 1) // 2)
    # The move before: the winning column was an immediate win.
    last = game.pop()
    assert game.outcome() is None
    assert last in game.winning_moves()


DRAW = "651571711647275143456752146343223234367265"


def test_full_board_without_four_is_a_draw() -> None:
    game = Connect4.parse(DRAW)
    assert len(DRAW) == 42
    assert not any(fours(DRAW).values())
    outcome = game.outcome()
    assert outcome is not None
    assert outcome.is_draw
    assert str(outcome) == "draw"
    assert game.terminal_score() == 0
    assert game.legal_moves() == []
    with pytest.raises(GameOverError):
        game.push(0)
    with pytest.raises(GameOverError, match=f"'{DRAW}1': the game is already over after move 42"):
        Connect4.parse(DRAW + "1")


def test_outcome_matches_a_naive_scan_on_random_games() -> None:
    rng = random.Random(1)
    for _ in range(40):
        game = random_game(rng)
        notation = game.notation()
        for ply in range(len(notation) + 1):
            prefix = notation[:ply]
            position = Connect4.parse(prefix)
            winners = set().union(*fours(prefix).values())
            outcome = position.outcome()
            if winners:
                assert ply == len(notation)  # the game stops at the first four
                assert outcome is not None
                assert {outcome.winner} == winners
            elif ply == 42:
                assert outcome is not None
                assert outcome.is_draw
            else:
                assert outcome is None


# -- immediate wins, non-losing moves ----------------------------------------------------


def random_positions(count: int, seed: int) -> list[Connect4]:
    rng = random.Random(seed)
    positions = []
    while len(positions) < count:
        game = random_game(rng)
        cut = rng.randrange(len(game.moves))
        positions.append(Connect4.parse(game.notation()[:cut]))
    return positions


def test_winning_moves_by_brute_force() -> None:
    for position in random_positions(300, seed=2):
        mover = position.side_to_move
        expected = []
        for move in position.legal_moves():
            position.push(move)
            outcome = position.outcome()
            if outcome is not None and outcome.winner == mover:
                expected.append(move)
            position.pop()
        assert position.winning_moves() == expected


def test_non_losing_moves_by_brute_force() -> None:
    checked = 0
    for position in random_positions(400, seed=3):
        if position.winning_moves():
            continue  # the precondition: no immediate win to take
        expected = []
        for move in position.legal_moves():
            position.push(move)
            if not position.winning_moves():  # a move that fills the board draws: not a loss
                expected.append(move)
            position.pop()
        assert sorted(position.non_losing_moves()) == sorted(expected), position.notation()
        checked += 1
    assert checked > 200


def test_forcing_means_the_opponent_threatens_a_playable_cell() -> None:
    assert Connect4.parse("1213").forcing() is False
    assert Connect4.parse("12131").forcing() is True  # X threatens column 1's fourth stone...
    position = Connect4.parse("12131")
    position.push(0)  # ...blocked: nothing forcing left for X
    assert not position.forcing()


# -- canonical key, symmetry, undo ------------------------------------------------------


def mirror_notation(notation: str, width: int = 7) -> str:
    return "".join(str(width + 1 - int(c)) for c in notation)


def test_mirror_positions_share_the_key_and_map_moves() -> None:
    for position in random_positions(200, seed=4):
        mirror = Connect4.parse(mirror_notation(position.notation()))
        assert mirror.key() == position.key()
        for move in position.legal_moves():
            assert position.from_canonical(position.to_canonical(move)) == move
            # The same move seen from the mirror lands on the same canonical column (a
            # symmetric position has two canonical names for it, one per side).
            symmetric = position.current + position.mask == mirror.current + mirror.mask
            if not symmetric:
                assert mirror.to_canonical(6 - move) == position.to_canonical(move)
            position.push(move)
            mirror.push(6 - move)
            assert position.key() == mirror.key()
            position.pop()
            mirror.pop()


def test_keys_are_exact_up_to_mirror() -> None:
    """Distinct positions (not mirror images) never share a key."""
    by_key: dict[str, tuple[int, int]] = {}
    for position in random_positions(400, seed=5):
        code = position.current + position.mask
        mirrored = Connect4.parse(mirror_notation(position.notation()))
        canonical = min(code, mirrored.current + mirrored.mask)
        seen = by_key.setdefault(position.key(), (canonical, code))
        assert seen[0] == canonical


def test_push_pop_round_trip() -> None:
    rng = random.Random(6)
    for _ in range(50):
        game = Connect4()
        states = [(game.current, game.mask, game.notation())]
        while game.outcome() is None:
            game.push(rng.choice(game.legal_moves()))
            states.append((game.current, game.mask, game.notation()))
        while game.moves:
            assert (game.current, game.mask, game.notation()) == states.pop()
            game.pop()
            assert game.outcome() is None
        assert (game.current, game.mask, game.notation()) == states.pop() == (0, 0, "")
    with pytest.raises(IndexError):
        Connect4().pop()


def test_illegal_push_leaves_the_position_unchanged() -> None:
    game = Connect4.parse("444444")
    before = (game.current, game.mask, game.notation())
    with pytest.raises(IllegalMoveError) as full:
        game.push(3)
    assert str(full.value) == "column 4 is full"
    with pytest.raises(NotationError) as outside:
        game.push(7)
    assert str(outside.value) == "column 8 is outside 1..7"
    assert (game.current, game.mask, game.notation()) == before


# -- notation -------------------------------------------------------------------------------


def test_notation_round_trips() -> None:
    rng = random.Random(7)
    for _ in range(100):
        notation = random_game(rng).notation()
        for cut in (0, len(notation) // 2, len(notation)):
            assert Connect4.parse(notation[:cut]).notation() == notation[:cut]
    position = Connect4.parse("4453")
    for move in range(7):
        assert position.parse_move(position.move_name(move)) == move
    assert repr(position) == "Connect4.parse('4453', '7x6')"


@pytest.mark.parametrize("variant", ["5x4", "6x5", "8x7", "9x6", "4x4"])
def test_other_board_sizes(variant: str) -> None:
    width, height = map(int, variant.split("x"))
    rng = random.Random(width * 10 + height)
    for _ in range(30):
        game = random_game(rng, width, height)
        notation = game.notation()
        again = Connect4.parse(notation, variant)
        assert again.notation() == notation
        assert again.variant == variant
        winners = set().union(*fours(notation, width, height).values())
        outcome = again.outcome()
        assert outcome is not None
        assert (set() if outcome.is_draw else {outcome.winner}) == winners


def test_new_game_from_the_registry() -> None:
    game = new_game("connect4", "44", "7x6")
    assert isinstance(game, Connect4)
    assert game.notation() == "44"


# -- every error message of the engine issue -------------------------------------------------


@pytest.mark.parametrize(
    ("notation", "error", "message"),
    [
        ("44448", NotationError, "'44448': column 8 is outside 1..7 (move 5)"),
        ("4444444", IllegalMoveError, "'4444444': column 4 is full (move 7)"),
        ("12121212", GameOverError, "'12121212': the game is already over after move 7"),
        ("12a", NotationError, "'12a': 'a' is not a column digit (move 3)"),
        ("40", NotationError, "'40': column 0 is outside 1..7 (move 2)"),
    ],
)
def test_parse_errors_quote_the_input(notation: str, error: type, message: str) -> None:
    with pytest.raises(error) as caught:
        Connect4.parse(notation)
    assert str(caught.value) == message
    assert isinstance(caught.value, PlybotError)
    assert isinstance(caught.value, ValueError)


def test_a_finished_game_is_refused_for_analysis() -> None:
    won = Connect4.parse("1212121")  # a legal game, won by the first player at move 7
    with pytest.raises(GameOverError) as caught:
        require_ongoing(won)
    assert str(caught.value) == "'1212121': the game is already over after move 7"


@pytest.mark.parametrize(
    ("variant", "message"),
    [
        ("7by6", "'7by6': a Connect Four variant is WIDTHxHEIGHT, e.g. '7x6'"),
        ("10x5", "'10x5': a Connect Four board needs 1 <= width <= 9, height >= 1"),
    ],
)
def test_bad_variants(variant: str, message: str) -> None:
    with pytest.raises(NotationError) as caught:
        Connect4.parse("", variant)
    assert str(caught.value).startswith(message)


def test_bad_move_text() -> None:
    position = Connect4()
    with pytest.raises(NotationError) as letter:
        position.parse_move("x")
    assert str(letter.value) == "'x': a move is one column digit 1..7"
    with pytest.raises(NotationError) as outside:
        position.parse_move("9")
    assert str(outside.value) == "'9': column 9 is outside 1..7"


# -- the published count of positions (OEIS A212693) -----------------------------------------

#: Legal 7x6 positions after n plies, https://oeis.org/A212693 (terminal ones included).
A212693 = [1, 7, 49, 238, 1120, 4263, 16422, 54859, 184275]


def count_positions(plies: int) -> list[int]:
    """Distinct positions (current, mask) after each number of plies, finished ones counted."""
    level: dict[tuple[int, int], Connect4] = {(0, 0): Connect4()}
    counts = [1]
    for _ in range(plies):
        following: dict[tuple[int, int], Connect4] = {}
        for position in level.values():
            for move in position.legal_moves():  # none once the game is won
                position.push(move)
                key = (position.current, position.mask)
                if key not in following:
                    following[key] = position.copy()
                position.pop()
        level = following
        counts.append(len(level))
    return counts


@pytest.mark.slow
def test_position_counts_match_oeis() -> None:
    assert count_positions(8) == A212693

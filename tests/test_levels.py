"""Levels of play behave as named: perfect never loses, easy makes real but bounded mistakes."""

from __future__ import annotations

import random
import time

import pytest

from engine.connect4 import Connect4
from engine.errors import GameOverError, PlybotError, UnknownLevelError
from engine.game import Game
from engine.levels import LEVELS, MoveChoice, choose_move, get_level, warm_up
from engine.search import CHECK_EVERY, SearchLimits, search
from engine.tictactoe import TicTacToe


def play_out(game: Game, players: dict[int, str], seed: int) -> tuple[Game, list[MoveChoice]]:
    """Play ``players`` (side -> level) against each other to the end."""
    rng = random.Random(seed)
    choices = []
    while game.outcome() is None:
        level = players[game.side_to_move]
        choice = choose_move(game, level, rng=rng)
        assert choice.move in game.legal_moves()
        choices.append(choice)
        game.push(choice.move)
    return game, choices


# -- names and errors ---------------------------------------------------------------------


def test_level_names() -> None:
    assert LEVELS == ("easy", "medium", "hard", "perfect")
    for name in LEVELS:
        assert get_level(name).name == name


def test_unknown_level_is_named() -> None:
    with pytest.raises(UnknownLevelError) as caught:
        choose_move(Connect4(), "grandmaster")
    assert str(caught.value) == "'grandmaster': unknown level (known: easy, medium, hard, perfect)"
    assert isinstance(caught.value, PlybotError)
    assert isinstance(caught.value, ValueError)


def test_finished_position_refused() -> None:
    with pytest.raises(GameOverError):
        choose_move(Connect4.parse("1212121"), "easy")


def test_every_level_answers_a_legal_move() -> None:
    for name in LEVELS:
        for game in (TicTacToe.parse("5"), Connect4.parse("4444445525")):
            choice = choose_move(game, name, rng=random.Random(1), deadline=time.monotonic() + 2)
            assert choice.move in game.legal_moves(), name
            assert choice.nodes >= 0
            assert choice.time_ms >= 0


# -- tic-tac-toe ----------------------------------------------------------------------------


@pytest.mark.parametrize("perfect_side", [0, 1])
def test_tictactoe_perfect_never_loses_to_easy(perfect_side: int) -> None:
    results = []
    for seed in range(8):
        players = {perfect_side: "perfect", 1 - perfect_side: "easy"}
        game, _ = play_out(TicTacToe(), players, seed)
        outcome = game.outcome()
        assert outcome is not None, game.notation()
        assert outcome.winner != 1 - perfect_side, game.notation()
        results.append(outcome.winner)
    assert perfect_side in results  # easy really loses some of them


def test_tictactoe_perfect_against_itself_draws() -> None:
    game, choices = play_out(TicTacToe(), {0: "perfect", 1: "perfect"}, seed=0)
    outcome = game.outcome()
    assert outcome is not None
    assert outcome.is_draw
    assert all(c.exact and c.score == 0 for c in choices)


def test_tictactoe_perfect_takes_the_quickest_win() -> None:
    # X: 1 and 5, O: 2 and 3. X wins at once with 9 (1-5-9); 4 or 7 win only later.
    choice = choose_move(TicTacToe.parse("1253"), "perfect")
    assert choice.move == 8
    assert choice.exact
    assert choice.score == 6 - 3


# -- easy's mistakes: real but bounded -------------------------------------------------------


def random_positions(count: int, seed: int) -> list[Connect4]:
    rng = random.Random(seed)
    found = []
    while len(found) < count:
        game = Connect4()
        for _ in range(rng.randint(4, 24)):
            if game.outcome() is not None:
                break
            game.push(rng.choice(game.legal_moves()))
        if game.outcome() is None:
            found.append(game)
    return found


def test_easy_rarely_overlooks_an_immediate_win() -> None:
    spec = get_level("easy")
    positions = [p for p in random_positions(300, seed=11) if p.winning_moves()][:30]
    assert len(positions) == 30
    rng = random.Random(5)
    taken = total = 0
    for position in positions:
        for _ in range(8):
            choice = choose_move(position, "easy", rng=rng)
            taken += choice.move in position.winning_moves()
            total += 1
    missed = 1 - taken / total
    assert 0 < missed <= spec.miss_win + 0.08  # mistakes are real, their rate bounded


def test_easy_never_plays_into_a_loss_its_search_sees() -> None:
    rng = random.Random(6)
    spec = get_level("easy")
    varied = 0
    for position in random_positions(40, seed=12):
        result = search(position, SearchLimits(depth=spec.depth_for(position)), all_moves=True)
        assert result.moves is not None
        safe = {m for m, s in result.moves.items() if not (m in result.decided_moves and s < 0)}
        chosen = {choose_move(position, "easy", rng=rng).move for _ in range(5)}
        if position.winning_moves():
            continue  # overlooking a win is the one mistake allowed to lose (bounded above)
        if safe:
            assert chosen <= safe, position.notation()
        # Never a move worse than the best safe one by more than the margin.
        heuristic = {m: s for m, s in result.moves.items() if m not in result.decided_moves}
        if heuristic and safe == set(result.moves):
            best = max(heuristic.values())
            assert all(heuristic[m] >= best - spec.margin for m in chosen if m in heuristic)
        varied += len(chosen) > 1
    assert varied >= 8  # it does vary its play


def test_easy_is_beaten_by_medium_sometimes() -> None:
    medium_wins = easy_wins = 0
    for seed in range(4):
        players = {seed % 2: "medium", 1 - seed % 2: "easy"}
        game, _ = play_out(Connect4(), players, seed)
        outcome = game.outcome()
        assert outcome is not None
        if outcome.winner == seed % 2:
            medium_wins += 1
        elif outcome.winner is not None:
            easy_wins += 1
    assert medium_wins >= 2
    assert medium_wins > easy_wins


# -- Connect Four: perfect (the solver) ----------------------------------------------------


def perfect_beats_easy(perfect_side: int, seeds: range) -> None:
    # No deadline: every move of perfect's is exact, the opening ones from the book (the
    # solver would take minutes there), the later ones from the solver.
    for seed in seeds:
        players = {perfect_side: "perfect", 1 - perfect_side: "easy"}
        game, choices = play_out(Connect4(), players, seed)
        outcome = game.outcome()
        assert outcome is not None
        assert outcome.winner == perfect_side, game.notation()  # easy loses, every time
        mine = choices[perfect_side::2]
        assert all(c.exact for c in mine), game.notation()


@pytest.mark.parametrize("perfect_side", [0, 1])
def test_connect4_perfect_never_loses_to_easy(perfect_side: int) -> None:
    warm_up(Connect4(), "perfect")
    perfect_beats_easy(perfect_side, range(1))


@pytest.mark.slow
@pytest.mark.parametrize("perfect_side", [0, 1])
def test_connect4_perfect_never_loses_to_easy_more_games(perfect_side: int) -> None:
    warm_up(Connect4(), "perfect")
    perfect_beats_easy(perfect_side, range(1, 5))


def test_connect4_perfect_plays_the_exact_best_move() -> None:
    # Endgame positions: the solver's move must score as well as the best one of an
    # exhaustive generic search.
    rng = random.Random(8)
    checked = 0
    while checked < 4:
        game = Connect4()
        for _ in range(30):
            if game.outcome() is not None:
                break
            game.push(rng.choice(game.legal_moves()))
        if game.outcome() is not None:
            continue
        exact = search(game, SearchLimits(), all_moves=True)
        assert exact.decided
        assert exact.moves is not None
        choice = choose_move(game, "perfect")
        assert choice.exact
        assert choice.score == exact.score
        assert exact.moves[choice.move] == exact.score
        checked += 1


def test_connect4_perfect_opens_from_the_book_at_once() -> None:
    # The empty board takes the solver minutes; the book answers it, and the replies to
    # every first move, exactly. (The first player wins with the last stone: 22 - 21 = 1.)
    # (A deadline far off: "at once" is the book's 0 nodes, not a race with the clock.)
    choice = choose_move(Connect4(), "perfect", deadline=time.monotonic() + 60)
    assert (choice.move, choice.score, choice.exact, choice.nodes) == (3, 1, True, 0)
    for first in range(7):
        reply = choose_move(
            Connect4.parse(str(first + 1)), "perfect", deadline=time.monotonic() + 60
        )
        assert reply.exact, first
        assert reply.nodes == 0, first


def test_connect4_perfect_honours_its_deadline_and_says_so() -> None:
    warm_up(Connect4(), "perfect")  # loading the compiled solver is not a move's work
    position = Connect4.parse("27611616434271")  # past the databases: a search of millions of nodes
    # Its deadline already passed (it was 0.4 s off, and on a loaded machine depth 1 was not
    # always reached): the solver and the fallback search each stop at their first look at
    # the clock, and the move is still legal and says why it is not exact.
    choice = choose_move(position, "perfect", deadline=time.monotonic() - 1)
    assert not choice.exact
    assert choice.depth == 0
    assert choice.note == "deadline: played best of depth 0"
    assert choice.move in position.legal_moves()
    assert choice.nodes <= 1 + CHECK_EVERY


def test_connect4_hard_uses_the_solver_when_it_can() -> None:
    choice = choose_move(Connect4.parse("4444445525"), "hard")
    assert choice.exact

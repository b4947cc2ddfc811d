"""Games against the bot over HTTP, end to end (real API, workers and Redis), and their
survival across a restart of the API."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from engine.game import new_game
from tests.fixtures.api import ApiServer, WebhookReceiver

pytestmark = [pytest.mark.redis, pytest.mark.service]

PREFERENCE = "4352617"  # the human's simple strategy: the most central free column


@pytest.fixture(scope="module")
def http(api_service: ApiServer) -> Iterator[httpx.Client]:
    with api_service.client() as client:
        yield client


def check_state(game: dict[str, Any]) -> None:
    """The state agrees with the engine's rules for its position."""
    position = new_game(game["game"], game["position"], game["variant"])
    assert game["moves"] == [position.move_name(m) for m in _replay(game)]
    outcome = position.outcome()
    if outcome is None:
        assert game["status"] == "ongoing"
        assert game["result"] is None
        humans_turn = (position.side_to_move == 0) == (game["first"] == "human")
        assert game["turn"] == ("human" if humans_turn else "bot")
        if humans_turn:
            assert game["legal_moves"] == sorted(
                position.move_name(m) for m in position.legal_moves()
            )
    else:
        assert game["turn"] is None
        assert game["legal_moves"] == []
        if outcome.winner is None:
            assert (game["status"], game["winner"], game["result"]) == ("drawn", None, "draw")
        else:
            first_won = outcome.winner == 0
            winner = (
                game["first"] if first_won else ("bot" if game["first"] == "human" else "human")
            )
            assert (game["status"], game["winner"]) == ("won", winner)
            assert game["result"] == f"{winner} wins"


def _replay(game: dict[str, Any]) -> list[int]:
    position = new_game(game["game"], "", game["variant"])
    moves = []
    for name in game["moves"]:
        moves.append(position.parse_move(name))
        position.push(moves[-1])
    assert position.notation() == game["position"]
    return moves


def play_to_the_end(http: httpx.Client, game: dict[str, Any]) -> dict[str, Any]:
    while game["status"] == "ongoing":
        assert game["turn"] == "human", game
        move = next(c for c in PREFERENCE if c in game["legal_moves"])
        r = http.post(f"/v1/games/{game['id']}/moves", json={"move": move})
        assert r.status_code == 200, r.text
        before = len(game["moves"])
        game, reply = r.json()["game"], r.json()["reply"]
        check_state(game)
        assert game["moves"][before] == move
        if reply is None:  # my move ended the game
            assert game["status"] != "ongoing"
            assert len(game["moves"]) == before + 1
        else:
            assert len(game["moves"]) == before + 2
            assert game["moves"][-1] == reply["move"]
            assert reply["ply"] == before + 1
            assert reply["worker"]
            assert game["last_bot_move"] == reply
    return game


def test_connect_four_against_the_bot_to_the_end(http: httpx.Client) -> None:
    r = http.post("/v1/games", json={"game": "connect4", "level": "easy", "first": "human"})
    assert r.status_code == 201, r.text
    game = r.json()
    assert r.headers["Location"] == f"/v1/games/{game['id']}"
    assert (game["position"], game["turn"], game["status"], game["level"]) == (
        "",
        "human",
        "ongoing",
        "easy",
    )
    check_state(game)
    game = play_to_the_end(http, game)
    assert game["status"] in ("won", "drawn")
    assert http.get(f"/v1/games/{game['id']}").json() == game
    r = http.post(f"/v1/games/{game['id']}/moves", json={"move": "1"})
    assert r.status_code == 409
    assert "is over" in r.json()["message"]


def test_take_back_a_move_against_the_bot(http: httpx.Client) -> None:
    game = http.post("/v1/games", json={"game": "connect4", "level": "easy"}).json()
    r = http.post(f"/v1/games/{game['id']}/takeback")
    assert r.status_code == 409
    assert "no move to take back" in r.json()["message"]
    r = http.post(f"/v1/games/{game['id']}/moves", json={"move": "4"})
    assert r.status_code == 200
    assert r.json()["reply"] is not None
    r = http.post(f"/v1/games/{game['id']}/takeback")
    assert r.status_code == 200, r.text
    back = r.json()
    assert (back["moves"], back["turn"], back["takebacks"]) == ([], "human", 1)
    check_state(back)
    assert http.get(f"/v1/games/{game['id']}").json() == back
    assert http.post("/v1/games/nope/takeback").status_code == 404


def test_perfect_bot_moving_first_never_loses_tictactoe(http: httpx.Client) -> None:
    r = http.post("/v1/games", json={"game": "tictactoe", "level": "perfect", "first": "bot"})
    assert r.status_code == 201
    game = r.json()
    # The bot's first move was asked for and played before the answer.
    assert game["first"] == "bot"
    assert len(game["moves"]) == 1
    assert game["turn"] == "human"
    assert game["last_bot_move"]["move"] == game["moves"][0]
    check_state(game)
    game = play_to_the_end(http, game)
    assert game["winner"] in ("bot", None)


def wait_for_moves(http: httpx.Client, game_id: str, count: int, tries: int = 30) -> dict:
    """The game once it has ``count`` moves (each GET long-polls for the bot's reply)."""
    for _ in range(tries):
        game = http.get(f"/v1/games/{game_id}", params={"wait": 10}).json()
        if len(game["moves"]) >= count:
            return game
    raise AssertionError(f"game {game_id}: fewer than {count} moves: {game}")


def test_games_and_callbacks_survive_a_restart_of_the_api(api_service: ApiServer) -> None:
    with api_service.client() as http, WebhookReceiver() as hook:
        game = http.post("/v1/games", json={"game": "connect4", "level": "perfect"}).json()
        # wait=0: the API answers at once, so the bot's move is in flight when it stops (a
        # perfect reply to 4 is no cache hit: the solver uses the move's whole deadline).
        moved = http.post(f"/v1/games/{game['id']}/moves?wait=0", json={"move": "4"}).json()
        # Mostly in flight; a worker may have answered already (no timing is assumed).
        if moved["reply"] is None:
            assert moved["game"]["turn"] == "bot"
            assert moved["game"]["bot_thinking"] is True
        # An analysis that is still running when the API stops, to be called back.
        body = {"game": "connect4", "position": "1", "mode": "time", "time_ms": 1500}
        analysis = http.post("/v1/analyses", json={**body, "callback_url": hook.url}).json()

        api_service.restart()

        after = wait_for_moves(http, game["id"], 2)
        assert after["moves"][0] == "4"
        assert len(after["moves"]) == 2
        assert after["turn"] == "human"
        assert after["created_at"] == game["created_at"]
        check_state(after)
        move = next(c for c in "123456789" if c in after["legal_moves"])
        r = http.post(f"/v1/games/{game['id']}/moves", json={"move": move})
        assert r.status_code == 200
        assert r.json()["game"]["moves"][2] == move

        hook.wait_for(1, timeout=300)  # a state, not a duration: the bound only ends a hang
        _, delivered = hook.requests[0]
        assert delivered["id"] == analysis["id"]
        assert delivered["status"] == "done"

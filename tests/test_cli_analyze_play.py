"""``plybot analyze`` and ``plybot play``: output, bad input (exit 2, one line), piped games."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import analyze as analyze_cli
from engine.cli import play as play_cli
from engine.connect4 import Connect4
from engine.tictactoe import TicTacToe

PLYBOT = [str(Path(sys.executable).with_name("plybot"))]  # the console script of this venv
ROOT = Path(__file__).resolve().parent.parent


def run_analyze(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = analyze_cli.main(list(argv))
    except SystemExit as exit_:  # argparse's own errors
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def fields(out: str) -> dict[str, str]:
    """The ``label  value`` lines under the board."""
    found = {}
    for line in out.splitlines():
        label, _, value = line.partition("  ")
        if label and value and not label.startswith((".", "X", "O", "1")):
            found[label.strip()] = value.strip()
    return found


# -- plybot analyze ------------------------------------------------------------------------------


def test_analyze_depth_prints_every_field(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_analyze(capsys, "4453", "--depth", "4", "--all")
    assert code == 0
    assert err == ""
    assert "connect4 7x6, position '4453', the first player to move" in out
    assert Connect4.parse("4453").render() in out
    got = fields(out)
    assert got["best move"] in "1234567"
    assert got["score"].endswith("(heuristic)")
    assert len(got["pv"].split()) >= 4
    moves = got["moves"].replace("(heuristic)", "").split()
    assert [m.split(":")[0] for m in moves] == list("1234567")
    assert got["depth"] == "4 plies"
    assert int(got["nodes"].replace(",", "")) > 0
    assert int(got["nodes/s"].replace(",", "")) > 0
    assert got["time"].endswith(" s")


def test_analyze_decided_scores_in_words(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_analyze(capsys, "4455", "--depth", "5")
    assert code == 0
    assert fields(out)["score"] == "+18: win in 2"
    assert fields(out)["best move"] in ("3", "6")


def test_analyze_tictactoe_solves_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_analyze(capsys, "15", "--game", "tictactoe", "--all")
    assert code == 0
    got = fields(out)
    assert got["score"] == "0: draw"
    assert got["moves"] == "2:+0  3:+0  4:+0  6:+0  7:+0  8:+0  9:+0"
    assert TicTacToe.parse("15").render() in out


def test_analyze_time_budget(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_analyze(capsys, "1", "--game", "tictactoe", "--time-ms", "300")
    assert code == 0
    assert fields(out)["score"] in ("0: draw", "+0 (heuristic)")


def test_analyze_level(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_analyze(capsys, "1253", "--game", "tictactoe", "--level", "perfect")
    assert code == 0
    got = fields(out)
    assert got["level"] == "perfect"
    assert got["plays"] == "9"
    assert got["score"] == "+3: win in 1"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["44448"], "plybot analyze: '44448': column 8 is outside 1..7 (move 5)"),
        (["4444444"], "plybot analyze: '4444444': column 4 is full (move 7)"),
        (["1212121"], "plybot analyze: '1212121': the game is already over after move 7"),
        (["12121212"], "plybot analyze: '12121212': the game is already over after move 7"),
        (["4", "--game", "go"], "plybot analyze: 'go': unknown game (known: connect4, tictactoe)"),
        (
            ["4", "--level", "godlike"],
            "plybot analyze: 'godlike': unknown level (known: easy, medium, hard, perfect)",
        ),
        (["4", "--depth", "0"], "plybot analyze: '0': --depth must be at least 1"),
        (["4", "--time-ms", "-5"], "plybot analyze: '-5': --time-ms must be above 0"),
        (
            ["4", "--depth", "3", "--time-ms", "9"],
            "plybot analyze: argument --time-ms: not allowed with argument --depth",
        ),
        (["4", "--depth", "x"], "plybot analyze: argument --depth: invalid int value: 'x'"),
        (
            ["4", "--variant", "7by6"],
            "plybot analyze: '7by6': a Connect Four variant is WIDTHxHEIGHT, e.g. '7x6'",
        ),
    ],
)
def test_analyze_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run_analyze(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err == message + "\n"


def test_analyze_as_a_process() -> None:
    done = subprocess.run(
        [*PLYBOT, "analyze", "5", "--game", "tictactoe", "--depth", "2"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "best move" in done.stdout
    assert "nodes/s" in done.stdout
    bad = subprocess.run(
        [*PLYBOT, "analyze", "44448"], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert bad.returncode == 2
    assert bad.stderr == "plybot analyze: '44448': column 8 is outside 1..7 (move 5)\n"


# -- plybot play ---------------------------------------------------------------------------------


def run_play(game: object, moves: str, **kwargs: object) -> tuple[int, str]:
    out = io.StringIO()
    options = {"level": "perfect", "human": 0, "seed": 1, "move_time_ms": 2000}
    options.update(kwargs)
    code = play_cli.play(game, stdin=io.StringIO(moves), stdout=out, **options)  # type: ignore[arg-type]
    return code, out.getvalue()


def test_play_announces_a_win_for_the_player() -> None:
    code, out = run_play(Connect4.parse("121212"), "1\n")
    assert code == 0
    assert out.rstrip().endswith("You win!")


def test_play_engine_wins_and_says_so() -> None:
    code, out = run_play(Connect4.parse("121213"), "", human=1)
    assert code == 0
    assert out.rstrip().endswith("plybot wins.")
    assert "plybot plays 1" in out  # plybot is X here and completes column 1 at once


def test_play_rejects_bad_moves_and_asks_again() -> None:
    code, out = run_play(TicTacToe(), "5\n0\nx\n5\nq\n")
    assert code == 0
    assert "'0': a move is one cell digit 1..9" in out
    assert "'x': a move is one cell digit 1..9" in out
    assert "'5': cell 5 is taken" in out
    assert out.count("your move") == 5  # asked again after each bad one
    assert out.rstrip().endswith("You quit. Thanks for the game.")


def test_play_full_tictactoe_game_against_perfect_is_a_draw_or_a_loss() -> None:
    # Always try the lowest free cells: taken ones are refused and the next line tried.
    code, out = run_play(TicTacToe(), "\n".join("123456789" * 5) + "\n")
    assert code == 0
    assert out.rstrip().splitlines()[-1] in ("Draw.", "plybot wins.")
    assert "plybot plays" in out


def test_play_end_of_input_abandons_the_game() -> None:
    code, out = run_play(Connect4(), "4\n")
    assert code == 0
    assert out.rstrip().endswith("No more input: game abandoned.")


def test_play_as_a_process_with_piped_moves() -> None:
    done = subprocess.run(
        [*PLYBOT, "play", "--game", "tictactoe", "--level", "perfect", "--second"],
        input="\n".join("123456789" * 5) + "\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.rstrip().splitlines()
    assert lines[0] == "tictactoe 3x3: you are O, plybot (perfect) is X"
    assert lines[-1] in ("Draw.", "plybot wins.")
    assert "X | " in done.stdout  # the board is drawn


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--level", "nope"],
            "plybot play: 'nope': unknown level (known: easy, medium, hard, perfect)",
        ),
        (["--game", "chess"], "plybot play: 'chess': unknown game (known: connect4, tictactoe)"),
        (
            ["--first", "--second"],
            "plybot play: argument --second: not allowed with argument --first",
        ),
        (["--move-time-ms", "0"], "plybot play: '0': --move-time-ms must be above 0"),
    ],
)
def test_play_bad_arguments(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    try:
        code = play_cli.main(argv)
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    assert code == 2
    assert err == message + "\n"
    assert out == ""

"""Play a game against the engine in the terminal.

    plybot play [--game G] [--variant V] [--level L] [--first | --second] [--seed N]

The board is drawn after every move; type a column (Connect Four, 1-7) or a
cell (tic-tac-toe, 1-9), or q to quit. A bad move is explained and asked
again. Moves may be piped in: ``printf '4\\n4\\n4\\n' | plybot play``.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, TextIO

from engine.cli.analyze import ArgumentParser, fail

if TYPE_CHECKING:
    from engine.game import Game


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="plybot play", description="Play a game against plybot's engine.")
    p.add_argument("--game", default="connect4", help="connect4 (default) or tictactoe")
    p.add_argument("--variant", default=None, help="board variant, e.g. 7x6 (default)")
    p.add_argument("--level", default="medium", help="easy, medium (default), hard or perfect")
    side = p.add_mutually_exclusive_group()
    side.add_argument("--first", action="store_true", help="you move first (the default)")
    side.add_argument("--second", action="store_true", help="plybot moves first")
    p.add_argument("--seed", type=int, default=None, help="random seed (the easy level's mistakes)")
    p.add_argument(
        "--move-time-ms",
        type=float,
        default=5000,
        metavar="T",
        help="most time plybot takes per move (default 5000)",
    )
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    prog = "plybot play"

    from engine.errors import PlybotError
    from engine.game import new_game
    from engine.levels import get_level

    try:
        game = new_game(args.game, "", args.variant)
        get_level(args.level)
    except PlybotError as exc:
        return fail(prog, str(exc))
    if args.move_time_ms <= 0:
        return fail(prog, f"'{args.move_time_ms:g}': --move-time-ms must be above 0")
    return play(
        game,
        level=args.level,
        human=1 if args.second else 0,
        seed=args.seed,
        move_time_ms=args.move_time_ms,
        stdin=sys.stdin,
        stdout=sys.stdout,
    )


MARKS = ("X", "O")


def play(
    game: Game,
    *,
    level: str,
    human: int,
    seed: int | None,
    move_time_ms: float,
    stdin: TextIO,
    stdout: TextIO,
) -> int:
    """The game loop: ``human`` (0 or 1) moves from ``stdin``, the engine at ``level``.

    Returns the exit code (0: the game ended, or the player quit or ran out of input).
    """
    import random

    from engine.errors import PlybotError
    from engine.levels import choose_move, warm_up

    warm_up(game, level)  # the solver loads once, before the first move's clock runs
    rng = random.Random(seed)
    interactive = stdin.isatty()

    def say(text: str = "") -> None:
        print(text, file=stdout, flush=True)

    you, bot = MARKS[human], MARKS[1 - human]
    say(f"{game.name} {game.variant}: you are {you}, plybot ({level}) is {bot}")
    say("Type a move, or q to quit.")
    say()
    say(game.render())
    while game.outcome() is None:
        if game.side_to_move != human:
            deadline = time.monotonic() + move_time_ms / 1000
            choice = choose_move(game, level, deadline=deadline, rng=rng)
            game.push(choice.move)
            say()
            say(f"plybot plays {game.move_name(choice.move)}")
            say(game.render())
            continue
        moves = ", ".join(game.move_name(m) for m in sorted(game.legal_moves()))
        stdout.write(f"your move ({moves}; q quits): ")
        stdout.flush()
        line = stdin.readline()
        if not line:  # end of input
            say()
            say("No more input: game abandoned.")
            return 0
        text = line.strip()
        if not interactive:  # piped moves: show them, so the transcript reads like a game
            say(text)
        if text.lower() in ("q", "quit", "exit"):
            say("You quit. Thanks for the game.")
            return 0
        if not text:
            continue
        try:
            move = game.parse_move(text)
            game.push(move)
        except PlybotError as exc:
            message = str(exc)
            say(message if message.startswith("'") else f"'{text}': {message}")
            continue
        say()
        say(game.render())

    outcome = game.outcome()
    assert outcome is not None
    say()
    if outcome.winner is None:
        say("Draw.")
    elif outcome.winner == human:
        say("You win!")
    else:
        say("plybot wins.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

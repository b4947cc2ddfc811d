"""Boards, analyses and stats as text and embeds: pure functions of their inputs.

Nothing here talks to Redis, Discord or the engine's search; each function maps
a value to what Discord should show, so every picture can be tested as text.

A game's board is drawn once. Connect Four is a picture attached to the embed
(:mod:`bot.picture`: emoji cannot reach 3:1 on both of Discord's themes), with
the column numbers under the columns that the move buttons carry too.
Tic-tac-toe's board is its nine buttons (see :mod:`bot.views`), so the embed
holds no second copy. :func:`grid` (emoji text) remains for analyses of
tic-tac-toe and other games.
"""

from __future__ import annotations

from collections.abc import Sequence

import discord

from bot.challenges import Challenge
from bot.picture import board_png
from bot.stats import Standing, UserStats
from engine.analysis import moves_to_end
from engine.connect4 import Connect4
from engine.game import Game
from engine.tictactoe import _LINES as LINES
from engine.tictactoe import TicTacToe
from worker.contract import LEVELS, AnalysisResult
from worker.games import BOT, GameSession, GameStatus

KEYCAPS = ("0️⃣", "1️⃣", "2️⃣", "3️⃣", "4️⃣", "5️⃣", "6️⃣", "7️⃣", "8️⃣", "9️⃣")

#: Each player's piece, and the same piece marking the last move, per game.
PIECES: dict[str, tuple[str, str]] = {"connect4": ("🔴", "🟡"), "tictactoe": ("❌", "⭕")}
LAST_PIECES: dict[str, tuple[str, str]] = {"connect4": ("🟥", "🟨"), "tictactoe": ("❎", "🅾️")}
EMPTY_HOLE = "⚫"

#: Display names of the games.
TITLES = {"connect4": "Connect Four", "tictactoe": "Tic-tac-toe"}


def piece(game: str, player: int) -> str:
    """The emoji of ``player`` (0 moves first) in ``game``; a neutral dot for other games."""
    return PIECES.get(game, ("⚪", "⚫"))[player]


def title(game: str) -> str:
    return TITLES.get(game, game)


def grid(position: Game) -> str:
    """The board as emoji lines (see the module docstring); other games as a code block."""
    if isinstance(position, Connect4):
        return _connect4_grid(position)
    if isinstance(position, TicTacToe):
        return _tictactoe_grid(position)
    return f"```\n{position.render()}\n```"


def _connect4_grid(position: Connect4) -> str:
    last = _last_cell_connect4(position)
    rows = []
    for row in range(position.height - 1, -1, -1):
        cells = []
        for column in range(position.width):
            owner = position.cell(column, row)
            if owner is None:
                cells.append(EMPTY_HOLE)
            elif (column, row) == last:
                cells.append(LAST_PIECES["connect4"][owner])
            else:
                cells.append(PIECES["connect4"][owner])
        rows.append("".join(cells))
    rows.append("".join(KEYCAPS[c + 1] for c in range(position.width)))
    return "\n".join(rows)


def _last_cell_connect4(position: Connect4) -> tuple[int, int] | None:
    if not position.moves:
        return None
    column = position.moves[-1]
    return column, position.column_height(column) - 1


def _tictactoe_grid(position: TicTacToe) -> str:
    last = position.moves[-1] if position.moves else None
    cells = []
    for cell in range(9):
        owner = occupant(position, cell)
        if owner is None:
            cells.append(KEYCAPS[cell + 1])
        elif cell == last:
            cells.append(LAST_PIECES["tictactoe"][owner])
        else:
            cells.append(PIECES["tictactoe"][owner])
    return "\n".join("".join(cells[r * 3 : r * 3 + 3]) for r in range(3))


#: Tic-tac-toe's marks on its buttons: letters, white on the button's colour, so that they
#: read on both themes (Twemoji's ❌ and ⭕ are the same red, 2.7:1 on the dark theme).
MARKS = ("X", "O")


def tictactoe_line(position: TicTacToe) -> frozenset[int]:
    """The cells of the three in a row that won the game; empty if none."""
    for board in position.boards:
        for line in LINES:
            if board & line == line:
                return frozenset(cell for cell in range(9) if line >> cell & 1)
    return frozenset()


def occupant(position: Game, move: int) -> int | None:
    """Who holds tic-tac-toe cell ``move`` (0 or 1); ``None`` if free, and for other games."""
    if isinstance(position, TicTacToe):
        return next((p for p in (0, 1) if position.boards[p] >> move & 1), None)
    return None


def move_label(position: Game, move: int) -> str:
    """How a move is named to people: ``column 4``, ``cell 5``, or the game's notation."""
    if isinstance(position, Connect4):
        return f"column {move + 1}"
    if isinstance(position, TicTacToe):
        return f"cell {move + 1}"
    return position.move_name(move)


def button_rows(position: Game) -> list[list[int]]:
    """Every move a board offers as a button, laid out in rows (Discord allows 5 per row).

    Connect Four: one button per column, numbered as the picture numbers the
    columns, in order left to right (seven as 4 + 3: Discord allows five a
    row); tic-tac-toe: the nine cells as the 3 x 3 board. Other games: their legal moves, 5 a row.
    Which buttons are enabled is :func:`playable`'s business.
    """
    if isinstance(position, Connect4):
        columns = list(range(position.width))
        if len(columns) <= 5:
            return [columns]
        half = (len(columns) + 1) // 2
        return [columns[:half], columns[half:]]
    if isinstance(position, TicTacToe):
        return [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    moves = sorted(position.legal_moves())
    return [moves[i : i + 5] for i in range(0, len(moves), 5)]


def playable(position: Game) -> frozenset[int]:
    """The moves whose buttons are enabled: the legal ones (none once the game is over)."""
    return frozenset(position.legal_moves())


def searched(exact: bool, depth: int) -> str:
    """How far a score was searched: ``exact`` (solved) or ``depth 12``."""
    return "exact" if exact else f"depth {depth}"


def line_text(position: Game, moves: Sequence[int]) -> str:
    """A principal variation in the game's notation, e.g. ``4 4 5 3``."""
    return " ".join(position.move_name(m) for m in moves)


# -- embeds ------------------------------------------------------------------------------

COLORS = {"connect4": (0xDD2E44, 0xFDCB58), "tictactoe": (0xDD2E44, 0x3B88C3)}
GREY = 0x99AAB5


def player_label(game: str, session_players: Sequence[str], index: int, level: str | None) -> str:
    """``🔴 <@123>`` or ``🟡 plybot (hard)``."""
    player = session_players[index]
    name = f"plybot ({level})" if player == BOT and level else mention(player)
    return f"{piece(game, index)} {name}"


#: The sides named in words, so that the legend does not rest on an emoji's colour alone
#: (Twemoji's 🟡 is 1.4:1 on the light theme; ❌ and ⭕ are the same red).
SIDES = {"connect4": ("Red", "Yellow"), "tictactoe": ("X", "O")}


def legend(session: GameSession, index: int) -> str:
    """``🔴 Red: <@123>``: a player's piece, side in words, and name (the board's key)."""
    label = player_label(session.game, session.players, index, session.level)
    side = SIDES.get(session.game)
    if side is None:
        return label
    piece_, name = label.split(" ", 1)
    return f"{piece_} {side[index]}: {name}"


def mention(player: str) -> str:
    """How a player id is written in a message: a user mention, or plybot."""
    return "plybot" if player == BOT else f"<@{player}>"


def status_line(session: GameSession) -> str:
    """Whose turn it is (with the move number), or how the game ended."""
    players, level = session.players, session.level

    def label(i: int) -> str:
        return player_label(session.game, players, i, level)

    if session.ongoing:
        mover = session.ply % 2
        doing = "is thinking…" if players[mover] == BOT else "to play"
        return f"Move {session.ply + 1} · {label(mover)} {doing}"
    if session.status is GameStatus.DRAWN:
        return f"Draw after {session.ply} moves."
    winner = session.winner or 0
    if session.status is GameStatus.RESIGNED:
        return f"{label(1 - winner)} resigned after {session.ply} moves: {label(winner)} wins."
    if session.status is GameStatus.FORFEIT:
        return f"{label(1 - winner)} forfeits (no move in time): {label(winner)} wins."
    return f"{label(winner)} wins after {session.ply} moves."


#: The file name of a board picture in its message (the embed points at it).
BOARD_FILE = "board.png"


def board_picture(position: Game) -> bytes | None:
    """The PNG of a board drawn as a picture (Connect Four); ``None`` for the others."""
    if isinstance(position, Connect4):
        return board_png(position)
    return None


def game_embed(session: GameSession, deadline: float | None = None) -> discord.Embed:
    """The board message of a game: players, whose turn (and by when) or the result.

    The board itself is the attached picture (Connect Four), the buttons
    (tic-tac-toe) or a text grid (other games). No engine score is shown: it
    would tell the players who is winning. ``deadline`` (epoch seconds) is when
    the player to move forfeits; shown only while a person is to move.
    """
    position = session.position()
    players = " vs ".join(legend(session, i) for i in (0, 1))
    lines = [players, "", status_line(session)]
    if deadline is not None and session.ongoing and not session.bot_to_move:
        lines.append(f"Move <t:{int(deadline)}:R> or forfeit.")
    picture = board_picture(position)
    if picture is None and not isinstance(position, TicTacToe):
        lines[1:1] = ["", grid(position)]
    color = COLORS.get(session.game, (GREY, GREY))[session.ply % 2] if session.ongoing else GREY
    embed = discord.Embed(title=title(session.game), description="\n".join(lines), color=color)
    if picture is not None:
        embed.set_image(url=f"attachment://{BOARD_FILE}")
    footer = []
    if position.ply:
        last = position.copy()
        move = last.pop()
        footer.append(f"Last move: {move_label(last, move)}")
    footer.append(f"game {session.id}")
    embed.set_footer(text=" · ".join(footer))
    return embed


def challenge_embed(challenge: Challenge, closed: str | None = None) -> discord.Embed:
    """An open challenge (with its expiry), or how it was closed."""
    a, b = mention(challenge.challenger), mention(challenge.opponent)
    lines = [f"{a} challenges {b} to {title(challenge.game)}."]
    side = len(challenge.notation) % 2  # one character per move in both games' notation
    if challenge.notation:
        lines.append(f"Starting from `{challenge.notation}`.")
    mover = f"{piece(challenge.game, side)} {mention(challenge.players[side])}"
    lines.append(f"{mover} moves {'next' if challenge.notation else 'first'}.")
    if closed is None:
        lines.append(f"{b}: accept or decline <t:{int(challenge.expires_at)}:R>.")
        color = COLORS.get(challenge.game, (GREY, GREY))[0]
    else:
        endings = {
            "declined": f"{b} declined.",
            "withdrawn": f"{a} withdrew the challenge.",
            "expired": f"Expired: {b} did not answer in time.",
            "accepted": f"{b} accepted.",
        }
        lines.append(endings.get(closed, closed))
        color = GREY
    embed = discord.Embed(title=f"{title(challenge.game)} challenge", color=color)
    embed.description = "\n".join(lines)
    embed.set_footer(text=f"challenge {challenge.id}")
    return embed


def verdict(position: Game, score: int, exact: bool) -> str:
    """A score in plain words for the side to move: who wins, and in how many of their moves."""
    mover = piece(position.name, position.side_to_move)
    other = piece(position.name, 1 - position.side_to_move)
    if not exact:
        if score == 0:
            return "unclear, looks even"
        return f"unclear, looks better for {mover if score > 0 else other}"
    if score == 0:
        return "a draw with best play"
    distance = moves_to_end(position, score)
    winner = mover if score > 0 else other
    within = "" if distance is None else f" with its {_ordinal(distance)} move from now"
    return f"{winner} wins{within}, with best play"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def analysis_text(position: Game, result: AnalysisResult) -> str:
    """The best move and who wins, each move's score (best first), in plain words.

    No search jargon (nodes, cache): the last line says only whether the answer
    is exact. The line of play is called a beginning unless it reaches the end.
    """
    lines = []
    to_move = piece(position.name, position.side_to_move)
    where = f"`{position.notation()}`" if position.ply else "the start"
    lines.append(f"{title(position.name)} at {where}, {to_move} to move:")
    best = result.best_move or "-"
    lines.append(f"**Best move {best}**: {verdict(position, result.score, result.exact)}.")
    if result.pv:
        end = position.copy()
        for move in result.pv:
            end.push(end.parse_move(move))
        whole = end.outcome() is not None
        lines.append(f"{'Best play' if whole else 'Best play begins'}: {' '.join(result.pv)}")
    if result.moves:
        ranked = sorted(result.moves.items(), key=lambda kv: (-kv[1], int(kv[0])))
        lines.append("Every move: " + ", ".join(f"{m}: {s:+d}" for m, s in ranked))
        lines.append("(+ wins, 0 draws, - loses; the bigger, the sooner)")
    if result.exact:
        lines.append(f"Solved exactly in {_duration(result.time_ms)}.")
    else:
        lines.append(
            f"Not solved: looked {result.depth} moves ahead in {_duration(result.time_ms)}."
        )
    if result.note:
        lines.append(result.note)
    return "\n".join(lines)


def _duration(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def analysis_embed(position: Game, result: AnalysisResult) -> discord.Embed:
    """The analysed board (the picture, when :func:`board_picture` draws one) and the text."""
    pictured = board_picture(position) is not None
    embed = discord.Embed(
        title=f"Analysis · {title(position.name)}",
        description=None if pictured else grid(position),
        color=GREY,
    )
    if pictured:
        embed.set_image(url=f"attachment://{BOARD_FILE}")
    embed.add_field(name="plybot says", value=analysis_text(position, result)[:1024], inline=False)
    return embed


def stats_text(user_id: str, stats: UserStats) -> str:
    """A user's results against plybot per game and level, and ratings between users."""
    lines = [f"{mention(user_id)}"]
    if stats.vs_bot:
        lines.append("**Against plybot** (won / drawn / lost)")
        for game in sorted({g for g, _ in stats.vs_bot}):
            for level in LEVELS:
                r = stats.vs_bot.get((game, level))
                if r:
                    lines.append(f"{title(game)} {level}: {r['win']} / {r['draw']} / {r['loss']}")
    if stats.vs_users:
        lines.append("**Against people** (rating, won / drawn / lost)")
        for game, r in sorted(stats.vs_users.items()):
            rating = stats.ratings.get(game)
            shown = f"{rating:.0f}" if rating is not None else "-"
            lines.append(f"{title(game)}: {shown}, {r['win']} / {r['draw']} / {r['loss']}")
    if len(lines) == 1:
        lines.append("No finished games yet.")
    return "\n".join(lines)


def plural(n: int, noun: str) -> str:
    """``1 game``, ``2 games``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def leaderboard_text(game: str, standings: Sequence[Standing]) -> str:
    if not standings:
        return f"No rated {title(game)} games between people here yet."
    return "\n".join(
        f"{i}. {mention(s.user_id)}: {s.rating:.0f} ({plural(s.games, 'game')})"
        for i, s in enumerate(standings, 1)
    )


HELP = """\
**/connect4** `[opponent] [level] [first] [position]`: play Connect Four against plybot \
(levels easy, medium, hard, perfect), or challenge `opponent`.
**/tictactoe** `[opponent] [level] [first] [position]`: the same for tic-tac-toe.
**/analyze** `game position`: every move's exact score, the best move and its line \
(position: the moves so far, e.g. `4453`).
**/resign**: resign your game in this channel (or withdraw your challenge).
**/stats** `[user]`: results against plybot per level, and the rating between people.
**/leaderboard** `[game]`: the best-rated players here.
Press a column (or cell) button to move. A game without a move for a while is forfeited \
by the player to move."""


def help_embed() -> discord.Embed:
    return discord.Embed(title="plybot", description=HELP, color=GREY)

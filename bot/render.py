"""Boards, analyses and stats as text and embeds: pure functions of their inputs.

Nothing here talks to Redis, Discord or the engine's search; each function maps
a value to what Discord should show, so every picture can be tested as text.

A game's board is drawn once. Connect Four is a picture attached to the embed
(:mod:`bot.picture`: emoji cannot reach 3:1 on both of Discord's themes), with
the column numbers under the columns that the move buttons carry too.
Tic-tac-toe's board is its nine buttons (see :mod:`bot.views`), so the embed
holds no second copy. :func:`grid` (emoji text) remains for analyses of
tic-tac-toe and other games.

Every word comes from :mod:`bot.strings`. A game's board and a challenge are
drawn in the language recorded with them (:func:`table_language`), whoever
pressed the button that redraws them; the other texts take the language they
are to be read in (``lang``, English when not given).
"""

from __future__ import annotations

from collections.abc import Sequence

import discord

from bot.challenges import Challenge
from bot.picture import board_png
from bot.stats import Standing, UserStats
from bot.strings import LANGUAGES, STRINGS, decimal, ordinal, say
from engine.analysis import moves_to_end
from engine.connect4 import Connect4
from engine.game import Game
from engine.tictactoe import _LINES as LINES
from engine.tictactoe import TicTacToe
from worker.core.contract import LEVELS, AnalysisResult
from worker.core.games import BOT, GameSession, GameStatus

KEYCAPS = ("0️⃣", "1️⃣", "2️⃣", "3️⃣", "4️⃣", "5️⃣", "6️⃣", "7️⃣", "8️⃣", "9️⃣")

#: Each player's piece, and the same piece marking the last move, per game.
PIECES: dict[str, tuple[str, str]] = {"connect4": ("🔴", "🟡"), "tictactoe": ("❌", "⭕")}
LAST_PIECES: dict[str, tuple[str, str]] = {"connect4": ("🟥", "🟨")}
EMPTY_HOLE = "⚫"


def piece(game: str, player: int) -> str:
    """The emoji of ``player`` (0 moves first) in ``game``; a neutral dot for other games."""
    return PIECES.get(game, ("⚪", "⚫"))[player]


def title(game: str, lang: str = "en") -> str:
    """The game's display name in ``lang`` (its id for a game without one)."""
    key = f"title_{game}"
    return say(key, lang) if key in STRINGS else game


def table_language(table: GameSession | Challenge) -> str:
    """The language a game's or challenge's messages are drawn in: the one recorded when
    it started (English for records from before languages were recorded)."""
    lang = table.lang if isinstance(table, Challenge) else table.meta.get("lang", "")
    return lang if lang in LANGUAGES else LANGUAGES[0]


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
    """The board as letters in a code block: ``X`` and ``O`` (the last one in brackets),
    free cells by number. Text in the theme's own colours reads on both themes; Twemoji's
    ❌, ⭕ and 🅾️ are the same red, below 3:1 on the dark one."""
    last = position.moves[-1] if position.moves else None
    cells = []
    for cell in range(9):
        owner = occupant(position, cell)
        mark = str(cell + 1) if owner is None else MARKS[owner]
        cells.append(f"({mark})" if cell == last else f" {mark} ")
    rows = ["|".join(cells[r * 3 : r * 3 + 3]) for r in range(3)]
    return "```\n" + "\n---+---+---\n".join(rows) + "\n```"


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


def move_label(position: Game, move: int, lang: str = "en") -> str:
    """How a move is named to people: ``column 4``, ``cell 5``, or the game's notation."""
    if isinstance(position, Connect4):
        return say("column", lang, n=move + 1)
    if isinstance(position, TicTacToe):
        return say("cell", lang, n=move + 1)
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


def searched(exact: bool, depth: int, lang: str = "en") -> str:
    """How far a score was searched: ``exact`` (solved) or ``depth 12``."""
    return say("searched_exact", lang) if exact else say("searched_depth", lang, depth=depth)


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
#: (Twemoji's 🟡 is 1.4:1 on the light theme; ❌ and ⭕ are the same red): keys of
#: :mod:`bot.strings`, or the marks themselves (the same in every language).
SIDES = {"connect4": ("side_red", "side_yellow"), "tictactoe": ("X", "O")}


def legend(session: GameSession, index: int, lang: str = "en") -> str:
    """``🔴 Red: <@123>``: a player's piece, side in words, and name (the board's key)."""
    label = player_label(session.game, session.players, index, session.level)
    side = SIDES.get(session.game)
    if side is None:
        return label
    piece_, name = label.split(" ", 1)
    word = say(side[index], lang) if side[index].startswith("side_") else side[index]
    return say("legend", lang, piece=piece_, side=word, name=name)


def message_link(guild_id: str, channel_id: str, message_id: str) -> str:
    """The link that opens a message in Discord."""
    return f"https://discord.com/channels/{guild_id or '@me'}/{channel_id}/{message_id}"


def mention(player: str) -> str:
    """How a player id is written in a message: a user mention, or plybot."""
    return "plybot" if player == BOT else f"<@{player}>"


#: ``GameSession.meta`` key of a game ended with no result (its value: why, a ``why_*`` key
#: of :mod:`bot.strings` without the prefix); see :meth:`bot.service.DiscordGames.abort`.
ABORTED = "aborted"


def aborted(session: GameSession) -> str | None:
    """Why ``session`` ended with no result (``permissions``, ``no_workers``, ...); ``None``
    if it did not."""
    return session.meta.get(ABORTED) or None


def playing(session: GameSession) -> bool:
    """Whether ``session`` is still being played: ongoing, and not ended with no result."""
    return session.ongoing and aborted(session) is None


def moves_text(n: int, lang: str = "en") -> str:
    """``1 move``, ``5 moves`` in ``lang``."""
    return say("one_move", lang) if n == 1 else say("moves", lang, n=n)


def status_line(session: GameSession) -> str:
    """Whose turn it is (with the move number), or how the game ended, in the game's language."""
    players, level, lang = session.players, session.level, table_language(session)

    def label(i: int) -> str:
        return player_label(session.game, players, i, level)

    why = aborted(session)
    if why is not None:
        return say(
            "status_aborted", lang, moves=moves_text(session.ply, lang), why=say(f"why_{why}", lang)
        )
    if session.ongoing:
        mover = session.ply % 2
        doing = "status_thinking" if players[mover] == BOT else "status_to_play"
        return say(doing, lang, n=session.ply + 1, player=label(mover))
    if session.status is GameStatus.DRAWN:
        return say("status_draw", lang, moves=moves_text(session.ply, lang))
    winner = session.winner or 0
    ended = {GameStatus.RESIGNED: "status_resigned", GameStatus.FORFEIT: "status_forfeit"}
    return say(
        ended.get(session.status, "status_won"),
        lang,
        loser=label(1 - winner),
        winner=label(winner),
        moves=moves_text(session.ply, lang),
    )


#: The file name of a board picture in its message (the embed points at it).
BOARD_FILE = "board.png"


def pictured(position: Game) -> bool:
    """Whether :func:`board_picture` draws ``position`` (Connect Four), without drawing it."""
    return isinstance(position, Connect4)


def board_picture(position: Game) -> bytes | None:
    """The PNG of a board drawn as a picture (Connect Four); ``None`` for the others."""
    if isinstance(position, Connect4):
        return board_png(position)
    return None


def game_embed(
    session: GameSession, position: Game | None = None, deadline: float | None = None
) -> discord.Embed:
    """The board message of a game: players, whose turn (and by when) or the result.

    ``position`` is ``session``'s, got once by the caller for the whole redraw
    (parsed here if not given). The board itself is the attached picture
    (Connect Four, :func:`board_picture`, drawn by the caller), the buttons
    (tic-tac-toe) or a text grid (other games). No engine score is shown: it
    would tell the players who is winning. ``deadline`` (epoch seconds) is when
    the player to move forfeits; shown only while a person is to move. In the
    game's language (:func:`table_language`).
    """
    lang = table_language(session)
    position = session.position() if position is None else position
    players = say("versus", lang, a=legend(session, 0, lang), b=legend(session, 1, lang))
    lines = [players, "", status_line(session)]
    live = playing(session)
    if deadline is not None and live and not session.bot_to_move:
        lines.append(say("move_by", lang, t=int(deadline)))
    picture = pictured(position)
    if not picture and not isinstance(position, TicTacToe):
        lines[1:1] = ["", grid(position)]
    color = COLORS.get(session.game, (GREY, GREY))[session.ply % 2] if live else GREY
    embed = discord.Embed(
        title=title(session.game, lang), description="\n".join(lines), color=color
    )
    if picture:
        embed.set_image(url=f"attachment://{BOARD_FILE}")
    footer = []
    if position.ply:
        last = position.copy()
        move = last.pop()
        footer.append(say("last_move", lang, move=move_label(last, move, lang)))
    footer.append(say("game_footer", lang, id=session.id))
    embed.set_footer(text=" · ".join(footer))
    return embed


#: How a challenge was closed (:data:`bot.challenges.Answer`) -> its line's key.
CLOSED = {
    "declined": "challenge_declined",
    "withdrawn": "challenge_withdrawn",
    "expired": "challenge_expired",
    "accepted": "challenge_accepted",
}


def challenge_embed(challenge: Challenge, closed: str | None = None) -> discord.Embed:
    """An open challenge (with its expiry), or how it was closed, in its language."""
    lang = table_language(challenge)
    a, b = mention(challenge.challenger), mention(challenge.opponent)
    game = title(challenge.game, lang)
    lines = [say("challenge_line", lang, a=a, b=b, game=game)]
    side = len(challenge.notation) % 2  # one character per move in both games' notation
    if challenge.notation:
        lines.append(say("challenge_from", lang, notation=challenge.notation))
    mover = f"{piece(challenge.game, side)} {mention(challenge.players[side])}"
    lines.append(
        say("challenge_next" if challenge.notation else "challenge_first", lang, mover=mover)
    )
    if closed is None:
        lines.append(say("challenge_answer", lang, b=b, t=int(challenge.expires_at)))
        color = COLORS.get(challenge.game, (GREY, GREY))[0]
    else:
        ending = CLOSED.get(closed)
        lines.append(closed if ending is None else say(ending, lang, a=a, b=b))
        color = GREY
    embed = discord.Embed(title=say("challenge_title", lang, game=game), color=color)
    embed.description = "\n".join(lines)
    embed.set_footer(text=say("challenge_footer", lang, id=challenge.id))
    return embed


def side_mark(game: str, player: int) -> str:
    """How an analysis names ``player``'s side: tic-tac-toe's letter (``X``, ``O``: text,
    whose contrast is the theme's), else the game's piece."""
    return MARKS[player] if game == "tictactoe" else piece(game, player)


def verdict(position: Game, score: int, exact: bool, lang: str = "en") -> str:
    """A score in plain words for the side to move: who wins, and in how many of their moves."""
    mover = side_mark(position.name, position.side_to_move)
    other = side_mark(position.name, 1 - position.side_to_move)
    if not exact:
        if score == 0:
            return say("verdict_even", lang)
        return say("verdict_better", lang, side=mover if score > 0 else other)
    if score == 0:
        return say("verdict_draw", lang)
    distance = moves_to_end(position, score)
    winner = mover if score > 0 else other
    if distance is None:
        return say("verdict_wins", lang, winner=winner)
    return say("verdict_wins_at", lang, winner=winner, nth=ordinal(distance, lang))


def analysis_text(position: Game, result: AnalysisResult, lang: str = "en") -> str:
    """The best move and who wins, each move's score (best first), in plain words, in ``lang``.

    No search jargon (nodes, cache): the last line says only whether the answer
    is exact. The line of play is called a beginning unless it reaches the end.
    """
    lines = []
    to_move = side_mark(position.name, position.side_to_move)
    if position.ply:
        where = say("analysis_at", lang, notation=position.notation())
    else:
        where = say("analysis_at_start", lang)
    game = title(position.name, lang)
    lines.append(say("analysis_heading", lang, game=game, where=where, side=to_move))
    told = verdict(position, result.score, result.exact, lang)
    lines.append(say("analysis_best", lang, move=result.best_move or "-", verdict=told))
    if result.pv:
        end = position.copy()
        for move in result.pv:
            end.push(end.parse_move(move))
        whole = end.outcome() is not None
        line = " ".join(result.pv)
        lines.append(
            say("analysis_line_whole" if whole else "analysis_line_begins", lang, line=line)
        )
    if result.moves:
        ranked = sorted(result.moves.items(), key=lambda kv: (-kv[1], int(kv[0])))
        scores = ", ".join(f"{m}: {s:+d}" for m, s in ranked)
        lines.append(say("analysis_every", lang, scores=scores))
        lines.append(say("analysis_key", lang))
    took = _duration(result.time_ms, lang)
    if result.exact:
        lines.append(say("analysis_solved", lang, time=took))
    else:
        lines.append(say("analysis_unsolved", lang, depth=result.depth, time=took))
    if result.note:
        lines.append(result.note)  # the engine's words (English)
    return "\n".join(lines)


def _duration(ms: float, lang: str = "en") -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{decimal(ms / 1000, 1, lang)} s"


def analysis_embed(position: Game, result: AnalysisResult, lang: str = "en") -> discord.Embed:
    """The analysed board (pointing at the picture, when :func:`board_picture` draws one:
    the caller attaches it) and the text."""
    picture = pictured(position)
    embed = discord.Embed(
        title=say("analysis_title", lang, game=title(position.name, lang)),
        description=None if picture else grid(position),
        color=GREY,
    )
    if picture:
        embed.set_image(url=f"attachment://{BOARD_FILE}")
    text = analysis_text(position, result, lang)[:1024]
    embed.add_field(name=say("analysis_field", lang), value=text, inline=False)
    return embed


def stats_text(user_id: str, stats: UserStats, lang: str = "en") -> str:
    """A user's results against plybot per game and level, and ratings between users."""
    lines = [f"{mention(user_id)}"]
    if stats.vs_bot:
        lines.append(say("stats_vs_bot", lang))
        for game in sorted({g for g, _ in stats.vs_bot}):
            for level in LEVELS:
                r = stats.vs_bot.get((game, level))
                if r:
                    counts = f"{r['win']} / {r['draw']} / {r['loss']}"
                    lines.append(f"{title(game, lang)} {level}: {counts}")
    if stats.vs_users:
        lines.append(say("stats_vs_people", lang))
        for game, r in sorted(stats.vs_users.items()):
            rating = stats.ratings.get(game)
            shown = f"{rating:.0f}" if rating is not None else "-"
            lines.append(f"{title(game, lang)}: {shown}, {r['win']} / {r['draw']} / {r['loss']}")
    if len(lines) == 1:
        lines.append(say("stats_none", lang))
    return "\n".join(lines)


def plural(n: int, lang: str = "en") -> str:
    """``1 game``, ``2 games`` in ``lang``."""
    return say("one_game", lang) if n == 1 else say("games", lang, n=n)


def leaderboard_text(game: str, standings: Sequence[Standing], lang: str = "en") -> str:
    if not standings:
        return say("leaderboard_empty", lang, game=title(game, lang))
    return "\n".join(
        say(
            "leaderboard_row",
            lang,
            rank=i,
            who=mention(s.user_id),
            rating=f"{s.rating:.0f}",
            games=plural(s.games, lang),
        )
        for i, s in enumerate(standings, 1)
    )


def help_embed(lang: str = "en") -> discord.Embed:
    return discord.Embed(title="plybot", description=say("help", lang), color=GREY)

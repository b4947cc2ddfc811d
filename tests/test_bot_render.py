"""The bot's pictures as text: boards, buttons, status lines, analyses, stats (no Redis)."""

from __future__ import annotations

import io

from PIL import Image

from bot.challenges import Challenge
from bot.picture import (
    CONTRASTS,
    FRAME,
    HOLE,
    MIN_CONTRAST,
    RIM,
    STONES,
    board_png,
    centre,
    contrast,
    size,
    winning_lines,
)
from bot.render import (
    BOARD_FILE,
    analysis_embed,
    analysis_text,
    board_picture,
    button_rows,
    challenge_embed,
    game_embed,
    grid,
    leaderboard_text,
    stats_text,
    status_line,
)
from bot.stats import Standing, UserStats
from bot.views import GameButton, MoveButton, challenge_view, game_view
from engine.game import new_game
from worker.core.contract import AnalysisResult
from worker.core.games import BOT, BotMove, GameSession


def c4(notation: str) -> str:
    return grid(new_game("connect4", notation))


def pixel(png: bytes, xy: tuple[int, int]) -> tuple[int, int, int]:
    return Image.open(io.BytesIO(png)).convert("RGB").getpixel(xy)  # type: ignore[return-value]


def test_every_colour_of_the_board_picture_reaches_3_to_1_where_it_must_be_seen() -> None:
    figures = {name: contrast(a, b) for name, (a, b) in CONTRASTS.items()}
    assert all(f >= MIN_CONTRAST for f in figures.values()), figures
    # The frame against each of Discord's four backgrounds, dark and light themes.
    assert {n for n in figures if n.startswith("frame on the")} == {
        f"frame on the {t}" for t in ("dark embed", "dark background", "light embed",
                                      "light background")
    }  # fmt: skip
    # The contrast formula itself: black on white is 21:1, a colour on itself 1:1.
    assert round(contrast((0, 0, 0), (255, 255, 255)), 2) == 21.0
    assert contrast(FRAME, FRAME) == 1.0


def test_board_picture_draws_stones_holes_and_the_last_move_where_they_are() -> None:
    position = new_game("connect4", "4453")
    png = board_png(position)
    assert Image.open(io.BytesIO(png)).size == size(position)
    assert pixel(png, centre(position, 0, 0)) == HOLE
    x, y = centre(position, 3, 0)  # column 4, bottom: red
    assert pixel(png, (x + 12, y)) == STONES[0]
    assert pixel(png, (x + 12, y - 64)) == STONES[1]  # yellow on top of it
    last = centre(position, 2, 0)  # yellow's last stone in column 3 carries a dot
    assert pixel(png, last) == RIM
    assert pixel(png, centre(position, 4, 0)) == STONES[0]  # no dot on older stones
    assert winning_lines(position) == []


def test_board_picture_joins_the_winning_four() -> None:
    position = new_game("connect4", "4455667")  # red along the bottom, columns 4 to 7
    assert winning_lines(position) == [[(3, 0), (4, 0), (5, 0), (6, 0)]]
    png = board_png(position)
    for column in range(3, 7):  # the stroke runs through every winning stone's centre
        assert pixel(png, centre(position, column, 0)) == RIM
    vertical = new_game("connect4", "1212121")
    assert winning_lines(vertical) == [[(0, 0), (0, 1), (0, 2), (0, 3)]]


def test_a_drop_that_makes_two_fours_strokes_both() -> None:
    # Yellow's last stone, column 4 fourth from the bottom, completes column 4 and the
    # diagonal from column 1's bottom stone at once.
    position = new_game("connect4", "21676276363664231433317474")
    column_four = [(3, 0), (3, 1), (3, 2), (3, 3)]
    diagonal = [(0, 0), (1, 1), (2, 2), (3, 3)]
    assert winning_lines(position) == [column_four, diagonal]
    png = board_png(position)
    for cell in (*column_four, *diagonal):  # each stroke runs through its stones' centres
        assert pixel(png, centre(position, *cell)) == RIM
    # ...and between them: halfway along each line, the stroke, not the frame.
    for a, b in ((column_four[0], column_four[1]), (diagonal[0], diagonal[1])):
        (xa, ya), (xb, yb) = centre(position, *a), centre(position, *b)
        assert pixel(png, ((xa + xb) // 2, (ya + yb) // 2)) == RIM


def test_connect4_embed_shows_the_picture_and_no_emoji_grid() -> None:
    s = GameSession.start("connect4", ("111", "222"), notation="445")
    embed = game_embed(s, deadline=2000.0)
    assert embed.image.url == f"attachment://{BOARD_FILE}"
    assert embed.description == (
        "🔴 Red: <@111> vs 🟡 Yellow: <@222>\n\n"
        "Move 4 · 🟡 <@222> to play\nMove <t:2000:R> or forfeit."
    )
    assert board_picture(s.position()) is not None


def test_tictactoe_is_drawn_once_by_its_buttons() -> None:
    s = GameSession.start("tictactoe", ("111", "222"), notation="519")
    embed = game_embed(s)
    assert embed.image.url is None
    assert embed.description == "❌ X: <@111> vs ⭕ O: <@222>\n\nMove 4 · ⭕ <@222> to play"
    view = game_view(s)
    shown = [(c.item.label, c.item.style.name) for c in view.children if isinstance(c, MoveButton)]
    assert shown == [
        ("O", "danger"), ("2", "secondary"), ("3", "secondary"),
        ("4", "secondary"), ("X", "primary"), ("6", "secondary"),
        ("7", "secondary"), ("8", "secondary"), ("(X)", "primary"),
    ]  # fmt: skip
    # Once won, the same board stays: free cells disabled, the winning three in green.
    won = GameSession.start("tictactoe", ("111", "222"), notation="14253")
    final = [c.item for c in game_view(won).children if isinstance(c, MoveButton)]
    assert [b.disabled for b in final] == [False] * 5 + [True] * 4  # marks never dimmed
    assert [b.style.name == "success" for b in final] == [
        True, True, True, False, False, False, False, False, False
    ]  # fmt: skip
    assert final[2].label == "(X)"
    assert final[0].label == "X"
    assert final[3].label == "O"


def test_seven_columns_make_two_rows_of_buttons_then_resign_and_full_columns_are_disabled() -> None:
    position = new_game("connect4", "")
    assert button_rows(position) == [[0, 1, 2, 3], [4, 5, 6]]
    session = GameSession.start("connect4", ("111", BOT), level="hard", notation="444444")
    view = game_view(session)
    buttons = [child for child in view.children if isinstance(child, MoveButton)]
    assert [b.item.label for b in buttons] == ["1", "2", "3", "4", "5", "6", "7"]
    assert [b.item.row for b in buttons] == [0, 0, 0, 0, 1, 1, 1]
    assert [b.item.disabled for b in buttons] == [False, False, False, True, False, False, False]
    assert buttons[2].item.custom_id == f"plybot:mv:{session.id}:6:2"
    others = [c for c in view.children if isinstance(c, GameButton)]
    assert [(b.item.label, b.item.row, b.item.custom_id) for b in others] == [
        ("Resign", 2, f"plybot:resign:{session.id}")
    ]


def test_moves_are_disabled_while_the_bot_thinks_and_a_finished_game_offers_a_rematch() -> None:
    thinking = GameSession.start("connect4", ("111", BOT), level="easy", notation="4")
    view = game_view(thinking)
    assert all(c.item.disabled for c in view.children if isinstance(c, MoveButton))
    over = GameSession.start("connect4", ("111", "222"), notation="1212121")
    assert [c.item.label for c in game_view(over).children] == ["Rematch"]


def test_status_line_says_whose_turn_with_the_move_number_and_how_games_end() -> None:
    s = GameSession.start("connect4", ("111", BOT), level="hard", notation="44")
    assert status_line(s) == "Move 3 · 🔴 <@111> to play"
    s = s.play("111", "5")
    assert status_line(s) == "Move 4 · 🟡 plybot (hard) is thinking…"
    assert status_line(s.resign("111")) == (
        "🔴 <@111> resigned after 3 moves: 🟡 plybot (hard) wins."
    )
    won = GameSession.start("connect4", ("111", "222"), notation="1212121")
    assert status_line(won) == "🔴 <@111> wins after 7 moves."
    assert status_line(GameSession.start("connect4", ("111", "222")).forfeit("111")) == (
        "🔴 <@111> forfeits (no move in time): 🟡 <@222> wins."
    )


def test_game_embed_footer_never_gives_the_engines_score() -> None:
    s = GameSession.start("connect4", ("111", BOT), level="hard", notation="44")
    s = s.play("111", "5").expect_bot("job-1")
    s = s.play_bot("job-1", BotMove(move="3", ply=3, score=-2, exact=False, depth=14))
    assert game_embed(s).footer.text == f"Last move: column 3 · game {s.id}"


def test_challenge_embed_open_and_closed() -> None:
    ch = Challenge.new(
        expiry_s=60,
        now=1000.0,
        game="tictactoe",
        variant="3x3",
        challenger="111",
        opponent="222",
        challenger_first=False,
        guild_id="1",
        channel_id="2",
    )
    assert challenge_embed(ch).description == (
        "<@111> challenges <@222> to Tic-tac-toe.\n❌ <@222> moves first.\n"
        "<@222>: accept or decline <t:1060:R>."
    )
    assert challenge_embed(ch, "declined").description.endswith("<@222> declined.")
    assert [c.item.custom_id for c in challenge_view(ch).children] == [
        f"plybot:ch:{ch.id}:accept",
        f"plybot:ch:{ch.id}:decline",
    ]


def test_analysis_text_lists_every_move_best_first() -> None:
    position = new_game("connect4", "4453")
    result = AnalysisResult(
        best_move="3",
        score=2,
        exact=True,
        pv=["3", "3", "2"],
        moves={"1": -3, "2": 0, "3": 2, "4": 1, "5": -1, "6": -2, "7": -3},
        depth=38,
        nodes=1234,
        time_ms=12.0,
        cache="miss",
        worker="w1",
    )
    assert analysis_text(position, result).splitlines() == [
        "Connect Four at `4453`, 🔴 to move:",
        "**Best move 3**: 🔴 wins with its 18th move from now, with best play.",
        "Best play begins: 3 3 2",
        "Every move: 3: +2, 4: +1, 2: +0, 5: -1, 6: -2, 1: -3, 7: -3",
        "(+ wins, 0 draws, - loses; the bigger, the sooner)",
        "Solved exactly in 12 ms.",
    ]
    text = analysis_text(position, result)
    assert "nodes" not in text
    assert "cache" not in text
    lost = result.model_copy(update={"score": -1, "best_move": "5", "pv": ["5"], "exact": False})
    assert analysis_text(position, lost).splitlines()[1] == (
        "**Best move 5**: unclear, looks better for 🟡."
    )


def test_tictactoe_analyses_name_the_marks_in_letters_not_low_contrast_emoji() -> None:
    # Twemoji's ❌, ⭕ and 🅾️ are one red, 2.7:1 on the dark theme: the marks are letters,
    # text in the theme's own colours (the last one in brackets, free cells by number).
    position = new_game("tictactoe", "519")
    result = AnalysisResult(
        best_move="3",
        score=0,
        exact=True,
        pv=["3"],
        moves={"2": 0, "3": 0, "4": 0},
        depth=6,
        nodes=10,
        time_ms=1.0,
        cache="miss",
        worker="w1",
    )
    embed = analysis_embed(position, result)
    assert embed.description == (
        "```\n O | 2 | 3 \n---+---+---\n 4 | X | 6 \n---+---+---\n 7 | 8 |(X)\n```"
    )
    assert embed.image.url is None  # no picture: the grid is the board
    text = f"{embed.description}\n{embed.fields[0].value}"
    assert text.splitlines()[7] == "Tic-tac-toe at `519`, O to move:"
    for emoji in ("❌", "⭕", "🅾", "❎"):
        assert emoji not in text


def test_one_move_is_said_in_the_singular() -> None:
    one = GameSession.start("tictactoe", ("111", "222"), notation="5")
    assert status_line(one.resign("222")) == "⭕ <@222> resigned after 1 move: ❌ <@111> wins."
    fr = one.model_copy(update={"meta": {"lang": "fr"}})
    assert status_line(fr.resign("222")) == ("⭕ <@222> abandonne après 1 coup : ❌ <@111> gagne.")


def test_stats_and_leaderboard_text() -> None:
    stats = UserStats(
        "111",
        vs_bot={("connect4", "hard"): {"win": 1, "draw": 2, "loss": 3}},
        vs_users={"connect4": {"win": 4, "draw": 0, "loss": 1}},
        ratings={"connect4": 1234.4},
    )
    assert stats_text("111", stats).splitlines() == [
        "<@111>",
        "**Against plybot** (won / drawn / lost)",
        "Connect Four hard: 1 / 2 / 3",
        "**Against people** (rating, won / drawn / lost)",
        "Connect Four: 1234, 4 / 0 / 1",
    ]
    assert stats_text("9", UserStats("9", {}, {}, {})).endswith("No finished games yet.")
    assert leaderboard_text("connect4", [Standing("1", 1216.0, 1), Standing("2", 1184.0, 2)]) == (
        "1. <@1>: 1216 (1 game)\n2. <@2>: 1184 (2 games)"
    )


def test_every_reply_exists_in_every_language_with_the_same_blanks() -> None:
    import string

    from bot.strings import LANGUAGES, STRINGS, language, say

    for key, texts in STRINGS.items():
        assert set(texts) == set(LANGUAGES), key
        blanks = [{f for _, f, _, _ in string.Formatter().parse(t) if f} for t in texts.values()]
        assert all(b == blanks[0] for b in blanks), key
    assert language("fr") == "fr"
    assert language("en-GB") == "en"
    assert language("ja") == "en"
    assert say("game_over", "fr") == "Cette partie est terminée."
    assert say("game_over", "ja") == "This game is over."  # not shipped: English


def test_every_key_the_bot_says_is_in_the_table() -> None:
    """Every literal key of ``say``, ``notice`` and ``_t`` in bot/ is in STRINGS."""
    import re
    from pathlib import Path

    from bot.strings import STRINGS

    root = Path(__file__).resolve().parent.parent / "bot"
    said: set[str] = set()
    for source in root.glob("*.py"):
        text = source.read_text()
        said |= set(re.findall(r'(?:say|_t|notice)\(\s*"(\w+)"', text))
    assert said, sorted(said - set(STRINGS))
    assert said <= set(STRINGS), sorted(said - set(STRINGS))
    # Keys made from a value: every value they can take.
    for game in ("connect4", "tictactoe"):
        assert f"title_{game}" in STRINGS
    assert {"language_en", "language_fr", "only_accept", "only_answer"} <= set(STRINGS)


def test_a_game_and_a_challenge_are_drawn_in_the_language_they_started_in() -> None:
    from bot.service import result_text

    s = GameSession.start("connect4", ("111", BOT), level="hard", notation="44",
                          meta={"lang": "fr"})  # fmt: skip
    embed = game_embed(s, deadline=2000.0)
    assert embed.title == "Puissance 4"
    assert embed.description == (
        "🔴 Rouge : <@111> contre 🟡 Jaune : plybot (hard)\n\n"
        "Coup 3 · à 🔴 <@111> de jouer\nJouez <t:2000:R> ou perdez par forfait."
    )
    assert embed.footer.text == f"Dernier coup : colonne 4 · partie {s.id}"
    assert [c.item.label for c in game_view(s).children if isinstance(c, GameButton)] == [
        "Abandonner"
    ]
    over = s.resign("111")
    assert status_line(over) == "🔴 <@111> abandonne après 2 coups : 🟡 plybot (hard) gagne."
    assert result_text(over) == "Puissance 4 : <@111> abandonne ; plybot (hard) gagne."
    assert [c.item.label for c in game_view(over).children] == ["Revanche"]
    # A record from before languages were kept is drawn in English.
    assert game_embed(s.model_copy(update={"meta": {}})).title == "Connect Four"

    ch = Challenge.new(expiry_s=60, now=1000.0, game="tictactoe", variant="3x3",
                       notation="5", challenger="111", opponent="222", guild_id="1",
                       channel_id="2", lang="fr")  # fmt: skip
    assert challenge_embed(ch).title == "Défi : Morpion"
    assert challenge_embed(ch).description == (
        "<@111> lance un défi à <@222> : Morpion.\nLa partie part de la position `5`.\n"
        "⭕ <@222> joue le coup suivant.\n<@222> : acceptez ou refusez <t:1060:R>."
    )
    assert challenge_embed(ch, "expired").description.endswith(
        "Expiré : <@222> n'a pas répondu à temps."
    )
    assert [c.item.label for c in challenge_view(ch).children] == ["Accepter", "Refuser"]


def test_analyses_stats_and_leaderboards_in_french() -> None:
    position = new_game("connect4", "4453")
    result = AnalysisResult(
        best_move="3", score=2, exact=True, pv=["3", "3", "2"], moves={"3": 2, "4": 1},
        depth=38, nodes=1234, time_ms=1520.0, cache="miss", worker="w1",
    )  # fmt: skip
    assert analysis_text(position, result, "fr").splitlines() == [
        "Puissance 4, position `4453`, 🔴 au trait :",
        "**Meilleur coup 3** : 🔴 gagne à son 18e coup à partir d'ici, avec le meilleur jeu.",
        "Le meilleur jeu commence par : 3 3 2",
        "Chaque coup : 3: +2, 4: +1",
        "(+ gagne, 0 nul, - perd ; plus le nombre est grand, plus c'est rapide)",
        "Résolu exactement en 1,5 s.",
    ]
    unsure = result.model_copy(update={"exact": False, "score": 0, "depth": 12})
    assert analysis_text(position, unsure, "fr").splitlines()[1:2] == [
        "**Meilleur coup 3** : incertain, semble équilibré."
    ]
    assert analysis_text(position, unsure, "fr").splitlines()[-1] == (
        "Non résolu : 12 coups examinés à l'avance en 1,5 s."
    )
    stats = UserStats("111", vs_bot={("tictactoe", "easy"): {"win": 1, "draw": 0, "loss": 0}},
                      vs_users={}, ratings={})  # fmt: skip
    assert stats_text("111", stats, "fr").splitlines() == [
        "<@111>",
        "**Contre plybot** (gagnées / nulles / perdues)",
        "Morpion easy: 1 / 0 / 0",
    ]
    assert stats_text("9", UserStats("9", {}, {}, {}), "fr").endswith(
        "Aucune partie terminée pour l'instant."
    )
    standings = [Standing("1", 1216.0, 1), Standing("2", 1184.0, 2)]
    assert leaderboard_text("connect4", standings, "fr") == (
        "1. <@1> : 1216 (1 partie)\n2. <@2> : 1184 (2 parties)"
    )
    assert leaderboard_text("tictactoe", [], "fr") == (
        "Pas encore de partie classée entre membres ici (Morpion)."
    )

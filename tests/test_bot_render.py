"""The bot's pictures as text: boards, buttons, status lines, analyses, stats (no Redis)."""

from __future__ import annotations

from bot.challenges import Challenge
from bot.render import (
    analysis_text,
    button_rows,
    challenge_embed,
    game_embed,
    grid,
    leaderboard_text,
    stats_text,
    status_line,
)
from bot.stats import Standing, UserStats
from bot.views import MoveButton, challenge_view, game_view
from engine.game import new_game
from worker.contract import AnalysisResult
from worker.games import BOT, BotMove, GameSession


def c4(notation: str) -> str:
    return grid(new_game("connect4", notation))


def test_empty_connect4_grid_is_six_rows_of_holes_over_the_column_numbers() -> None:
    assert c4("") == "\n".join(["⚫" * 7] * 6 + ["1️⃣2️⃣3️⃣4️⃣5️⃣6️⃣7️⃣"])


def test_connect4_grid_draws_stones_bottom_up_and_marks_the_last_one() -> None:
    # 4, 4, 5: red in column 4, yellow on top of it, red's last stone in column 5.
    assert c4("445").splitlines()[3:6] == [
        "⚫⚫⚫⚫⚫⚫⚫",
        "⚫⚫⚫🟡⚫⚫⚫",
        "⚫⚫⚫🔴🟥⚫⚫",
    ]
    # Yellow moved last: its stone is the square one, red's are round again.
    assert c4("4454").splitlines()[3:6] == [
        "⚫⚫⚫🟨⚫⚫⚫",
        "⚫⚫⚫🟡⚫⚫⚫",
        "⚫⚫⚫🔴🔴⚫⚫",
    ]


def test_tictactoe_grid_shows_free_cells_as_their_number_and_boxes_the_last_mark() -> None:
    assert grid(new_game("tictactoe", "519")) == "⭕2️⃣3️⃣\n4️⃣❌6️⃣\n7️⃣8️⃣❎"


def test_seven_columns_make_two_rows_of_buttons_and_full_columns_are_disabled() -> None:
    position = new_game("connect4", "")
    assert button_rows(position) == [[0, 1, 2, 3], [4, 5, 6]]
    session = GameSession.start("connect4", ("111", BOT), level="hard", notation="444444")
    view = game_view(session)
    assert view is not None
    buttons = [child for child in view.children if isinstance(child, MoveButton)]
    assert [b.item.label for b in buttons] == ["1", "2", "3", "4", "5", "6", "7"]
    assert [b.item.row for b in buttons] == [0, 0, 0, 0, 1, 1, 1]
    assert [b.item.disabled for b in buttons] == [False, False, False, True, False, False, False]
    assert buttons[2].item.custom_id == f"plybot:mv:{session.id}:6:2"


def test_all_buttons_are_disabled_while_the_bot_thinks_and_gone_when_the_game_is_over() -> None:
    thinking = GameSession.start("connect4", ("111", BOT), level="easy", notation="4")
    view = game_view(thinking)
    assert view is not None and all(child.item.disabled for child in view.children)
    over = GameSession.start("tictactoe", ("111", "222"), notation="14253")
    assert not over.ongoing
    assert game_view(over) is None


def test_tictactoe_buttons_are_the_board() -> None:
    session = GameSession.start("tictactoe", ("111", "222"), notation="51")
    view = game_view(session)
    assert view is not None
    shown = [(c.item.label, str(c.item.emoji) if c.item.emoji else None) for c in view.children]
    assert shown[0] == (None, "⭕") and shown[4] == (None, "❌") and shown[8] == ("9", None)
    assert [c.item.disabled for c in view.children] == [
        True, False, False, False, True, False, False, False, False
    ]  # fmt: skip


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


def test_game_embed_has_players_grid_status_and_last_move() -> None:
    s = GameSession.start("connect4", ("111", "222"), notation="445")
    embed = game_embed(s)
    assert embed.title == "Connect Four"
    assert embed.description == (
        "🔴 <@111> vs 🟡 <@222>\n\n" + c4("445") + "\n\nMove 4 · 🟡 <@222> to play"
    )
    assert embed.footer.text == f"Last move: column 5 · game {s.id}"


def test_game_embed_footer_gives_the_score_of_the_bots_last_move() -> None:
    s = GameSession.start("connect4", ("111", BOT), level="hard", notation="44")
    s = s.play("111", "5").expect_bot("job-1")
    s = s.play_bot("job-1", BotMove(move="3", ply=3, score=-2, exact=False, depth=14))
    assert game_embed(s).footer.text == (
        f"Last move: column 3 · plybot's score -2 (depth 14) · game {s.id}"
    )
    s = s.play("111", "6").expect_bot("job-2")
    s = s.play_bot("job-2", BotMove(move="2", ply=5, score=1, exact=True, depth=37))
    assert "plybot's score +1 (exact)" in game_embed(s).footer.text
    # Once the human has moved again, the bot's score is no longer the last move's.
    assert "score" not in game_embed(s.play("111", "1")).footer.text


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
        "**Best move 3**: +2: win in 18",
        "Line: 3 3 2",
        "Every move: 3: +2, 4: +1, 2: +0, 5: -1, 6: -2, 1: -3, 7: -3",
        "exact · 1,234 nodes · 12 ms · cache miss",
    ]


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
    assert leaderboard_text("connect4", [Standing("1", 1216.0, 1), Standing("2", 1184.0, 1)]) == (
        "1. <@1>: 1216 (1 games)\n2. <@2>: 1184 (1 games)"
    )

"""The web page in a real headless Chromium, against the real service (API under
uvicorn, redis-server, RQ workers) that the fixtures start.

Every figure the page shows is checked against the engine: the final position of
a game clicked to its end, the exact score of every column of a benchmark
position, and the wording "win in N" derived from the score. Screenshots go to
``artifacts/screenshots/``.
"""

from __future__ import annotations

import json
import random
import re
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import redis
from selenium.webdriver.common.keys import Keys

from engine.connect4 import Connect4
from engine.game import Game, new_game
from tests.fixtures.api import ApiServer, api_server_on
from tests.fixtures.browser import PHONE, Browser
from worker.redis_server import RedisServer

pytestmark = [pytest.mark.browser, pytest.mark.service]

#: A late position (28 moves of a drawn game): it solves at once, so the tests that
#: only need some board do not keep the workers busy with an opening's long solve.
LATE = "1563666434223654157351254442"

# How the page shows a game's result (api/static/app.js, Player.describe).
ANNOUNCED = {"human": "You win", "bot": "plybot wins", None: "Draw"}


# -- helpers -----------------------------------------------------------------------------


def open_page(browser: Browser, url: str) -> None:
    """Load ``url`` fresh (not just a hash change) and wait for the app to start."""
    browser.driver.get("about:blank")
    browser.driver.get(url)
    browser.wait(lambda d: d.execute_script("return !!window.plybot"), message="app did not start")


def board_cells(browser: Browser, view: str) -> list[list[int | None]]:
    """The stones drawn on a view's board: rows top to bottom, 0/1/None per cell."""
    return browser.js(
        """
        const board = document.querySelector(arguments[0] + ' .board');
        const cols = Number(getComputedStyle(board).getPropertyValue('--cols'));
        const cells = [...board.querySelectorAll('[role=gridcell]')].map((c) => {
          const s = c.querySelector('.disc, .mark');
          return s.classList.contains('p0') ? 0 : s.classList.contains('p1') ? 1 : null;
        });
        const rows = [];
        for (let i = 0; i < cells.length; i += cols) rows.push(cells.slice(i, i + cols));
        return rows;
        """,
        f"#{view}-board",
    )


def engine_cells(game_name: str, notation: str) -> list[list[int | None]]:
    """The same picture from the engine's own position."""
    position = new_game(game_name, notation)
    if isinstance(position, Connect4):
        return [
            [position.cell(col, row) for col in range(position.width)]
            for row in range(position.height - 1, -1, -1)
        ]
    cells: list[int | None] = []
    for i in range(9):
        if position.boards[0] >> i & 1:
            cells.append(0)
        elif position.boards[1] >> i & 1:
            cells.append(1)
        else:
            cells.append(None)
    return [cells[r * 3 : r * 3 + 3] for r in range(3)]


def score_words(position: Game, score: int) -> str:
    """The words the page must show for ``score`` (from the side to move), with the
    engine's own distance (``engine.analysis.moves_to_end``), as the CLI shows it."""
    from engine.analysis import moves_to_end

    if score == 0:
        return "draw"
    return f"{'win' if score > 0 else 'loss'} in {moves_to_end(position, score)}"


def ordinal(n: int) -> str:
    suffix = "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def api_json(base: str, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        base + path, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def wait_analysed(browser: Browser, timeout: float = 60.0) -> dict:
    """Wait until the analysis view shows a result; return it (the page's copy)."""
    return browser.wait(
        lambda d: d.execute_script(
            "const a = window.plybot.analyser; return a.results.get(a.key()) || null;"
        ),
        timeout,
        message="the analysis never showed a result",
    )


def chip_scores(browser: Browser) -> dict[int, tuple[int, str, str]]:
    """Column (1-based) -> (score, words shown, colour class) of each scored chip."""
    chips = browser.js(
        """
        return [...document.querySelectorAll('#analyse-board .scores .chip')].map((c, i) => ({
          move: i + 1, score: c.dataset.score, words: c.innerText.replace(/\\s+/g, ' ').trim(),
          kind: ['win', 'draw', 'loss', 'eval'].find((k) => c.classList.contains(k)) || ''}));
        """
    )
    return {
        c["move"]: (int(c["score"]), c["words"].lower(), c["kind"])
        for c in chips
        if c["score"] is not None
    }


def chip_scores_cells(browser: Browser) -> dict[int, int]:
    """Tic-tac-toe: cell (1-based) -> the score shown on it."""
    return {
        int(c["move"]) + 1: int(c["score"])
        for c in browser.js(
            "return [...document.querySelectorAll('#analyse-board .cellbtn')]"
            ".map((b) => ({move: b.dataset.move, score: b.querySelector('.chip').dataset.score}))"
        )
        if c["score"] is not None
    }


# -- tests -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(api_server: ApiServer, workers: object) -> str:
    """The page's address: the API (with this module's workers behind it) serves it at ``/``."""
    return api_server.url


@pytest.fixture(scope="module")
def benchmark_position(benchmarks_dir: Path) -> tuple[str, int]:
    """A middle-game benchmark position with at least five playable columns."""
    from engine.bench import load_set

    for notation, score in load_set("Test_L2_R1", limit=50):
        if len(Connect4.parse(notation).legal_moves()) >= 5:
            return notation, score
    raise AssertionError("no benchmark position with five playable columns")


def test_the_pages_rules_agree_with_the_engine(browser: Browser, site: str) -> None:
    """The page draws boards and refuses moves with its own copy of the rules
    (api/static/rules.js): on random move strings, legal or not, it must give the
    engine's board, winner and error message."""
    rng = random.Random(20241122)
    cases: list[tuple[str, str]] = [
        ("connect4", "156366643422365415735125444215362321717777"),  # a full board: drawn
        ("connect4", "1566666" + "4"),  # column 6 full, then more
        ("connect4", "44a"),
        ("tictactoe", "5x"),
        ("tictactoe", "123456789"),
    ]
    for game, digits, longest in (
        ("connect4", "012345678", 44),
        ("connect4", "3445", 14),  # few columns: they fill up
        ("tictactoe", "0123456789", 10),
    ):
        for _ in range(100):
            length = rng.randint(0, longest)
            if rng.random() < 0.5:  # a random playout: mostly legal, often won
                position = new_game(game)
                moves = []
                while len(moves) < length and position.outcome() is None:
                    move = rng.choice(position.legal_moves())
                    position.push(move)
                    moves.append(position.move_name(move))
                cases.append((game, "".join(moves)))
            else:
                cases.append((game, "".join(rng.choice(digits) for _ in range(length))))

    open_page(browser, site + "/#/play")
    shown = browser.driver.execute_async_script(
        """
        const [cases, done] = arguments;
        import('/rules.js').then(({ GAMES, Position, describeScore }) => done(
          cases.map(([game, text]) => {
            try {
              const p = Position.parse(GAMES[game], text);
              const top = game === 'connect4' ? 18 : 3;
              const words = [];
              for (let s = -top; s <= top; s++) words.push(describeScore(p.game, p.ply, s).text);
              return { cells: p.cells, winner: p.winner, over: p.over, words };
            } catch (err) {
              return { error: err.message };
            }
          })));
        """,
        cases,
    )
    for (game, text), page in zip(cases, shown, strict=True):
        try:
            position = new_game(game, text)
        except ValueError as exc:
            assert page == {"error": str(exc)}, (game, text)
            continue
        outcome = position.outcome()
        cells = [c for row in engine_cells(game, text) for c in row]
        top = position.max_score()
        assert page == {
            "cells": cells,
            "winner": None if outcome is None else outcome.winner,
            "over": outcome is not None,
            "words": [score_words(position, s) for s in range(-top, top + 1)],
        }, (game, text)


def new_game_in_page(browser: Browser, game: str, level: str, first: str | None = None) -> None:
    """Start a game in the play view (``first``: "human" or "bot"; None keeps the form's)."""
    browser.driver.find_element("css selector", f"#play-game option[value={game}]").click()
    browser.driver.find_element("css selector", f"#play-level option[value={level}]").click()
    if first is not None:
        browser.driver.find_element("css selector", f"input[name=first][value={first}]").click()
    browser.driver.find_element("id", "play-new").click()


def test_a_game_clicked_to_its_end_against_the_bot(browser: Browser, site: str) -> None:
    """Connect Four against plybot (perfect): the person stacks column 1 (then the
    next free column), by clicking and by the keyboard, until the game ends; the
    announced result is the engine's verdict on the final position."""
    open_page(browser, site + "/#/play")
    new_game_in_page(browser, "connect4", "perfect", "human")

    status = browser.driver.find_element("id", "play-status")
    for turn in range(21):
        browser.wait(
            lambda d: status.text.startswith(("Your move", "You win", "plybot wins", "Draw")),
            timeout=60,
            message=f"no reply from the bot (status: {status.text!r})",
        )
        if not status.text.startswith("Your move"):
            break
        if turn == 1:
            browser.screenshot("playing")
        state = browser.js("return window.plybot.player.session")
        column = int(state["legal_moves"][0])  # the leftmost playable column
        if turn % 2:
            browser.driver.find_element("css selector", "body").send_keys(str(column))
        else:
            browser.driver.find_element("css selector", f".drop[data-move='{column - 1}']").click()
    else:
        pytest.fail("the game did not end within 21 of the person's moves")

    state = browser.js("return window.plybot.player.session")
    final = new_game("connect4", state["position"])
    outcome = final.outcome()
    assert outcome is not None, f"the page announced {status.text!r} in an unfinished game"
    winner = None if outcome.winner is None else ("human" if outcome.winner == 0 else "bot")
    assert status.text.startswith(ANNOUNCED[winner])
    # The server agrees, and the board drawn is the engine's final position.
    code, game = api_json(site, "GET", f"/v1/games/{state['id']}")
    assert code == 200 and game["status"] != "ongoing" and game["winner"] == winner
    assert board_cells(browser, "play") == engine_cells("connect4", state["position"])
    if winner is not None:
        assert len(browser.driver.find_elements("css selector", "#play-board .cell.win")) >= 4
    browser.screenshot("game-over")
    assert browser.errors() == []


def test_a_tictactoe_game_played_with_the_keyboard(browser: Browser, site: str) -> None:
    """Tic-tac-toe, plybot moving first; every move by the digit keys 1-9."""
    open_page(browser, site + "/#/play")
    new_game_in_page(browser, "tictactoe", "perfect", "bot")
    status = browser.driver.find_element("id", "play-status")
    body = browser.driver.find_element("css selector", "body")
    for _ in range(5):
        browser.wait(
            lambda d: status.text.startswith(("Your move", "You win", "plybot wins", "Draw")),
            timeout=60,
        )
        if not status.text.startswith("Your move"):
            break
        state = browser.js("return window.plybot.player.session")
        body.send_keys(state["legal_moves"][0])
    state = browser.js("return window.plybot.player.session")
    outcome = new_game("tictactoe", state["position"]).outcome()
    assert outcome is not None
    # plybot moved first: it is player 0.
    winner = None if outcome.winner is None else ("bot" if outcome.winner == 0 else "human")
    assert status.text.startswith(ANNOUNCED[winner])
    assert board_cells(browser, "play") == engine_cells("tictactoe", state["position"])
    browser.screenshot("tictactoe")
    assert browser.errors() == []


def test_analysis_shows_the_exact_score_of_every_column(
    browser: Browser, site: str, benchmark_position: tuple[str, int]
) -> None:
    """A benchmark position: the best column scores the file's score, every column
    the engine solver's exact score, in words derived from the score, coloured;
    the figures arrived live over the event stream."""
    from engine.solver import Solver

    notation, score = benchmark_position
    open_page(browser, f"{site}/#/analyse/connect4/{notation}")
    result = wait_analysed(browser)
    assert result["exact"] and result["score"] == score

    position = Connect4.parse(notation)
    expected = Solver().analyze(position).moves
    assert expected is not None
    shown = chip_scores(browser)
    assert {col: s for col, (s, _, _) in shown.items()} == {c + 1: s for c, s in expected.items()}
    assert max(s for s, _, _ in shown.values()) == score
    for _col, (s, words, kind) in shown.items():
        assert words == score_words(position, s)
        assert kind == ("win" if s > 0 else "loss" if s < 0 else "draw")
    best = browser.js(
        "return [...document.querySelectorAll('#analyse-board .chip.best')]"
        ".map((c) => Number(c.dataset.move) + 1)"
    )
    assert best and all(shown[c][0] == score for c in best)

    # The verdict in words: who wins, with which of its moves from now.
    verdict = browser.driver.find_element("id", "an-verdict").text
    side, other = ("Red", "Yellow") if position.ply % 2 == 0 else ("Yellow", "Red")
    n = int(score_words(position, score).split()[-1]) if score else 0
    expected_verdict = {
        score > 0: f"{side} wins with its {ordinal(n)} move from now.",
        score < 0: f"{other} wins with its {ordinal(n)} move from now.",
        score == 0: "Draw with best play.",
    }[True]
    assert verdict == expected_verdict
    pv = browser.js(
        "return [...document.querySelectorAll('#an-pv .pv-move')].map((b) => b.textContent)"
    )
    assert pv and pv == result["pv"] and pv[0] in {str(c) for c in best}

    streamed = browser.js("return window.plybot.analyser.streamed")
    assert streamed, "no progress event reached the page over the event stream"
    assert streamed == sorted(streamed)
    browser.screenshot("analysis-desktop")

    # Clicking a move of the best line plays the line up to it.
    upto = min(2, len(pv))
    browser.driver.find_elements("css selector", "#an-pv .pv-move")[upto - 1].click()
    line = notation + "".join(pv[:upto])
    browser.wait(lambda d: d.current_url.endswith(f"#/analyse/connect4/{line}"))
    assert board_cells(browser, "analyse") == engine_cells("connect4", line)
    assert browser.errors() == []


def test_a_shared_url_restores_the_position(browser: Browser, site: str) -> None:
    """?game=&position= and #/analyse/<game>/<moves> both show the position; moves,
    undo and redo keep the address in step, and loading it again shows the same board."""
    open_page(browser, f"{site}/?game=connect4&position={LATE}")
    assert browser.driver.current_url.endswith(f"/#/analyse/connect4/{LATE}")
    assert board_cells(browser, "analyse") == engine_cells("connect4", LATE)
    assert browser.driver.find_element("id", "an-moves").get_attribute("value") == LATE

    browser.driver.find_element("css selector", "#analyse-board .drop[data-move='5']").click()
    browser.wait(lambda d: d.current_url.endswith(f"#/analyse/connect4/{LATE}6"))
    browser.driver.find_element("id", "an-undo").click()
    browser.wait(lambda d: d.current_url.endswith(f"#/analyse/connect4/{LATE}"))
    browser.driver.find_element("css selector", "body").send_keys(Keys.ARROW_RIGHT)  # redo
    browser.wait(lambda d: d.current_url.endswith(f"#/analyse/connect4/{LATE}6"))

    shared = browser.driver.current_url
    open_page(browser, shared)
    assert board_cells(browser, "analyse") == engine_cells("connect4", LATE + "6")
    assert browser.driver.find_element("id", "analyse-status").text.startswith("Yellow to move")

    # The keyboard alone: the board is one Tab stop, arrows move along the playable
    # columns (with a visible focus ring), Enter plays.
    stop = browser.driver.find_element("css selector", "#analyse-board .drop[tabindex='0']")
    stop.send_keys(Keys.ARROW_LEFT)
    focused = browser.driver.switch_to.active_element
    assert focused.get_attribute("class") == "drop" and focused != stop
    assert focused.value_of_css_property("outline-style") != "none"
    column = int(focused.get_attribute("data-move")) + 1
    focused.send_keys(Keys.ENTER)
    line = f"{LATE}6{column}"
    browser.wait(lambda d: d.current_url.endswith(f"#/analyse/connect4/{line}"))
    assert board_cells(browser, "analyse") == engine_cells("connect4", line)

    # Every control has a name, and the board is a labelled grid.
    unnamed = browser.js(
        "return [...document.querySelectorAll('button, a, select, input')]"
        ".filter((e) => e.offsetParent !== null)"
        ".filter((e) => !(e.getAttribute('aria-label') || e.textContent.trim()"
        " || e.labels?.length))"
        ".map((e) => e.outerHTML)"
    )
    assert unnamed == []
    grid = browser.driver.find_element("css selector", "#analyse-board [role=grid]")
    assert "Connect Four" in grid.get_attribute("aria-label")
    cell = grid.find_element("css selector", "[role=row]:last-child [role=gridcell]")
    assert cell.get_attribute("aria-label") == "Column 1, row 1: Red"

    open_page(browser, f"{site}/#/analyse/tictactoe/159")
    assert board_cells(browser, "analyse") == engine_cells("tictactoe", "159")
    assert browser.errors() == []


def test_an_illegal_paste_shows_the_apis_message(browser: Browser, site: str) -> None:
    """A move string with a move into a full column: the API's 422 message is shown
    as it is, the board stays, and the next good paste recovers."""
    open_page(browser, f"{site}/#/analyse/connect4/{LATE}")
    box = browser.driver.find_element("id", "an-moves")
    box.clear()
    box.send_keys("44444444\n")
    alert = browser.driver.find_element("id", "analyse-alert")
    browser.wait(lambda d: alert.is_displayed() and alert.text, message="no error shown")

    code, body = api_json(
        site, "POST", "/v1/analyses", {"game": "connect4", "position": "44444444", "mode": "solve"}
    )
    assert code == 422
    assert body["message"] in alert.text
    assert "column 4 is full (move 7)" in alert.text
    assert box.get_attribute("aria-invalid") == "true"
    assert board_cells(browser, "analyse") == engine_cells("connect4", LATE)
    assert browser.driver.current_url.endswith(f"#/analyse/connect4/{LATE}")
    browser.screenshot("illegal-paste")

    box.clear()
    box.send_keys(LATE[:-2] + "\n")
    browser.wait(lambda d: not alert.is_displayed(), message="the error stayed")
    assert board_cells(browser, "analyse") == engine_cells("connect4", LATE[:-2])
    assert box.get_attribute("aria-invalid") is None
    assert browser.errors() == []


def test_the_page_fits_a_phone(
    browser: Browser, site: str, benchmark_position: tuple[str, int]
) -> None:
    """At 360 CSS pixels the board and its scores fit without sideways scrolling."""
    browser.size(*PHONE, mobile=True)
    notation, _ = benchmark_position
    open_page(browser, f"{site}/#/analyse/connect4/{notation}")
    wait_analysed(browser)
    width = browser.js("return document.documentElement.scrollWidth")
    assert width <= PHONE[0]
    box = browser.js(
        "const r = document.querySelector('#analyse-board .board').getBoundingClientRect();"
        "return [r.left, r.right];"
    )
    assert box[0] >= 0 and box[1] <= PHONE[0]
    browser.screenshot("analysis-phone")
    browser.dark()
    browser.screenshot("analysis-phone-dark")
    browser.dark(False)

    open_page(browser, f"{site}/#/play")
    new_game_in_page(browser, "connect4", "easy")
    status = browser.driver.find_element("id", "play-status")
    for column in (4, 3):
        browser.wait(lambda d: status.text.startswith("Your move"), timeout=30)
        browser.driver.find_element("css selector", f".drop[data-move='{column - 1}']").click()
    browser.wait(lambda d: status.text.startswith(("Your move", "You win", "plybot")), timeout=30)
    assert browser.js("return document.documentElement.scrollWidth") <= PHONE[0]
    browser.screenshot("play-phone")
    assert browser.errors() == []


def test_a_rate_limit_is_shown_and_the_page_recovers(
    browser: Browser, redis_client: redis.Redis, redis_url: str, workers: object
) -> None:
    """Past the rate limit the page says so, with the wait the API gives, and
    retries by itself once the window has passed."""
    # The counters are per address and live in Redis, shared with the session's API
    # (a 60 s window): start from none, so this API's 6 s window applies.
    for key in redis_client.scan_iter("plybot:ratelimit:*"):
        redis_client.delete(key)
    env = {"PLYBOT_API_RATE_LIMIT": "2", "PLYBOT_API_RATE_WINDOW_S": "6"}
    with api_server_on(redis_url, env=env) as server:
        open_page(browser, f"{server.url}/#/analyse/tictactoe/15")
        wait_analysed(browser)
        # Spend this address's budget (the page and the test share 127.0.0.1), far
        # enough from the window's end that the page's next request is refused too.
        body = {"game": "tictactoe", "position": "15", "mode": "solve"}
        while True:
            code, _ = api_json(server.url, "POST", "/v1/analyses", body)
            if code == 429:
                with server.client() as http:
                    left = int(http.post("/v1/analyses", json=body).headers["Retry-After"])
                if left >= 3:
                    break
                time.sleep(left + 0.2)
        browser.driver.find_element("css selector", "body").send_keys("9")
        alert = browser.driver.find_element("id", "analyse-alert")
        browser.wait(lambda d: "Too many requests" in alert.text, message="no rate-limit message")
        assert re.search(r"retrying in \d+ s", alert.text)
        browser.screenshot("rate-limited")
        result = wait_analysed(browser, timeout=30)  # the retry after the window succeeded
        assert result["exact"]
        browser.wait(lambda d: not alert.is_displayed(), message="the message stayed")
        assert chip_scores_cells(browser) == {
            int(move): score for move, score in result["moves"].items()
        }
    assert browser.errors() == []


def test_service_unavailable_is_shown_and_the_page_recovers(
    browser: Browser, site: str, redis_server: RedisServer
) -> None:
    """With Redis down the API answers 503: the page says the service is unavailable
    and keeps retrying; once Redis is back the analysis arrives without a reload."""
    open_page(browser, f"{site}/#/analyse/tictactoe/5")
    wait_analysed(browser)
    redis_server.stop()
    try:
        browser.driver.find_element("css selector", "body").send_keys("1")
        alert = browser.driver.find_element("id", "analyse-alert")
        browser.wait(lambda d: "unavailable" in alert.text, message="no 'unavailable' message")
        assert "retrying" in alert.text
        browser.screenshot("unavailable")
    finally:
        redis_server.start()
    result = wait_analysed(browser, timeout=60)
    assert result["exact"] and browser.driver.current_url.endswith("#/analyse/tictactoe/51")
    browser.wait(lambda d: not alert.is_displayed(), message="the message stayed")
    assert browser.errors() == []


def test_play_view_recovers_by_itself_when_the_service_comes_back(
    browser: Browser, site: str, redis_server: RedisServer
) -> None:
    """A move sent while Redis is down is refused with 503: the page says so, counts down,
    shows the move unplayed, and once Redis is back takes the game's state again by itself
    (no reload, no click); the game then goes on."""
    open_page(browser, site + "/#/play")
    new_game_in_page(browser, "connect4", "easy", "human")
    status = browser.driver.find_element("id", "play-status")
    browser.wait(lambda d: status.text.startswith("Your move"), timeout=60)
    alert = browser.driver.find_element("id", "play-alert")
    # The service's Redis keeps its data across a restart (`plybot up`'s is persistent); this
    # one does not, so it saves by hand, and the snapshot goes once loaded.
    with redis.Redis.from_url(redis_server.url) as client:
        client.save()
    redis_server.stop()
    try:
        browser.driver.find_element("css selector", ".drop[data-move='3']").click()
        browser.wait(lambda d: "unavailable" in alert.text, message="no 'unavailable' message")
        assert "retrying in" in alert.text
        assert browser.js("return window.plybot.player.position.ply") == 0  # shown unplayed
    finally:
        redis_server.start()
        (redis_server.data_dir / "dump.rdb").unlink(missing_ok=True)
    browser.wait(
        lambda d: not alert.is_displayed(), timeout=30, message=f"the message stayed: {alert.text}"
    )
    assert status.text.startswith("Your move")
    browser.driver.find_element("css selector", ".drop[data-move='3']").click()
    browser.wait(
        lambda d: (
            browser.js("return window.plybot.player.session.position").startswith("4")
            and len(browser.js("return window.plybot.player.session.position")) == 2
        ),
        timeout=60,
        message="the game did not go on",
    )
    assert browser.errors() == []

"""The opening book: built by the solver, read as a cache, exact, and complete on its lines."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from engine.book import (
    SHIPPED_PATH,
    BookError,
    BookLine,
    OpeningBook,
    Tiered,
    build,
    lines,
    parse,
    read,
    shipped_book,
)
from engine.cache import EXACT_DEPTH, CacheEntry, MemoryCache
from engine.connect4 import Connect4
from engine.errors import PlybotError
from engine.search import SearchLimits, search
from engine.solver import Solver

SMALL = (5, 4)  # a board whose whole book builds in a blink


@pytest.fixture(scope="module")
def small_book() -> OpeningBook:
    return build(Solver(*SMALL, table_bytes=16 << 20), plies=8)


def test_lines_round_trip_and_bad_lines_are_quoted() -> None:
    text = "# a comment\n- 1 4\n44 1 4  # trailing comment\n\n"
    assert parse(text) == [BookLine("", 1, 3), BookLine("44", 1, 3)]
    assert [line.text() for line in parse(text)] == ["- 1 4", "44 1 4"]
    for bad, why in [
        ("44 1", "expected '<moves> <score> <best>'"),
        ("48 1 4", "column 8 is outside 1..7 (move 2)"),
        ("44 x 4", "invalid literal"),
        ("4444444 1 4", "column 4 is full (move 7)"),
        ("444444 1 4", "column 4 is not playable"),
    ]:
        with pytest.raises(BookError) as caught:
            parse(f"- 1 4\n{bad}\n")
        assert str(caught.value).startswith(f"'{bad}': "), str(caught.value)
        assert why in str(caught.value) and str(caught.value).endswith("(book line 2)")
        assert isinstance(caught.value, PlybotError) and isinstance(caught.value, ValueError)


def test_book_is_exact_by_another_algorithm() -> None:
    # A 4x4 book, each entry from ply 7 on against an exhaustive generic search (another
    # algorithm): its score, and the score its best move keeps.
    tiny = build(Solver(4, 4, table_bytes=1 << 20), plies=16)
    assert len(tiny) > 1000
    checked = 0
    for line in list(tiny)[::7]:
        position = Connect4.parse(line.moves, "4x4")
        if position.ply < 7:
            continue
        exact = search(position, SearchLimits(), all_moves=True)
        assert exact.decided and exact.moves is not None
        assert exact.score == line.score, line
        assert exact.moves[line.best] == line.score, line
        checked += 1
    assert checked >= 50


def test_small_book_agrees_with_a_fresh_solver(small_book: OpeningBook) -> None:
    for line in list(small_book):
        position = Connect4.parse(line.moves, "5x4")
        fresh = Solver(*SMALL, table_bytes=1 << 20).analyze(position)
        assert fresh.score == line.score and fresh.moves is not None
        assert fresh.moves[line.best] == line.score, line


def test_small_book_covers_every_line_of_a_perfect_player(small_book: OpeningBook) -> None:
    # Walk every opponent reply (both sides): wherever the book's player is to move before
    # ply 8, the book has the position, and its move is the one the walk follows.
    width, height = SMALL
    visited = 0

    def walk(position: Connect4, mine: int) -> None:
        nonlocal visited
        if position.outcome() is not None or position.ply >= 8:
            return
        if position.side_to_move == mine:
            found = small_book.lookup(position)
            assert found is not None, position.notation()
            visited += 1
            position.push(found[1])
            walk(position, mine)
            position.pop()
            return
        for move in position.legal_moves():
            position.push(move)
            walk(position, mine)
            position.pop()

    walk(Connect4(width, height), 0)
    walk(Connect4(width, height), 1)
    assert visited > len(small_book)  # mirror images and transpositions share entries


def test_lines_stop_where_nothing_is_known() -> None:
    yielded = list(lines(lambda position: None, plies=6))
    # Only the empty board and the first moves: no best move known, no line goes on.
    assert sorted(q.notation() for q in yielded) == ["", "1", "2", "3", "4"]


def test_mirror_image_gets_the_mirrored_move(small_book: OpeningBook) -> None:
    position = Connect4.parse("1", "5x4")
    mirror = Connect4.parse("5", "5x4")
    found, mirrored = small_book.lookup(position), small_book.lookup(mirror)
    assert found is not None and mirrored is not None
    assert mirrored == (found[0], 4 - found[1])


def test_solver_answers_book_positions_without_search(small_book: OpeningBook) -> None:
    solver = Solver(*SMALL, table_bytes=1 << 20, book=small_book)
    for line in list(small_book)[:10]:
        result = solver.solve(Connect4.parse(line.moves, "5x4"))
        assert result.complete and result.cache_hit and result.nodes == 0
        assert (result.score, result.best_move) == (line.score, line.best)
    # Outside the book the solver searches, and is as exact as without one.
    outside = Connect4.parse("1155", "5x4")
    assert outside not in small_book
    plain = Solver(*SMALL, table_bytes=1 << 20).solve(outside)
    result = solver.solve(outside)
    assert not result.cache_hit and result.nodes > 0 and result.score == plain.score


def test_tiered_reads_the_book_first_and_writes_behind_it(small_book: OpeningBook) -> None:
    behind = MemoryCache()
    tiered = Tiered(small_book, behind)
    in_book = Connect4.parse("", "5x4").key()
    elsewhere = Connect4.parse("1155", "5x4").key()
    stored = CacheEntry(-3, -3, EXACT_DEPTH, 2)
    tiered.put_many("connect4", "5x4", [(elsewhere, stored)])
    assert behind.entries == {("connect4", "5x4", elsewhere): stored}
    found = tiered.get_many("connect4", "5x4", [in_book, elsewhere, "ffff"])
    assert found[0] is not None and found[0].exact and found[1] == stored and found[2] is None
    assert behind.reads == 2  # the book's key was not asked of the cache behind it
    assert small_book.get_many("connect4", "7x6", [in_book]) == [None]  # another board


def test_shipped_book_is_well_formed() -> None:
    book = shipped_book()
    assert book is not None, "engine/data/connect4-7x6.book is missing from the package"
    empty = book.lookup(Connect4())
    assert empty is not None and empty[1] == 3  # the centre; the score is checked below
    lines = read(SHIPPED_PATH)
    assert len(lines) == len(book)
    # The first player wins with the last stone: the best the second player can do is
    # a loss at the first player's 21st stone, so the empty board scores 22 - 21 = 1.
    # (That is the game's known value; the slow test below checks entries by solving.)
    assert empty[0] == 1
    assert shipped_book(6, 5) is None  # no book for other boards


@pytest.mark.slow
def test_shipped_book_deep_entries_agree_with_the_solver() -> None:
    # The deepest entries (ply 6 to 9) solve in a second or two with a fresh table.
    deep = [line for line in read(SHIPPED_PATH) if len(line.moves) >= 6]
    assert deep, "the shipped book has no entries at ply 6 or more"
    for line in random.Random(3).sample(deep, min(4, len(deep))):
        solver = Solver()
        position = Connect4.parse(line.moves)
        assert solver.solve(position).score == line.score, line
        position.push(line.best)
        after = solver.solve(position) if position.outcome() is None else None
        assert after is None or after.score == -line.score, line


def test_book_cli_builds_resumes_and_verifies(tmp_path: Path) -> None:
    plybot = [str(Path(sys.executable).with_name("plybot")), "book"]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*plybot, *args], capture_output=True, text=True, timeout=300)

    path = tmp_path / "5x4.book"
    small = ("--variant", "5x4", "--out", str(path), "--table-mb", "16")
    first = run("build", "--plies", "5", *small)
    assert first.returncode == 0, first.stderr
    built = read(path, "5x4")
    assert built and first.stderr.endswith(f"{len(built)} positions in {path}\n")
    resumed = run("build", "--plies", "8", *small)  # goes on where the first run stopped
    assert resumed.returncode == 0, resumed.stderr
    more = read(path, "5x4")
    assert more[: len(built)] == built and len(more) > len(built)
    assert len({Connect4.parse(line.moves, "5x4").key() for line in more}) == len(more)
    reference = build(Solver(*SMALL, table_bytes=16 << 20), plies=8)
    assert sorted(more, key=lambda line: line.moves) == sorted(
        reference, key=lambda line: line.moves
    )
    checked = run("verify", "--book", str(path), "--variant", "5x4", "--sample", "6")
    assert checked.returncode == 0 and checked.stderr == "6/6 agree\n", checked.stderr

    line = more[-1]
    wrong = tmp_path / "wrong.book"
    wrong.write_text(f"{line.moves} {line.score + 1} {line.best + 1}\n")
    checked = run("verify", "--book", str(wrong), "--variant", "5x4")
    assert checked.returncode == 1 and "WRONG" in checked.stdout and checked.stderr == "0/1 agree\n"

    bad = run("build", "--plies", "0", "--out", str(path))
    assert bad.returncode == 2 and bad.stderr == "plybot book: '0': --plies must be in 1..42\n"
    broken = tmp_path / "broken.book"
    broken.write_text("44 1\n")
    bad = run("verify", "--book", str(broken))
    assert bad.returncode == 2
    assert (
        bad.stderr
        == f"plybot book: {broken}: '44 1': expected '<moves> <score> <best>' (book line 1)\n"
    )

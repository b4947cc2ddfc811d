"""The opening book: a solved layer, derived plies above it, a compact file read as a cache."""

from __future__ import annotations

import random
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from engine.book import (
    SHIPPED_PATH,
    BookError,
    BookLine,
    OpeningBook,
    parse,
    shipped_book,
)
from engine.connect4 import Connect4
from engine.errors import PlybotError
from engine.layer import chunks, derive, needs_search, positions_at, solve_chunk
from engine.search import SearchLimits, search
from engine.solver import Solver

SMALL = (5, 4)  # a board whose whole ply-8 book builds in seconds


def build_locally(width: int, height: int, plies: int, size: int = 16) -> list[BookLine]:
    """Every chunk solved in this process, then derived: what the workers' build must equal."""
    solver = Solver(width, height, table_bytes=16 << 20)
    layer = [
        line
        for c in chunks(plies, width, height, size)
        for line in solve_chunk(solver, c.notations)
    ]
    return list(derive(layer, plies, width, height))


def played(position: Connect4, move: int) -> Connect4:
    after = position.copy()
    after.push(move)
    return after


@pytest.fixture(scope="module")
def small_lines() -> list[BookLine]:
    return build_locally(*SMALL, plies=8)


@pytest.fixture(scope="module")
def small_book(small_lines: list[BookLine]) -> OpeningBook:
    return OpeningBook.from_lines(*SMALL, small_lines, complete=8)


def test_text_lines_round_trip_and_bad_lines_are_quoted() -> None:
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
        assert why in str(caught.value)
        assert str(caught.value).endswith("(book line 2)")
        assert isinstance(caught.value, PlybotError)
        assert isinstance(caught.value, ValueError)


def test_layer_holds_each_position_needing_a_search_once() -> None:
    plan = chunks(8, *SMALL, size=50)
    notations = [n for c in plan for n in c.notations]
    keys = {Connect4.parse(n, "5x4").key() for n in notations}
    assert len(keys) == len(notations)  # mirror images and transpositions merged
    expected = {q.key() for q in positions_at(8, *SMALL) if needs_search(q)}
    assert keys == expected
    assert [c.index for c in plan] == list(range(len(plan)))
    assert all(len(c.notations) >= 50 for c in plan[:-1])
    assert chunks(8, *SMALL, size=50) == plan  # the same on every machine, every run


@pytest.mark.slow
def test_complete_book_is_exact_by_another_algorithm() -> None:
    # 4x4 to ply 10: every entry from ply 7 on against an exhaustive generic search (another
    # algorithm than the solver): the score, and the score its best move keeps.
    lines = build_locally(4, 4, plies=10)
    assert len({Connect4.parse(line.moves, "4x4").key() for line in lines}) == len(lines)
    checked = 0
    for line in lines[::20]:
        position = Connect4.parse(line.moves, "4x4")
        if position.ply < 7:
            continue
        exact = search(position, SearchLimits(), all_moves=True)
        assert exact.decided
        assert exact.moves is not None
        assert exact.score == line.score, line
        assert exact.moves[line.best] == line.score, line
        checked += 1
    assert checked >= 50


@pytest.mark.slow
def test_small_book_is_complete_and_agrees_with_a_fresh_solver(small_book: OpeningBook) -> None:
    for ply in range(9):
        for position in positions_at(ply, *SMALL):
            assert position in small_book, position.notation()
    assert small_book.complete == 8
    sample = random.Random(1).sample(list(small_book.positions()), 300)
    for position, score, best in sample:
        fresh = Solver(*SMALL, table_bytes=1 << 20).analyze(position)
        assert fresh.score == score, position.notation()
        assert fresh.moves is not None, position.notation()
        assert fresh.moves[best] == score, position.notation()


def test_book_file_round_trips_and_loads_fast(small_book: OpeningBook, tmp_path: Path) -> None:
    path = tmp_path / "5x4.book"
    small_book.save(path)
    header = len(path.read_bytes().split(b"\n", 1)[0]) + 1
    assert path.stat().st_size - header < 3 * len(small_book)  # the arrays take 10 bytes each
    loaded = OpeningBook.load(path)
    assert loaded.variant == "5x4"
    assert loaded.complete == 8
    assert len(loaded) == len(small_book)
    assert np.array_equal(loaded.keys, small_book.keys)
    assert np.array_equal(loaded.scores, small_book.scores)
    assert np.array_equal(loaded.best, small_book.best)
    for bad, why in [
        (b"", "not a plybot book"),
        (b"plybot-book 1 connect4 5x4 complete=8 entries=3\n" + b"\0" * 30, "not a plybot book"),
        (b"plybot-book 2 connect4 5x4 complete=8 entries=3\n" + b"\0" * 30, "not a zlib stream"),
        (
            b"plybot-book 2 connect4 5x4 complete=8 entries=3\n" + zlib.compress(b"\0" * 29),
            "expected 3 entries of 10 bytes, found 29 bytes",
        ),
        (b"plybot-book 2 connect4 5x99 complete=8 entries=0\n", "5x99"),
        (  # a gap of 0 after the first: two equal keys
            b"plybot-book 2 connect4 5x4 complete=8 entries=3\n"
            + zlib.compress(struct.pack("<3Q", 5, 7, 0) + b"\0" * 6),
            "keys are not strictly increasing",
        ),
        (  # the sum wraps past 2**64: a smaller key after a larger one
            b"plybot-book 2 connect4 5x4 complete=8 entries=2\n"
            + zlib.compress(struct.pack("<2Q", 5, 2**64 - 1) + b"\0" * 4),
            "keys are not strictly increasing",
        ),
    ]:
        path.write_bytes(bad)
        with pytest.raises(BookError, match=why) as caught:
            OpeningBook.load(path)
        assert str(path) in str(caught.value)


def test_keys_decode_to_positions(small_book: OpeningBook) -> None:
    for position, _score, _best in list(small_book.positions())[::97]:
        again = Connect4.from_key(int(position.key(), 16), *SMALL)
        assert again.key() == position.key()
        assert again.ply == position.ply
    with pytest.raises(PlybotError, match="no line of play"):
        Connect4.from_key(0b1111 + 0b1111, 7, 6)  # four stones of one side in a column


def test_mirror_image_gets_the_mirrored_move(small_book: OpeningBook) -> None:
    found = small_book.lookup(Connect4.parse("1", "5x4"))
    mirrored = small_book.lookup(Connect4.parse("5", "5x4"))
    assert found is not None
    assert mirrored is not None
    assert mirrored == (found[0], 4 - found[1])


def test_solver_answers_book_positions_without_search(small_book: OpeningBook) -> None:
    solver = Solver(*SMALL, table_bytes=1 << 20, book=small_book)
    for position, score, best in list(small_book.positions())[:10]:
        result = solver.solve(position)
        assert result.exact
        assert result.cache_hit
        assert result.nodes == 0
        assert result.score == score
        assert result.best_move is not None
        assert played(position, result.best_move).key() == played(position, best).key()
    # Outside the book the solver searches, and is as exact as without one.
    outside = Connect4.parse("1155234213", "5x4")
    assert outside.ply > small_book.complete
    assert outside not in small_book
    plain = Solver(*SMALL, table_bytes=1 << 20).solve(outside)
    result = solver.solve(outside)
    assert not result.cache_hit
    assert result.nodes > 0
    assert result.score == plain.score


def test_shipped_book_is_compact_and_loads_fast() -> None:
    assert SHIPPED_PATH.stat().st_size <= 3 << 20
    code = (
        "import resource, time\n"
        "r0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "t = time.perf_counter()\n"
        "from engine.book import shipped_book\n"
        "book = shipped_book()\n"
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - r0)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    _seconds, grown_kb = out.stdout.split()
    assert int(grown_kb) <= 30 * 1024  # what loading the book adds to a process (numpy included)
    book = shipped_book()
    assert book is not None
    assert shipped_book(6, 5) is None
    empty = book.lookup(Connect4())
    # The first player wins with the last stone: the best the second player can do is
    # a loss at the first player's 21st stone, so the empty board scores 22 - 21 = 1.
    assert empty == (1, 3)
    assert book.complete == 9  # every position up to ply 9, whatever both sides played
    for ply in range(book.complete + 1):
        assert all(q in book for q in positions_at(ply)), ply


@pytest.mark.slow
def test_shipped_book_entries_agree_with_the_solver() -> None:
    book = shipped_book()
    assert book is not None
    # About a second of CPU each, fresh: two (a loaded machine runs them many times slower).
    entries = [e for e in book.positions() if e[0].ply >= 7]
    for position, score, best in random.Random(3).sample(entries, min(2, len(entries))):
        solver = Solver(table_bytes=16 << 20)
        assert solver.solve(position).score == score, position.notation()
        position.push(best)
        after = solver.solve(position) if position.outcome() is None else None
        assert after is None or after.score == -score, position.notation()


def test_uniform_positions_are_uniform_and_reproducible() -> None:
    from collections import Counter

    from engine.sampling import uniform_positions

    distinct = positions_at(4)
    drawn = uniform_positions(4, 30 * len(distinct), seed=2)
    counts = Counter(q.key() for q in drawn)
    assert set(counts) == {q.key() for q in distinct}  # every one of the 568, nothing else
    expected = len(drawn) / len(distinct)
    chi2 = sum((counts[q.key()] - expected) ** 2 / expected for q in distinct)
    assert chi2 < 700  # 567 degrees of freedom: p < 0.0001 above 700 (a fixed seed: no flake)
    deep = uniform_positions(16, 20, seed=1)
    assert [q.notation() for q in deep] == [q.notation() for q in uniform_positions(16, 20, seed=1)]
    assert all(q.ply == 16 and q.outcome() is None for q in deep)


def test_a_partial_layer_is_added_to_the_book_beyond_its_complete_ply(
    small_book: OpeningBook, tmp_path: Path
) -> None:
    from worker.process.cli.book import main as book_command

    path = tmp_path / "5x4.book"
    small_book.save(path)
    solver = Solver(*SMALL, table_bytes=16 << 20)
    deeper = [q.notation() for q in positions_at(9, *SMALL) if needs_search(q)][:40]
    solved = solve_chunk(solver, deeper)
    layer = tmp_path / "5x4-ply9.layer"
    layer.write_text("# a partial ply-9 layer\n" + "".join(line.text() + "\n" for line in solved))

    assert book_command(["add", str(layer), "--book", str(path), "--variant", "5x4"]) == 0
    grown = OpeningBook.load(path)
    assert grown.complete == 8  # still complete to ply 8 only: the layer is not
    assert len(grown) == len(small_book) + len(deeper)
    for line in solved:
        position = Connect4.parse(line.moves, "5x4")
        assert grown.lookup(position) == (line.score, line.best), line.moves
    for position, score, best in small_book.positions():  # the book's own entries kept
        assert grown.lookup(position) == (score, best)
    # Again: nothing new, nothing lost.
    assert book_command(["add", str(layer), "--book", str(path), "--variant", "5x4"]) == 0
    assert len(OpeningBook.load(path)) == len(grown)


def test_adding_a_layer_names_what_is_wrong(small_book: OpeningBook, tmp_path: Path) -> None:
    path = tmp_path / "5x4.book"
    small_book.save(path)
    bad = tmp_path / "bad.layer"
    bad.write_text("1234 9 8\n")
    for argv, says in [
        (["add", str(tmp_path / "none.layer"), "--book", str(path)], "no layer file there"),
        (["add", str(bad), "--book", str(path)], "a 5x4 book, not 7x6"),
        (["add", str(bad), "--book", str(path), "--variant", "5x4"], "'1234 9 8': column 8"),
    ]:
        done = subprocess.run(
            [str(Path(sys.executable).with_name("plybot")), "book", *argv],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 2, done.stderr
        assert says in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def random_positions(width: int, height: int, plies: range, count: int, seed: int) -> list[str]:
    """``count`` ongoing positions of random games, each stopped at a ply drawn from ``plies``."""
    rng = random.Random(seed)
    found: list[str] = []
    while len(found) < count:
        position = Connect4(width, height)
        stop = rng.choice(plies)
        while position.ply < stop and position.outcome() is None:
            position.push(rng.choice(position.legal_moves()))
        if position.ply == stop and position.outcome() is None:
            found.append(position.notation())
    return found


def test_the_book_asked_inside_the_search_never_changes_a_score(
    small_lines: list[BookLine],
) -> None:
    # A book of the ply-8 layer alone: searches from plies 2..6 meet it only inside the
    # search (the core asks it at every node of its plies), never at their roots.
    layer = [line for line in small_lines if len(line.moves) == 8]
    deep = OpeningBook.from_lines(*SMALL, layer)
    notations = random_positions(*SMALL, range(2, 7), 40, seed=19)
    assert not any(Connect4.parse(n, "5x4") in deep for n in notations)
    plain = Solver(*SMALL, table_bytes=1 << 20).run_batch(notations)
    booked = Solver(*SMALL, table_bytes=1 << 20, book=deep).run_batch(notations)
    assert list(booked.score) == list(plain.score)
    # The book answered inside the search: the same scores for fewer nodes.
    assert sum(booked.nodes) < sum(plain.nodes)
    plain_columns = Solver(*SMALL, table_bytes=1 << 20).run_batch(notations, analyze=True)
    booked_columns = Solver(*SMALL, table_bytes=1 << 20, book=deep).run_batch(
        notations, analyze=True
    )
    assert booked_columns.columns == plain_columns.columns


def test_a_batch_answers_shipped_book_positions_at_the_root_without_search() -> None:
    book = shipped_book()
    assert book is not None
    notations = random_positions(7, 6, range(9), 30, seed=20)
    batch = Solver(table_bytes=1 << 20, book=book).run_batch(notations)
    for i, notation in enumerate(notations):
        found = book.lookup(Connect4.parse(notation))
        assert found is not None, notation
        assert (batch.score[i], batch.nodes[i]) == (found[0], 0), notation
        after = Connect4.parse(notation)
        after.push(batch.best[i])
        assert -Solver(table_bytes=1 << 20, book=book).solve(after).lower == found[0], notation


def test_the_core_asks_its_known_tiers_in_order_and_never_changes_a_score(
    small_lines: list[BookLine],
) -> None:
    from engine.solver._core import Core

    # Two tiers, as the book and a deeper database will be: the ply-8 layer, then ply 7.
    tiers = [
        OpeningBook.from_lines(*SMALL, [line for line in small_lines if len(line.moves) == ply])
        for ply in (8, 7)
    ]
    notations = random_positions(*SMALL, range(2, 6), 30, seed=21)

    def batch(core: Core) -> tuple[list[int], int]:
        _, score, _, _, _, nodes, _, _ = core.batch(notations, False, False, True, 1 << 62)
        return score, sum(nodes)

    plain = batch(Core(*SMALL, 1 << 20))
    one, two = Core(*SMALL, 1 << 20), Core(*SMALL, 1 << 20)
    one.add_known(*tiers[0].columns())
    for tier in tiers:
        two.add_known(*tier.columns())
    assert (one.known_max_ply, two.known_max_ply) == (8, 8)
    with_one, with_two = batch(one), batch(two)
    assert with_one[0] == with_two[0] == plain[0]
    assert with_two[1] < with_one[1] < plain[1]  # each tier answers inside the search
    # The root of a known position is answered from it, with a move in its orientation.
    line = next(line for line in small_lines if len(line.moves) == 7)
    position = Connect4.parse(line.moves, "5x4")
    assert one.known(position.current, position.mask, position.ply) is None
    found = two.known(position.current, position.mask, position.ply)
    assert found is not None
    assert found[0] == line.score
    assert played(position, found[1]).key() == played(position, line.best).key()
    two.clear_known()
    assert two.known_max_ply == -1
    assert batch(two)[0] == plain[0]
    for _ in range(4):
        two.add_known(*tiers[0].columns())
    with pytest.raises(ValueError, match="4 tiers"):
        two.add_known(*tiers[0].columns())

"""The stones database (engine/database.py, engine/solver/csrc/database.h): its layout, its
build by real workers through the queue, and its use inside the search, on small boards."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import redis
from rq import Queue

from engine.connect4 import Connect4, Geometry
from engine.database import Parts, StoneDatabase, open_database, records_of, score_bounds
from engine.layer import needs_search, positions_at
from engine.solver import Solver, _core
from tests.fixtures.builds import SMALL_TABLE, build_through_kills
from tests.fixtures.waiting import wait_for
from worker.core import keys
from worker.core.kinds import KINDS
from worker.process.book_build import WINDOW
from worker.process.cli.book import disagreements

PLYBOT = str(Path(sys.executable).with_name("plybot"))


def build_command(out: Path, stones: int, size: int) -> list[str]:
    """``plybot book build`` of the 5x4 database of ``stones`` stones, chunks of ``size``, into
    ``out``."""
    return [PLYBOT, "book", "build", "--database", "--variant", "5x4", "--plies", str(stones),
            "--chunk-size", str(size), "--out", str(out)]  # fmt: skip


def plan_keys(width: int, height: int, stones: int) -> np.ndarray:
    raw, _ = _core.layer_plan(width, height, stones, 64)
    return np.frombuffer(raw, dtype=np.uint64)


def solved(width: int, height: int, stones: int) -> dict[int, tuple[int, int]]:
    """Score and best move of every position the database must hold, by key: a fresh
    solver, one call."""
    keys_ = plan_keys(width, height, stones)
    positions = [Connect4.from_key(int(k), width, height) for k in keys_]
    solver = Solver(width, height, table_bytes=16 << 20)
    results = solver.solve_batch([p.notation() for p in positions])
    out = {}
    for k, r in zip(keys_, results, strict=True):
        assert r.exact
        assert r.best_move is not None
        out[int(k)] = (r.score, r.best_move)
    return out


def solved_reference(width: int, height: int, stones: int) -> dict[int, int]:
    """Score of every position the database must hold, by key."""
    return {key: score for key, (score, _) in solved(width, height, stones).items()}


def built_in_process(directory: Path, width: int, height: int, stones: int) -> StoneDatabase:
    """A complete database of a small board, solved here (the reference the build must equal)."""
    reference = solved(width, height, stones)
    parts = Parts(directory, width, height, stones)
    slots, values = records_of(
        parts,
        reference,
        (score for score, _ in reference.values()),
        (best for _, best in reference.values()),
    )
    parts.write(0, slots, values)
    database = open_database(parts)
    assert database is not None
    return database


# -- the layout -------------------------------------------------------------------------


def with_and_without_database(
    tmp_path: Path, width: int, height: int, stones: int
) -> tuple[Solver, Solver]:
    """A solver that reads a database of the board built here, and a plain one."""
    database = built_in_process(tmp_path / "db", width, height, stones)
    return (
        Solver(width, height, table_bytes=1 << 20, databases=(database,)),
        Solver(width, height, table_bytes=1 << 20),
    )


def ongoing_sample(ply: int, width: int, height: int, count: int) -> list[Connect4]:
    """About ``count`` ongoing positions of ``ply``, evenly spaced."""
    sample = [q for q in positions_at(ply, width, height) if q.outcome() is None]
    return sample[:: max(1, len(sample) // count)]


def test_every_position_has_its_own_slot_and_shares_it_with_its_mirror() -> None:
    width, height, stones = 5, 4, 8
    raw, _ = _core.layer_plan(width, height, stones, 64)
    keys_ = np.frombuffer(raw, dtype=np.uint64)
    slots, flips = (np.frombuffer(b, dtype=t) for b, t in zip(
        _core.database_slots(width, height, stones, raw), (np.uint32, np.uint8), strict=True
    ))  # fmt: skip
    assert len(np.unique(slots)) == len(keys_)  # distinct positions, distinct slots
    assert int(slots.max()) < _core.database_size(width, height, stones)
    g = Geometry.of(width, height)
    images = np.array([g.mirror(int(k)) for k in keys_], dtype=np.uint64)
    image_slots, image_flips = _core.database_slots(width, height, stones, images.tobytes())
    assert np.array_equal(np.frombuffer(image_slots, dtype=np.uint32), slots)
    symmetric = images == keys_
    mirrored = np.frombuffer(image_flips, dtype=np.uint8) != flips
    assert (mirrored | symmetric).all()  # a mirror image is read flipped (or is the same)


def test_the_plan_holds_exactly_the_positions_a_search_needs() -> None:
    """Ongoing positions with 8 stones whose player cannot win at once, one per mirror pair."""
    expected = {int(q.key(), 16) for q in positions_at(8, 5, 4) if needs_search(q)}
    keys_ = plan_keys(5, 4, 8)
    assert len(keys_) == len(expected)
    assert {int(k) for k in keys_} == expected


@pytest.mark.parametrize(
    ("width", "height", "stones", "why"),
    [(7, 6, 4, "no 4-stone database"), (7, 6, 42, "no 42-stone"), (10, 6, 12, "10x6")],
)
def test_a_database_that_cannot_exist_is_refused_by_name(
    width: int, height: int, stones: int, why: str
) -> None:
    with pytest.raises(ValueError, match=why):
        _core.database_size(width, height, stones)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--plies", "14"], "'14': the shipped databases hold 12 or 13 stones; give --out"),
        (["--variant", "5x4"], "'5x4': give --out for a book or database of another board"),
        (["--chunk-size", "0"], "'0': --chunk-size must be positive"),
    ],
)
def test_a_build_that_cannot_start_says_why_in_one_line(argv: list[str], says: str) -> None:
    done = subprocess.run(
        [PLYBOT, "book", "build", "--database", *argv, "--redis-url", "redis://127.0.0.1:1/0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert says in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_damaged_part_is_refused_naming_the_file(tmp_path: Path) -> None:
    parts = Parts(tmp_path / "db", 5, 4, 8)
    parts.write(0, np.array([3, 1], dtype=np.uint32), np.array([7, 9], dtype=np.uint8))
    good_slots, good_values = parts.read(parts.path(0))
    assert list(good_slots) == [1, 3]
    assert list(good_values) == [9, 7]
    parts.path(0).write_bytes(parts.path(0).read_bytes()[:-3])
    with pytest.raises(ValueError, match=r"part-0000\.bin: damaged"):
        parts.read(parts.path(0))
    with pytest.raises(ValueError, match="not a part of the 5x4 6-stone"):
        Parts(tmp_path / "db", 5, 4, 6).read(parts.path(0))


# -- the lookup inside the search ------------------------------------------------------


def test_the_search_asks_the_database_and_never_changes_a_score(tmp_path: Path) -> None:
    width, height, stones = 5, 4, 8
    database = built_in_process(tmp_path / "db", width, height, stones)
    reference = solved_reference(width, height, stones)
    # Every entry equals a fresh solver's score, and the best move keeps it.
    for key, score in reference.items():
        position = Connect4.from_key(key, width, height)
        found = database.lookup(position)
        assert found is not None, position.notation()
        assert found[0] == score, position.notation()
        child = position.copy()
        child.push(found[1])
        if child.outcome() is None:
            assert -Solver(width, height, 1 << 20).solve(child).score == score  # type: ignore[operator]
    # Searches from plies before the database's agree with and without it, and it is used.
    sample = [q for ply in (3, 4, 5, 6) for q in positions_at(ply, 5, 4)]
    sample = sample[:: max(1, len(sample) // 150)]
    with_db = Solver(width, height, table_bytes=1 << 20, databases=(database,))
    without = Solver(width, height, table_bytes=1 << 20)
    fewer = 0
    for q in sample:
        with_db.reset()
        without.reset()
        a, b = with_db.solve(q), without.solve(q)
        assert a.score == b.score, q.notation()
        fewer += a.nodes < b.nodes
    assert fewer > len(sample) // 2  # the database answers inside the search


def test_up_to_three_plies_above_the_database_an_analysis_is_read_not_searched(
    tmp_path: Path,
) -> None:
    # Every column of a position one ply before the database is a lookup; two and three
    # plies before, each column's position reads its children (or grandchildren) the same
    # way: no node searched, and Solver.lookup answers. The scores are a plain solver's,
    # column by column; a line read from the tiers is a line of best moves.
    width, height, stones = 5, 4, 8
    with_db, plain = with_and_without_database(tmp_path, width, height, stones)
    for ply in (stones - 1, stones - 2, stones - 3):
        for q in ongoing_sample(ply, width, height, 40):
            with_db.reset()
            plain.reset()
            searched = plain.analyze(q)
            read = with_db.lookup(q, all_moves=True)
            assert read is not None, q.notation()
            assert read.exact, q.notation()
            assert read.nodes == 0, q.notation()
            assert read.moves == searched.moves, q.notation()
            assert read.pv[0] == read.best_move
            line, score = q.copy(), read.score
            for move in read.pv:  # each move of the line keeps the score
                assert plain.analyze(line).moves[move] == score, (q.notation(), read.pv)  # type: ignore[index]
                line.push(move)
                score = -score
                if line.outcome() is not None:
                    break
            solved = with_db.lookup(q, all_moves=False)
            assert solved is not None, q.notation()
            assert solved.score == searched.score, q.notation()
            assert solved.best_move is not None
            assert read.moves is not None
            assert read.moves[solved.best_move] == searched.score, q.notation()
    # Four plies before, a column takes a search: lookup says so.
    far = ongoing_sample(stones - 4, width, height, 40)
    assert any(with_db.lookup(q, all_moves=True) is None for q in far)


def test_a_column_past_the_database_is_read_where_a_parent_in_it_plays_that_move(
    tmp_path: Path,
) -> None:
    # A position a ply past the database (9 stones on 5x4) whose parent in it (a stone of the
    # side that moved last taken off) names that stone as its best move scores the parent's
    # score, negated: an analysis at the database's own ply reads such columns instead of
    # searching them (Core.settled), and its scores stay a plain solver's.
    width, height, stones = 5, 4, 8
    with_db, plain = with_and_without_database(tmp_path, width, height, stones)
    core = with_db._core
    read = 0
    for q in ongoing_sample(stones, width, height, 60):
        with_db.reset()
        plain.reset()
        assert with_db.analyze(q).moves == plain.analyze(q).moves, q.notation()
        for column, value in core.settled(q.current, q.mask, q.ply).items():
            child = q.copy()
            child.push(column)
            if child.outcome() is not None:
                continue
            lo, hi, best = core.init(child.current, child.mask, child.ply)
            if lo == hi and best < 0:  # settled with no move of its own: by a parent
                read += 1
                assert -plain.solve(child).score == value, (q.notation(), column)
    assert read > 0


def test_with_the_database_a_ply_past_it_every_column_of_its_ply_is_read(
    tmp_path: Path,
) -> None:
    # The 8- and 9-stone databases of 5x4 (as the shipped 12 and 13 on 7x6): every column
    # of an 8-stone position is a lookup, with its exact score (a plain solver's), no node
    # searched; the odd database's entries are a fresh solver's, and searches agree.
    width, height, stones = 5, 4, 8
    even = built_in_process(tmp_path / "even", width, height, stones)
    odd = built_in_process(tmp_path / "odd", width, height, stones + 1)
    assert odd.stones == stones + 1
    both = Solver(width, height, table_bytes=1 << 20, databases=(even, odd))
    plain = Solver(width, height, table_bytes=1 << 20)
    for q in ongoing_sample(stones, width, height, 60):
        both.reset()
        plain.reset()
        read = both.lookup(q, all_moves=True)
        assert read is not None, q.notation()
        assert read.nodes == 0
        assert read.moves == plain.analyze(q).moves, q.notation()
    for q in ongoing_sample(stones - 3, width, height, 40):
        both.reset()
        plain.reset()
        assert both.analyze(q).moves == plain.analyze(q).moves, q.notation()


def test_a_solve_a_ply_past_the_database_starts_from_its_parents_and_names_a_best_move(
    tmp_path: Path,
) -> None:
    # Every 9-stone position of 5x4 (as the 13-stone build's on 7x6), solved in one batch
    # with the 8-stone database, whose entries bound each from below (exactly, where a
    # parent's best move made it): the scores are a plain solver's, every best move keeps
    # its score (a solve must name one, as a database entry needs), with fewer nodes.
    width, height, stones = 5, 4, 8
    with_db, plain = with_and_without_database(tmp_path, width, height, stones)
    notations = [
        Connect4.from_key(int(k), width, height).notation()
        for k in plan_keys(width, height, stones + 1)
    ]
    read, searched = with_db.solve_batch(notations), plain.solve_batch(notations)
    for notation, a, b in zip(notations[::7], read[::7], searched[::7], strict=True):
        one = with_db.solve(Connect4.parse(notation, "5x4"))  # the driver in Python
        for answer in (a, one):
            assert answer.exact
            assert answer.score == b.score, notation
            assert answer.best_move is not None
            after = Connect4.parse(notation, "5x4")
            after.push(answer.best_move)
            kept = (
                after.terminal_score() if after.outcome() is not None else plain.solve(after).score
            )
            assert kept == -answer.score, notation
    assert [a.score for a in read] == [b.score for b in searched]
    assert sum(a.nodes for a in read) < 0.9 * sum(b.nodes for b in searched)


def test_verify_checks_a_database_against_the_one_a_stone_shallower(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # plybot book verify's consistency check (7x6: 13 stones against the 12-stone
    # database), here on 5x4: 8 against 9 stones agree; a 9-stone database with every
    # score one off does not, and the disagreements are named.
    width, height, stones = 5, 4, 8
    even = built_in_process(tmp_path / "even", width, height, stones)
    odd = built_in_process(tmp_path / "odd", width, height, stones + 1)
    assert disagreements(even, odd, random.Random(1), 300) == 0
    assert "300/300 entries of the 8-stone database agree" in capsys.readouterr().err
    parts = Parts(tmp_path / "odd", width, height, stones + 1)
    slots, values = parts.read(parts.path(0))
    lowest, highest = score_bounds(width, height, stones + 1)
    wrong = np.where(values // width < highest - lowest, values + width, values - width)
    parts.write(0, slots, wrong.astype(np.uint8))
    damaged = open_database(parts)
    assert damaged is not None
    assert disagreements(even, damaged, random.Random(1), 300) > 0
    assert "WRONG: its columns read" in capsys.readouterr().out


def test_a_partial_database_answers_what_it_holds_and_nothing_else(tmp_path: Path) -> None:
    width, height, stones = 5, 4, 8
    full = built_in_process(tmp_path / "full", width, height, stones)
    keys_ = plan_keys(width, height, stones)
    half = keys_[: len(keys_) // 2]
    parts = Parts(tmp_path / "half", width, height, stones)
    positions = [Connect4.from_key(int(k), width, height) for k in half]
    answers = [a for a in (full.lookup(p) for p in positions) if a is not None]
    assert len(answers) == len(positions)
    slots, values = records_of(
        parts,
        (int(k) for k in half),
        (a[0] for a in answers),
        (a[1] for a in answers),
    )
    parts.write(0, slots, values)
    partial = open_database(parts)
    assert partial is not None
    assert len(partial) == len(half)
    assert partial.lookup(positions[0]) == answers[0]
    assert partial.lookup(Connect4.from_key(int(keys_[-1]), width, height)) is None
    solver = Solver(width, height, table_bytes=1 << 20, databases=(partial,))
    plain = Solver(width, height, table_bytes=1 << 20)
    # Where only some of a node's children are known (plies 7 and 6: the database a ply or
    # two down), the search answers the same.
    for q in [
        *positions_at(5, 5, 4)[::20],
        *positions_at(6, 5, 4)[::20],
        *positions_at(7, 5, 4)[::20],
    ]:
        if q.outcome() is not None:
            continue
        assert solver.solve(q).score == plain.solve(q).score, q.notation()
        assert solver.analyze(q).moves == plain.analyze(q).moves, q.notation()


def test_packing_again_only_when_the_parts_change(tmp_path: Path) -> None:
    parts = Parts(tmp_path / "db", 5, 4, 8)
    assert open_database(parts) is None  # no part: no database
    parts.write(0, np.array([5], dtype=np.uint32), np.array([3], dtype=np.uint8))
    first = open_database(parts)
    assert first is not None
    assert len(first) == 1
    packed = first.path.stat().st_mtime_ns
    assert open_database(parts) is not None
    assert first.path.stat().st_mtime_ns == packed
    parts.write(1, np.array([6], dtype=np.uint32), np.array([4], dtype=np.uint8))
    again = open_database(parts)
    assert again is not None
    assert len(again) == 2


OPEN_AND_SAY_WHAT_IS_MAPPED = """
import sys
from pathlib import Path
from engine.database import Parts, open_database
print("ready", flush=True)
sys.stdin.readline()
database = open_database(Parts(Path(sys.argv[1]), 7, 6, 12))
maps = Path("/proc/self/maps").read_text().splitlines()
print(next(line.split()[4] for line in maps if str(database.path) in line), flush=True)
sys.stdin.readline()
"""


def test_processes_opening_it_at_once_map_one_file(tmp_path: Path) -> None:
    """Workers starting together on a fresh machine (nothing packed yet) share one copy: one
    packs, the others wait and map the same file, not each a file of its own."""
    parts = Parts(tmp_path / "db", 7, 6, 12)  # a 7 MB packed file: packing takes a while
    parts.write(0, np.array([5, 9], dtype=np.uint32), np.array([3, 4], dtype=np.uint8))
    opening = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN_AND_SAY_WHAT_IS_MAPPED, str(parts.directory)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    try:
        for process in opening:
            assert process.stdout is not None
            assert process.stdout.readline() == "ready\n"
        for process in opening:  # all at once
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        mapped = {int(process.stdout.readline()) for process in opening if process.stdout}
    finally:
        for process in opening:
            process.communicate("\n", timeout=60)
    packed = tmp_path / "db.db"
    assert mapped == {packed.stat().st_ino}


# -- the build by the workers -------------------------------------------------------------


@pytest.mark.redis
@pytest.mark.slow
def test_workers_build_a_database_through_a_killed_builder_and_worker(
    clean_redis: redis.Redis,
    redis_url: str,
    worker_pool,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    width, height, stones, size = 5, 4, 8, 8
    out = tmp_path / "db"
    command = build_command(out, stones, size)
    env = {**os.environ, "REDIS_URL": redis_url}
    _, raw_starts = _core.layer_plan(width, height, stones, size)
    assert len(raw_starts) // 8 - 1 > WINDOW

    # 1-2. A builder killed after sending its window; workers solve chunks with no builder
    # there, and one of them dies holding a chunk.
    results = keys.book_results("5x4", stones, size)
    build_through_kills(command, env, clean_redis, worker_pool, results)

    # 3. The builder, run again, takes what was solved meanwhile and finishes the rest.
    try:
        again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired as stuck:
        pytest.fail(f"the builder did not finish: {(stuck.stderr or b'')[-2000:]!r}")
    assert again.returncode == 0, again.stderr
    reference = solved_reference(width, height, stones)
    assert again.stdout.startswith(f"{len(reference):,} positions with 8 stones, in ")
    assert not clean_redis.exists(results)

    # Entry by entry, the database equals a fresh solver's.
    database = open_database(Parts(out, width, height, stones))
    assert database is not None
    assert len(database) == len(reference)
    for key, score in reference.items():
        found = database.lookup(Connect4.from_key(key, width, height))
        assert found is not None
        assert found[0] == score

    # verify agrees; a wrong entry is caught.
    verify = [PLYBOT, "book", "verify", "--database", str(out), "--variant", "5x4",
              "--plies", "8", "--sample", "30"]  # fmt: skip
    checked = subprocess.run(verify, capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "30/30 re-solved agree" in checked.stderr
    parts = Parts(out, width, height, stones)
    slots, values = parts.read(parts.path(0))
    lowest, highest = score_bounds(width, height, stones)
    assert int(values.max()) // width <= highest - lowest
    wrong = np.where(values // width < highest - lowest, values + width, values - width)
    parts.write(0, slots, wrong.astype(np.uint8))  # every score of part 0 off by one
    checked = subprocess.run(verify, capture_output=True, text=True, timeout=300)
    assert checked.returncode == 1
    assert "WRONG: the solver says" in checked.stdout


@pytest.mark.redis
def test_a_chunk_taken_by_a_worker_that_died_at_once_is_sent_again(
    clean_redis: redis.Redis,
    redis_url: str,
    worker_pool,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    # A worker popped a chunk's id and died before starting it (RQ's own window with more
    # than one queue): the job waits in no queue and RQ never looks for it again. The
    # builder, waiting for it, sees that and puts it back.
    # An odd stone count, as the shipped 13-stone database: the side to move has the fewer.
    out = tmp_path / "db"
    command = build_command(out, 7, 100)
    env = {**os.environ, "REDIS_URL": redis_url}
    _, raw_starts = _core.layer_plan(5, 4, 7, 100)
    chunks = len(raw_starts) // 8 - 1
    builder = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    queue = Queue(KINDS["book"].queue, connection=clean_redis)
    wait_for(lambda: queue.count == chunks)
    taken = clean_redis.lpop(queue.key)  # the "dead" worker's pop
    assert taken is not None
    worker_pool(1, queues="interactive,analysis,book", env=SMALL_TABLE)
    out_text, _ = builder.communicate(timeout=120)
    assert builder.returncode == 0
    reference = solved_reference(5, 4, 7)
    assert out_text.startswith(f"{len(reference):,} positions with 7 stones, in ")
    database = open_database(Parts(out, 5, 4, 7))
    assert database is not None
    for key, score in reference.items():
        found = database.lookup(Connect4.from_key(key, 5, 4))
        assert found is not None
        assert found[0] == score


@pytest.mark.redis
def test_a_builder_stopped_by_sigterm_writes_what_it_kept(
    clean_redis: redis.Redis,
    redis_url: str,
    worker_pool,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    # The builder writes the parts every FLUSH_S; what it kept meanwhile is also in the
    # results hash. A SIGTERM (a supervisor's stop) writes what it holds before it exits.
    out = tmp_path / "db"
    command = build_command(out, 8, 8)
    env = {**os.environ, "REDIS_URL": redis_url}
    builder = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    results = keys.book_results("5x4", 8, 8)
    worker_pool(1, queues="book", env=SMALL_TABLE)
    # More chunks solved than the builder's window: it has kept some (and sent more).
    wait_for(lambda: clean_redis.hlen(results) > WINDOW)
    builder.send_signal(signal.SIGTERM)
    _, err = builder.communicate(timeout=60)
    assert builder.returncode == 130, err
    assert "stopped; run it again to resume" in err
    assert "Traceback" not in err
    database = open_database(Parts(out, 5, 4, 8))
    assert database is not None
    on_disk = 0
    for lines in clean_redis.hvals(results):
        for text in json.loads(lines):
            moves, score, _ = text.split()
            found = database.lookup(Connect4.parse(moves, "5x4"))
            if found is not None:
                assert found[0] == int(score), text
                on_disk += 1
    assert 0 < on_disk <= len(database)  # a checkpoint (every FLUSH_S) may have emptied the hash

"""The exact Connect Four solver: against brute force, Pons' benchmark sets, and its contracts."""

from __future__ import annotations

import functools
import itertools
import random
import re
import time
from collections.abc import Sequence

import pytest

from engine.answer import Analysis, Progress
from engine.bench.sets import load_set
from engine.cache import EXACT_DEPTH, CacheEntry, MemoryCache
from engine.connect4 import Connect4
from engine.errors import GameOverError, IllegalMoveError, NotationError
from engine.solver import Solver
from engine.solver._core import CHECK_EVERY
from tests.fixtures.waiting import wait_for

SMALL_TABLE = 1 << 20


@functools.cache
def solver(width: int = 7, height: int = 6) -> Solver:
    """One solver per board for the module: the compiled code loads once."""
    return Solver(width, height, table_bytes=4 << 20)


# -- a reference: plain minimax over engine.connect4 -------------------------------------------


def brute_force(position: Connect4) -> int:
    """The exact score by full minimax (memoised on the exact position)."""
    memo: dict[tuple[int, int], int] = {}

    def value(p: Connect4) -> int:
        if p.outcome() is not None:
            return p.terminal_score()
        key = (p.current, p.mask)
        if key not in memo:
            best = -99
            for move in p.legal_moves():
                p.push(move)
                best = max(best, -value(p))
                p.pop()
            memo[key] = best
        return memo[key]

    return value(position.copy())


def random_positions(width: int, height: int, empty: int, count: int, seed: int) -> list[str]:
    """``count`` unfinished positions with ``empty`` empty cells, reached by random play."""
    rng = random.Random(seed)
    found: list[str] = []
    while len(found) < count:
        p = Connect4(width, height)
        while p.ply < width * height - empty and p.outcome() is None:
            p.push(rng.choice(p.legal_moves()))
        if p.outcome() is None and p.notation() not in found:
            found.append(p.notation())
    return found


def sign(x: int) -> int:
    return (x > 0) - (x < 0)


SMALL_BOARDS = [(4, 4, 11), (5, 4, 10), pytest.param(6, 5, 10, marks=pytest.mark.slow)]


@pytest.mark.parametrize(("width", "height", "empty"), SMALL_BOARDS)
def test_small_boards_match_brute_force(width: int, height: int, empty: int) -> None:
    s = solver(width, height)
    variant = f"{width}x{height}"
    notations = random_positions(width, height, empty, 25, seed=width * 10 + height)
    batch = s.solve_batch(notations)
    for notation, result in zip(notations, batch, strict=True):
        p = Connect4.parse(notation, variant)
        exact = brute_force(p)
        assert result.score == exact, notation
        assert (result.exact, result.lower, result.upper) == (True, exact, exact)
        assert result.depth == width * height - p.ply
        assert result.pv == [result.best_move]
        assert s.solve(p).score == exact, notation
        assert s.solve(p, weak=True).score == sign(exact), notation
        assert s.solve_batch([notation], weak=True)[0].score == sign(exact), notation


def test_small_board_analysis_matches_brute_force() -> None:
    s = solver(5, 4)
    for notation in random_positions(5, 4, 11, 8, seed=7):
        p = Connect4.parse(notation, "5x4")
        result = s.analyze(p)
        expected = {}
        for move in p.legal_moves():
            p.push(move)
            expected[move] = -brute_force(p)
            p.pop()
        assert result.moves == expected, notation
        assert result.score == max(expected.values())
        assert result.best_move is not None
        assert expected[result.best_move] == result.score
        weak = s.analyze(p, weak=True)
        assert weak.moves == {m: sign(v) for m, v in expected.items()}


def play_out(notation: str, pv: list[int], variant: str = "7x6") -> Connect4:
    p = Connect4.parse(notation, variant)
    for move in pv:
        p.push(move)
    return p


def assert_pv_reaches(notation: str, result: Analysis, variant: str = "7x6") -> None:
    """The principal variation is legal and, played to the end, realises the score."""
    start = Connect4.parse(notation, variant)
    end = play_out(notation, result.pv, variant)
    assert end.outcome() is not None, "the PV runs to the end of the game"
    outcome = end.outcome()
    assert outcome is not None
    if outcome.winner is None:
        assert result.score == 0
    else:
        winner_stones = (end.ply + 1) // 2 if outcome.winner == 0 else end.ply // 2
        value = start.max_score() + 4 - winner_stones
        assert result.score == (value if outcome.winner == start.side_to_move else -value)


@pytest.mark.parametrize("notation", ["", "1", "23", "2231", "112233"])
def test_small_board_pv_realises_the_score(notation: str) -> None:
    s = solver(4, 4)
    result = s.solve(Connect4.parse(notation, "4x4"))
    assert result.exact
    assert result.depth == 16 - len(notation)
    assert result.score == brute_force(Connect4.parse(notation, "4x4"))
    assert_pv_reaches(notation, result, "4x4")


def test_an_analysis_without_its_line_has_the_same_scores() -> None:
    """``analyze(pv=False)``: the same scores and best move, the line only the best move."""
    s = Solver(5, 4, table_bytes=SMALL_TABLE)
    p = Connect4.parse("4455", "5x4")
    whole = s.analyze(p)
    s._core.reset()
    short = s.analyze(p, pv=False)
    assert (short.moves, short.score, short.best_move) == (
        whole.moves,
        whole.score,
        whole.best_move,
    )
    assert short.pv == [short.best_move]
    assert len(whole.pv) > 1


class CountingCache(MemoryCache):
    """A shared cache that counts its reads."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def get_many(self, game: str, variant: str, keys: Sequence[str]) -> list[CacheEntry | None]:
        self.reads += 1
        return super().get_many(game, variant, keys)


def test_what_the_book_settles_is_answered_before_the_shared_cache() -> None:
    """The lookup ladder: a position whose every column the book holds is answered with no
    read of the shared cache (the answer is still written for the service to find); a
    position past the book reads the cache before it searches."""
    from engine.analysis import analyze
    from engine.book import shipped_book

    cache = CountingCache()
    solver = Solver(7, 6, table_bytes=SMALL_TABLE, cache=cache, book=shipped_book(7, 6))
    booked = Connect4.parse("4455")
    assert solver.settles(booked, all_moves=True)
    answer = analyze(booked, mode="solve", all_moves=True, cache=cache, solver=solver)
    assert answer.exact
    assert cache.reads == 0
    assert cache.get_many("connect4", "7x6", [booked.key()])[0] is not None

    searched = Connect4.parse("5455174361263362")
    assert not solver.settles(searched, all_moves=True)
    cache.reads = 0
    assert analyze(searched, mode="solve", all_moves=True, cache=cache, solver=solver).exact
    assert cache.reads > 0


def test_an_analysis_the_book_settles_reports_one_step_then_its_answer() -> None:
    """Every column known before any search: one progress step with every column exact
    (a caller streaming progress shows them), then the answer; no step per column."""
    from engine.book import shipped_book

    solver = Solver(7, 6, table_bytes=SMALL_TABLE, book=shipped_book(7, 6))
    items = list(solver.iter_solve(Connect4.parse("4455"), analyze=True))
    *steps, answer = items
    assert isinstance(answer, Analysis)
    assert answer.moves is not None
    assert len(steps) == 1
    assert isinstance(steps[0], Progress)
    assert steps[0].bounds == {c: (m, m) for c, m in answer.moves.items()}


def test_the_line_stops_at_its_node_limit_and_keeps_what_it_found() -> None:
    """``Core.line`` walks the principal variation to the end of the game; with its node
    limit reached it stops, says so, and keeps the moves found so far (each legal)."""
    notation = "4455"
    s = Solver(5, 4, table_bytes=SMALL_TABLE)
    p = Connect4.parse(notation, "5x4")
    score = brute_force(p)
    whole, aborted, nodes = s._core.line(p.current, p.mask, p.ply, score, 0, 1 << 62)
    assert not aborted
    assert nodes > 0
    line = Analysis(whole[0], score, True, whole, None, 0, nodes, 0.0, False)
    assert_pv_reaches(notation, line, "5x4")

    s._core.reset()
    part, aborted, spent = s._core.line(p.current, p.mask, p.ply, score, 0, 1)
    assert aborted
    assert spent >= 1
    assert len(part) < len(whole)
    play_out(notation, part, "5x4")  # every move it kept is legal


# -- Pons' benchmark sets -----------------------------------------------------------------------


def check_set(name: str, every: int = 1, limit: int | None = None) -> None:
    items = load_set(name, limit)[::every]
    results = solver().solve_batch([moves for moves, _ in items])
    wrong = [
        (moves, expected, r.score)
        for (moves, expected), r in zip(items, results, strict=True)
        if r.score != expected
    ]
    assert not wrong, wrong[:5]
    for (moves, _), r in zip(items, results, strict=True):
        p = Connect4.parse(moves)
        assert r.best_move in p.legal_moves()


@pytest.mark.benchmarks
@pytest.mark.parametrize("name", ["Test_L3_R1", "Test_L2_R1", "Test_L1_R1"])
@pytest.mark.usefixtures("benchmarks_dir")
def test_every_position_of_the_easy_sets(name: str) -> None:
    check_set(name)


@pytest.mark.slow
@pytest.mark.benchmarks
@pytest.mark.parametrize(("name", "every"), [("Test_L2_R2", 25), ("Test_L1_R2", 40)])
@pytest.mark.usefixtures("benchmarks_dir")
def test_a_sample_of_the_medium_sets(name: str, every: int) -> None:
    """Every ``every``-th position: a fixed sample across the set, easy and hard alike."""
    check_set(name, every=every)


@pytest.mark.benchmarks
@pytest.mark.usefixtures("benchmarks_dir")
def test_weak_solve_gives_the_sign() -> None:
    items = load_set("Test_L2_R2", 300)[::10]
    s = solver()
    batch = s.solve_batch([m for m, _ in items], weak=True)
    assert [r.score for r in batch] == [sign(v) for _, v in items]
    for moves, expected in items[:10]:
        assert s.solve(Connect4.parse(moves), weak=True).score == sign(expected)


@pytest.mark.benchmarks
@pytest.mark.usefixtures("benchmarks_dir")
def test_analysis_agrees_with_solving_each_child() -> None:
    s = solver()
    for moves, expected in load_set("Test_L2_R1", 200)[::40]:
        p = Connect4.parse(moves)
        result = s.analyze(p)
        assert result.score == expected
        assert result.moves is not None
        assert set(result.moves) == set(p.legal_moves())
        wins = set(p.winning_moves())
        for column, score in result.moves.items():
            child = p.copy()
            child.push(column)
            if column in wins:
                assert score == p.max_score() + 4 - (p.ply // 2 + 1)
            else:
                assert score == -s.solve(child).score
        batch = s.solve_batch([moves], analyze=True)[0]
        assert batch.moves == result.moves
        assert batch.bounds == result.bounds
        assert (batch.score, batch.lower, batch.upper) == (expected, expected, expected)
        assert (batch.exact, batch.depth) == (True, result.depth)
        assert_pv_reaches(moves, result)


@pytest.mark.benchmarks
@pytest.mark.usefixtures("benchmarks_dir")
def test_pv_and_best_move_realise_the_score() -> None:
    s = solver()
    for moves, expected in load_set("Test_L2_R2", 100)[::20]:
        result = s.solve(Connect4.parse(moves))
        assert result.score == expected
        assert result.lower == result.upper == expected
        assert result.pv[0] == result.best_move
        assert_pv_reaches(moves, result)
        child = Connect4.parse(moves)
        child.push(result.best_move)
        if child.outcome() is None:
            assert -s.solve(child).score == expected


# -- contracts ----------------------------------------------------------------------------------


def test_iter_solve_narrows_then_answers() -> None:
    s = Solver(table_bytes=SMALL_TABLE)
    items = list(s.iter_solve(Connect4.parse("274552224131661")))
    progress, result = items[:-1], items[-1]
    assert isinstance(result, Analysis)
    assert result.score == 0
    assert result.exact
    assert (result.lower, result.upper, result.depth) == (0, 0, 42 - 15)
    assert progress
    assert all(isinstance(p, Progress) for p in progress)
    assert [p.depth for p in progress] == list(range(1, len(progress) + 1))
    for before, after in itertools.pairwise(progress):
        assert before.lower is not None
        assert before.upper is not None
        assert after.lower is not None
        assert after.upper is not None
        assert before.lower <= after.lower <= 0 <= after.upper <= before.upper
        assert before.nodes <= after.nodes
        assert before.time_ms <= after.time_ms
    assert all(p.score == p.lower and p.exact == (p.lower == p.upper) for p in progress)
    assert progress[-1].lower == progress[-1].upper == 0
    assert progress[-1].exact


def test_times_count_from_the_start_given() -> None:
    # An analysis that began earlier (a cache read, a solver loaded) hands its start over:
    # every step's and the answer's time_ms count from it, not from the solver's call.
    s = Solver(table_bytes=SMALL_TABLE)
    start = time.monotonic() - 10.0
    items = list(s.iter_solve(Connect4.parse("274552224131661"), start=start))
    assert items
    assert all(item.time_ms >= 10_000 for item in items)
    assert s.solve(Connect4.parse("121212")).time_ms < 10_000  # by default: from the call


def test_the_table_survives_from_one_solve_to_the_next() -> None:
    position = Connect4.parse("2537625266615")
    child = position.copy()
    child.push(1)  # the best move
    fresh = Solver(table_bytes=16 << 20)
    first = fresh.solve(child).nodes
    warm = Solver(table_bytes=16 << 20)
    warm.solve(position)
    assert warm.solve(child).nodes < first / 2
    again = warm.solve(position)
    assert again.nodes < first / 2
    warm.reset()
    assert warm.solve(child).nodes == first


def test_finished_and_foreign_positions_are_refused() -> None:
    s = solver()
    with pytest.raises(GameOverError, match="'1212121': the game is already over after move 7"):
        s.solve(Connect4.parse("1212121"))
    with pytest.raises(GameOverError):
        s.analyze(Connect4.parse("1212121"))
    with pytest.raises(NotationError, match="7x6"):
        s.solve(Connect4.parse("1", "5x4"))
    with pytest.raises(IllegalMoveError, match=re.escape("'4444444': column 4 is full (move 7)")):
        s.solve_batch(["44", "4444444"])
    outside = re.escape("'44448': column 8 is outside 1..7 (move 5)")
    with pytest.raises(NotationError, match=outside):
        s.solve_batch(["44448"])
    with pytest.raises(GameOverError, match="already over after move 7"):
        s.solve_batch(["1212121"])


def test_immediate_wins_and_forced_losses() -> None:
    s = solver()
    win = s.solve(Connect4.parse("121212"))  # first player wins now with its 4th stone
    assert (win.score, win.best_move, win.pv) == (18, 0, [0])
    # The first player holds columns 3-5 of the bottom row: two threats, the second loses.
    lost = s.solve(Connect4.parse("33445"))
    assert (lost.score, lost.lower, lost.upper, lost.exact) == (-18, -18, -18, True)
    assert lost.best_move is not None
    assert s.analyze(Connect4.parse("33445")).moves == dict.fromkeys(range(7), -18)


def test_deadline_is_respected_on_a_hard_position() -> None:
    s = Solver(table_bytes=SMALL_TABLE)
    s.solve(Connect4.parse("274552224131661"))  # loaded and warm; the empty board takes minutes
    # The deadline passes while the first null-window search is reported (the iteration
    # holds until it has): the next search stops at its first look at the clock, whatever
    # the machine's speed, with the bounds proven so far.
    position = Connect4.parse("7447442311")  # past the book: seconds of solving
    deadline = time.monotonic() + 2.0
    steps: list[Progress] = []
    result = None
    for step in s.iter_solve(position, deadline=deadline):
        if isinstance(step, Analysis):
            result = step
            break
        steps.append(step)
        wait_for(lambda: time.monotonic() >= deadline, "the deadline passed", timeout=60)
    assert result is not None
    assert len(steps) == 1
    assert_unfinished(result)
    assert steps[0].lower is not None
    assert steps[0].upper is not None
    assert result.lower is not None
    assert result.upper is not None
    assert steps[0].lower <= result.lower <= 3 <= result.upper <= steps[0].upper  # it scores 3
    assert result.nodes <= steps[0].nodes + CHECK_EVERY
    past = s.solve(Connect4.parse(""), deadline=time.monotonic() - 1)
    assert_unfinished(past)
    assert past.nodes <= 1


def assert_unfinished(result: Analysis) -> None:
    """A solve a limit stopped: not exact, its score the proven lower bound, and it says so."""
    assert not result.exact
    assert result.lower is not None
    assert result.upper is not None
    assert result.lower <= result.upper
    assert result.score == result.lower
    assert result.depth == 0
    assert "did not finish" in result.note
    assert result.pv == ([] if result.best_move is None else [result.best_move])


def test_node_limit_stops_the_search() -> None:
    s = Solver(table_bytes=SMALL_TABLE)
    result = s.solve(Connect4.parse("44"), node_limit=5000)
    assert_unfinished(result)
    assert result.moves is None
    assert 5000 <= result.nodes <= 5001
    analysis = s.analyze(Connect4.parse("44"), node_limit=5000)
    assert_unfinished(analysis)
    assert analysis.nodes <= 5001
    # Each column's figure is its proven lower bound; the best is one not proven worse.
    assert analysis.bounds is not None
    assert analysis.moves == {c: lo for c, (lo, _) in analysis.bounds.items()}
    assert analysis.best_move is not None
    assert analysis.moves[analysis.best_move] == analysis.score == max(analysis.moves.values())


# -- the external cache -------------------------------------------------------------------------

MIDGAME = "2537625266615"  # score 4, one best move: column 2 (index 1)


def mirrored(notation: str) -> str:
    return "".join(str(8 - int(c)) for c in notation)


def test_solve_writes_the_root_and_an_exact_hit_answers_at_once() -> None:
    cache = MemoryCache()
    first = Solver(table_bytes=SMALL_TABLE, cache=cache).solve(Connect4.parse(MIDGAME))
    p = Connect4.parse(MIDGAME)
    entry = cache.entries[("connect4", "7x6", p.key())]
    assert (first.score, first.best_move) == (4, 1)
    assert entry == CacheEntry(4, 4, EXACT_DEPTH, p.to_canonical(1))
    other = Solver(table_bytes=SMALL_TABLE, cache=cache)
    hit = other.solve(Connect4.parse(MIDGAME))
    assert hit.cache_hit
    assert hit.nodes == 0
    assert hit.exact
    assert hit.depth == 42 - len(MIDGAME)
    assert (hit.score, hit.best_move) == (4, 1)
    mirror = other.solve(Connect4.parse(mirrored(MIDGAME)))
    assert mirror.cache_hit
    assert (mirror.score, mirror.best_move) == (4, 5)


def test_analysis_writes_the_children_and_they_seed_the_next_solve() -> None:
    cache = MemoryCache()
    p = Connect4.parse(MIDGAME)
    analysis = Solver(table_bytes=SMALL_TABLE, cache=cache).analyze(p)
    assert analysis.moves is not None
    for column, score in analysis.moves.items():
        child = p.copy()
        child.push(column)
        entry = cache.entries[("connect4", "7x6", child.key())]
        assert entry.exact
        assert entry.lower == -score
    # With the children known, a fresh solver proves the root with far fewer nodes.
    del cache.entries[("connect4", "7x6", p.key())]
    cold = Solver(table_bytes=SMALL_TABLE).solve(p)
    seeded = Solver(table_bytes=SMALL_TABLE, cache=cache).solve(p)
    assert seeded.score == cold.score == 4
    assert not seeded.cache_hit
    assert seeded.nodes < cold.nodes / 4
    assert cache.reads > 0


def test_a_weak_result_is_cached_as_bounds() -> None:
    cache = MemoryCache()
    p = Connect4.parse("5455174361263362")  # -1: a loss
    Solver(table_bytes=SMALL_TABLE, cache=cache).solve(p, weak=True)
    entry = cache.entries[("connect4", "7x6", p.key())]
    assert entry.upper == -1
    assert entry.lower < -1
    assert not entry.exact
    hit = Solver(table_bytes=SMALL_TABLE, cache=cache).solve(p, weak=True)
    assert hit.cache_hit
    assert hit.score == -1
    strong = Solver(table_bytes=SMALL_TABLE, cache=cache).solve(p)
    assert not strong.cache_hit
    assert strong.score == -1


class RaisingCache:
    def __init__(self) -> None:
        self.calls = 0

    def get_many(self, _game: str, _variant: str, _keys: list[str]) -> list[CacheEntry | None]:
        self.calls += 1
        raise ConnectionError("redis is down")

    def put_many(self, _game: str, _variant: str, _items: list[tuple[str, CacheEntry]]) -> None:
        self.calls += 1
        raise ConnectionError("redis is down")


class JunkCache:
    """Answers with nonsense: wrong types, impossible bounds, the wrong number of entries."""

    def __init__(self, answer: object) -> None:
        self.answer = answer

    def get_many(self, _game: str, _variant: str, keys: list[str]) -> object:
        return self.answer(keys) if callable(self.answer) else self.answer

    def put_many(self, _game: str, _variant: str, _items: list[tuple[str, CacheEntry]]) -> None:
        return None


@pytest.mark.parametrize(
    "cache",
    [
        RaisingCache(),
        JunkCache(None),
        JunkCache([]),
        JunkCache(lambda keys: ["junk"] * len(keys)),
        JunkCache(lambda keys: [CacheEntry(-99, 99, EXACT_DEPTH, 3)] * len(keys)),
        JunkCache(lambda keys: [CacheEntry(5, 5, 3, 9)] * len(keys)),  # shallow: not a proof
        JunkCache(lambda keys: [CacheEntry(0, 0, EXACT_DEPTH, 17)] + [None] * (len(keys) - 1)),
    ],
    ids=["raises", "none", "empty", "strings", "out-of-range", "shallow", "bad-move"],
)
def test_a_broken_cache_never_breaks_a_solve(cache: object) -> None:
    s = Solver(table_bytes=SMALL_TABLE, cache=cache)  # type: ignore[arg-type]
    result = s.solve(Connect4.parse("5455174361263362"))
    assert result.exact
    assert result.score == -1
    assert not result.cache_hit
    assert s.analyze(Connect4.parse("5455174361263362")).score == -1
    if isinstance(cache, RaisingCache):
        assert cache.calls >= 2


# -- interruptible, and the GIL released while it searches ---------------------------------------


def test_another_thread_interrupts_a_running_solve_and_runs_meanwhile() -> None:
    import threading

    from tests.fixtures.waiting import wait_for

    s = Solver(table_bytes=SMALL_TABLE)
    results: list[Analysis] = []
    started = threading.Event()

    def solve_the_empty_board() -> None:  # minutes of search: it cannot end on its own first
        started.set()
        results.append(s.solve(Connect4(), pv=False))

    thread = threading.Thread(target=solve_the_empty_board)
    thread.start()
    started.wait()
    # This thread keeps running while the other searches: the search released the GIL
    # (held, this loop could not run until the solve ended, minutes later).
    ticks = [0]

    def ticked() -> bool:
        ticks[0] += 1
        return ticks[0] >= 5

    wait_for(ticked, "the main thread to run beside the search")
    assert thread.is_alive()
    # Interrupt until it has returned (a first call may come before its search starts).
    while thread.is_alive():
        s.interrupt()
        thread.join(timeout=0.05)
    (result,) = results
    assert_unfinished(result)
    assert result.lower is not None
    assert result.upper is not None
    assert result.lower <= 1 <= result.upper  # the empty board is a first-player win by 1
    # The next solve starts with its own deadline: the interrupt does not outlive its solve.
    assert s.solve(Connect4.parse("121212")).score == 18


# -- an analysis's columns in threads sharing the table ------------------------------------


def test_columns_settled_in_threads_score_as_one_thread_does() -> None:
    # Brute force on 5x4 (every column, weak too), then Pons' positions on 7x6 against the
    # one-thread analysis: two and three threads, each column reported as it settles.
    small = Solver(5, 4, table_bytes=SMALL_TABLE)
    small.threads = 2
    for notation in random_positions(5, 4, 11, 8, seed=7):
        p = Connect4.parse(notation, "5x4")
        small.reset()
        expected = {}
        for move in p.legal_moves():
            p.push(move)
            expected[move] = -brute_force(p)
            p.pop()
        assert small.analyze(p).moves == expected, notation
        assert small.analyze(p, weak=True).moves == {m: sign(v) for m, v in expected.items()}
    one = solver()
    for threads in (2, 3):
        many = Solver(table_bytes=4 << 20)
        many.threads = threads
        for moves, expected in load_set("Test_L2_R1", 200)[::25]:
            p = Connect4.parse(moves)
            steps = list(many.iter_solve(p, analyze=True))
            answer = steps[-1]
            assert isinstance(answer, Analysis)
            assert answer.exact
            assert (answer.score, answer.moves) == (expected, one.analyze(p).moves), moves
            assert_pv_reaches(moves, answer)
            settled = [
                sum(lo == hi for lo, hi in (step.bounds or {}).values())
                for step in steps[:-1]
                if isinstance(step, Progress)
            ]
            assert settled == sorted(settled)  # each step settles more, never fewer


def test_columns_in_threads_stop_at_the_deadline_with_what_they_proved() -> None:
    s = Solver(table_bytes=SMALL_TABLE)
    s.threads = 2
    s.solve(Connect4.parse("274552224131661"))  # loaded and warm
    position = Connect4.parse("7447442311")  # past the book: seconds of solving
    # Its deadline passed already: every thread stops at its first look at the clock.
    result = s.analyze(position, deadline=time.monotonic() - 1)
    assert_unfinished(result)
    assert result.bounds is not None
    assert set(result.bounds) == set(position.legal_moves())
    assert all(lo <= hi for lo, hi in result.bounds.values())
    # Proven bounds hold the exact scores (a plain analysis, one thread).
    exact = solver().analyze(position, deadline=None)
    assert exact.moves is not None
    for column, (lo, hi) in result.bounds.items():
        assert lo <= exact.moves[column] <= hi, column


def test_an_interrupted_batch_marks_the_rest_aborted() -> None:
    import threading

    s = Solver(table_bytes=SMALL_TABLE)
    batches = []
    started = threading.Event()

    def run() -> None:
        started.set()
        batches.append(s.run_batch(["", "4", "121212"]))

    thread = threading.Thread(target=run)
    thread.start()
    started.wait()
    # Interrupt until the batch has ended (the first call may come before its search starts).
    while thread.is_alive():
        s.interrupt()
        thread.join(timeout=0.05)
    (batch,) = batches
    assert [batch.aborted(i) for i in range(3)] == [True, True, True]
    assert "not solved before the deadline" in str(batch.error(0))

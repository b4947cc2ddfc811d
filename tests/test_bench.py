"""Benchmark sets: finding and reading them, ``run_set``, and ``plybot bench``."""

from __future__ import annotations

import math
import os
import re
import statistics
import sys
from pathlib import Path

import pytest

from engine.bench.cli import main
from engine.bench.games import play_games
from engine.bench.sets import SETS, BenchmarkError, find_benchmarks, load_set, set_name
from engine.bench.solving import format_seconds, run_set
from engine.bench.stats import quantile
from engine.solver import Solver
from tests.fixtures.tools import TOOLS, require_tool

# Scores checked against the real files (Test_L2_R1, Test_L2_R2); the third is wrong on purpose.
TINY_SET = "274552224131661 0\n5455174361263362 -1\n2531276566711153 3\n"


@pytest.fixture
def fake_sets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with a three-line ``Test_L3_R1`` whose last score is wrong."""
    (tmp_path / "Test_L3_R1").write_text(TINY_SET)
    monkeypatch.setenv("PLYBOT_BENCHMARKS", str(tmp_path))
    return tmp_path


def test_names_and_finding(fake_sets: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert SETS[0] == "Test_L3_R1"
    assert SETS[-1] == "Test_L1_R3"
    assert len(SETS) == 6
    assert set_name("l3_r1") == set_name("Test_L3_R1") == set_name("L3R1") == "Test_L3_R1"
    with pytest.raises(BenchmarkError, match="'L9_R9': unknown benchmark set"):
        set_name("L9_R9")
    assert find_benchmarks() == fake_sets
    assert load_set("L3_R1") == [
        ("274552224131661", 0),
        ("5455174361263362", -1),
        ("2531276566711153", 3),
    ]
    assert load_set("L3_R1", limit=1) == [("274552224131661", 0)]
    monkeypatch.setenv("PLYBOT_BENCHMARKS", str(fake_sets / "missing"))
    assert find_benchmarks() is None
    with pytest.raises(BenchmarkError, match="not found"):
        load_set("L3_R1")


@pytest.mark.usefixtures("fake_sets")
def test_run_set_reports_times_nodes_and_mismatches() -> None:
    seen = []
    report = run_set(
        Solver(table_bytes=1 << 20),
        "L3_R1",
        on_progress=lambda r, total: seen.append((r.positions, total)),
    )
    assert report.positions == 3
    assert report.matches == 2
    [wrong] = report.mismatches
    assert (wrong.line, wrong.moves, wrong.expected, wrong.got) == (3, "2531276566711153", 3, 2)
    assert all(s > 0 for s in report.seconds)
    assert all(n > 0 for n in report.nodes[1:])
    # The mean and median are the statistics of the measured times (no order between them holds).
    assert report.mean == pytest.approx(statistics.fmean(report.seconds))
    assert report.median == pytest.approx(statistics.median(report.seconds))
    assert report.nodes_per_second > 0
    assert seen[-1] == (3, 3)


@pytest.mark.usefixtures("fake_sets")
def test_the_command_fails_on_a_mismatch_naming_the_line(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["L3_R1", "--table-mb", "4"]) == 1
    out, err = capsys.readouterr()
    assert "plybot bench: Test_L3_R1 line 3: '2531276566711153': solved 2, expected 3" in err
    assert "3/3" in err  # the progress bar
    header, _rule, row = out.splitlines()[1:4]
    assert header.split()[:3] == ["set", "positions", "exact"]
    assert row.split()[:3] == ["Test_L3_R1", "3", "2"]
    assert "C++ mean" in header
    assert row.endswith("x")


@pytest.mark.usefixtures("fake_sets")
def test_the_command_rejects_bad_arguments(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["L9"]) == 2
    assert main(["L3_R1", "--limit", "0"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "plybot bench: 'L9': unknown benchmark set (known: " + ", ".join(SETS) + ")",
        "plybot bench: '0': --limit must be positive",
    ]


def write_peer(folder: Path, body: str) -> Path:
    """An executable peer solver: a Python script reading positions on stdin, ``body`` per line
    (``moves`` holds the line's position, ``known`` the fake set's scores)."""
    path = folder / "peer"
    path.write_text(
        f"#!{sys.executable}\n"
        "import os, sys\n"
        f"known = dict(l.split() for l in open({str(folder / 'Test_L3_R1')!r}))\n"
        "for line in sys.stdin:\n"
        "    moves = line.strip()\n"
        + "".join(f"    {b}\n" for b in body.splitlines())
        + "    sys.stdout.flush()\n"
    )
    path.chmod(0o755)
    return path


def test_side_by_side_with_a_peer(fake_sets: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    # The peer answers the set's own scores, and only from an empty working directory (as
    # Pons' solver, which would load an opening book found there).
    peer = write_peer(
        fake_sets,
        "print(moves, known[moves] if not os.listdir() else 99, 123, 456)",
    )
    times = fake_sets / "times.tsv"
    assert main(["L3_R1", "--peer", str(peer), "--times", str(times), "--table-mb", "4"]) == 1
    out, err = capsys.readouterr()
    # plybot is right where the set is wrong; the peer, reading the set, agrees with it.
    assert err.splitlines()[-1] == (
        "plybot bench: Test_L3_R1 line 3: '2531276566711153': plybot solved 2, expected 3"
    )
    assert out.splitlines()[0].startswith(f"strong solve, side by side with {peer}")
    header, _rule, row = out.splitlines()[1:4]
    assert header.split()[:4] == ["set", "positions", "exact", "peer"]
    assert "ratio of means" in header
    assert row.split()[:4] == ["Test_L3_R1", "3", "2", "3"]
    lines = [line.split("\t") for line in times.read_text().splitlines()]
    assert [line[:5] + line[7:8] for line in lines] == [
        ["Test_L3_R1", "1", "274552224131661", "0", "0", "0"],
        ["Test_L3_R1", "2", "5455174361263362", "-1", "-1", "-1"],
        ["Test_L3_R1", "3", "2531276566711153", "3", "2", "3"],
    ]
    # Wall and CPU seconds for both (the peer's CPU time from /proc: this is Linux).
    assert all(float(line[i]) > 0 for line in lines for i in (5, 6, 8, 9))
    assert "CPU time per position" in out.splitlines()[0]


def test_a_peer_that_is_wrong_or_broken(fake_sets: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    wrong = write_peer(fake_sets, "print(moves, 5)")
    assert main(["L3_R1", "--limit", "1", "--peer", str(wrong)]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        "plybot bench: Test_L3_R1 line 1: '274552224131661': the peer solved 5, expected 0"
    )
    garbled = write_peer(fake_sets, "print('nonsense')")
    assert main(["L3_R1", "--peer", str(garbled)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"plybot bench: '{garbled}' answered 'nonsense' to '274552224131661' "
        "(expected '<position> <score> ...')"
    )
    quitter = write_peer(fake_sets, "break")
    assert main(["L3_R1", "--peer", str(quitter)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"plybot bench: '{quitter}' ended without answering '274552224131661'"
    )
    missing = fake_sets / "no-such-solver"
    assert main(["L3_R1", "--peer", str(missing)]) == 2
    assert capsys.readouterr().err.startswith(f"plybot bench: '{missing}': cannot run the peer: ")


def test_format_seconds() -> None:
    assert format_seconds(16e-6) == "16 µs"
    assert format_seconds(0.00044) == "440 µs"
    assert format_seconds(0.0063) == "6.3 ms"
    assert format_seconds(12.5) == "12.5 s"


@pytest.mark.benchmarks
@pytest.mark.usefixtures("benchmarks_dir")
def test_the_real_sets_run_clean(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["L3_R1", "L2_R1", "--limit", "50"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines()[3:]]
    assert [r[:3] for r in rows] == [["Test_L3_R1", "50", "50"], ["Test_L2_R1", "50", "50"]]


def test_games_perfect_against_a_level(capsys) -> None:  # type: ignore[no-untyped-def]
    # No deadline: every move exact (the book, then the solver), whatever the machine's speed.
    report = play_games(2, "easy", move_s=None)
    assert (report.games, report.won, report.drawn, report.lost) == (2, 2, 0, 0)
    assert report.not_exact == 0
    assert sorted(report.times)[:2] == [0, 1]  # it moved first in one game, second in the other
    assert main(["--games", "1", "--opponent", "easy"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        "perfect vs easy, 1 games, 2 s a move: won 1, drawn 0, lost 0; "
        "worse than its first exact score said: 0"
    )
    assert out[1].startswith("perfect's moves: ")
    assert re.search(r", not exact \d+; median ", out[1])  # 2 s a move: a slow machine may miss
    assert out[2].split() == ["ply", "moves", "median", "max"]
    assert out[3].split()[:2] == ["0", "1"]
    assert main(["--games", "0"]) == 2
    assert main(["--games", "1", "--opponent", "grandmaster"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "plybot bench: '0': --games must be positive",
        "plybot bench: 'grandmaster': unknown level (known: easy, medium, hard, perfect) "
        "(or 'random')",
    ]


def test_games_against_random_moves_and_from_random_starts() -> None:
    report = play_games(2, "random", move_s=None)
    assert (report.games, report.won, report.not_exact) == (2, 2, 0)
    # Starts drawn from plies 0..1: whatever perfect's first exact score promised, it keeps
    # (no deadline: no move of its is an estimate, whatever the machine's speed).
    report = play_games(4, "random", move_s=None, start_ply=1)
    assert report.games == 4
    assert report.start_ply == 1
    assert report.worse_than_start == 0
    assert report.won + report.drawn + report.lost == 4


#: bitbully, in a virtualenv of its own (a peer measured, never a dependency): `make tools`.
BITBULLY = TOOLS / "bitbully" / "bin" / "python"


def test_the_side_by_side_with_bitbully_checks_every_column(
    capsys: pytest.CaptureFixture[str],
) -> None:
    python = os.environ.get("PLYBOT_BITBULLY_PYTHON") or str(BITBULLY)
    require_tool(python, "bitbully")
    # Plies the book and the search answer at once: 2 random-game and 2 uniform positions each.
    assert main(["--vs-bitbully", python, "--plies", "3-4", "--per-ply", "2"]) == 0
    out = capsys.readouterr().out
    rows = [
        line for line in out.splitlines() if line.startswith("| 3 |") or line.startswith("| 4 |")
    ]
    assert len(rows) == 2
    assert all(row.endswith("| 4/4 |") for row in rows)  # every column's score agreed


def test_the_side_by_side_refuses_a_bad_ply_range(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--vs-bitbully", sys.executable, "--plies", "9-x"]) == 2
    assert "'9-x': --plies must be A-B" in capsys.readouterr().err


def test_the_quantile_is_the_nearest_rank() -> None:
    hundred = [float(v) for v in range(100, 0, -1)]
    assert quantile(hundred, 0.99) == 99.0
    assert quantile(hundred, 0.5) == 50.0
    assert quantile(hundred, 1.0) == 100.0
    assert quantile(hundred, 0.0) == 1.0
    assert quantile([3.0, 1.0, 2.0, 4.0], 0.5) == 2.0
    assert math.isnan(quantile([], 0.99))


def test_memory_of_a_fresh_worker_like_process(capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["--memory", "4x4", "tictactoe", "--move-ms", "500"]) == 0
    lines = capfd.readouterr().out.splitlines()
    assert lines[0].startswith("a worker, warm (the 7x6 solver and its table made): ")
    assert [line.split()[0] for line in lines[3:]] == ["4x4", "tictactoe", "all"]
    for line in lines[3:]:
        assert line.split()[3].startswith(("+", "-")), line  # the growth, signed
    assert main(["--memory", "99x2"]) == 2
    assert "plybot bench: '99x2'" in capfd.readouterr().err

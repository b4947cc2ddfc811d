"""``plybot solve``: the benchmark files' format, --weak, --analyze, and bad lines."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from engine.bench.sets import load_set
from engine.cli.solve import main


def run(
    argv: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stdin: str = "",
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_positions_as_arguments(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run(["274552224131661", "5455174361263362", "121212"], capsys, monkeypatch)
    assert (code, err) == (0, "")
    assert out == "274552224131661 0\n5455174361263362 -1\n121212 18\n"


def test_stdin_one_position_per_line_first_field_only(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    stdin = "274552224131661 0\n\n5455174361263362\n   \n121212 whatever\n"
    code, out, err = run([], capsys, monkeypatch, stdin)
    assert (code, err) == (0, "")
    assert out.splitlines() == ["274552224131661 0", "5455174361263362 -1", "121212 18"]


def test_weak_prints_the_sign(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run(
        ["--weak", "274552224131661", "5455174361263362", "121212"], capsys, monkeypatch
    )
    assert code == 0
    assert out == "274552224131661 0\n5455174361263362 -1\n121212 1\n"


@pytest.mark.slow
def test_analyze_appends_every_column_with_x_for_full(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run(["--analyze", "444444", "33445"], capsys, monkeypatch)
    assert code == 0
    first, second = out.splitlines()
    fields = first.split()
    assert fields[0] == "444444"
    assert len(fields) == 2 + 7
    assert fields[2 + 3] == "x"
    scores = [int(f) for i, f in enumerate(fields[2:]) if i != 3]
    assert int(fields[1]) == max(scores)
    assert second == "33445 -18 " + " ".join(["-18"] * 7)
    code, out, _ = run(["--analyze", "--weak", "33445"], capsys, monkeypatch)
    assert out == "33445 -1 " + " ".join(["-1"] * 7) + "\n"


def test_bad_lines_are_named_and_the_rest_answered(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    stdin = "121212\n44448\n\n4444444\n1212121\n12a\n5455174361263362\n"
    code, out, err = run([], capsys, monkeypatch, stdin)
    assert code == 2
    assert out.splitlines() == ["121212 18", "5455174361263362 -1"]
    assert err.splitlines() == [
        "plybot solve: line 2: '44448': column 8 is outside 1..7 (move 5)",
        "plybot solve: line 4: '4444444': column 4 is full (move 7)",
        "plybot solve: line 5: '1212121': the game is already over after move 7",
        "plybot solve: line 6: '12a': 'a' is not a column digit (move 3)",
    ]


def test_other_board_sizes_and_bad_options(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run(["--variant", "4x4", "1122", "11223"], capsys, monkeypatch)
    assert code == 0
    assert len(out.splitlines()) == 2
    code, out, err = run(["--variant", "9x9", "1"], capsys, monkeypatch)
    assert code == 2
    assert out == ""
    assert "9x9" in err
    assert len(err.splitlines()) == 1
    with pytest.raises(SystemExit) as exc:
        run(["--table-mb", "lots"], capsys, monkeypatch)
    assert exc.value.code == 2


@pytest.mark.benchmarks
def test_output_matches_a_benchmark_file_line_for_line(
    benchmarks_dir: Path,
    capsys,  # type: ignore[no-untyped-def]
    monkeypatch,
) -> None:
    text = (benchmarks_dir / "Test_L2_R1").read_text()
    code, out, err = run([], capsys, monkeypatch, text)
    assert (code, err) == (0, "")
    assert out == text
    assert len(load_set("Test_L2_R1")) == len(out.splitlines()) == 1000


def test_the_installed_command_reads_stdin() -> None:
    plybot = Path(sys.executable).with_name("plybot")
    done = subprocess.run(
        [str(plybot), "solve", "--weak"],
        input="121212\n12x\n33445\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == "121212 1\n33445 -1\n"
    assert done.stderr == "plybot solve: line 2: '12x': 'x' is not a column digit (move 3)\n"


def test_solve_reads_the_book_and_no_book_searches_to_the_same_scores(
    capsys,  # type: ignore[no-untyped-def]
    monkeypatch,
) -> None:
    from engine.book import shipped_book
    from engine.connect4 import Connect4

    book = shipped_book()
    assert book is not None
    # Ply-8 positions the book holds, each with a quick win or loss for a search.
    notations = ["11211121", "11121212", "22112111", "21112121", "4453"]
    expected = []
    for notation in notations:
        found = book.lookup(Connect4.parse(notation))
        assert found is not None
        expected.append(f"{notation} {found[0]}")
    code, out, err = run(notations, capsys, monkeypatch)
    assert (code, err, out.splitlines()) == (0, "", expected)
    code, out, err = run(["--no-book", *notations[:4]], capsys, monkeypatch)
    assert (code, err, out.splitlines()) == (0, "", expected[:4])


def test_the_engine_commands_found_at_once_are_the_declared_entry_points() -> None:
    from importlib.metadata import entry_points

    from engine.cli import ENGINE_COMMANDS, GROUP

    declared = {ep.name: ep.value.split(":")[0] for ep in entry_points(group=GROUP)}
    assert {name: declared.get(name) for name in ENGINE_COMMANDS} == ENGINE_COMMANDS
    assert all(ep.value.endswith(":main") for ep in entry_points(group=GROUP))

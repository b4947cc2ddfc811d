"""The job contract: JSON round trips, and validation errors that name the field and the problem."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from engine.levels import LEVELS as ENGINE_LEVELS
from worker.core.contract import (
    LEVELS,
    AnalysisRequest,
    AnalysisResult,
    Event,
    JobState,
    MoveRequest,
    MoveResult,
    Progress,
)
from worker.core.settings import get_settings


def error_of(model: type, **fields: object) -> tuple[tuple, str]:
    with pytest.raises(ValidationError) as caught:
        model(**fields)
    first = caught.value.errors()[0]
    return first["loc"], first["msg"]


def test_requests_round_trip_through_json() -> None:
    for request in (
        AnalysisRequest(game="connect4", position="4453", mode="solve", moves="all"),
        AnalysisRequest(game="connect4", position="44", mode="depth", depth=12),
        AnalysisRequest(game="tictactoe", position="15", mode="time", time_ms=500),
        MoveRequest(game="connect4", position="4", level="easy", deadline_ms=800),
    ):
        wire = request.model_dump_json()
        assert json.loads(wire)["position"] == request.position
        assert type(request).model_validate_json(wire) == request


def test_results_states_and_events_round_trip() -> None:
    result = AnalysisResult(
        best_move="4",
        score=1,
        exact=True,
        pv=["4", "4"],
        moves={"3": -1, "4": 1},
        depth=38,
        nodes=1234,
        time_ms=5.5,
        cache="hit",
        worker="w1",
    )
    state = JobState(
        id="abc",
        kind="analysis",
        status="done",
        request=AnalysisRequest(position="4453"),
        progress=Progress(depth=3, score=1, pv=["4"], nodes=10, time_ms=1.0),
        result=result,
    )
    again = JobState.model_validate_json(state.model_dump_json())
    assert again == state
    assert isinstance(again.result, AnalysisResult)
    move_state = JobState(
        id="m",
        kind="move",
        status="done",
        request=MoveRequest(position="4"),
        result=MoveResult(move="4", score=None),
    )
    assert isinstance(JobState.model_validate_json(move_state.model_dump_json()).result, MoveResult)
    event = Event(type="progress", job_id="abc", seq=2, progress=state.progress)
    assert Event.model_validate_json(event.model_dump_json()) == event


def test_defaults_are_canonical_so_identical_requests_share_a_dedupe_key() -> None:
    a = AnalysisRequest(position="4453")
    b = AnalysisRequest(game="connect4", variant="7x6", position="4453", mode="solve")
    assert a.variant == "7x6"
    assert a.dedupe_key() == b.dedupe_key()
    assert a.dedupe_key() != AnalysisRequest(position="4453", moves="all").dedupe_key()
    assert a.dedupe_key() != AnalysisRequest(position="4454").dedupe_key()


@pytest.mark.parametrize(
    ("fields", "loc", "words"),
    [
        ({"game": "chess"}, "game", ["'chess'", "unknown game", "connect4"]),
        ({"position": "44448"}, "position", ["'44448'", "column 8", "move 5"]),
        ({"position": "4444444"}, "position", ["column 4 is full", "move 7"]),
        ({"position": "1212121"}, "position", ["already over", "move 7"]),
        ({"position": "x"}, "position", ["'x'", "not a column digit"]),
        ({"variant": "7y6"}, "variant", ["'7y6'", "WIDTHxHEIGHT"]),
        ({"mode": "depth"}, "depth", ["needs a depth"]),
        ({"mode": "depth", "depth": 0}, "depth", ["greater than or equal to 1"]),
        ({"mode": "time"}, "time_ms", ["needs time_ms"]),
        ({"mode": "solve", "depth": 3}, "depth", ["only for mode 'depth'"]),
        ({"mode": "fast"}, "mode", ["'solve', 'depth' or 'time'"]),
        ({"moves": "some"}, "moves", ["'best' or 'all'"]),
        ({"colour": "red"}, "colour", ["Extra inputs are not permitted"]),
    ],
)
def test_analysis_request_errors_name_the_field_and_the_problem(
    fields: dict, loc: str, words: list[str]
) -> None:
    where, message = error_of(AnalysisRequest, **fields)
    assert where == (loc,)
    for word in words:
        assert word in message


def test_limits_come_from_settings() -> None:
    settings = get_settings()
    where, message = error_of(AnalysisRequest, mode="depth", depth=settings.max_depth + 1)
    assert where == ("depth",)
    assert f"beyond the limit of {settings.max_depth}" in message
    where, message = error_of(AnalysisRequest, mode="time", time_ms=settings.max_time_ms + 1)
    assert where == ("time_ms",)
    assert str(settings.max_time_ms) in message
    long = "1" * (settings.max_position_length + 1)
    where, message = error_of(AnalysisRequest, position=long)
    assert where == ("position",)
    assert f"{len(long)} moves long" in message
    where, message = error_of(MoveRequest, deadline_ms=settings.max_move_deadline_ms + 1)
    assert where == ("deadline_ms",)
    assert "beyond the limit" in message


def test_move_request_levels_are_the_engines() -> None:
    assert tuple(LEVELS) == tuple(ENGINE_LEVELS)
    where, message = error_of(MoveRequest, level="godlike")
    assert where == ("level",)
    assert "'perfect'" in message
    assert MoveRequest(game="tictactoe", position="5").variant == "3x3"


def test_each_job_kind_names_a_function_of_its_own_models() -> None:
    """The job-kind table and the job functions agree: each kind's function (by the dotted
    path RQ's record carries) exists and takes the kind's request model and returns its
    result model; every queue is served, in the table's order."""
    import importlib
    import inspect

    from worker.core.kinds import KINDS, QUEUES, kind_of

    assert QUEUES == ("interactive", "analysis", "book")
    for name, kind in KINDS.items():
        assert kind.name == name
        module, _, function_name = kind.function.rpartition(".")
        function = getattr(importlib.import_module(module), function_name)
        signature = inspect.signature(function, eval_str=True)
        (parameter,) = signature.parameters.values()
        assert parameter.annotation is kind.request
        assert signature.return_annotation is kind.result
        assert kind.timeout(get_settings()) >= 1
    assert kind_of(MoveRequest(position="44")) is KINDS["move"]
    assert kind_of(AnalysisRequest(position="44")) is KINDS["analysis"]

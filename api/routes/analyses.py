"""``/v1/analyses``: submit an analysis (and wait for it), read it, stream its progress,
cancel it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import APIRouter, HTTPException, Query, Response
from fastapi.sse import EventSourceResponse, format_sse_event
from starlette.types import Receive, Scope, Send

from api.body import JsonBodyRoute
from api.callbacks import refusal
from api.deps import (
    CallbacksDep,
    CallerDep,
    ClientDep,
    QueuedDep,
    RateLimited,
    SettingsDep,
    WaitsDep,
    check_wait,
)
from api.errors import unprocessable
from api.schemas import AnalysisAccepted, AnalysisCanceled, AnalysisCreate, AnalysisView
from worker.core.client import JobClient, UnknownJob
from worker.core.contract import Event, JobState
from worker.core.kinds import ANALYSIS

router = APIRouter(
    prefix="/v1/analyses", tags=["analyses"], dependencies=[RateLimited], route_class=JsonBodyRoute
)

#: Seconds of silence after which the event stream sends a keep-alive comment.
PING_S = 15.0

_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"description": "No analysis has this id (or it expired)."}
}


async def _analysis(client: JobClient, analysis_id: str) -> JobState:
    """The analysis's state; 404 for an unknown id (or a job that is not an analysis)."""
    state = await client.status(analysis_id)
    if state.kind != ANALYSIS.name:  # a bot move's job is not for outsiders to read
        raise UnknownJob(analysis_id)
    return state


def _wait_query(action: str) -> Any:
    return Query(
        0,
        ge=0,
        description=f"Wait up to this many seconds for the result (bounded by the server's "
        f"`PLYBOT_API_MAX_WAIT_S`); {action} as soon as it is done.",
    )


@router.post(
    "",
    status_code=202,
    response_model=AnalysisAccepted,
    responses={
        200: {
            "model": AnalysisView,
            "description": "Finished within `?wait=S` (or answered at once from the shared "
            "cache): the analysis, as `GET /v1/analyses/{id}` shows it.",
        },
        202: {
            "description": "Queued (or not finished within `?wait=S`); poll `status_url` or "
            "stream `events_url`."
        },
        422: {"description": "A field is invalid; `message` names it and says why."},
        429: {
            "description": "Past this client's rate limit, or it has its share of analyses "
            "queued, or of long polls open; see `Retry-After`."
        },
        503: {
            "description": "The analysis queue is full, the service holds its limit of long "
            "polls, or Redis is unreachable or full; see `Retry-After`."
        },
    },
)
async def create_analysis(
    body: AnalysisCreate,
    response: Response,
    client: ClientDep,
    settings: SettingsDep,
    callbacks: CallbacksDep,
    queued: QueuedDep,
    waits: WaitsDep,
    caller: CallerDep,
    wait: float = _wait_query("answers 200 with the analysis"),
) -> AnalysisAccepted | Response:
    """Submit an analysis: `solve` (exact), `depth` N plies, or `time` T ms; `moves: all`
    scores every move. Identical requests in flight share one job (and one id); an exact
    solve the shared cache already holds is finished at once, never queued.

    With `?wait=S`: 200 with the analysis if it finishes within S seconds, else 202."""
    check_wait(wait, settings)
    if body.callback_url is not None:
        why = refusal(body.callback_url, settings)
        if why is not None:
            raise unprocessable(("body", "callback_url"), why)
    request = body.job_request()
    # What is known (the book, the database, the shared cache) is answered at once: nothing
    # is queued, so the caps on queued work do not apply to it.
    submitted = await client.answer_at_once(request)
    if submitted is None:
        async with queued.admit(caller) as record:  # 429/503 past the caps on queued work
            submitted = await client.queue(request)  # the id and status in one trip
            record(submitted.id)
    job_id = submitted.id
    if body.callback_url is not None:
        await callbacks.schedule(job_id, body.callback_url)
    url = f"/v1/analyses/{job_id}"
    if wait > 0:
        # Answered at submission: the state is in hand, nothing to read back.
        state = submitted.state
        if state is None:
            with waits.hold(caller):
                state = await client.wait(job_id, timeout=wait, submitted=True)
        if state.finished:
            # A Response of our own: no second validation of a view built from the record.
            return Response(
                AnalysisView.of(state).model_dump_json(),
                media_type="application/json",
                headers={"Location": url},
            )
    response.headers["Location"] = url
    return AnalysisAccepted(
        id=job_id, status=submitted.status, status_url=url, events_url=f"{url}/events"
    )


@router.get("/{analysis_id}", response_model=AnalysisView, responses=_NOT_FOUND)
async def get_analysis(
    analysis_id: str,
    client: ClientDep,
    settings: SettingsDep,
    waits: WaitsDep,
    caller: CallerDep,
    wait: float = _wait_query("answers"),
) -> AnalysisView:
    """Where the analysis stands: `queued`, `running` (with the latest depth in `progress`),
    `done` (with `result`) or `failed` (with `error`)."""
    check_wait(wait, settings)
    if wait > 0:
        # wait() reads the state first too (UnknownJob -> 404), and answers a finished job
        # with that one read.
        with waits.hold(caller):
            state = await client.wait(analysis_id, timeout=wait)
    else:
        state = await client.status(analysis_id)
    if state.kind != ANALYSIS.name:
        raise UnknownJob(analysis_id)
    return AnalysisView.of(state)


_CANCEL_MESSAGES = {
    "canceled": "canceled: it had not started",
    "stopping": "stopping: it fails at its next progress event, unless it finishes first",
    "shared": "withdrawn: identical requests share this analysis and another requester "
    "still waits for it, so it goes on",
}


@router.delete(
    "/{analysis_id}",
    response_model=AnalysisCanceled,
    responses={
        **_NOT_FOUND,
        409: {"description": "The analysis has already finished (done or failed)."},
        429: {"description": "Past this client's rate limit (counted with POSTs)."},
    },
)
async def cancel_analysis(analysis_id: str, client: ClientDep) -> AnalysisCanceled:
    """Cancel an analysis. Waiting: it fails now (`canceled by the requester`). Running: it
    fails at its next progress event (the next completed depth, or the next narrowing of
    an exact solve's window), unless it finishes first. Identical requests share one job:
    a cancel withdraws one requester, and the job stops only when none is left."""
    await _analysis(client, analysis_id)  # 404 for an unknown id (or a bot move)
    outcome = await client.withdraw(analysis_id)
    if outcome == "unknown":  # expired in between
        raise UnknownJob(analysis_id)
    if outcome not in _CANCEL_MESSAGES:  # "done" / "failed"
        raise HTTPException(
            409, f"analysis {analysis_id} has already finished ({outcome}); nothing to cancel"
        )
    state = await client.status(analysis_id)
    return AnalysisCanceled(
        id=analysis_id,
        outcome=outcome,  # one of _CANCEL_MESSAGES
        message=_CANCEL_MESSAGES[outcome],
        status=state.status,
    )


@router.get(
    "/{analysis_id}/events",
    response_model=None,  # a stream (not response_class, which wants a generator endpoint)
    responses={
        200: {
            "description": "Server-Sent Events: `progress` (one per completed depth, in order; "
            "late subscribers get the history first), then `done` (the analysis, as "
            "`GET /v1/analyses/{id}` shows it) or `failed`, then the stream ends.",
            "content": {"text/event-stream": {}},
        },
        **_NOT_FOUND,
        429: {"description": "This client holds its limit of open streams and long polls."},
        503: {"description": "The service holds its limit of open streams and long polls."},
    },
)
async def analysis_events(
    analysis_id: str, client: ClientDep, settings: SettingsDep, waits: WaitsDep, caller: CallerDep
) -> EventSourceResponse:
    """Stream the analysis's progress, then its result."""
    await _analysis(client, analysis_id)  # 404 before the stream starts
    # Even a stuck job cannot hold the stream open for ever.
    limit = settings.analysis_timeout_s * (settings.job_max_attempts + 1) + 60
    waits.take(caller, "event stream")  # 429/503 before the stream starts
    return _HeldStream(_stream(client, analysis_id, limit), lambda: waits.give(caller))


class _HeldStream(EventSourceResponse):
    """An event stream that gives its slot (:class:`api.limits.Waits`) back when it ends,
    however it ends: finished, client gone, or never started."""

    def __init__(self, content: AsyncIterator[bytes], release: Callable[[], None]) -> None:
        super().__init__(content)
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()


async def _stream(client: JobClient, analysis_id: str, limit: float) -> AsyncIterator[bytes]:
    """The job's events as SSE, with a comment line every :data:`PING_S` seconds of silence
    so that proxies keep a long search's stream open."""
    events: asyncio.Queue[Event | None] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for event in client.events(analysis_id, timeout=limit):
                await events.put(event)
        finally:
            await events.put(None)

    task = asyncio.create_task(pump())
    try:
        while True:
            try:
                event = await asyncio.wait_for(events.get(), PING_S)
            except TimeoutError:
                yield b": ping\n\n"
                continue
            if event is None:
                break
            final = await client.status(analysis_id) if event.type != "progress" else None
            yield _encode(event, final)
        await task  # a Redis failure ends the stream with its error
    finally:
        task.cancel()


def _encode(event: Event, final: JobState | None) -> bytes:
    if event.type == "progress":
        assert event.progress is not None
        return format_sse_event(
            event="progress", id=str(event.seq), data_str=event.progress.model_dump_json()
        )
    data = AnalysisView.of(final).model_dump_json() if final is not None else "{}"
    return format_sse_event(event=event.type, data_str=data)

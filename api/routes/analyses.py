"""``/v1/analyses``: submit an analysis, read it (or wait for it), stream its progress."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Query, Response
from fastapi.sse import EventSourceResponse, format_sse_event

from api.callbacks import refusal
from api.deps import CallbacksDep, ClientDep, RateLimited, SettingsDep, check_wait
from api.errors import unprocessable
from api.schemas import AnalysisAccepted, AnalysisCreate, AnalysisView
from worker.client import JobClient, UnknownJob
from worker.contract import Event, JobState

router = APIRouter(prefix="/v1/analyses", tags=["analyses"], dependencies=[RateLimited])

#: Seconds of silence after which the event stream sends a keep-alive comment.
PING_S = 15.0

_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"description": "No analysis has this id (or it expired)."}
}


async def _analysis(client: JobClient, analysis_id: str) -> JobState:
    """The analysis's state; 404 for an unknown id (or a job that is not an analysis)."""
    state = await client.status(analysis_id)
    if state.kind != "analysis":  # a bot move's job is not for outsiders to read
        raise UnknownJob(analysis_id)
    return state


@router.post(
    "",
    status_code=202,
    response_model=AnalysisAccepted,
    responses={
        202: {"description": "Queued; poll `status_url` or stream `events_url`."},
        422: {"description": "A field is invalid; `message` names it and says why."},
        429: {"description": "Past this client's rate limit; see `Retry-After`."},
    },
)
async def create_analysis(
    body: AnalysisCreate,
    response: Response,
    client: ClientDep,
    settings: SettingsDep,
    callbacks: CallbacksDep,
) -> AnalysisAccepted:
    """Queue an analysis: `solve` (exact), `depth` N plies, or `time` T ms; `moves: all`
    scores every move. Identical requests in flight share one job (and one id)."""
    if body.callback_url is not None:
        why = refusal(body.callback_url, settings)
        if why is not None:
            raise unprocessable(("body", "callback_url"), why)
    submitted = await client.enqueue(body.job_request())  # the id and status in one trip
    job_id = submitted.id
    if body.callback_url is not None:
        await callbacks.schedule(job_id, body.callback_url)
    url = f"/v1/analyses/{job_id}"
    response.headers["Location"] = url
    return AnalysisAccepted(
        id=job_id, status=submitted.status, status_url=url, events_url=f"{url}/events"
    )


@router.get("/{analysis_id}", response_model=AnalysisView, responses=_NOT_FOUND)
async def get_analysis(
    analysis_id: str,
    client: ClientDep,
    settings: SettingsDep,
    wait: float = Query(
        0,
        ge=0,
        description="Wait up to this many seconds for the result (bounded by the server's "
        "`PLYBOT_API_MAX_WAIT_S`); answers as soon as it is done.",
    ),
) -> AnalysisView:
    """Where the analysis stands: `queued`, `running` (with the latest depth in `progress`),
    `done` (with `result`) or `failed` (with `error`)."""
    check_wait(wait, settings)
    # wait() reads the state first too (UnknownJob -> 404), and answers a finished job
    # with that one read.
    state = await (
        client.wait(analysis_id, timeout=wait) if wait > 0 else client.status(analysis_id)
    )
    if state.kind != "analysis":
        raise UnknownJob(analysis_id)
    return AnalysisView.of(state)


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
    },
)
async def analysis_events(
    analysis_id: str, client: ClientDep, settings: SettingsDep
) -> EventSourceResponse:
    """Stream the analysis's progress, then its result."""
    await _analysis(client, analysis_id)  # 404 before the stream starts
    # Even a stuck job cannot hold the stream open for ever.
    limit = settings.analysis_timeout_s * (settings.job_max_attempts + 1) + 60
    return EventSourceResponse(_stream(client, analysis_id, limit))


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

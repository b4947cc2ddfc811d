"""``/v1/status``: the service at a glance, for operators and autoscalers."""

from __future__ import annotations

from fastapi import APIRouter

from api.body import JsonBodyRoute
from api.deps import CallbacksDep, ClientDep, RateLimited
from api.schemas import StatusView

router = APIRouter(
    prefix="/v1", tags=["service"], dependencies=[RateLimited], route_class=JsonBodyRoute
)


@router.get("/status", response_model=StatusView)
async def service_status(client: ClientDep, callbacks: CallbacksDep) -> StatusView:
    """Queue lengths and the age of their oldest waiting job, workers alive and busy,
    the shared cache's hits, misses and hit rate, jobs by outcome, callbacks pending."""
    status = await client.service_status()
    return StatusView(**status.model_dump(), callbacks_pending=await callbacks.pending())

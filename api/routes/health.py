"""``/healthz`` (is Redis answering?) and ``/metrics`` (Prometheus), outside ``/v1`` and its
rate limit: probes and scrapers call them often."""

from __future__ import annotations

from fastapi import APIRouter, Response

from api.body import JsonBodyRoute
from api.deps import ClientDep, MetricsDep, RedisDep
from api.metrics import CONTENT_TYPE

router = APIRouter(tags=["service"], route_class=JsonBodyRoute)


#: The key /healthz writes: a write, not a PING, because a full Redis still answers
#: PING while it refuses every write the service needs.
HEALTH_KEY = "plybot:healthz"


@router.get(
    "/healthz", responses={503: {"description": "Redis is unreachable, or full (maxmemory)."}}
)
async def healthz(redis: RedisDep) -> dict[str, str]:
    """200 while Redis takes a write; 503 (with the reason) while it is unreachable or
    full (``OOM command not allowed``)."""
    await redis.set(HEALTH_KEY, "1", px=10_000)
    return {"status": "ok", "redis": "ok"}


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE: {}}, "description": "Prometheus text format."}},
)
async def metrics(client: ClientDep, metrics: MetricsDep) -> Response:
    """Requests and latencies of this API process; queue lengths, workers, the shared
    cache's hits and misses, and jobs by outcome for the whole service."""
    status = await client.service_status()
    for queue in status.queues:
        metrics.queue_length.labels(queue.name).set(queue.waiting)
        metrics.queue_oldest.labels(queue.name).set(queue.oldest_wait_s)
    metrics.workers.labels("alive").set(status.workers_alive)
    metrics.workers.labels("busy").set(status.workers_busy)
    metrics.cache_hit_rate.set(status.cache_hit_rate or 0.0)
    metrics.totals.cache = {"hit": status.cache_hits, "miss": status.cache_misses}
    metrics.totals.jobs = dict(status.jobs)
    return Response(metrics.render(), media_type=CONTENT_TYPE)

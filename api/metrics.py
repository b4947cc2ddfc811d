"""Prometheus metrics of one API process, and the middleware that counts requests.

Request counts and latencies are this process's own. The service-wide figures
(queue lengths, workers, cache hits and misses, jobs by outcome) live in Redis
and are read when ``/metrics`` is scraped, so every API process reports the
same totals for them. Each app has its own registry (several apps can live in
one process, as in tests).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class _Totals(Collector):
    """Service-wide counters kept in Redis, as last read (see :meth:`Metrics.observe`)."""

    def __init__(self) -> None:
        self.cache: Mapping[str, float] = {}
        self.jobs: Mapping[str, float] = {}

    def collect(self) -> Iterable[Metric]:
        cache = CounterMetricFamily(
            "plybot_cache_lookups", "Shared position cache lookups at the root.", labels=["result"]
        )
        for result, value in sorted(self.cache.items()):
            cache.add_metric([result], value)
        jobs = CounterMetricFamily(
            "plybot_jobs",
            "Jobs by outcome (done, failed), event (submitted, requeued after a worker died), and"
            " cached (answered from the shared cache at submission, never queued).",
            labels=["outcome"],
        )
        for outcome, value in sorted(self.jobs.items()):
            jobs.add_metric([outcome], value)
        return [cache, jobs]


class Metrics:
    """The metrics of one app."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "plybot_http_requests",
            "HTTP requests answered, by route template and status.",
            ["method", "route", "status"],
            registry=r,
        )
        self.latency = Histogram(
            "plybot_http_request_duration_seconds",
            "Time to answer an HTTP request (to the end of its body).",
            ["method", "route"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.queue_length = Gauge(
            "plybot_queue_length", "Jobs waiting in a queue.", ["queue"], registry=r
        )
        self.queue_oldest = Gauge(
            "plybot_queue_oldest_age_seconds",
            "Age of the oldest job waiting in a queue (0 when empty).",
            ["queue"],
            registry=r,
        )
        self.workers = Gauge("plybot_workers", "Workers alive, and busy.", ["state"], registry=r)
        self.cache_hit_rate = Gauge(
            "plybot_cache_hit_rate", "Shared cache hits / lookups (0 before any).", registry=r
        )
        self.callbacks = Counter(
            "plybot_callbacks",
            "Callback deliveries by this process, by outcome.",
            ["outcome"],
            registry=r,
        )
        self.totals = _Totals()
        r.register(self.totals)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class MetricsMiddleware:
    """Counts each HTTP request and its latency under its route template.

    The template (``/v1/games/{game_id}``), not the raw path, keeps the label set
    bounded; unmatched paths count as ``"unmatched"``.
    """

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None)
            if template is None:
                template = "unmatched"
            elif template == "":  # the static page, mounted at "/"
                template = "static"
            method = scope["method"]
            self.metrics.requests.labels(method, template, str(status)).inc()
            self.metrics.latency.labels(method, template).observe(time.perf_counter() - start)

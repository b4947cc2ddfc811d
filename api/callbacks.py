"""Webhooks: POST an analysis's result to its ``callback_url`` once it is done.

Only to allow-listed hosts (``PLYBOT_CALLBACK_HOSTS``; empty by default, so
no request ever reaches an arbitrary, possibly internal, address), with no
redirects followed, and only to public addresses: each connection resolves the
host and connects only to an address outside the private, loopback, link-local,
metadata, CGNAT, multicast and reserved ranges (:mod:`api.addresses`), so neither
a listed name that resolves inward nor DNS rebinding reaches an internal service.
Retried with exponential backoff (``callback_backoff_s``,
doubling, ``callback_attempts`` in all); a 3xx or a 4xx other than 408/429 is final.

Durable: a delivery is a record in Redis, not a task in memory, so it survives
a restart of the API. ``plybot:callback:<id>`` (hash: job, url, attempts,
last error) and ``plybot:callbacks:due`` (sorted set: id -> when it may next be
taken). Every API process runs :meth:`Callbacks.run`: it claims due deliveries
with a compare-and-set that pushes their time a lease ahead (so one process
handles each), waits for the job without polling, renewing the lease while it
waits, and POSTs. A process that dies mid-delivery loses only its lease: another
takes the delivery over when it lapses; one that stops cleanly hands its
deliveries back at once. Delivery is at least once; the receiver can tell
repeats apart by the ``X-Plybot-Delivery`` header.

The body is the analysis as ``GET /v1/analyses/{id}`` shows it, signed: the
``Plybot-Signature`` header is ``t=<unix time>,v1=<hex>``, the HMAC-SHA256 of
``"<t>.<body>"`` under ``PLYBOT_CALLBACK_SECRET`` (as Stripe signs its webhooks);
the receiver recomputes it and refuses a stale ``t`` (a replay). Without a secret
no callback is accepted.

Bounded: at most ``callback_max_in_flight`` deliveries in hand per process, at most
``callback_max_per_host`` POSTs in flight to one host; a delivery not made within
``callback_ttl_s`` is given up and its record expires; a URL that cannot be sent is
final at once, and a fault of ours gives the delivery up rather than retrying it for
ever.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import ipaddress
import logging
import time
import uuid
from collections import defaultdict
from typing import Any
from urllib.parse import urlsplit

import httpx
from redis.asyncio import Redis
from redis.exceptions import RedisError

from api.addresses import PublicOnlyTransport, blocked, private_networks, refused_address
from api.metrics import Metrics
from api.schemas import AnalysisView
from api.settings import ApiSettings
from worker.core.client import JobClient, UnknownJob

log = logging.getLogger("plybot.api.callbacks")

PREFIX = "plybot:callback:"
DUE = "plybot:callbacks:due"

# KEYS[1] due set; ARGV: id, now, lease end. Take a delivery whose time has come.
_CLAIM = """
local at = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not at or tonumber(at) > tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
return 1
"""


def allowed_hosts(settings: ApiSettings) -> list[str]:
    return [h.strip().lower() for h in settings.callback_hosts.split(",") if h.strip()]


def refusal(url: str, settings: ApiSettings) -> str | None:
    """Why ``url`` may not be called back (``None``: it may).

    Checked once, completely, at the request: the URL as the delivery will send it.
    ``urlsplit`` silently drops tabs and newlines (as browsers do) and httpx refuses
    them later, so any whitespace, control or non-ASCII character is refused here
    (write non-ASCII percent-encoded, hosts in punycode), and the URL must parse the
    same for httpx, the client that will POST it.
    """
    for index, char in enumerate(url):
        if not "!" <= char <= "~":  # printable ASCII, no space
            shown = char.encode("unicode_escape", "backslashreplace").decode("ascii")
            quoted = url.encode("unicode_escape", "backslashreplace").decode("ascii")
            if char == " ":
                shown = "a space"
            return (
                f"'{quoted}' holds {shown} at index {index}: a URL may hold only printable "
                "ASCII, no spaces or control characters (percent-encode the rest)"
            )
    try:
        parts = urlsplit(url)
        port = parts.port
        sent_to = httpx.URL(url)
    except (ValueError, httpx.InvalidURL) as exc:
        return f"'{url}' is not a valid URL ({exc})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"'{url}' is not an http(s) URL with a host"
    if sent_to.host != parts.hostname.lower() or sent_to.port != port:
        # Read two ways, two hosts: the allow-list must judge the host it will reach.
        return f"'{url}' is ambiguous: its host reads as '{parts.hostname}' and '{sent_to.host}'"
    if parts.username is not None or parts.password is not None:
        return f"'{url}' holds credentials; a callback URL may not"
    host = parts.hostname.lower()
    hosts = allowed_hosts(settings)
    netloc = f"{host}:{port or (443 if parts.scheme == 'https' else 80)}"
    if host in hosts or netloc in hosts:
        if not settings.callback_secret:
            return "callbacks are disabled: the server has no PLYBOT_CALLBACK_SECRET to sign them"
        with contextlib.suppress(ValueError):  # an address, not a name: judged now as well
            allowed = private_networks(settings.callback_private_networks)
            why = blocked(ipaddress.ip_address(host), allowed)
            if why is not None:
                return f"'{host}' is not a public address ({why}): webhooks reach only those"
        return None
    listed = ", ".join(hosts) if hosts else "empty: callbacks are disabled"
    return f"host '{host}' is not on the callback allow-list (PLYBOT_CALLBACK_HOSTS: {listed})"


SIGNATURE_HEADER = "Plybot-Signature"


def signature(secret: bytes, body: bytes, timestamp: int) -> str:
    """The ``Plybot-Signature`` header of ``body`` sent at ``timestamp`` (Unix seconds):
    ``t=<timestamp>,v1=<hex HMAC-SHA256 of "<timestamp>.<body>" under secret>``."""
    mac = hmac.new(secret, b"%d." % timestamp + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


class Callbacks:
    """Durable webhook deliveries of one API process (see the module docstring)."""

    LEASE_S = 30.0
    #: Longest sleep of the loop between looks at the due set.
    TICK_S = 1.0

    def __init__(
        self,
        redis: Redis,
        client: JobClient,
        settings: ApiSettings,
        metrics: Metrics,
        *,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.redis = redis
        self.client = client
        self.settings = settings
        self.metrics = metrics
        self.http = http or httpx.AsyncClient(
            transport=PublicOnlyTransport(private_networks(settings.callback_private_networks)),
            follow_redirects=False,
            trust_env=False,  # no proxy from the environment reroutes a callback
            timeout=settings.callback_timeout_s,
            headers={"User-Agent": "plybot-callbacks"},
        )
        self._claim = redis.register_script(_CLAIM)
        self._wake = asyncio.Event()
        self._handling: dict[str, asyncio.Task[None]] = {}
        self._failing = False  # log an outage once, not every tick
        # POSTs in flight per host (PLYBOT_CALLBACK_MAX_PER_HOST): a slow receiver
        # holds at most that many of this process's deliveries.
        self._per_host: defaultdict[str, asyncio.Semaphore] = defaultdict(
            lambda: asyncio.Semaphore(settings.callback_max_per_host)
        )

    # -- requester side ------------------------------------------------------------

    async def schedule(self, job_id: str, url: str) -> str:
        """Record a delivery of ``job_id``'s result to ``url`` (checked by :func:`refusal`)."""
        delivery = uuid.uuid4().hex
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(
                PREFIX + delivery,
                mapping={"job": job_id, "url": url, "attempts": 0, "created_at": time.time()},
            )
            # Retention: a delivery not made within callback_ttl_s is given up (see
            # _handle), and its record goes with it even if no process is left to.
            pipe.expire(PREFIX + delivery, self.settings.callback_ttl_s)
            pipe.zadd(DUE, {delivery: time.time()})
            await pipe.execute()
        self._wake.set()
        return delivery

    async def pending(self) -> int:
        return int(await self.redis.zcard(DUE))

    # -- the loop ------------------------------------------------------------------

    async def run(self) -> None:
        """Take due deliveries and handle them, until cancelled."""
        while True:
            try:
                await self._take_due()
                sleep = await self._until_next()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis down: try again later, never die
                if not self._failing:
                    log.warning("callbacks: paused, Redis trouble: %s", exc)
                self._failing = True
                sleep = self.TICK_S
            else:
                if self._failing:
                    log.warning("callbacks: resumed")
                self._failing = False
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=sleep)

    async def aclose(self) -> None:
        """Stop handling; hand the deliveries in hand back (due now) for another process."""
        in_hand = dict(self._handling)
        for task in in_hand.values():
            task.cancel()
        await asyncio.gather(*in_hand.values(), return_exceptions=True)
        if in_hand:
            with contextlib.suppress(Exception):
                await self.redis.zadd(DUE, dict.fromkeys(in_hand, time.time()), xx=True)
        self._handling.clear()
        await self.http.aclose()

    async def _take_due(self) -> None:
        room = self.settings.callback_max_in_flight - len(self._handling)
        if room <= 0:  # each delivery in hand may hold a Redis connection (api.limits)
            return
        now = time.time()
        due: list[Any] = await self.redis.zrangebyscore(
            DUE, "-inf", now, start=0, num=room + len(self._handling)
        )
        for delivery in due:
            if delivery in self._handling:
                continue
            if len(self._handling) >= self.settings.callback_max_in_flight:
                break
            if await self._claim(keys=[DUE], args=[delivery, now, now + self.LEASE_S]):
                task = asyncio.create_task(self._handle(delivery))
                self._handling[delivery] = task
                task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        for delivery, t in list(self._handling.items()):
            if t is task:
                del self._handling[delivery]

    async def _until_next(self) -> float:
        first = await self.redis.zrange(DUE, 0, 0, withscores=True)
        if not first:
            return self.TICK_S
        return max(0.01, min(self.TICK_S, float(first[0][1]) - time.time()))

    # -- one delivery --------------------------------------------------------------

    async def _handle(self, delivery: str) -> None:
        key = PREFIX + delivery
        try:
            record: dict[Any, Any] = await self.redis.hgetall(key)
            if not record:
                await self.redis.zrem(DUE, delivery)
                return
            job_id, url = record["job"], record["url"]
            age = time.time() - float(record.get("created_at", 0) or 0)
            if age > self.settings.callback_ttl_s:
                await self._give_up(delivery, url, f"not delivered within {age:.0f} s")
                return
            try:
                state = await self.client.wait(job_id, timeout=self.LEASE_S / 3)
                while not state.finished:
                    await self.redis.zadd(DUE, {delivery: time.time() + self.LEASE_S}, xx=True)
                    state = await self.client.wait(job_id, timeout=self.LEASE_S / 3)
            except UnknownJob:
                await self._give_up(delivery, url, "the job's record expired")
                return
            attempt = int(record.get("attempts", 0)) + 1
            host = (urlsplit(url).hostname or "").lower()
            async with self._per_host[host]:
                error, final = await self._post(url, delivery, attempt, AnalysisView.of(state))
            if error is None:
                await self.redis.delete(key)
                await self.redis.zrem(DUE, delivery)
                self.metrics.callbacks.labels("delivered").inc()
                log.info(
                    "callback %s: job %s delivered to %s (attempt %d)",
                    delivery,
                    job_id,
                    url,
                    attempt,
                )
            elif final or attempt >= self.settings.callback_attempts:
                await self._give_up(delivery, url, f"{error} (attempt {attempt})")
            else:
                delay = self.settings.callback_backoff_s * 2 ** (attempt - 1)
                async with self.redis.pipeline(transaction=True) as pipe:
                    pipe.hset(key, mapping={"attempts": attempt, "last_error": error})
                    pipe.zadd(DUE, {delivery: time.time() + delay}, xx=True)
                    await pipe.execute()
                self.metrics.callbacks.labels("retried").inc()
                log.info(
                    "callback %s to %s failed (%s); retry %d in %.1f s",
                    delivery,
                    url,
                    error,
                    attempt + 1,
                    delay,
                )
                self._wake.set()
        except asyncio.CancelledError:
            raise
        except RedisError as exc:  # Redis trouble: the lease lapses and it is retried
            log.warning("callback %s: %s", delivery, exc)
        except Exception as exc:  # a fault of ours: never retried for ever
            log.exception("callback %s failed", delivery)
            with contextlib.suppress(RedisError):
                await self._give_up(delivery, "?", f"internal error: {exc!r}")

    async def _post(
        self, url: str, delivery: str, attempt: int, body: AnalysisView
    ) -> tuple[str | None, bool]:
        """POST ``body``; (``None``, _) on success, else (the reason, whether it is final)."""
        why = refusal(url, self.settings)  # the allow-list may have changed since
        if why is not None:
            return why, True
        assert self.settings.callback_secret is not None  # refusal() checked it
        content = body.model_dump_json().encode()
        secret = self.settings.callback_secret.get_secret_value().encode()
        try:
            response = await self.http.post(
                url,
                content=content,
                headers={
                    "Content-Type": "application/json",
                    "X-Plybot-Delivery": delivery,
                    "X-Plybot-Attempt": str(attempt),
                    SIGNATURE_HEADER: signature(secret, content, int(time.time())),
                },
            )
        except httpx.InvalidURL as exc:  # cannot change: never retried
            return f"invalid URL: {exc}", True
        except httpx.ConnectError as exc:
            # An address refused is final: retrying would only give a rebinding name
            # more tries at resolving inward.
            return f"{type(exc).__name__}: {exc}", refused_address(exc)
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {exc}", False
        if 200 <= response.status_code < 300:
            return None, False
        # A redirect is not followed and a client error will not change: both are final.
        final = 300 <= response.status_code < 500 and response.status_code not in (408, 429)
        return f"HTTP {response.status_code}", final

    async def _give_up(self, delivery: str, url: str, error: str) -> None:
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.delete(PREFIX + delivery)
            pipe.zrem(DUE, delivery)
            await pipe.execute()
        self.metrics.callbacks.labels("failed").inc()
        log.warning("callback %s to %s given up: %s", delivery, url, error)

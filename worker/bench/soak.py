"""A long mixed load against a real ``plybot up``: memory, Redis and latency over time.

:func:`run_soak` starts the service as the chaos phases do (:class:`worker.bench.chaos._Service`:
a Redis of its own, append-only, and ``plybot up`` on free ports) and, for ``minutes``,
keeps it busy with what its clients do, all at once, each lane at a fixed rate of arrivals
(:class:`_Pace`; a closed loop's throughput, and with it the keys Redis keeps for the last
result TTL's jobs, would follow whatever else the machine does):

* **analyses**: exact solves of Pons' benchmark positions (every answer's score checked
  against the set), followed by a long poll, an event stream, or a webhook to a local
  receiver (signed; its score checked too), in turn;
* **bot moves**: games over HTTP (Tic-tac-toe *hard* and Connect Four *easy*) played to
  their end, every move awaiting the bot's reply;
* **cancels**: a long solve asked for, then canceled (the cancel must answer 200, or 409
  if it finished first; the job must end canceled, or done and right);
* **slow clients**: connections that never finish their request, each of which the
  server must cut off;
* **a worker SIGKILLed** now and then (the one running a job, if any): five times a run,
  evenly spaced, so the reference window and the last third each see one.

The position cache is off (``PLYBOT_CACHE_ENABLED=false``): otherwise the first pass over
the positions fills it and every later analysis is answered at submission, so the load
(and the latency measured) would change under the run. Retention (finished jobs, games) is
scaled to the run (:func:`retention_s`) so that Redis reaches its steady state before the
reference window.

Time is cut into windows (:func:`window_s`: 60 of them, of at least 3 s). At the end of
each: the resident memory of every process of the service (``plybot up``, the API, the
workers' supervisor, each worker by rank of pid), the job Redis' and the cache's
``used_memory``, the job Redis' keys counted by prefix (the first two ``:`` fields), and
the p50/p99 of the bot moves and analyses finished in the window. :func:`verdict` then
compares the last third of the run with the reference window after warm-up (minutes
10-20 of 60: the second sixth) and fails on:

* **loss**: an accepted job with no result, a wrong result, a request unanswered or
  answered 5xx, a bot move never made, a webhook never delivered;
* **growth**: a process's largest resident memory (or the job Redis' ``used_memory``) in
  the last third more than 10% over its largest in the reference window;
* **keys**: the job Redis' key count in the last third more than 10% (and 20 keys) over the
  reference window's;
* **drift**: the p99 of bot moves or of analyses over the last third more than 1.5 times
  the reference window's plus 100 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import os
import shutil
import signal
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import redis

from engine.bench.slow import SLOW
from engine.bench.stats import quantile
from worker.bench.chaos import (
    CHAOS_KEY,
    Positions,
    _Service,
    _what_failed,
    lane_key,
    open_slow_clients,
    wait_cut_off,
)
from worker.bench.loadtest import load_positions

__all__ = ["SoakRun", "Window", "format_soak", "retention_s", "run_soak", "verdict", "window_s"]

#: Memory (and the job Redis' keys) over the last third may exceed the reference by this.
GROWTH = 0.10
#: Keys may also exceed the reference by this many (a few jobs in flight more or less).
KEYS_SLACK = 20
#: p99 over the last third may be this many times the reference's, plus :data:`P99_SLACK_S`.
P99_FACTOR = 1.5
P99_SLACK_S = 0.1
#: The webhook signing secret of the soak's service and receiver (a test value, not a secret).
HOOK_SECRET = "soak-webhook-secret"
#: Analysis lanes and game lanes running at once.
ANALYSIS_LANES = 4
GAME_LANES = 2
#: Each analysis lane asks for an analysis every this many seconds, and each game lane makes a
#: move (or starts a game) every this many: a fixed offered load, about 400 analyses and 400
#: bot moves a minute, well below what 2 workers answer (about 1,100-1,300 jobs a minute in the
#: closed-loop runs). At a fixed rate of arrivals the keys Redis keeps for the last result TTL's
#: jobs are flat whatever the machine's other load does to the service's speed.
ANALYSIS_EVERY_S = 0.6
MOVE_EVERY_S = 0.3
#: Slow clients opened at once, a window apart.
SLOW_CLIENTS = 10


def window_s(minutes: float) -> float:
    """The length of one sampling window: a 60th of the run, at least 3 s."""
    return max(3.0, minutes)


def retention_s(minutes: float) -> int:
    """How long finished jobs and games are kept in the soak: a 12th of the run (5 min of
    60), at least RQ's floor of 60 s, so the keys are at their steady state by the reference
    window (the second sixth)."""
    return max(60, int(minutes * 60 / 12))


@dataclass
class Window:
    """What was sampled at the end of one window (``start``, ``end``: seconds into the run)."""

    start: float
    end: float
    rss: dict[str, int] = field(default_factory=dict)  # process label -> bytes
    redis_memory: int = 0
    cache_memory: int = 0
    keys: dict[str, int] = field(default_factory=dict)  # key prefix -> count
    moves: list[float] = field(default_factory=list)  # latencies (s) finished in the window
    analyses: list[float] = field(default_factory=list)
    load: float = 0.0  # the machine's 1-minute load average

    @property
    def key_total(self) -> int:
        return sum(self.keys.values())


@dataclass
class SoakRun:
    minutes: float
    windows: list[Window] = field(default_factory=list)
    #: kind -> counts: submitted, done, right, lost, wrong (and kind-specific ones)
    counts: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    notes: list[str] = field(default_factory=list)
    kills: int = 0
    slow_cut: int = 0
    slow_opened: int = 0
    leftovers: dict[str, int] = field(default_factory=dict)

    def lost(self) -> int:
        return sum(
            c["lost"] + c["wrong"] + c["unanswered"] + c["5xx"] for c in self.counts.values()
        )


# -- the verdict ------------------------------------------------------------------------


def _between(run: SoakRun, start: float, end: float) -> list[Window]:
    return [w for w in run.windows if w.start >= start - 1e-6 and w.end <= end + 1e-6]


def reference_and_last(run: SoakRun) -> tuple[list[Window], list[Window]]:
    """The reference windows (the run's second sixth: minutes 10-20 of 60) and the last
    third's (40-60 of 60)."""
    total = run.minutes * 60
    return _between(run, total / 6, total / 3), _between(run, 2 * total / 3, total)


def verdict(run: SoakRun) -> list[str]:
    """Why the run failed (module docstring: loss, growth, keys, drift); empty if it passed.
    Memory is compared per process label sampled in both parts of the run."""
    failures = []
    for kind, c in sorted(run.counts.items()):
        for what in ("lost", "wrong", "unanswered", "5xx"):
            if c[what]:
                failures.append(f"loss: {c[what]} {kind} {what}")
    reference, last = reference_and_last(run)
    if not reference or not last:
        return [*failures, "too short: no reference window or no last third"]
    # A label missing from a sample is a process not there then (a worker being replaced).
    labels = {k for w in reference for k in w.rss} & {k for w in last for k in w.rss}
    for label in sorted(labels):
        before = max(w.rss.get(label, 0) for w in reference)
        after = max(w.rss.get(label, 0) for w in last)
        if after > before * (1 + GROWTH):
            failures.append(f"growth: {label} {after >> 20} MB, was {before >> 20} MB")
    before = max(w.redis_memory for w in reference)
    after = max(w.redis_memory for w in last)
    if after > before * (1 + GROWTH):
        failures.append(f"growth: Redis used_memory {after >> 10} KB, was {before >> 10} KB")
    before = max(w.key_total for w in reference)
    after = max(w.key_total for w in last)
    if after > max(before * (1 + GROWTH), before + KEYS_SLACK):
        grew = Counter(last[-1].keys)
        grew.subtract(reference[-1].keys)
        most = ", ".join(f"{prefix} +{n}" for prefix, n in grew.most_common(3) if n > 0)
        failures.append(
            f"keys: {after} in the last third, {before} in the reference window ({most})"
        )
    for kind in ("moves", "analyses"):
        then = [x for w in reference for x in getattr(w, kind)]
        now = [x for w in last for x in getattr(w, kind)]
        if not then or not now:
            failures.append(f"drift: no {kind} answered in the reference window or the last third")
            continue
        before_s, after_s = quantile(then, 0.99), quantile(now, 0.99)
        if after_s > before_s * P99_FACTOR + P99_SLACK_S:
            failures.append(
                f"drift: p99 of {kind} {after_s * 1000:.0f} ms in the last third, "
                f"{before_s * 1000:.0f} ms in the reference window"
            )
    return failures


# -- sampling ----------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    found = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(p) for p in f.read().split()]
    return sorted(found)


def _rss(pid: int) -> int:
    """Resident memory of ``pid`` in bytes (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def service_rss(up_pid: int) -> dict[str, int]:
    """Resident memory of every process of a ``plybot up``: ``up``, ``api``, ``supervisor``,
    ``worker1``... (the workers by rank of pid: a replaced worker's successor takes the last
    rank) and ``other`` (anything else below them, summed); only processes that are alive."""
    rss = {"up": _rss(up_pid)}
    for pid in _children(up_pid):
        command = _cmdline(pid)
        if " serve" in command:
            rss["api"] = _rss(pid)
            others = _children(pid)
        elif " worker" in command:
            rss["supervisor"] = _rss(pid)
            workers = _children(pid)
            for rank, worker in enumerate(workers, 1):
                rss[f"worker{rank}"] = _rss(worker)
            others = [p for w in workers for p in _children(w)]
        else:
            others = [pid]
        if others:
            rss["other"] = rss.get("other", 0) + sum(_rss(p) for p in others)
    # A process that is gone (a killed worker not yet reaped reads as 0) is not sampled.
    return {label: size for label, size in rss.items() if size > 0}


def key_counts(conn: redis.Redis) -> dict[str, int]:
    """The keys of a Redis counted by prefix (its first two ``:`` fields)."""
    counts: Counter[str] = Counter()
    for key in conn.scan_iter(count=1000):
        counts[":".join(key.decode(errors="replace").split(":")[:2])] += 1
    return dict(counts)


# -- the webhook receiver -----------------------------------------------------------------


class _Receiver:
    """Takes webhook deliveries on loopback: checks each signature and records the body's
    analysis by id (answers 204; a bad signature, 400, and noted)."""

    def __init__(self) -> None:
        self.got: dict[str, dict[str, Any]] = {}
        self.deliveries = 0
        self.bad: list[str] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                ok = receiver.take(self.headers.get("Plybot-Signature", ""), raw)
                self.send_response(204 if ok else 400)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def take(self, signature: str, raw: bytes) -> bool:
        fields = dict(part.split("=", 1) for part in signature.split(",") if "=" in part)
        signed = f"{fields.get('t', '')}.".encode() + raw
        expected = hmac.new(HOOK_SECRET.encode(), signed, hashlib.sha256).hexdigest()
        with self.lock:
            self.deliveries += 1
            if not hmac.compare_digest(expected, fields.get("v1", "")):
                self.bad.append(raw[:80].decode(errors="replace"))
                return False
            view = json.loads(raw)
            self.got[view["id"]] = view
            return True

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# -- the load -----------------------------------------------------------------------------


class _Pace:
    """A lane's fixed rate of arrivals: its k-th request is due ``k * every`` seconds after
    its start. A lane whose request outlasted its slot goes at once and drops the slots it
    missed (no burst to catch up), so the offered load never exceeds ``1 / every`` a second
    and falls below it only where the service is slower than the rate."""

    def __init__(self, every: float, phase: float = 0.0) -> None:
        self.every = every
        self.due = time.monotonic() + phase

    async def next(self) -> None:
        """Wait for this lane's next slot."""
        now = time.monotonic()
        if self.due > now:
            await asyncio.sleep(self.due - now)
        else:
            self.due += (now - self.due) // self.every * self.every  # the missed slots dropped
        self.due += self.every


class _Soak:
    def __init__(self, service: _Service, run: SoakRun, positions: Positions) -> None:
        self.service = service
        self.run = run
        self.positions = positions
        self.next_position = 0
        self.started = time.monotonic()
        self.end = self.started + run.minutes * 60
        self.window = window_s(run.minutes)
        self.moves: list[tuple[float, float]] = []  # (finished at, seconds)
        self.analyses: list[tuple[float, float]] = []
        self.hooks: dict[str, int] = {}  # job id -> expected score, awaiting its webhook
        self.receiver = _Receiver()

    def now(self) -> float:
        return time.monotonic() - self.started

    def running(self) -> bool:
        return time.monotonic() < self.end

    def count(self, kind: str, what: str, n: int = 1) -> None:
        self.run.counts[kind][what] += n

    def note(self, text: str) -> None:
        if len(self.run.notes) < 50:
            self.run.notes.append(f"{self.now():7.1f} s: {text}")

    def answered(self, kind: str, r: httpx.Response) -> bool:
        """Count a 5xx (a loss); True for a 2xx."""
        if r.status_code >= 500:
            self.count(kind, "5xx")
            try:
                said = r.text[:80]
            except httpx.ResponseNotRead:  # a stream's
                said = r.reason_phrase
            self.note(f"{kind}: {r.status_code} on {r.request.method} {r.request.url.path}: {said}")
        return 200 <= r.status_code < 300

    # -- analyses ---------------------------------------------------------------------

    async def analysis_lane(self, http: httpx.AsyncClient, lane: int) -> None:
        head = {"X-API-Key": lane_key(lane)}
        pace = _Pace(ANALYSIS_EVERY_S, phase=lane * ANALYSIS_EVERY_S / ANALYSIS_LANES)
        n = 0
        while self.running():
            await pace.next()
            position, score = self.positions[self.next_position % len(self.positions)]
            self.next_position += 1
            style = ("poll", "events", "webhook")[(lane + n) % 3]
            n += 1
            body: dict[str, Any] = {"game": "connect4", "position": position, "mode": "solve"}
            if style == "webhook":
                body["callback_url"] = self.receiver.url
            try:
                await self.one_analysis(http, head, body, score, style)
            except httpx.HTTPError as exc:
                self.count("analyses", "unanswered")
                self.note(f"analysis ({style}): {_what_failed(exc)}")

    async def one_analysis(
        self, http: httpx.AsyncClient, head: dict[str, str], body: dict[str, Any], score: int,
        style: str,
    ) -> None:  # fmt: skip
        asked = time.monotonic()
        r = await http.post("/v1/analyses", json=body, headers=head)
        if not self.answered("analyses", r):
            return
        job = r.json()["id"]
        self.count("analyses", "submitted")
        if style == "webhook":
            self.hooks[job] = score
            return
        view: dict[str, Any] | None = None
        if style == "events":
            async with http.stream("GET", f"/v1/analyses/{job}/events", headers=head) as stream:
                if self.answered("analyses", stream):
                    async for line in stream.aiter_lines():
                        if line.startswith("data:") and '"status"' in line:
                            view = json.loads(line[5:])
        end = time.monotonic() + 600
        while (view is None or view["status"] not in ("done", "failed")) and time.monotonic() < end:
            r = await http.get(f"/v1/analyses/{job}?wait=20", headers=head)
            if r.status_code != 200:
                self.answered("analyses", r)
                break
            view = r.json()
        self.settled("analyses", job, view, score, asked)

    def settled(
        self, kind: str, job: str, view: dict[str, Any] | None, score: int | None, asked: float
    ) -> None:
        """Count a job's end as its client saw it: done (and right), or lost."""
        if view is None or view.get("status") not in ("done", "failed"):
            self.count(kind, "lost")
            self.note(f"{kind} {job}: no result ({(view or {}).get('status')})")
            return
        if view["status"] == "failed":
            self.count(kind, "lost")
            self.note(f"{kind} {job}: failed: {view.get('error')}")
            return
        self.count(kind, "done")
        got = (view.get("result") or {}).get("score")
        if score is None or got == score:
            self.count(kind, "right")
            if kind == "analyses":
                self.analyses.append((self.now(), time.monotonic() - asked))
        else:
            self.count(kind, "wrong")
            self.note(f"{kind} {job}: score {got}, expected {score}")

    # -- cancels ----------------------------------------------------------------------

    async def cancel_lane(self, http: httpx.AsyncClient) -> None:
        head = {"X-API-Key": CHAOS_KEY}
        slow = list(SLOW.items())
        n = 0
        while self.running():
            position, score = slow[n % len(slow)]
            n += 1
            try:
                await self.one_cancel(http, head, position, score)
            except httpx.HTTPError as exc:
                self.count("cancels", "unanswered")
                self.note(f"cancel: {_what_failed(exc)}")
            await asyncio.sleep(self.window / 2)  # two cancels a window

    async def one_cancel(
        self, http: httpx.AsyncClient, head: dict[str, str], position: str, score: int
    ) -> None:
        body = {"game": "connect4", "position": position, "mode": "solve"}
        r = await http.post("/v1/analyses", json=body, headers=head)
        if not self.answered("cancels", r):
            return
        job = r.json()["id"]
        self.count("cancels", "submitted")
        r = await http.delete(f"/v1/analyses/{job}", headers=head)
        if r.status_code == 200:  # what it found: "canceled" (waiting) or "stopping" (running)
            self.count("cancels", f"found {r.json()['outcome']}")
        elif r.status_code == 409:  # it finished first
            self.count("cancels", "found ended")
        else:
            self.answered("cancels", r)
        end = time.monotonic() + 600
        view: dict[str, Any] = {}
        while view.get("status") not in ("done", "failed") and time.monotonic() < end:
            r = await http.get(f"/v1/analyses/{job}?wait=20", headers=head)
            if not self.answered("cancels", r):
                break
            view = r.json()
        if view.get("status") == "failed" and "cancel" in str(view.get("error")):
            self.count("cancels", "canceled")
        elif view.get("status") == "done":
            self.settled("cancels", job, view, score, 0.0)
        else:
            self.count("cancels", "lost")
            self.note(f"cancel {job}: ended {view.get('status')}: {view.get('error')}")

    # -- bot moves --------------------------------------------------------------------

    async def game_lane(self, http: httpx.AsyncClient, lane: int) -> None:
        head = {"X-API-Key": lane_key(ANALYSIS_LANES + lane)}
        pace = _Pace(MOVE_EVERY_S, phase=lane * MOVE_EVERY_S / GAME_LANES)
        n = 0
        while self.running():
            game, level = (("tictactoe", "hard"), ("connect4", "easy"))[(lane + n) % 2]
            first = ("human", "bot")[n % 2]
            n += 1
            try:
                await self.one_game(http, head, pace, game, level, first)
            except httpx.HTTPError as exc:
                self.count("moves", "unanswered")
                self.note(f"game: {_what_failed(exc)}")

    async def one_game(
        self, http: httpx.AsyncClient, head: dict[str, str], pace: _Pace, game: str, level: str,
        first: str,
    ) -> None:  # fmt: skip
        """One game to its end (or the run's), its start and each of its moves at ``pace``."""
        await pace.next()
        asked = time.monotonic()
        r = await http.post(
            "/v1/games", json={"game": game, "level": level, "first": first}, headers=head
        )
        if not self.answered("moves", r):
            return
        view = r.json()
        if first == "bot":
            self.count("moves", "submitted")
            view = await self.bot_reply(http, head, view, asked)
        while view is not None and view["status"] == "ongoing" and self.running():
            move = view["legal_moves"][len(view["moves"]) % len(view["legal_moves"])]
            await pace.next()
            asked = time.monotonic()
            r = await http.post(f"/v1/games/{view['id']}/moves", json={"move": move},
                                headers=head)  # fmt: skip
            if not self.answered("moves", r):
                self.note(f"move: {r.status_code} {r.text[:80]}")
                return
            view = r.json()["game"]
            if r.json()["reply"] is not None or view["status"] == "ongoing":
                self.count("moves", "submitted")
                view = await self.bot_reply(http, head, view, asked)
        if view is not None and view["status"] == "ongoing":  # the run is over: no game left
            await http.post(f"/v1/games/{view['id']}/resign", headers=head)

    async def bot_reply(
        self, http: httpx.AsyncClient, head: dict[str, str], view: dict[str, Any], asked: float
    ) -> dict[str, Any] | None:
        """The game once the bot has replied to the move asked at ``asked`` (``view``: the
        game as the move's answer showed it), its latency counted; None and counted lost if
        the bot never moves within a minute."""
        end = asked + 60
        while view["turn"] == "bot" and view["status"] == "ongoing":
            if time.monotonic() > end:
                self.count("moves", "lost")
                self.note(f"game {view['id']}: the bot never moved")
                return None
            r = await http.get(f"/v1/games/{view['id']}?wait=20", headers=head)
            if not self.answered("moves", r):
                return None
            view = r.json()
        self.moves.append((self.now(), time.monotonic() - asked))
        self.count("moves", "done")
        self.count("moves", "right")
        return view

    # -- faults -----------------------------------------------------------------------

    async def slow_lane(self) -> None:
        while self.running():
            opened = await asyncio.to_thread(open_slow_clients, self.service.port, SLOW_CLIENTS)
            self.run.slow_opened += len(opened)
            self.run.slow_cut += await asyncio.to_thread(wait_cut_off, opened)
            await asyncio.sleep(self.window)

    async def killer(self) -> None:
        """SIGKILL a worker at each sixth of the run but the last, so the reference window
        and the last third each see one: one running a job if any, but never one running a
        job killed before (a job may die with its worker only so many times: that failure
        is by design, not a loss)."""
        killed: set[str] = set()
        for k in range(1, 6):
            at = self.started + k * self.run.minutes * 60 / 6
            await asyncio.sleep(max(0.0, at - time.monotonic()))
            live = list((await asyncio.to_thread(self.service.live_workers)).values())
            busy = [i for i in live if i.get("job") and i["job"] not in killed]
            victims = busy or [i for i in live if not i.get("job")]
            if not victims:
                self.note("no worker to SIGKILL (each runs a job killed before)")
                continue
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(victims[0]["pid"]), signal.SIGKILL)
                self.run.kills += 1
                killed.add(str(victims[0].get("job")))
                self.note(f"SIGKILLed worker {victims[0]['pid']} (job {victims[0].get('job')})")

    async def sampler(self) -> None:
        conn = redis.Redis.from_url(self.service.url)
        cache = redis.Redis.from_url(self.service.cache_url)
        start = 0.0
        try:
            while start < self.run.minutes * 60 - 1e-6:
                end = min(start + self.window, self.run.minutes * 60)
                await asyncio.sleep(max(0.0, self.started + end - time.monotonic()))
                self.run.windows.append(await asyncio.to_thread(self.sample, conn, cache, start,
                                                                end))  # fmt: skip
                start = end
        finally:
            conn.close()
            cache.close()

    def sample(self, conn: redis.Redis, cache: redis.Redis, start: float, end: float) -> Window:
        window = Window(start, end, rss=service_rss(self.service.up.pid), load=os.getloadavg()[0])
        try:
            window.redis_memory = int(conn.info("memory")["used_memory"])
            window.cache_memory = int(cache.info("memory")["used_memory"])
            window.keys = key_counts(conn)
        except redis.RedisError as exc:
            self.note(f"sampling Redis: {exc}")
        window.moves = [s for at, s in self.moves if start <= at < end]
        window.analyses = [s for at, s in self.analyses if start <= at < end]
        return window

    # -- the end ----------------------------------------------------------------------

    def collect_hooks(self, timeout: float) -> None:
        """Wait for the webhooks of every accepted job (up to ``timeout``); each delivery's
        score checked, each job without one (or failed) counted lost."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.receiver.lock:
                if all(job in self.receiver.got for job in self.hooks):
                    break
            time.sleep(0.2)
        for job, score in self.hooks.items():
            self.settled("analyses", job, self.receiver.got.get(job), score, 0.0)
            if job not in self.receiver.got:
                self.count("webhooks", "lost")
        self.count("webhooks", "delivered", len(self.receiver.got))
        for bad in self.receiver.bad:
            self.count("webhooks", "wrong")
            self.note(f"webhook with a bad signature: {bad}")

    async def main(self) -> None:
        """Every lane at once, each a client of its own with one connection kept alive, as
        the clients it stands for are (and as the chaos load's lanes are: one pool shared
        by the lanes hands a lane a connection another left, whatever befell it)."""
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        url = f"http://127.0.0.1:{self.service.port}"
        async with contextlib.AsyncExitStack() as stack:

            async def client() -> httpx.AsyncClient:
                http = httpx.AsyncClient(base_url=url, timeout=120, limits=limits)
                return await stack.enter_async_context(http)

            await asyncio.gather(
                self.sampler(),
                self.killer(),
                self.slow_lane(),
                self.cancel_lane(await client()),
                *[self.analysis_lane(await client(), i) for i in range(ANALYSIS_LANES)],
                *[self.game_lane(await client(), i) for i in range(GAME_LANES)],
            )


def _leftovers(conn: redis.Redis) -> dict[str, int]:
    """What is left in the job Redis once the load has drained: jobs queued or started, and
    plybot's in-flight records (dedupe keys, bot-move preemptions) that would never expire."""
    found = {
        f"queued {name.decode()}": int(conn.llen(name)) for name in conn.scan_iter("rq:queue:*")
    }
    for name in conn.scan_iter("rq:wip:*"):
        found[f"started {name.decode()}"] = int(conn.zcard(name))
    for prefix in ("plybot:dedupe:", "plybot:preempt:"):
        found[f"{prefix}* without expiry"] = sum(
            conn.ttl(key) == -1 for key in conn.scan_iter(prefix + "*")
        )
    return found


def run_soak(minutes: float, workers: int = 2, log: bool = False) -> SoakRun:
    """Run the soak (module docstring) for ``minutes`` against a fresh ``plybot up`` with
    ``workers`` workers, then let every accepted job finish and every webhook arrive. On a
    failing verdict the service's log is kept (its path in the notes)."""
    run = SoakRun(minutes)
    middle, early = load_positions("Test_L2_R2", 1000), load_positions("Test_L1_R2", 1000)
    positions = [pair for pairs in zip(middle, early, strict=True) for pair in pairs]
    keep = str(retention_s(minutes))
    env = {
        "PLYBOT_CACHE_ENABLED": "false",
        "PLYBOT_RESULT_TTL_S": keep,
        "PLYBOT_API_GAMES_FINISHED_S": keep,
        "PLYBOT_API_GAMES_IDLE_S": keep,
        "PLYBOT_CALLBACK_HOSTS": "127.0.0.1",
        "PLYBOT_CALLBACK_PRIVATE_NETWORKS": "127.0.0.1/32",
        "PLYBOT_CALLBACK_SECRET": HOOK_SECRET,
    }
    with tempfile.TemporaryDirectory(prefix="plybot-soak-") as tmp:
        service = _Service(workers, Path(tmp), log, env=env)
        soak: _Soak | None = None
        try:
            service.wait_up()
            soak = _Soak(service, run, positions)
            asyncio.run(soak.main())
            soak.collect_hooks(timeout=300)
            run.notes.append(f"drained {soak.now() - minutes * 60:.1f} s after the load's end")
            run.leftovers = _leftovers(service.store.redis)
            if service.up.poll() is not None:
                run.notes.append(f"plybot up exited with {service.up.returncode}")
                run.counts["service"]["lost"] += 1
        finally:
            if soak is not None:
                soak.receiver.close()
            service.close()
            if verdict(run) and service.log_path.is_file():
                kept = Path(tempfile.gettempdir()) / f"plybot-soak-{os.getpid()}-up.log"
                shutil.copyfile(service.log_path, kept)
                run.notes.append(f"the service's log: {kept}")
    return run


# -- the table ----------------------------------------------------------------------------


def _ms(values: list[float], q: float) -> str:
    return f"{quantile(values, q) * 1000:.0f}" if values else "-"


def format_soak(run: SoakRun) -> str:
    """The table over time (one line a window), the counts, and the verdict."""
    labels = sorted({label for w in run.windows for label in w.rss},
                    key=lambda s: (s.startswith("worker"), s == "other", s))  # fmt: skip
    prefixes = sorted({p for w in run.windows for p in w.keys})
    head = (
        f"{'t (s)':>7} {'load':>5} "
        + " ".join(f"{label[:10]:>10}" for label in labels)
        + f" {'redis KB':>9} {'cache KB':>9} {'keys':>6} {'moves':>5} {'p50':>5} {'p99':>5}"
        f" {'anal.':>5} {'p50':>5} {'p99':>6}"
    )
    lines = [
        "memory: resident MB per process; latency: ms (bot moves, then analyses)",
        head,
        "-" * len(head),
    ]
    for w in run.windows:
        lines.append(
            f"{w.end:>7.0f} {w.load:>5.1f} "
            + " ".join(f"{w.rss.get(label, 0) / 2**20:>10.1f}" for label in labels)
            + f" {w.redis_memory >> 10:>9} {w.cache_memory >> 10:>9} {w.key_total:>6}"
            f" {len(w.moves):>5} {_ms(w.moves, 0.5):>5} {_ms(w.moves, 0.99):>5}"
            f" {len(w.analyses):>5} {_ms(w.analyses, 0.5):>5} {_ms(w.analyses, 0.99):>6}"
        )
    lines += ["", "keys by prefix (first, reference window's last, last window):"]
    reference, last = reference_and_last(run)
    picks = [run.windows[0], reference[-1], run.windows[-1]] if reference and run.windows else []
    for prefix in prefixes:
        lines.append(f"  {prefix:<24} " + " ".join(f"{w.keys.get(prefix, 0):>7}" for w in picks))
    if reference and last:
        for kind in ("moves", "analyses"):
            ref = [x for w in reference for x in getattr(w, kind)]
            end = [x for w in last for x in getattr(w, kind)]
            lines.append(
                f"p99 of {kind}: reference {_ms(ref, 0.99)} ms ({len(ref)}), "
                f"last third {_ms(end, 0.99)} ms ({len(end)})"
            )
    lines += ["", "counts:"]
    for kind, c in sorted(run.counts.items()):
        lines.append(f"  {kind:<10} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    lines.append(f"  workers SIGKILLed {run.kills}; slow clients cut off {run.slow_cut} of "
                 f"{run.slow_opened}")  # fmt: skip
    left = ", ".join(f"{k} {v}" for k, v in sorted(run.leftovers.items()))
    lines.append(f"  left after the drain: {left or '-'}")
    if run.notes:
        lines += ["", "notes:", *(f"  {note}" for note in run.notes)]
    failures = verdict(run)
    lines += ["", "verdict: " + ("FAIL" if failures else "pass")]
    lines += [f"  {failure}" for failure in failures]
    return "\n".join(lines)

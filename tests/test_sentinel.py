"""Redis Sentinel: the settings, the connections, the replica wait of a submission, and a
primary SIGKILLed under a load of bot moves and analyses (README, "Redis Sentinel").

Every cluster here is the test's own (``sentinel_cluster``: a primary, a replica and three
sentinels on free ports); waits are for states, with deadlines as safety nets only.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import redis
from pydantic import ValidationError
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

from engine.analysis import analyze
from engine.game import new_game
from tests.fixtures.api import ApiServer, api_server_on
from tests.fixtures.discord import DiscordWorld, bot_settings, run_with_bot
from tests.fixtures.redis import SentinelCluster
from tests.fixtures.waiting import wait_for
from worker.core import keys
from worker.core.connection import aclose, close, connect, connect_async, sibling
from worker.core.contract import AnalysisRequest, MoveRequest
from worker.core.jobstore import JobStore
from worker.core.settings import Settings
from worker.process.backoff import is_transient, patient
from worker.process.processes import WorkerPool

#: A URL whose host and port are never used (the sentinels give the master's address):
#: a connection that did not go through them fails. Its db number applies.
UNUSED_HOST_URL = "redis://no-such-host.invalid:1/3"
#: Where the Discord bot's game is played.
GUILD = 5151
CHANNEL = 888
#: Analyses a client of the load submits before waiting for them.
BATCH = 5


def sentinel_settings(cluster: SentinelCluster, **more: Any) -> Settings:
    return Settings(
        redis_url=UNUSED_HOST_URL,
        redis_sentinels=cluster.env["PLYBOT_REDIS_SENTINELS"],
        redis_sentinel_master=cluster.MASTER,
        **more,
    )


def port_of(client: redis.Redis) -> int:
    """The port of the server ``client`` talks to (as that server sees it)."""
    return int(client.config_get("port")["port"])


# -- settings (no Redis) -------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("localhost", "'localhost' is not host:port"),
        ("a:26379,b", "'b' is not host:port"),
        ("a:26379,", "'' is not host:port"),
        (":26379", "':26379' is not host:port"),
        ("a:sentinel", "'a:sentinel' is not host:port"),
        ("a:70000", "port 70000 is not in 1..65535"),
        ("a:２６３７９", "is not host:port"),  # fullwidth digits are no port
    ],
)
def test_a_bad_sentinels_setting_is_refused_naming_it(
    monkeypatch: pytest.MonkeyPatch, value: str, why: str
) -> None:
    monkeypatch.setenv("PLYBOT_REDIS_SENTINELS", value)
    monkeypatch.setenv("PLYBOT_REDIS_SENTINEL_MASTER", "plybot")
    with pytest.raises(ValidationError, match="PLYBOT_REDIS_SENTINELS") as refused:
        Settings()
    assert why in str(refused.value)


def test_sentinels_need_the_master_name_and_make_the_url_optional(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.delenv("PLYBOT_REDIS_URL", raising=False)
    monkeypatch.setenv("PLYBOT_REDIS_SENTINELS", "10.0.0.1:26379, [::1]:26380")
    with pytest.raises(ValidationError, match="PLYBOT_REDIS_SENTINEL_MASTER is not"):
        Settings()
    monkeypatch.setenv("PLYBOT_REDIS_SENTINEL_MASTER", "plybot")
    settings = Settings()
    assert settings.sentinel_addresses() == [("10.0.0.1", 26379), ("::1", 26380)]
    assert settings.redis_url == "redis://"  # db 0, no password: the address is theirs
    monkeypatch.setenv("PLYBOT_REDIS_SENTINELS", " ")
    assert Settings().sentinel_addresses() == []  # blank: no sentinels


# -- connections (a cluster, no workers) ---------------------------------------------


@pytest.mark.redis
@pytest.mark.slow
def test_every_connection_finds_the_master_through_the_sentinels_and_follows_a_failover(
    sentinel_cluster: SentinelCluster,
) -> None:
    cluster = sentinel_cluster
    settings = sentinel_settings(cluster, redis_socket_timeout_s=1.0)
    job_redis = connect(settings=settings, socket_timeout=1)
    events = sibling(job_redis)
    cache_apart = connect(f"redis://127.0.0.1:{cluster.replica.port}/0", settings)
    try:
        assert port_of(job_redis) == port_of(events) == cluster.primary.port
        assert port_of(cache_apart) == cluster.replica.port  # another URL: reached directly
        job_redis.set("written", "1")
        with redis.Redis(port=cluster.primary.port, db=3) as primary:
            assert primary.get("written") == b"1"  # REDIS_URL's db applies to the master

        # A planned failover: the old primary lives on as a replica, so a pooled
        # connection to it gets READONLY on a write; redis-py drops it and raises a
        # ConnectionError, which the retry paths take as a passing outage...
        with redis.Redis(port=cluster.sentinels[0].port) as sentinel:
            sentinel.execute_command("SENTINEL", "FAILOVER", cluster.MASTER)
        wait_for(lambda: cluster.master_port() == cluster.replica.port, "the failover")
        with redis.Redis(port=cluster.primary.port, decode_responses=True) as old:
            wait_for(lambda: old.info("replication")["role"] == "slave", "old primary demoted")
        error = None
        try:
            events.set("after", "1")  # the events connection keeps no retry of its own
        except redis.ConnectionError as exc:
            error = exc
        if error is not None:
            assert is_transient(error)
        # ... and the next try finds the new master through the sentinels.
        wait_for(lambda: job_redis.set("after", "2"), ignore=(redis.ConnectionError,))
        assert port_of(job_redis) == cluster.replica.port
        wait_for(lambda: events.set("after", "3"), ignore=(redis.ConnectionError,))
        assert port_of(events) == cluster.replica.port

        # A command in flight when the master is SIGKILLed is retried on the new master
        # (redis-py alone would reconnect the retried command to the dead address).
        patient(job_redis)
        assert port_of(job_redis) == cluster.replica.port
        popped: list[Any] = []
        waiter = threading.Thread(
            target=lambda: popped.append(job_redis.blpop(["q"], 60)), daemon=True
        )
        waiter.start()
        with redis.Redis(port=cluster.replica.port, decode_responses=True) as master:
            wait_for(lambda: master.info("clients")["blocked_clients"] == 1, "BLPOP in flight")
        cluster.replica.process.kill()
        cluster.replica.process.wait()
        wait_for(lambda: cluster.master_port() == cluster.primary.port, "the second failover")
        with redis.Redis(port=cluster.primary.port, db=3, decode_responses=True) as master:
            wait_for(lambda: master.info("clients")["blocked_clients"] == 1, "BLPOP again")
            master.rpush("q", "sync")
        waiter.join(30)
        assert popped == [(b"q", b"sync")]

        # The asyncio clients (the API's, bounded; the bot's) do the same.
        async def asyncio_side() -> None:
            forever = Retry(ExponentialBackoff(cap=0.5, base=0.05), -1)
            bounded = connect_async(
                settings=settings, max_connections=4, pool_timeout=1, retry=forever
            )
            plain = connect_async(settings=settings, retry=forever)
            try:
                assert await bounded.set("async", "1")
                assert await plain.get("async") == b"1"
                pops = [asyncio.create_task(c.blpop(["aq"], 60)) for c in (bounded, plain)]
                with redis.Redis(port=cluster.primary.port, decode_responses=True) as master:
                    while master.info("clients")["blocked_clients"] < 2:
                        await asyncio.sleep(0.02)
                cluster.primary.process.kill()  # the current master
                cluster.primary.process.wait()
                cluster.replica.start()  # back as a replica of nobody: the sentinels fix that
                async with asyncio.timeout(60):
                    while cluster.master_port() != cluster.replica.port:
                        await asyncio.sleep(0.05)
                    with redis.Redis(port=cluster.replica.port, db=3) as master:
                        while master.info("clients")["blocked_clients"] < 2:
                            await asyncio.sleep(0.02)
                        master.rpush("aq", "a", "b")
                    assert sorted([(await p)[1] for p in pops]) == [b"a", b"b"]
            finally:
                await aclose(bounded)
                await aclose(plain)

        asyncio.run(asyncio_side())
    finally:
        close(job_redis)
        close(events)
        close(cache_apart)


# -- what a submission waits for -----------------------------------------------------


@pytest.mark.redis
@pytest.mark.slow
def test_a_submission_is_answered_once_a_replica_has_it_and_counted_when_none_does(
    sentinel_cluster: SentinelCluster,
) -> None:
    cluster = sentinel_cluster
    settings = sentinel_settings(cluster, redis_replica_wait_ms=300)
    store = JobStore(connect(settings=settings), settings)
    replica = redis.Redis(port=cluster.replica.port, db=3)
    primary = redis.Redis(port=cluster.primary.port, db=3, decode_responses=True)
    request = AnalysisRequest(game="tictactoe", position="5", mode="solve")
    try:
        # A replica in sync: when submit returns, the job is on the replica.
        for position in ("5", "51", "512"):
            job_id = store.submit(request.model_copy(update={"position": position})).id
            assert replica.exists(keys.job(job_id)), position
            assert replica.hget(keys.job(job_id), "request")
        move = store.submit(MoveRequest(game="connect4", position="44", level="easy")).id
        assert replica.exists(keys.job(move))
        assert primary.hget(keys.STATS, "unreplicated") is None

        # A replica that does not answer (stopped): the submission is accepted after the
        # wait, on the primary alone, and counted.
        os.kill(cluster.replica.process.pid, signal.SIGSTOP)
        try:
            job_id = store.submit(request.model_copy(update={"position": "1"})).id
        finally:
            os.kill(cluster.replica.process.pid, signal.SIGCONT)
        assert primary.exists(keys.job(job_id))
        assert primary.hget(keys.STATS, "unreplicated") == "1"

        # No replica at all: after that one unanswered wait, submissions do not wait.
        cluster.replica.stop()
        wait_for(lambda: primary.info("replication")["connected_slaves"] == 0, "replica gone")
        waits = primary.info("commandstats")["cmdstat_wait"]["calls"]
        for position in ("2", "3"):
            store.submit(request.model_copy(update={"position": position}))
        assert primary.info("commandstats")["cmdstat_wait"]["calls"] == waits
        assert primary.hget(keys.STATS, "unreplicated") == "3"

        # A replica back: waited for again.
        cluster.replica.start()
        wait_for(lambda: primary.info("replication")["connected_slaves"] == 1, "replica back")
        job_id = store.submit(request.model_copy(update={"position": "4"})).id
        assert primary.info("commandstats")["cmdstat_wait"]["calls"] == waits + 1
        assert primary.hget(keys.STATS, "unreplicated") == "3"
    finally:
        close(store.redis)
        replica.close()
        primary.close()


# -- a primary SIGKILLed under load --------------------------------------------------


class Load:
    """Bot moves (games over HTTP) and analyses (POST, then GET) from threads, each
    request retried until it is answered: what a client does through a failover."""

    def __init__(self, api: ApiServer, pool: WorkerPool) -> None:
        self.api = api
        self.pool = pool
        self.stop = threading.Event()
        self.lock = threading.Lock()
        #: analysis id -> (game, position, expected score), for every 202 with an id.
        self.accepted: dict[str, tuple[str, str, int]] = {}
        #: game id -> every version of it the API showed, in order.
        self.games: dict[str, list[dict[str, Any]]] = {}
        self.unanswered = 0  # requests that got no answer (retried)
        self.errors: list[BaseException] = []
        self.threads: list[threading.Thread] = []

    def run(self, name: str, target: Callable[[httpx.Client], None]) -> None:
        def body() -> None:
            try:
                with self.api.client(timeout=30) as http:
                    while not self.stop.is_set():
                        target(http)
            except BaseException as exc:  # reported by check()
                self.errors.append(exc)

        thread = threading.Thread(target=body, name=name, daemon=True)
        self.threads.append(thread)
        thread.start()

    def request(self, http: httpx.Client, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """The answer to one request, retried (deadline 60 s) while the service is away:
        no connection, a 503, a 5xx."""
        end = time.monotonic() + 60
        while True:
            try:
                response = http.request(method, url, **kwargs)
                if response.status_code < 500:
                    return response
            except httpx.HTTPError:
                pass
            with self.lock:
                self.unanswered += 1
            assert time.monotonic() < end, f"{method} {url}: no answer within 60 s"
            assert self.api.running, "the API died"
            assert self.pool.process.poll() is None, "the workers' supervisor died"
            time.sleep(0.05)

    def analyses(self, positions: list[tuple[str, str, int]]) -> Callable[[httpx.Client], None]:
        """A client that submits a batch of analyses, then waits for them (so at most
        ``BATCH`` per lane are queued: under the API's cap per client)."""
        rng = random.Random(len(self.threads))

        def one(http: httpx.Client) -> None:
            batch = []
            for game, position, score in rng.sample(positions, BATCH):
                body = {"game": game, "position": position, "mode": "solve"}
                r = self.request(http, "POST", "/v1/analyses", json=body)
                assert r.status_code in (200, 202), r.text
                with self.lock:
                    self.accepted[r.json()["id"]] = (game, position, score)
                batch.append(r.json()["id"])
            for job_id in batch:
                while not self.stop.is_set():
                    r = self.request(http, "GET", f"/v1/analyses/{job_id}", params={"wait": 5})
                    assert r.status_code == 200, r.text
                    if r.json()["status"] in ("done", "failed"):
                        break

        return one

    def games_of(self, game: str, level: str) -> Callable[[httpx.Client], None]:
        rng = random.Random(len(self.threads))

        def one(http: httpx.Client) -> None:
            body = {"game": game, "level": level, "first": "bot"}
            r = self.request(http, "POST", "/v1/games", json=body, params={"wait": 5})
            assert r.status_code == 201, r.text
            view = r.json()
            versions = self.games.setdefault(view["id"], [])
            versions.append(view)
            while view["status"] == "ongoing" and not self.stop.is_set():
                url = f"/v1/games/{view['id']}"
                if view["turn"] == "bot":
                    r = self.request(http, "GET", url, params={"wait": 5})
                    assert r.status_code == 200, r.text
                    view = r.json()
                else:
                    move = rng.choice(view["legal_moves"])
                    r = self.request(http, "POST", f"{url}/moves", json={"move": move})
                    if r.status_code == 409:  # a retried POST whose first try was played
                        r = self.request(http, "GET", url)
                        assert r.status_code == 200, r.text
                        view = r.json()
                    else:
                        assert r.status_code == 200, r.text
                        view = r.json()["game"]
                versions.append(view)

        return one

    def reached(self, count: int) -> bool:
        """True once ``count`` analyses were accepted (a lane's failure raises here)."""
        if self.errors:
            raise self.errors[0]
        return len(self.accepted) >= count

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(120)
        assert not any(t.is_alive() for t in self.threads)
        if self.errors:
            raise self.errors[0]


def positions(count: int, seed: int = 22) -> list[tuple[str, str, int]]:
    """Connect Four positions 18-28 plies in (exact solves of milliseconds) and
    tic-tac-toe openings, each with the engine's own exact score."""
    rng = random.Random(seed)
    found: dict[tuple[str, str], int] = {}
    while len(found) < count:
        name, plies = rng.choice(
            [("connect4", rng.randint(20, 28)), ("tictactoe", rng.randint(0, 4))]
        )
        board = new_game(name)
        for _ in range(plies):
            if board.outcome() is not None:
                break
            board.push(rng.choice(board.legal_moves()))
        if board.outcome() is None:
            found[(name, board.notation())] = analyze(board, mode="solve").score
    return [(name, position, score) for (name, position), score in found.items()]


def failover_under_load(cluster: SentinelCluster, pool: WorkerPool, env: dict[str, str]) -> str:
    """The API under a load of bot moves and analyses, the primary SIGKILLed in the middle;
    checks everything the README promises of it and returns what it measured."""
    before = {name: info["pid"] for name, info in pool.workers().items()}
    with api_server_on(UNUSED_HOST_URL, env=env) as api:
        load = Load(api, pool)
        known = positions(60)
        for lane in range(3):
            load.run(f"analyses-{lane}", load.analyses(known))
        load.run("tictactoe-games", load.games_of("tictactoe", "perfect"))
        load.run("connect4-games", load.games_of("connect4", "medium"))
        with api.client() as http:
            wait_for(lambda: load.reached(40), "a load in flight")

            cluster.primary.process.kill()  # SIGKILL: no goodbye to anyone
            cluster.primary.process.wait()
            killed_at = time.monotonic()
            # The service answers again by itself: a new analysis is accepted and answered.
            probe = {"game": "tictactoe", "position": "1", "mode": "depth", "depth": 1}

            def answered() -> bool:
                r = http.post("/v1/analyses", json=probe, params={"wait": 5}, timeout=10)
                return r.status_code == 200 and r.json()["status"] == "done"

            wait_for(answered, "the service answering again", timeout=30, ignore=(httpx.HTTPError,))
            back_s = time.monotonic() - killed_at
            assert cluster.master_port() == cluster.replica.port
            count_then = len(load.accepted)
            wait_for(lambda: load.reached(count_then + 20), "more load after it")
        load.finish()
        assert api.running
        assert pool.process.poll() is None

        # Every accepted analysis ends right (nothing accepted before the kill is lost).
        ended: dict[str, int] = {}
        with api.client() as http:
            for job_id, (game, position, score) in load.accepted.items():
                r = http.get(f"/v1/analyses/{job_id}", params={"wait": 30})
                assert r.status_code == 200, (job_id, position, r.text)
                analysis = r.json()
                assert analysis["status"] in ("done", "failed"), analysis
                if analysis["status"] == "failed":  # a clear one-line reason, never a trace
                    assert analysis["error"], analysis
                    assert "\n" not in analysis["error"], analysis
                else:
                    assert analysis["result"]["score"] == score, (game, position)
                ended[analysis["status"]] = ended.get(analysis["status"], 0) + 1
            status = http.get("/v1/status").json()
        # The primary left alone after the failover: submissions counted as unreplicated.
        assert status["jobs"].get("unreplicated", 0) >= 1, status

        # Every game: no acknowledged move lost, bot moves answered, the perfect bot unbeaten.
        bot_moves = 0
        for versions in load.games.values():
            for earlier, later in itertools.pairwise(versions):
                assert later["moves"][: len(earlier["moves"])] == earlier["moves"], versions
            last = versions[-1]
            new_game(last["game"], last["position"])  # legal throughout
            bot_moves += sum(1 for i in range(len(last["moves"])) if i % 2 == 0)
            if last["game"] == "tictactoe" and last["status"] != "ongoing":
                assert last["winner"] != "human", last
        assert bot_moves >= 10, load.games

        # The workers that were up before the kill are the ones up now: none died.
        after = {name: info["pid"] for name, info in pool.workers().items()}
        assert after == before
        return (
            f"answering again {back_s:.2f} s after the SIGKILL; {len(load.accepted)} "
            f"analyses accepted ({ended}), {len(load.games)} games, {bot_moves} bot moves, "
            f"{load.unanswered} requests retried"
        )


@pytest.mark.redis
@pytest.mark.service
@pytest.mark.slow
def test_a_primary_killed_under_load_fails_over_and_every_accepted_job_ends_right(
    sentinel_cluster: SentinelCluster, discord_world: DiscordWorld
) -> None:
    cluster = sentinel_cluster
    env = {
        **cluster.env,
        "PLYBOT_WORKER_LEASE_S": "2",
        # The replica is healthy until the kill: every wait before it is answered.
        "PLYBOT_REDIS_REPLICA_WAIT_MS": "2000",
    }
    pool = WorkerPool(UNUSED_HOST_URL, 2, env=env)
    try:
        pool.wait_ready()
        measured = run_bot_through_a_failover(cluster, pool, env, discord_world)
    finally:
        pool.stop()
    print(f"\n{measured}")


def run_bot_through_a_failover(
    cluster: SentinelCluster, pool: WorkerPool, env: dict[str, str], world: DiscordWorld
) -> str:
    """:func:`failover_under_load` while the Discord bot plays; what it measured."""
    settings = bot_settings(
        UNUSED_HOST_URL,
        redis_sentinels=cluster.env["PLYBOT_REDIS_SENTINELS"],
        redis_sentinel_master=cluster.MASTER,
    )
    measured: list[str] = []

    async def scenario(bot: Any) -> None:
        """The Discord bot (a real one, on the stand-in Discord) in a game against plybot
        before and after the failover, connected throughout."""
        cog = bot.get_cog("Games")
        alice = world.user("alice")
        start = await world.slash(
            bot, "tictactoe", alice, guild_id=GUILD, channel_id=CHANNEL, level="perfect"
        )
        board = start.shown
        assert board is not None

        async def play_a_free_cell(ply: int) -> None:
            free = [
                b.label for b in board.buttons() if (b.label or "").isdigit() and not b.disabled
            ]
            assert (await world.press(bot, alice, board, free[0])).ephemeral == []
            await cog.idle()
            assert f"Move {ply} · ❌ {alice.mention} to play" in board.text, board.text

        await play_a_free_cell(3)  # hers, then plybot's reply
        measured.append(await asyncio.to_thread(failover_under_load, cluster, pool, env))
        assert not bot.is_closed()
        await play_a_free_cell(5)  # plybot answers again, through the new primary

    run_with_bot(world, settings, UNUSED_HOST_URL, scenario)
    return measured[0]

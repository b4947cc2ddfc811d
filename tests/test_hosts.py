"""Scale-out for real: Redis, the API and two workers on hosts of their own.

Each host is a network namespace made by the test (``ip netns``), wired to one
bridge; the test itself joins the bridge to talk to the API over HTTP. Each
host reaches the others by address only, as on separate machines. One worker
host is killed whole (every process in its namespace, SIGKILL) while it runs a
job; the other host finishes it. Skipped, saying why, where the machine
refuses namespaces (not root, no ``ip``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.fixtures.service import NO_DATABASE
from tests.fixtures.waiting import wait_for
from worker.process.redis_server import find_redis_server

pytestmark = [pytest.mark.redis, pytest.mark.service, pytest.mark.slow]

PLYBOT = str(Path(sys.executable).with_name("plybot"))
SUBNET = "10.213.45"  # only inside the namespaces this test makes
HOSTS = {"redis": 1, "api": 2, "w1": 3, "w2": 4}
ME = 254  # the test's own address on the bridge
#: Errors that mean "the service is not back yet" while waiting for it.
REACHING = (httpx.HTTPError, OSError)


def sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, text=True)


class Network:
    """Namespaces ``<tag>-<host>`` on a bridge in ``<tag>-sw``; the root namespace joins too."""

    def __init__(self) -> None:
        self.tag = "ply" + uuid.uuid4().hex[:6]
        self.made: list[str] = []
        self.processes: list[subprocess.Popen[bytes]] = []

    def ns(self, host: str) -> str:
        return f"{self.tag}-{host}"

    def up(self) -> None:
        switch = self.ns("sw")
        sh("ip", "netns", "add", switch)
        self.made.append(switch)
        sh("ip", "netns", "exec", switch, "ip", "link", "add", "br0", "type", "bridge")
        sh("ip", "netns", "exec", switch, "ip", "link", "set", "br0", "up")
        for host, n in HOSTS.items():
            ns = self.ns(host)
            sh("ip", "netns", "add", ns)
            self.made.append(ns)
            self._wire(f"{self.tag}{n}", ns, f"{SUBNET}.{n}")
        self._wire(f"{self.tag}me", None, f"{SUBNET}.{ME}")

    def _wire(self, name: str, ns: str | None, address: str) -> None:
        """A veth pair: one end in ``ns`` (None: this namespace) with ``address``, one on br0."""
        switch = self.ns("sw")
        sh("ip", "link", "add", name, "type", "veth", "peer", "name", name + "b")
        sh("ip", "link", "set", name + "b", "netns", switch)
        sh("ip", "netns", "exec", switch, "ip", "link", "set", name + "b", "master", "br0")
        sh("ip", "netns", "exec", switch, "ip", "link", "set", name + "b", "up")
        run = ["ip", "netns", "exec", ns] if ns else []
        if ns:
            sh("ip", "link", "set", name, "netns", ns)
            sh(*run, "ip", "link", "set", "lo", "up")
        sh(*run, "ip", "addr", "add", f"{address}/24", "dev", name)
        sh(*run, "ip", "link", "set", name, "up")

    def start(self, host: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            ["ip", "netns", "exec", self.ns(host), *args],
            env={**os.environ, **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.processes.append(process)
        return process

    def pids(self, host: str) -> list[int]:
        """The processes running in ``host``'s namespace."""
        out = subprocess.run(
            ["ip", "netns", "pids", self.ns(host)], capture_output=True, text=True, check=True
        )
        return [int(p) for p in out.stdout.split()]

    def kill_host(self, host: str) -> list[int]:
        """SIGKILL every process in ``host``'s namespace (the machine goes away)."""
        pids = self.pids(host)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return pids

    def down(self) -> None:
        for host in HOSTS:
            if self.ns(host) in self.made:
                self.kill_host(host)
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        subprocess.run(["ip", "link", "del", f"{self.tag}me"], capture_output=True)
        for ns in reversed(self.made):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@pytest.fixture
def network() -> Iterator[Network]:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("network namespaces need root and iproute2's ip: not available here")
    net = Network()
    try:
        net.up()
    except subprocess.CalledProcessError as exc:
        net.down()
        pytest.skip(f"this machine refuses network namespaces: {exc.stderr.strip()}")
    try:
        yield net
    finally:
        net.down()


def test_a_worker_host_dies_mid_job_and_the_other_host_finishes_it(
    network: Network, tmp_path: Path
) -> None:
    server = find_redis_server()
    if server is None:
        pytest.skip("no redis-server to run on the Redis host")
    redis_host, api_host = f"{SUBNET}.{HOSTS['redis']}", f"{SUBNET}.{HOSTS['api']}"
    network.start(
        "redis",
        [server, "--bind", redis_host, "--port", "7379", "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path), "--protected-mode", "no"],
        {},
    )  # fmt: skip
    url = {"REDIS_URL": f"redis://{redis_host}:7379/0", "PLYBOT_CACHE_ENABLED": "false"}
    network.start("api", [PLYBOT, "serve", "--host", api_host, "--port", "8080"], url)
    # Without the 12-stone database, whose growth turns this position's seconds of search
    # into an instant answer that ends before it is seen running.
    searching = {**url, **NO_DATABASE}
    workers = {
        host: network.start(host, [PLYBOT, "worker", "-n", "1", "--queues", "analysis"], searching)
        for host in ("w1", "w2")
    }
    base = f"http://{api_host}:8080"
    with httpx.Client(base_url=base, timeout=10) as http:
        wait_for(lambda: len(http.get("/v1/status").json()["workers"]) == 2, ignore=REACHING)
        # Seconds of search (past the book: no instant answer): long enough to be killed
        # in, short enough to run again.
        body = {"game": "connect4", "position": "5333361116", "mode": "time", "time_ms": 4000}
        job = http.post("/v1/analyses", json=body).json()

        def running() -> dict | None:
            state = http.get(f"/v1/analyses/{job['id']}").json()
            return state if state["status"] == "running" and state["progress"] else None

        wait_for(running, ignore=REACHING)

        def runner() -> dict | None:  # the worker running it, as /v1/status lists it
            found = [w for w in http.get("/v1/status").json()["workers"] if w["job"] == job["id"]]
            return found[0] if found else None

        first = wait_for(runner, ignore=REACHING)
        doomed = next(h for h in workers if first["pid"] in network.pids(h))
        names = {h: [] for h in workers}  # type: dict[str, list[str]]
        for w in http.get("/v1/status").json()["workers"]:
            names[next(h for h in workers if w["pid"] in network.pids(h))].append(w["name"])
        network.kill_host(doomed)

        def finished() -> dict | None:
            state = http.get(f"/v1/analyses/{job['id']}", params={"wait": 5}).json()
            return state if state["status"] in ("done", "failed") else None

        final = wait_for(finished, timeout=120, ignore=REACHING)
    assert final["status"] == "done", final
    assert final["attempts"] == 2
    survivor = next(h for h in workers if h != doomed)
    assert final["result"]["worker"] in names[survivor]
    assert final["result"]["best_move"] in "1234567"
    assert final["result"]["depth"] >= 1

"""The supervisor of ``plybot worker -n N``: N warm worker processes, kept alive.

It starts each worker as ``python -m worker.runner`` in a session of its own (so
a Ctrl-C reaches the supervisor only, which forwards exactly one SIGTERM), and
twice a second:

* renews the lease of every child it sees alive (from outside the child, so a
  long compiled search cannot starve the lease);
* notices a dead child at once, ends its lease, runs the reaper (its job goes
  back to the queue, or fails past the attempt limit) and starts a replacement.

SIGTERM or SIGINT: forward SIGTERM to every child (each finishes its job in hand
and exits), wait for them, exit 0. A second signal: the children leave at once
(their jobs go back to the queue).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import time
from types import FrameType

import redis

from worker import keys
from worker.jobstore import JobStore
from worker.processes import die_with_parent
from worker.runner import reap
from worker.settings import Settings

__all__ = ["Supervisor"]

log = logging.getLogger("plybot.supervisor")


class Supervisor:
    def __init__(self, url: str, count: int, queues: list[str], settings: Settings) -> None:
        self.url = url
        self.count = count
        self.queues = queues
        self.settings = settings
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.stopping = 0
        self._serial = 0
        self._respawn = 0  # children to start again
        self._respawn_at = 0.0
        self._prefix = f"{socket.gethostname()}.{os.getpid()}"
        self.redis = redis.Redis.from_url(
            url,
            socket_timeout=settings.redis_socket_timeout_s,
            socket_connect_timeout=settings.redis_socket_timeout_s,
        )
        self.store = JobStore(self.redis, settings)

    def spawn(self) -> str:
        self._serial += 1
        name = f"{self._prefix}.w{self._serial}"
        command = [
            sys.executable, "-m", "worker.runner",
            "--name", name, "--url", self.url, "--queues", ",".join(self.queues),
        ]  # fmt: skip
        self.children[name] = subprocess.Popen(command, start_new_session=True)
        # (each worker follows us with PR_SET_PDEATHSIG itself, see worker.runner.run)
        log.info("started worker %s (pid %d)", name, self.children[name].pid)
        return name

    def _signal(self, signum: int, frame: FrameType | None) -> None:
        self.stopping += 1
        if self.stopping == 1:
            log.info("stopping: workers finish the job in hand (signal again to stop now)")
        for child in self.children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)

    def tick(self) -> None:
        """Handle dead children (reap their jobs, replace them); renew live children's leases."""
        dead = [name for name, child in self.children.items() if child.poll() is not None]
        for name in dead:
            code = self.children.pop(name).returncode
            if self.stopping:
                log.info("worker %s exited (%s)", name, code)
                continue
            log.warning("worker %s died (exit %s); its job goes back to the queue", name, code)
            self._respawn += 1
        if self.stopping:
            self._respawn = 0
        elif self._respawn and time.monotonic() >= self._respawn_at:
            self._respawn -= 1
            self.spawn()
            # A worker that dies at once (no Redis, a broken install) is not restarted in a loop.
            self._respawn_at = time.monotonic() + 2.0
        ttl_ms = int(self.settings.worker_lease_s * 1000)
        with self.redis.pipeline(transaction=False) as pipe:
            for name in dead:
                pipe.delete(keys.alive(name))
            for name, child in self.children.items():
                if child.poll() is None:
                    pipe.set(keys.alive(name), 1, px=ttl_ms, xx=True)  # only once it has started
            pipe.execute()
        if dead:
            reap(self.store)

    def run(self) -> int:
        die_with_parent()  # started by `plybot up` or a test: never outlive it
        signal.signal(signal.SIGTERM, self._signal)
        signal.signal(signal.SIGINT, self._signal)
        for _ in range(self.count):
            self.spawn()
        while self.children:
            try:
                self.tick()
            except (redis.RedisError, OSError) as exc:
                log.warning("supervisor: Redis unreachable (%s); retrying", exc)
            time.sleep(0.5)
        log.info("all workers stopped")
        return 0

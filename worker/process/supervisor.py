"""The supervisor of ``plybot worker -n N``: N warm worker processes, kept alive.

It starts each worker (an RQ worker: :class:`worker.process.runner.PlybotWorker`) as
``python -m worker.process.runner`` in a session of its own (so a Ctrl-C reaches the
supervisor only, which forwards exactly one SIGTERM), with ``REDIS_URL`` in its
environment (never on its command line, which any user can read), and twice a second
notices a dead child at once, registers its death with RQ (so ``rq info`` stops listing it)
and starts a replacement, with backoff when children keep dying young.

It never renews a child's lease: a job's lease is renewed by the worker running it (see
:mod:`worker.process.runner`), so a dead, hung or stopped child loses its job to RQ's
cleanup of abandoned jobs, run by the other workers. A Redis outage is waited out: the
supervisor keeps running and catches up when Redis is back.

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

from worker.core.connection import connect
from worker.core.redis_memory import check_redis_memory
from worker.core.settings import Settings
from worker.process.backoff import Backoff
from worker.process.processes import RECYCLE_EXIT, die_with_parent

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
        self._backoff = Backoff(first=1.0, cap=30.0)
        self._born: dict[str, float] = {}
        self._unreaped: set[str] = set()
        self._prefix = f"{socket.gethostname()}.{os.getpid()}"
        self.redis = connect(
            url,
            settings,
            socket_timeout=settings.redis_socket_timeout_s,
            socket_connect_timeout=settings.redis_socket_timeout_s,
        )

    def spawn(self) -> str:
        self._serial += 1
        name = f"{self._prefix}.w{self._serial}"
        queues = ",".join(self.queues)
        command = [
            sys.executable,
            "-m",
            "worker.process.runner",
            "--name",
            name,
            "--queues",
            queues,
        ]
        env = {**os.environ, "REDIS_URL": self.url}
        self.children[name] = subprocess.Popen(command, start_new_session=True, env=env)
        self._born[name] = time.monotonic()
        # (each worker follows us with PR_SET_PDEATHSIG itself, see worker.process.runner.run)
        log.info("started worker %s (pid %d)", name, self.children[name].pid)
        return name

    def _signal(self, _signum: int, _frame: FrameType | None) -> None:
        self.stopping += 1
        if self.stopping == 1:
            log.info("stopping: workers finish the job in hand (signal again to stop now)")
        for child in self.children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)

    def tick(self) -> None:
        """Handle dead children (reap their jobs, replace them)."""
        for name in [name for name, child in self.children.items() if child.poll() is not None]:
            code = self.children.pop(name).returncode
            lived = time.monotonic() - self._born.pop(name, 0.0)
            self._unreaped.add(name)
            if self.stopping:
                log.info("worker %s exited (%s)", name, code)
                continue
            if code == RECYCLE_EXIT:  # past its memory budget: replaced at once
                log.info("worker %s made way for a fresh process (memory budget)", name)
                self._respawn += 1
                continue
            log.warning("worker %s died (exit %s); its job goes back to the queue", name, code)
            self._respawn += 1
            # A worker that dies young (a broken install) is not restarted in a tight loop.
            if lived < 30:
                self._respawn_at = time.monotonic() + self._backoff.next()
            else:
                self._backoff.reset()
        if self.stopping:
            self._respawn = 0
        elif self._respawn and time.monotonic() >= self._respawn_at:
            self._respawn -= 1
            self.spawn()
        if self._unreaped:
            self._reap()

    def _reap(self) -> None:
        from rq import Worker  # here: the supervisor starts its workers before importing RQ

        for name in list(self._unreaped):  # kept until Redis takes it: an outage only delays it
            worker = Worker.find_by_key(Worker.redis_worker_namespace_prefix + name, self.redis)
            if worker is not None and worker.death_date is None:
                worker.register_death()
            self._unreaped.discard(name)

    def _check_memory(self) -> bool:
        """Warn of an unsafe memory policy (allkeys-* may evict jobs, volatile-* results),
        once Redis answers; False (and nothing said) while it does not yet."""
        try:
            self.redis.ping()
        except (redis.RedisError, OSError):
            return False
        verdict = check_redis_memory(self.url, cache_apart=bool(self.settings.cache_url))
        if verdict.level != "ok":
            log.warning("%s", verdict.message)
        return True

    def run(self) -> int:
        die_with_parent()  # started by `plybot up` or a test: never outlive it
        signal.signal(signal.SIGTERM, self._signal)
        signal.signal(signal.SIGINT, self._signal)
        # The workers first: they start while Redis does (`plybot up`) and wait for it.
        for _ in range(self.count):
            self.spawn()
        failing = False
        checked = False
        # Until told to stop and every child is gone: never because children died.
        while self.children or not self.stopping:
            try:
                self.tick()
                if failing:
                    log.info("supervisor: Redis is back")
                failing = False
                checked = checked or self._check_memory()
            except (redis.RedisError, OSError) as exc:
                if not failing:
                    log.warning("supervisor: Redis unavailable (%s); retrying", exc)
                failing = True
            time.sleep(0.5)
        log.info("all workers stopped")
        return 0

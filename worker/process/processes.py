"""Child processes that ``plybot up``, ``plybot loadtest`` and the tests start and stop.

:class:`WorkerPool` runs ``plybot worker -n N`` against a Redis and knows its
workers through their registrations in Redis. :func:`prefixed` copies a
process's output to ours, each line prefixed with the process's name, so
``plybot up`` has one log stream.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import IO, Any

from worker.core import keys
from worker.core.connection import close, connect
from worker.core.settings import Settings

__all__ = ["PLYBOT", "RECYCLE_EXIT", "WorkerPool", "die_with_parent", "prefixed", "stop_process"]

#: The exit status of a worker that left to be replaced (memory past its budget): the
#: supervisor starts a fresh one at once, with no backoff and no warning.
RECYCLE_EXIT = 3

#: The ``plybot`` command beside this interpreter (the virtualenv's).
PLYBOT = os.path.join(os.path.dirname(sys.executable), "plybot")


def die_with_parent() -> bool:
    """Linux: have the kernel send us SIGTERM when our parent dies, so nothing is orphaned.

    Called in a child (directly, or as ``preexec_fn``). False if the parent is
    already gone. Elsewhere a no-op.
    """
    parent = os.getppid()
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return True
    return os.getppid() == parent


def prefixed(process: subprocess.Popen[bytes], name: str, out: IO[str] | None = None) -> None:
    """Copy ``process``'s stdout to ``out`` (default: ours), each line prefixed ``name |``."""
    stream = out or sys.stdout
    source = process.stdout
    assert source is not None

    def pump() -> None:
        for raw in iter(source.readline, b""):
            line = raw.decode(errors="replace").rstrip()
            stream.write(f"{name:<8}| {line}\n")
            stream.flush()

    threading.Thread(target=pump, name=f"log-{name}", daemon=True).start()


def stop_process(process: subprocess.Popen[bytes], timeout: float = 30.0) -> int:
    """SIGTERM, wait up to ``timeout`` s, then SIGKILL; returns the exit code."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
    return process.wait()


class WorkerPool:
    """A running ``plybot worker -n N`` process tree (one supervisor, N warm workers)."""

    def __init__(
        self,
        url: str,
        count: int,
        queues: str = "interactive,analysis",
        env: dict[str, str] | None = None,
        *,
        log_name: str | None = None,
        quiet: bool = False,
    ) -> None:
        self.url = url
        self.count = count
        full_env = {**os.environ, "REDIS_URL": url, **(env or {})}
        self.lease_s = float(full_env.get("PLYBOT_WORKER_LEASE_S", "6"))
        output = subprocess.PIPE if log_name else (subprocess.DEVNULL if quiet else None)
        self.process = subprocess.Popen(
            # The URL (it may hold a password) goes in the environment, never on a command line.
            [PLYBOT, "worker", "-n", str(count), "--queues", queues],
            env=full_env,
            stdout=output,
            stderr=subprocess.STDOUT if output is not None else None,
            # Its own session: a terminal's Ctrl-C is for our caller, who stops it in order.
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        if log_name:
            prefixed(self.process, log_name)
        # Our own connections reach Redis as the workers do (through the sentinels of
        # ``env`` or our environment, if any).
        settings = Settings(
            redis_url=url,
            redis_sentinels=full_env.get("PLYBOT_REDIS_SENTINELS"),
            redis_sentinel_master=full_env.get("PLYBOT_REDIS_SENTINEL_MASTER"),
        )
        self.redis = connect(url, settings, decode_responses=True)
        self.raw = connect(url, settings)  # RQ's API reads bytes

    @property
    def pid(self) -> int:
        return self.process.pid

    def workers(self) -> dict[str, dict[str, Any]]:
        """Live workers of this pool: name -> info (``pid``, ``host``, ``queues``, ``job``,
        ``table_bytes``, ``rss``): those RQ lists whose housekeeping renewed their info
        within its lease (a hung worker drops out)."""
        from worker.core.jobstore import JobStore

        prefix = f".{self.process.pid}."
        live = JobStore(self.raw).live_workers()
        return {name: info for name, info in live.items() if prefix in name}

    def wait_ready(
        self, count: int | None = None, timeout: float = 180.0
    ) -> dict[str, dict[str, Any]]:
        """Wait until ``count`` (default: all) workers are warm and listening."""
        want = self.count if count is None else count
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.process.poll() is not None:
                raise RuntimeError(f"plybot worker exited with {self.process.returncode}")
            found = self.workers()
            if len(found) >= want:
                return found
            time.sleep(0.05)
        raise TimeoutError(f"{want} workers not ready after {timeout} s")

    def kill_worker(self, name: str, sig: int = signal.SIGKILL) -> int:
        """Send ``sig`` (SIGKILL: its supervisor notices and replaces it; SIGSTOP: it hangs,
        its heartbeat stops and its job is reclaimed) to one worker process; its pid."""
        pid = int(json.loads(self.redis.get(keys.worker_info(name)) or "{}")["pid"])
        os.kill(pid, sig)
        return pid

    def terminate(self, timeout: float = 60.0) -> int:
        """SIGTERM the supervisor (graceful) and wait; its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)

    def kill(self) -> None:
        """SIGKILL the supervisor (its workers get SIGTERM from the kernel and wind down)."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        try:
            self.terminate(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
        close(self.redis)
        close(self.raw)

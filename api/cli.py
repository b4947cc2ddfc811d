"""Run the HTTP API (uvicorn): plybot serve [--host H] [--port P] [--workers N]

Needs ``REDIS_URL`` (``plybot up`` sets it and starts the rest of the service).
Listens on ``PLYBOT_API_HOST``:``PLYBOT_API_PORT`` (127.0.0.1:8000) unless told
otherwise. SIGTERM or Ctrl-C: finish the requests in hand, then exit.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str]) -> int:
    from api.settings import get_settings

    settings = get_settings()
    parser = argparse.ArgumentParser(prog="plybot serve", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=settings.api_host, help="address to listen on")
    parser.add_argument("--port", type=int, default=settings.api_port, help="port to listen on")
    parser.add_argument(
        "--workers", type=int, default=1, help="API processes (uvicorn workers; default 1)"
    )
    parser.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )
    args = parser.parse_args(argv)
    if not settings.redis_url:
        print(
            "plybot serve: REDIS_URL is not set (run `plybot up`, or point REDIS_URL at a Redis)",
            file=sys.stderr,
        )
        return 2
    if not 0 < args.port < 65536:
        print(f"plybot serve: --port {args.port} is outside 1..65535", file=sys.stderr)
        return 2
    if args.workers < 1:
        print(f"plybot serve: --workers {args.workers} must be at least 1", file=sys.stderr)
        return 2
    from worker.core.redis_memory import check_redis_memory

    # (the URL, which may hold a password, is never said)
    verdict = check_redis_memory(settings.redis_url, cache_apart=bool(settings.cache_url))
    if verdict.level == "refuse":
        print(f"plybot serve: refusing to start: {verdict.message}", file=sys.stderr)
        return 2
    if verdict.level == "warn":
        print(f"plybot serve: warning: {verdict.message}", file=sys.stderr, flush=True)

    import copy

    import uvicorn
    from uvicorn.config import LOGGING_CONFIG

    # uvicorn's logging, plus the API's own loggers (``plybot.api``...): without a handler of
    # their own their INFO lines (a slow client cut off, callbacks paused) would be dropped.
    log_config = copy.deepcopy(LOGGING_CONFIG)
    log_config["loggers"]["plybot"] = {"handlers": ["default"], "level": args.log_level.upper()}

    uvicorn.run(
        "api.main:create_app",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_level=args.log_level,
        log_config=log_config,
        # The body limit is the app's; read timeouts are the protocol's (api.server), so a
        # client that never finishes its request is cut off. Idle connections outlive the
        # clients' own keep-alive, so that the client, not the server, closes them.
        http="api.server:TimeoutHttpToolsProtocol",
        timeout_keep_alive=settings.api_keep_alive_s,
        # X-Forwarded-For is believed only from PLYBOT_API_TRUSTED_PROXIES (api.clients);
        # uvicorn's own handling would believe it from any local peer.
        proxy_headers=False,
        timeout_graceful_shutdown=10,
    )
    return 0

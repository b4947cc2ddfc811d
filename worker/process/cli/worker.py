"""Run N warm search workers (RQ, no fork per job) under one supervisor.

usage: plybot worker [-n N] [--queues interactive,analysis,book] [--redis-url URL]

Needs a Redis: ``--redis-url`` or ``REDIS_URL``. SIGTERM or Ctrl-C: each worker
finishes the job in hand and exits; a second Ctrl-C stops at once (jobs in hand
go back to the queue).
"""

from __future__ import annotations

import argparse
import logging
import sys


def parse_args(argv: list[str]) -> argparse.Namespace:
    from worker.core.kinds import QUEUES

    parser = argparse.ArgumentParser(prog="plybot worker", description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--workers", type=int, default=None, help="worker processes")
    parser.add_argument(
        "--queues",
        default=",".join(QUEUES),
        help=f"queues to serve, first served first (default: {','.join(QUEUES)})",
    )
    parser.add_argument("--redis-url", default=None, help="Redis URL (default: REDIS_URL)")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    from worker.core.kinds import QUEUES
    from worker.core.settings import get_settings
    from worker.process.supervisor import Supervisor

    settings = get_settings()
    url = args.redis_url or settings.redis_url
    queues = [q.strip() for q in args.queues.split(",") if q.strip()]
    count = args.workers if args.workers is not None else settings.workers
    if not url:
        print("plybot worker: no Redis: set REDIS_URL or pass --redis-url", file=sys.stderr)
        return 2
    unknown = [q for q in queues if q not in QUEUES]
    if unknown or not queues:
        print(
            f"plybot worker: --queues '{args.queues}': known queues are {', '.join(QUEUES)}",
            file=sys.stderr,
        )
        return 2
    if not 1 <= count <= 64:
        print(f"plybot worker: -n {count}: between 1 and 64 workers", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s supervisor %(levelname)s %(message)s",
        datefmt="%H:%M:%S",
    )
    return Supervisor(url, count, queues, settings).run()

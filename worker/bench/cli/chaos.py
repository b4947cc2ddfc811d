"""Run faults against a real ``plybot up`` and print what they did to the jobs.

usage: plybot chaos [--workers N] [--outage-s S] [--full-s S] [--moves M]
                    [--lanes L] [--slow C] [--sizes B] [--phases P,...] [--log]
       plybot chaos --soak MINUTES [--workers N] [--log]

Starts its own Redis (append-only file on) and ``plybot up`` on free ports
(REDIS_URL is not used), then: Redis SIGKILLed for ``--outage-s`` seconds while
jobs are queued and running, a worker SIGKILLed mid-job, a worker SIGSTOPped
mid-job, Redis full for ``--full-s`` seconds, and bot moves while every worker
is busy on a long analysis (with what ``rq info`` shows), ``--lanes`` clients at
once, ``--slow`` clients that never finish their requests, and one analysis on
each of ``--sizes`` board sizes (worker memory against its budget). Prints one
line per fault: jobs (or requests) submitted, done, right (the benchmark file's
score), lost (or 5xx), and the phase's figure. Exit code 1 if a job was lost or
wrong, or a request got a 5xx.

``--soak MINUTES`` runs the long mixed load instead (worker.bench.soak: analyses,
bot moves, cancels, event streams, webhooks, slow clients and a worker SIGKILLed
now and then, for MINUTES, fractions allowed) and prints every process's memory,
Redis' memory and keys, and latency percentiles per window. Exit code 1 on loss,
on growth or Redis keys not flat over the last third, or on p99 drift.
"""

from __future__ import annotations

import argparse


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="plybot chaos", description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--outage-s", type=float, default=15.0, help="Redis down this long")
    parser.add_argument("--full-s", type=float, default=5.0, help="Redis full this long")
    parser.add_argument("--moves", type=int, default=20, help="bot moves while workers are busy")
    parser.add_argument("--lanes", type=int, default=200, help="clients at once (default 200)")
    parser.add_argument("--slow", type=int, default=100, help="slow clients (default 100)")
    parser.add_argument(
        "--sizes", type=int, default=170, help="board sizes asked about (default all 170)"
    )
    parser.add_argument(
        "--phases", default="", help="comma-separated phases to run (default: all, in order)"
    )
    parser.add_argument("--log", action="store_true", help="show the service's log")
    parser.add_argument(
        "--soak", type=float, metavar="MINUTES", help="the long mixed load, this long, instead"
    )
    args = parser.parse_args(argv)
    if args.soak is not None:
        if not 0 < args.soak <= 24 * 60:
            parser.error(f"--soak {args.soak:g}: between 0 and 1440 minutes")
        from worker.bench.soak import format_soak, run_soak, verdict

        run = run_soak(args.soak, args.workers, args.log)
        print(format_soak(run), flush=True)
        return 1 if verdict(run) else 0
    from worker.bench.chaos import MAX_LANES, PHASES

    if not 0 <= args.lanes <= MAX_LANES:
        parser.error(f"--lanes {args.lanes}: between 0 and {MAX_LANES}")
    phases = tuple(p.strip() for p in args.phases.split(",") if p.strip()) or PHASES
    unknown = [p for p in phases if p not in PHASES]
    if unknown:
        parser.error(f"--phases {','.join(unknown)}: unknown (phases: {', '.join(PHASES)})")
    from worker.bench.chaos import format_table, run_chaos

    results = run_chaos(
        args.workers,
        args.outage_s,
        args.full_s,
        args.moves,
        args.log,
        lanes=args.lanes,
        slow=args.slow,
        sizes=args.sizes,
        phases=phases,
    )
    print(format_table(results))
    bad = any(r.lost or r.right < r.done for r in results)
    return 1 if bad else 0
